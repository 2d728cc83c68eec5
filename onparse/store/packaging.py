"""A model directory as its own pip package (spaCy's convention): installed, it loads by name from any folder
(``shipped`` finds it by entry point). ``make models`` packs every shipped model but the default so; a model a user
trained packs the same way.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from onparse import __version__
from onparse.store import modeldir
from onparse.store.atomic import same_file
from onparse.store.shipped import CATALOGUE, DEFAULT_MODEL, GROUP, WHEELS, installed, module_name, package_name

__all__ = ["build_catalogue", "build_package"]


def build_package(model: Path | str, out: Path | str, name: str | None = None) -> Path:
    """Build the wheel of a model directory (a model or an ensemble, its members copied in wherever they lie) into
    ``out``, installable with pip and then loaded by ``name`` (the folder's own name by default); returns the wheel."""
    source = modeldir.locate(model)
    name = name or source.name
    shipped = installed().get(name)
    if name in (*CATALOGUE, DEFAULT_MODEL.name) and not (shipped and same_file(shipped, source)):
        raise ValueError(
            f"{name} is the name of a shipped model, which would hide this package once installed: give it another "
            "name (build_package(model, out, name=...))"
        )
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


def build_catalogue(models: Path | str = "models", out: Path | str = WHEELS) -> list[Path]:
    """``make models``: the package of every model of the ``CATALOGUE``, from a checkout's ``models`` folder."""
    return [build_package(Path(models) / name, out, name) for name in CATALOGUE]


def _copy_model(source: Path, target: Path) -> None:
    """A model directory copied as it loads: an ensemble's members copied into its members/ (those it names elsewhere
    too, under their own folder names), its config naming them there."""
    ensemble = modeldir.read_ensemble(source)
    if ensemble is None:
        modeldir.copy_model(source, target)
        return
    ensemble.check_members()  # a linked member replaced since is refused, not copied in
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
