"""Where the shipped models come from: the default inside onparse's own package, each other one its own pip package.

A model package (spaCy's convention) holds one model directory, named as the model, and declares it under the
entry-point group ``onparse.models``, so that once installed the model loads by name, offline, from any folder. A
checkout of onparse holds every shipped model under ``models/`` (an editable install finds them all there);
``make models`` builds the packages with ``build_package``, and one the user has trained packs the same way.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import entry_points
from importlib.resources import files
from pathlib import Path

__all__ = [
    "CATALOGUE",
    "GROUP",
    "build_catalogue",
    "build_package",
    "install_hint",
    "module_name",
    "package_name",
    "packaged",
]

GROUP = "onparse.models"  # the entry-point group a model package declares its model under
CATALOGUE = {  # every shipped model beside the default, each its own package: its language
    "onlstm-ctb": "zh",
    "onlstm-negra": "de",
    "pcfg-negra": "de",
    "onlstm-wsj-mixed": "en",
    "onlstm-wsj": "en",
    "onlstm-wsj-gpu-r4": "en",
    "onlstm-wsj-distilled-r2": "en",
    "onlstm-wsj-distilled-r3": "en",
}
WHEELS = "dist/models"  # where ``make models`` leaves the packages


def package_name(model: str) -> str:
    """The pip name of a model's package (``onparse-model-onlstm-ctb``)."""
    return f"onparse-model-{model}"


def module_name(model: str) -> str:
    """The import name of a model's package, which holds the model's directory under the model's own name."""
    return "onparse_model_" + model.replace("-", "_").replace(".", "_")


def packaged() -> dict[str, Path]:
    """The models installed as packages here, by name: each entry point's model directory (a package that no longer
    imports, or whose folder is gone, is left out: its name then loads as a model not installed)."""
    found = {}
    for point in entry_points(group=GROUP):
        try:
            folder = Path(str(files(point.value))) / point.name
        except (ImportError, TypeError, ValueError):
            continue
        if (folder / "config.json").is_file():
            found.setdefault(point.name, folder)
    return found


def install_hint(model: str) -> str:
    """The exact commands that install a shipped model not installed here."""
    from onparse import __version__

    wheel = f"{WHEELS}/{module_name(model)}-{__version__}-py3-none-any.whl"
    return f"in a checkout of onparse: make models && pip install {wheel}"


def build_package(model: Path | str, out: Path | str, name: str | None = None) -> Path:
    """Build the wheel of a model directory (a model or an ensemble, its members copied in wherever they lie) into
    ``out``, installable with pip and then loaded by ``name`` (the folder's own name by default); returns the wheel."""
    from onparse import __version__, modeldir

    source = modeldir.locate(model)
    name = name or source.name
    module = module_name(name)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="onparse-package-") as work:
        project = Path(work)
        package = project / module
        package.mkdir()
        (package / "__init__.py").write_text(f'"""The onparse model {name}: onparse loads it by name."""\n')
        _copy_model(source, package / name)
        (project / "pyproject.toml").write_text(
            "[build-system]\n"
            'requires = ["setuptools>=64"]\n'
            'build-backend = "setuptools.build_meta"\n\n'
            "[project]\n"
            f'name = "{package_name(name)}"\n'
            f'version = "{__version__}"\n'
            f'description = "The onparse model {name}"\n'
            'dependencies = ["onparse"]\n\n'
            f'[project.entry-points."{GROUP}"]\n'
            f'"{name}" = "{module}"\n\n'
            "[tool.setuptools]\n"
            f'packages = ["{module}"]\n\n'
            "[tool.setuptools.package-data]\n"
            f'"{module}" = ["{name}/**"]\n'
        )
        done = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), "."],
            cwd=project,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise RuntimeError(f"building {package_name(name)} failed: {done.stderr.strip()[-500:]}")
    return out / f"{module}-{__version__}-py3-none-any.whl"


def build_catalogue(out: Path | str = WHEELS) -> list[Path]:
    """``make models``: the package of every model of the ``CATALOGUE``, from a checkout's ``models/``."""
    return [build_package(name, out) for name in CATALOGUE]


def _copy_model(source: Path, target: Path) -> None:
    """A model directory copied as it loads: an ensemble's members copied into its members/ (those it names elsewhere
    too, under their own folder names), its config naming them there."""
    from onparse import modeldir

    ensemble = modeldir.read_ensemble(source)
    if ensemble is None:
        modeldir.copy_model(source, target)
        return
    target.mkdir(parents=True)
    config = json.loads((source / "config.json").read_text())
    names = []
    for member in ensemble.members:
        inside = member.resolve().is_relative_to(source.resolve())
        relative = member.resolve().relative_to(source.resolve()) if inside else Path("members") / member.name
        if (target / relative).exists():
            raise ValueError(f"two members of {source} would be copied to {relative}")
        modeldir.copy_model(member, target / relative)
        names.append(relative.as_posix())
    config["ensemble"]["members"] = names
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for card in ("card.json", "card.md"):
        if (source / card).is_file():
            shutil.copyfile(source / card, target / card)
