"""A built wheel carries its models: installed alone, it parses offline from a folder outside the repository."""

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import SLACK

pytestmark = pytest.mark.slow  # fits, subprocesses, wheels and docs builds: make test, not test-fast

ROOT = Path(__file__).resolve().parents[1]
WHEEL_LIMIT = 100 * 10**6  # the common package-index limit on one file


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of a copy of the checkout (so no build/ or egg-info lands in it), built offline."""
    source = tmp_path_factory.mktemp("source") / "onparse"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "runs", "build", "site", "*.egg-info", "__pycache__", ".pytest_cache", ".whl"
        ),
    )
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=SLACK * 120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return next(out.glob("onparse-*.whl"))


MAIN_WHEEL_LIMIT = 10 * 10**6  # the default model inside, every other one its own package: a quick install


@pytest.mark.slow
def test_the_wheel_holds_the_default_model_alone(wheel):
    assert wheel.stat().st_size < MAIN_WHEEL_LIMIT
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "onparse/models/pcfg-wsj/weights.pt" in names
    modules = {path.relative_to(ROOT).as_posix() for path in (ROOT / "onparse").rglob("*.py")}
    assert modules <= names  # every module of the source (an editable install beside would hide one left out)
    assert {name.split("/")[2] for name in names if name.startswith("onparse/models/") and name.count("/") > 2} == {
        "pcfg-wsj"
    }


@pytest.mark.slow
def test_the_installed_wheel_parses_from_outside_the_repository_and_each_model_package_by_name(wheel, tmp_path):
    from onparse.store.packaging import build_package

    readme = (ROOT / "README.md").read_text()
    named = set(
        re.findall(r"--model ((?:onlstm|pcfg)-[\w-]+)", readme)
    )  # every model the README tells a user to load by name
    assert {"onlstm-ctb", "pcfg-negra", "onlstm-wsj-mixed"} <= named
    packages = [build_package(name, tmp_path / "models") for name in sorted(named)]
    assert all(package.stat().st_size < WHEEL_LIMIT for package in packages)
    target = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=SLACK * 120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environment = {**os.environ, "PYTHONPATH": str(target)}  # the installed copy alone, not the checkout

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, *args], cwd=elsewhere, env=environment, capture_output=True, text=True, timeout=SLACK * 60
        )

    where = run("-c", "import onparse.store.shipped as m; print(m.DEFAULT_MODEL)")
    assert where.returncode == 0 and Path(where.stdout.strip()).is_relative_to(target), where.stderr
    english = run("-m", "onparse", "The cat sat on the mat.")
    assert english.returncode == 0 and english.stdout.startswith("(X ") and english.stdout.rstrip().endswith(" .)"), (
        english.stderr
    )
    shutil.copy(ROOT / "examples" / "library.py", elsewhere / "library.py")
    example = run("library.py")  # the README's library example, with the default model alone
    assert example.returncode == 0 and "onlstm-wsj is not installed here" in example.stdout, example.stderr
    absent = run("-m", "onparse", "--model", "pcfg-negra", "Die Katze schläft.")
    assert absent.returncode == 2 and "pcfg-negra is a shipped model not installed here" in absent.stderr
    listed = " ".join(run("-m", "onparse", "models").stdout.split())
    assert "pcfg-negra (de)" in listed and listed.count("make models") == 1  # one install sentence for all
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), *map(str, packages)],
        capture_output=True,
        text=True,
        timeout=SLACK * 120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    german = run("-m", "onparse", "--model", "pcfg-negra", "Die Katze schläft.")
    assert german.returncode == 0 and "Katze" in german.stdout, german.stderr
    listed = run("-m", "onparse", "models")
    for name in named:
        assert name in listed.stdout and f"not installed: {name}" not in listed.stdout, listed.stdout
        loaded = run("-m", "onparse", "--model", name, "a b")
        assert loaded.returncode == 0 and loaded.stdout.startswith("(X "), (name, loaded.stderr)


@pytest.mark.slow
def test_the_wheel_is_a_package_to_depend_on(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "onparse/py.typed" in names and any(
        name.endswith(".dist-info/licenses/LICENSE") or name.endswith(".dist-info/LICENSE") for name in names
    )
    metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
    fields = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Author: the onparse authors" in fields and "License: MIT" in fields and "Typing :: Typed" in fields
    assert re.search(
        r"Requires-Dist: click<9,>=8\.1|Requires-Dist: click>=8\.1,<9", fields
    )  # bounded where Click 9 removes what we call
    citation = (ROOT / "CITATION.cff").read_text()
    readme = (ROOT / "README.md").read_text()
    for paper in (
        "Ordered Neurons",
        "Ensemble Distillation for Unsupervised Constituency Parsing",
        "Independent Left and Right Productions",
    ):
        assert paper in citation and paper in readme.split("```bibtex", 1)[1]
