"""The README's module table is the package's layering: each module imports only modules above it, none in a circle."""

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


def test_every_module_imports_only_those_above_it_in_the_readmes_table():
    modules = {path.stem for path in (ROOT / "onparse").glob("*.py")} - {"__init__", "__main__"}
    table = re.findall(r"^\| `onparse/(\w+)\.py` \|", (ROOT / "README.md").read_text(), re.M)
    assert sorted(table) == sorted(modules), "the table lists every module once"
    above = {name: set(table[:k]) for k, name in enumerate(table)}
    for name in table:
        upward = imports(ROOT / "onparse" / f"{name}.py", modules) - above[name]
        assert not upward, f"{name} imports {sorted(upward)}, listed below it"
