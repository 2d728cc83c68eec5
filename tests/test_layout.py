"""The architecture page's module table is the package's layering: each module imports only modules above it, none in a
circle."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imports(module: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``module`` imports, at module level or inside functions alike."""
    found = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("onparse"):
            parts = node.module.split(".")
            found |= {parts[1]} if len(parts) > 1 else {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("onparse.")}
    return (found & modules) - {module.stem}


def test_every_module_imports_only_those_above_it_in_the_architecture_pages_table():
    modules = {path.stem for path in (ROOT / "onparse").glob("*.py")} - {"__init__", "__main__"}
    table = re.findall(r"^\| `onparse/(\w+)\.py` \|", (ROOT / "docs" / "architecture.md").read_text(), re.M)
    assert sorted(table) == sorted(modules), "the table lists every module once"
    above = {name: set(table[:k]) for k, name in enumerate(table)}
    for name in table:
        upward = imports(ROOT / "onparse" / f"{name}.py", modules) - above[name]
        assert not upward, f"{name} imports {sorted(upward)}, listed below it"


# Ways of asking "is this a grammar?" by name or settings class; each family answers for itself instead (its settings
# class's traits in config.py, its model class's outputs, the registries keyed by family name).
FAMILY_BRANCHES = re.compile(r"(==|!=)\s*(PCFG|ONLSTM)\b|\b(PCFG|ONLSTM)\s*(==|!=)|\b(PCFG|ONLSTM)\s+(not\s+)?in\b|"
                             r"\bfamily(\(\w+\))?\s*(==|!=)|(==|!=)\s*\w+\.family\b|"
                             r"isinstance\([^)]*(GrammarConfig|ModelConfig) if|(GrammarConfig|ModelConfig) if \w+|"
                             r"isinstance\([^,]*\.model(\.config)?, *(GrammarConfig|ModelConfig)\)|n_layers == 0")


READOUT_BRANCHES = re.compile(r"(==|!=)\s*SPANS\b|\bSPANS\s*(==|!=)|\bSPANS\s+(not\s+)?in\b|in \((MEAN, )?SPANS\)")


def test_only_the_builder_and_the_settings_compare_a_readout():
    """The builder owns what a readout makes of a member's output (``reads_distances``); config.py checks layers."""
    found = [f"{path.name}:{number}: {line.strip()}" for path in sorted((ROOT / "onparse").glob("*.py"))
             if path.name not in ("config.py", "builder.py")
             for number, line in enumerate(path.read_text().splitlines(), 1) if READOUT_BRANCHES.search(line)]
    assert not found, "\n".join(found)
    assert READOUT_BRANCHES.search("None if layer == SPANS else x") and READOUT_BRANCHES.search("best in (MEAN, SPANS)")


def test_no_module_branches_on_a_family_name_or_settings_class():
    """config.py, where the families' settings classes and the fit plan's per-family fields are declared, is the one
    place allowed to name a family in a comparison. (Readouts, ``SPANS``, are still compared in the builder, the
    report and the JSON output: issue 44 goes on.)"""
    found = [f"{path.name}:{number}: {line.strip()}" for path in sorted((ROOT / "onparse").glob("*.py")) if path.name != "config.py"
             for number, line in enumerate(path.read_text().splitlines(), 1) if FAMILY_BRANCHES.search(line)]
    assert not found, "\n".join(found)
    assert FAMILY_BRANCHES.search("if config.family == PCFG:") and FAMILY_BRANCHES.search("if plan.family(k) == GrammarConfig.family:")
    assert FAMILY_BRANCHES.search("return (GrammarConfig if family == PCFG else ModelConfig)(**values)")


def test_the_changelog_the_package_and_the_citation_share_one_version():
    import onparse

    changelog = re.search(r"^## (\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(), re.M).group(1)
    citation = re.search(r"^version: (\S+)", (ROOT / "CITATION.cff").read_text(), re.M).group(1)
    assert changelog == citation == onparse.__version__
