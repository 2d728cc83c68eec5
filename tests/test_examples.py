"""The console and Python examples of the README and the documentation, and examples/library.py, run and print what
they show; the documentation site builds in strict mode."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SLACK

from onparse.cli import main

pytestmark = pytest.mark.slow  # fits, subprocesses, wheels and docs builds: make test, not test-fast

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    "README.md",
    "docs/install.md",
    "docs/guide.md",
    "docs/train.md",
    "docs/models.md",
]  # where a user copies examples from


def examples_text() -> str:
    return "\n".join((ROOT / page).read_text() for page in PAGES)


def console_examples(markdown: str) -> list[tuple[list[str], list[str]]]:
    """Each ``$ onparse ...`` line of the ```console blocks, with the lines it shows as output."""
    found, block = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            block = line.strip() == "```console"
            continue
        if block and line.startswith("$ onparse"):
            found.append((shlex.split(line[len("$ onparse") :]), []))
        elif block and found:
            found[-1][1].append(line)
    return found


def test_the_console_examples_print_what_they_show():
    examples = console_examples(examples_text())
    assert len(examples) >= 3
    for arguments, shown in examples:
        result = CliRunner().invoke(main, arguments)
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines() == shown, arguments


def test_the_library_example_runs_with_the_default_model_from_any_folder(tmp_path):
    import shutil

    shutil.copy(ROOT / "examples" / "library.py", tmp_path / "library.py")  # a copy outside the repository
    done = subprocess.run(
        [sys.executable, "library.py"], cwd=tmp_path, capture_output=True, text=True, timeout=SLACK * 60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("(X ") and lines[1].startswith("  confidence: [") and "sentence_f1" in lines[-1]
    import ast
    import math

    confidence = ast.literal_eval(lines[1].split(":", 1)[1].strip())
    assert confidence and all(0 < c <= 1 for c in confidence)
    tree, distances = lines[-2].split(
        " distances: "
    )  # the ON-LSTMs' mean: numbers, not NaN (a grammar member has none)
    distances = ast.literal_eval(distances)
    assert tree.startswith("(X ") and len(distances) == 6 and all(math.isfinite(d) for d in distances)


def test_the_examples_readme_commands_run(tmp_path):
    commands = [
        line.split("#")[0].strip()
        for line in (ROOT / "examples" / "README.md").read_text().splitlines()
        if line.startswith("onparse ")
    ]
    assert len(commands) >= 5
    for folder in ("examples", "tests"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    for command in commands:
        done = subprocess.run(
            command,
            shell=True,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=SLACK * 60,
            executable="/bin/bash",
        )
        written = command.split(">")[-1].strip() if ">" in command else None
        shown = (
            (tmp_path / written).read_text() if written else done.stdout + done.stderr
        )  # data, or a message saying what was made
        assert done.returncode == 0 and shown.strip() and "Traceback" not in done.stderr, (command, done.stderr)


def python_blocks(markdown: str) -> list[str]:
    """The ```python blocks of a markdown text."""
    blocks, current = [], None
    for line in markdown.splitlines():
        if current is None and line.strip() == "```python":
            current = []
        elif current is not None and line.startswith("```"):
            blocks.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_the_python_examples_run_and_print_trees():
    blocks = python_blocks(examples_text())
    assert len(blocks) >= 4
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=SLACK * 60
        )
        assert done.returncode == 0, (block, done.stderr[-2000:])
        assert done.stdout.startswith("(X "), block


def test_the_documentation_site_builds_in_strict_mode(tmp_path):
    """A broken link, reference or docstring cross-reference fails the build (mkdocs.yml: strict)."""
    import pytest

    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocs_click")
    pytest.importorskip("mkdocstrings")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SLACK * 120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    assert all(f"onparse {command}" in cli for command in ("fit", "train", "eval", "distill", "ensemble", "quantize"))
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "parse_sents" in api and "__getattr__" not in api and api.count('id="onparse.Parser"') <= 1
    assert all(f'id="onparse.parsing.parsed.Parse.{field}"' in api for field in ("tokens", "word_positions", "tree"))
    train = (tmp_path / "site" / "train" / "index.html").read_text()  # the training guide by task
    assert all(f'id="{anchor}"' in train for anchor in ("time-budgets-hours", "runs-checkpoints-and-resuming"))
    assert (tmp_path / "site" / "install" / "index.html").is_file()


def test_the_install_lines_take_torchs_cpu_build_by_name_and_a_clone_without_history():
    """pip left to itself fetches torch's CUDA build (GBs): every install line names the CPU build, never by luck."""
    readme = (ROOT / "README.md").read_text()
    install = readme.split("## Install", 1)[1].split("## ", 1)[0]
    assert "git clone --depth 1" in install and "torch==2.13.0+cpu" in install
    assert "pip install -q 'torch==2.13.0+cpu'" in (ROOT / "Makefile").read_text()
    page = (ROOT / "docs" / "install.md").read_text()
    assert "torch==2.13.0+cpu" in page and "make models" in page and "| `pip install .`" in page  # measured lines


def test_the_readme_is_short_and_a_newcomers_path_comes_first():
    """Install, parse, Python and a new language within the first 120 lines of fewer than 300; the rest is the
    site's."""
    lines = (ROOT / "README.md").read_text().splitlines()
    headings = {line: number for number, line in enumerate(lines, 1) if line.startswith("## ")}
    assert len(lines) < 300
    for heading in (
        "## Install",
        "## Parse",
        "## From Python, nltk and spaCy",
        "## A parser for a new language, from raw text",
    ):
        assert headings[heading] < 120, heading


ISSUE_NUMBER = re.compile(r"\bissues? #?\d+|#\d{2,}\b(?![0-9a-fA-F]{4})", re.I)  # "issue 43", "issues 29 and 45", "#43"


def test_no_issue_number_anywhere_a_user_reads():
    """The README, the docs site, the model cards and the package's docstrings and help are a manual: they say
    what a thing is and how it was measured, never which of the project's issues asked for it."""
    root = Path(__file__).resolve().parents[1]
    read = [
        root / "README.md",
        *sorted((root / "docs").glob("*.md")),
        *sorted((root / "models").glob("*/card.md")),
        *sorted((root / "onparse").rglob("*.py")),
        root / "setup.cfg",
    ]
    found = [
        f"{path.relative_to(root)}:{number}: {line.strip()[:100]}"
        for path in read
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE_NUMBER.search(line)
    ]
    assert not found, "\n".join(found)
    assert ISSUE_NUMBER.search("as issue 43 asks") and ISSUE_NUMBER.search("(issues 29 and 45)")
    assert not ISSUE_NUMBER.search("color #ff8800 and 43 issues")
