"""The architecture page's module table is the package's layering: each module imports only modules above it, none in a
circle."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path) -> str:
    """A module's dotted name inside the package: ``config``, ``families.onlstm``, ``families`` (its __init__)."""
    parts = path.relative_to(ROOT / "onparse").with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    """Every module of the package but its own __init__ and __main__, by dotted name."""
    found = {module_name(path): path for path in (ROOT / "onparse").rglob("*.py") if "models" not in path.parts}
    return {name: path for name, path in found.items() if name not in ("", "__main__")}


def imports(module: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``module`` imports, at module level or inside functions alike."""
    found = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("onparse"):
            base = node.module.split(".", 1)[1] if "." in node.module else ""
            for alias in node.names:  # a name that is a submodule is that module; any other, the module it is in
                named = f"{base}.{alias.name}" if base else alias.name
                found.add(named if named in modules else base)
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".", 1)[1] for alias in node.names if alias.name.startswith("onparse.")}
    return (found & modules) - {module_name(module)}


def test_every_module_imports_only_those_above_it_in_the_architecture_pages_table():
    modules = package_modules()
    table = [
        ".".join(Path(found).with_suffix("").parts[1:]).removesuffix(".__init__")
        for found in re.findall(r"^\| `(onparse/[\w/]+\.py)` \|", (ROOT / "docs" / "architecture.md").read_text(), re.M)
    ]
    assert sorted(table) == sorted(modules), "the table lists every module once"
    above = {name: set(table[:k]) for k, name in enumerate(table)}
    for name in table:
        upward = imports(modules[name], set(modules)) - above[name]
        assert not upward, f"{name} imports {sorted(upward)}, listed below it"


# Ways of asking "is this a grammar?" by name or settings class; each family answers for itself instead (its module
# in onparse/families, found through the registry by name, by settings or by readout).
FAMILY_BRANCHES = re.compile(
    r"(==|!=)\s*(PCFG|ONLSTM)\b|\b(PCFG|ONLSTM)\s*(==|!=)|\b(PCFG|ONLSTM)\s+(not\s+)?in\b|"
    r"\bfamily(\(\w+\))?\s*(==|!=)|(==|!=)\s*\w+\.family\b|"
    r"isinstance\([^)]*(PcfgConfig|OnlstmConfig) if|(PcfgConfig|OnlstmConfig) if \w+|"
    r"isinstance\([^,]*\.model(\.config)?, *(PcfgConfig|OnlstmConfig)\)|n_layers == 0"
)


READOUT_BRANCHES = re.compile(
    r"(==|!=)\s*(SPANS|MEAN)\b|\b(SPANS|MEAN)\s*(==|!=)|\b(SPANS|MEAN)\s+(not\s+)?in\b|"
    r"in \((MEAN, )?SPANS\)|\{(MEAN|SPANS): "
)


def outside_the_families() -> list[Path]:
    return sorted(
        path for path in (ROOT / "onparse").rglob("*.py") if "families" not in path.parts and "models" not in path.parts
    )


def test_no_module_outside_the_families_compares_a_readout():
    """A readout (an ON-LSTM's layer or mean, a grammar's span marginals) means what its family says
    (``of_readout``)."""
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in outside_the_families()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if READOUT_BRANCHES.search(line)
    ]
    assert not found, "\n".join(found)
    assert READOUT_BRANCHES.search("None if layer == SPANS else x") and READOUT_BRANCHES.search("best in (MEAN, SPANS)")
    assert READOUT_BRANCHES.search("NAMES = {MEAN: 'mean of layers'}")


def test_no_module_outside_the_families_branches_on_a_family_name_or_settings_class():
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in outside_the_families()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if FAMILY_BRANCHES.search(line)
    ]
    assert not found, "\n".join(found)
    assert FAMILY_BRANCHES.search("if config.family == PCFG:") and FAMILY_BRANCHES.search(
        "if plan.family(k) == PcfgConfig.family:"
    )
    assert FAMILY_BRANCHES.search("return (PcfgConfig if family == PCFG else OnlstmConfig)(**values)")


COMMAND_STATEMENTS = 12  # a command declares its options, checks what only the command line can, and calls the library


def command_bodies(source: str) -> dict[str, int]:
    """Each click command of a module and the statements of its body (nested ones too), its docstring left out:
    statements, not lines, so that the formatter's line breaks do not count."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and any(
            ".command" in ast.unparse(d) or ".group" in ast.unparse(d) for d in node.decorator_list
        ):
            docstring = (
                node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
            )
            body = node.body[1:] if docstring else node.body
            found[node.name] = sum(isinstance(inner, ast.stmt) for statement in body for inner in ast.walk(statement))
    return found


def test_the_commands_only_dispatch():
    """Every capability is a library function; a command declares its options and calls it: no command body over
    ``COMMAND_STATEMENTS`` statements, and nothing in cli.py but commands and the program's entry point."""
    source = (ROOT / "onparse" / "cli.py").read_text()
    bodies = command_bodies(source)
    assert {"parse", "evaluate", "fit", "train", "distill", "ensemble", "quantize"} <= set(bodies)
    assert not {name: count for name, count in bodies.items() if count > COMMAND_STATEMENTS}
    helpers = [
        node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and node.name not in bodies
    ]
    assert helpers == ["entry_point"]
    long_command = '@main.command()\ndef long():\n    """Docs."""\n' + "    x = 1\n" * (COMMAND_STATEMENTS + 1)
    assert command_bodies(long_command) == {"long": COMMAND_STATEMENTS + 1}  # the measure counts what it should


def test_the_changelog_the_package_and_the_citation_share_one_version():
    import onparse

    changelog = re.search(r"^## (\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(), re.M).group(1)
    citation = re.search(r"^version: (\S+)", (ROOT / "CITATION.cff").read_text(), re.M).group(1)
    assert changelog == citation == onparse.__version__


LONG_FUNCTION = 60  # lines of a function's body (its docstring aside) past which its docstring says why


def test_a_long_function_says_why_in_its_docstring():
    long = []
    for path in (ROOT / "onparse").rglob("*.py"):
        if "models" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                documented = ast.get_docstring(node) is not None and len(node.body) > 1
                length = node.end_lineno - node.body[1 if documented else 0].lineno + 1
                if length > LONG_FUNCTION and "Long: " not in (ast.get_docstring(node) or ""):
                    long.append(f"{path.relative_to(ROOT)}:{node.name} ({length} lines)")
    assert not long, long


LONG_MODULE = 500  # lines: past this a module holds more than one concern


def test_no_module_is_over_its_length():
    long = {
        str(path.relative_to(ROOT)): count
        for path in (ROOT / "onparse").rglob("*.py")
        if "models" not in path.parts and (count := len(path.read_text().splitlines())) > LONG_MODULE
    }
    assert not long, long


def test_the_import_paths_of_the_previous_release_give_the_moved_modules_themselves():
    import importlib

    from onparse.moved import MOVED
    from onparse.structures import trees
    from onparse.text.lines import read_lines

    assert all(importlib.import_module(old) is importlib.import_module(new) for old, new in MOVED.items())
    from onparse import trees as old_trees  # 0.2's example
    from onparse.lines import read_lines as old_read_lines  # the hostile probe's

    assert old_trees is trees and old_read_lines is read_lines
    assert set(MOVED.values()) <= set(f"onparse.{name}" for name in package_modules())


@pytest.mark.parametrize(
    "old, new, name",
    [
        ("onparse.recipe", "onparse.fit", "fit"),
        ("onparse.model", "onparse.families.onlstm.model", "cumax"),
        ("onparse.grammar", "onparse.families.grammar_training", "length_batches"),
        ("onparse.pcfg", "onparse.families.pcfg.model", "NeuralPCFG"),
        ("onparse.spacy_component", "onparse.integrations.spacy_component", "make_onparse"),
    ],
)
def test_the_previous_releases_public_modules_import_with_a_deprecation_warning(old, new, name):
    import importlib
    import sys
    import warnings

    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)
    assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message) for w in said)


def test_the_previous_releases_names_for_the_shipped_models_still_import():
    from onparse.modeldir import DEFAULT_MODEL, MODELS
    from onparse.store import shipped

    assert MODELS == shipped.MODELS and DEFAULT_MODEL == shipped.DEFAULT_MODEL


def test_the_product_cites_no_experiment_log_and_the_manual_no_session_or_issue():
    """A docstring says why; the experiment log keeps the history, and the user docs are a manual, not a diary."""
    cited = [path.name for path in (ROOT / "onparse").rglob("*.py") if "experiments/" in path.read_text()]
    diary = re.compile(r"\b(session|issue)s?\b(?! tracker)", re.IGNORECASE)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    said = [
        f"{page.name}:{n}"
        for page in pages
        for n, line in enumerate(page.read_text().splitlines(), 1)
        if diary.search(line)
    ]
    assert not cited and not said, (cited, said)
