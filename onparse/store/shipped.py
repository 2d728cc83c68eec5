"""Where models are found by name: the default inside onparse's own package, each other shipped model its own pip
package; and a model named by a path. Nothing here imports torch, so a name or path that finds nothing is said at once.

A model package (spaCy's convention) holds one model directory, named as the model, and declares it under the
entry-point group ``onparse.models``, so that once installed the model loads by name, offline, from any folder. A
checkout of onparse holds every shipped model under ``models/`` (an editable install finds them all there);
``make models`` builds the packages (``onparse.store.packaging``).
"""

from __future__ import annotations

import difflib
import logging
import os
from importlib.metadata import entry_points
from importlib.resources import files
from pathlib import Path

from onparse.hardware import one_line

__all__ = [
    "CATALOGUE",
    "DEFAULT_MODEL",
    "MODELS",
    "SHIPPED_BY_LANGUAGE",
    "ModelDirError",
    "installed",
    "installed_names",
    "locate",
    "missing_models",
    "GROUP",
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
    "onlstm-wsj-paper": "en",
    "onlstm-wsj-gpu-r4": "en",
    "onlstm-wsj-distilled-r2": "en",
    "onlstm-wsj-distilled-r3": "en",
}
WHEELS = "dist/models"  # where ``make models`` leaves the packages


def _models_folder() -> Path:
    """The package's models: installed as ``onparse.models``, or a source tree's ``models/`` beside ``onparse/`` (run
    from a checkout without an editable install)."""
    try:
        return Path(str(files("onparse.models")))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "models"


MODELS = _models_folder()  # the shipped models installed with the package, each findable by its name
DEFAULT_MODEL = MODELS / "pcfg-wsj"  # the best on section 22, and a single model (models/*/card.md)
SHIPPED_BY_LANGUAGE = {
    "en": DEFAULT_MODEL.name,
    "de": "pcfg-negra",  # the German model the README installs and names
    "zh": "onlstm-ctb",
}  # a language's model by default
log = logging.getLogger("onparse")


class ModelDirError(RuntimeError):
    """A model directory that is missing, incomplete or corrupted."""


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
        except (Exception, SystemExit) as err:  # a package's own import code runs here: one broken package is said
            if point.value not in _BROKEN:  # once, and the other models still load
                _BROKEN.add(point.value)
                why = f"{type(err).__name__}: {one_line(err)}"
                log.warning(f"the model package {point.value} does not import ({why}): skipped")
            continue
        if (folder / "config.json").is_file():
            found.setdefault(point.name, folder)
    return found


_BROKEN: set[str] = set()  # model packages already said not to import (``packaged``)


def install_hint(model: str) -> str:
    """The exact commands that install a shipped model not installed here."""
    from onparse import __version__

    wheel = f"{WHEELS}/{module_name(model)}-{__version__}-py3-none-any.whl"
    return f"in a checkout of onparse: make models && pip install {wheel}"


def locate(model: Path | str | None = None) -> Path:
    """A model's directory: a path, the name of a shipped model (a folder of models/), or the default.

    A bare name (no ``/``) is a shipped model's before a folder of that name here, which a user means by a path
    (``./onlstm-ctb``); a path is a path, never a shipped model, so a missing folder is an error, not a stand-in."""
    if model is None:
        return DEFAULT_MODEL
    text = str(model)
    if not text:
        raise ModelDirError("no model named '': give a shipped model's name or a model directory's path")
    path = Path(model)
    named = isinstance(model, str) and "/" not in text and os.sep not in text and text not in (".", "..")
    shipped = installed().get(text) if named else None
    if shipped:
        if path.is_dir():
            log.warning(
                f"{text} is a shipped model's name: loading it, not the folder {text} here (give ./{text} for that)"
            )
        return shipped
    bare = text.rstrip("/" + os.sep)
    if not path.exists() and not named and bare != text and "/" not in bare and bare in installed_names():
        raise ModelDirError(f"{text}: no such folder (the slash makes it a path): the shipped model is named {bare}")
    if path.exists() or not named:
        return path
    if text in CATALOGUE:  # a shipped model of its own package, which is not installed here
        raise ModelDirError(f"{text} is a shipped model not installed here: {install_hint(text)}")
    close = difflib.get_close_matches(text, installed_names(), n=3, cutoff=0.6)
    if close:
        raise ModelDirError(
            f"no model named {text!r}, and no such folder: did you mean {' or '.join(close)}? "
            "(onparse models lists them)"
        )
    raise ModelDirError(
        f"no model named {str(model)!r}, and no such folder: the models here are "
        f"{', '.join(installed_names())} (onparse models lists them), or give a model directory's path"
    )


def installed(models: Path | None = None) -> dict[str, Path]:
    """The shipped models that load by name here, each its directory: a folder of ``models`` (default ``MODELS``)
    holding its config (the default model; every shipped model in a checkout), then those installed as their own
    packages (``shipped``)."""
    models = models or MODELS
    inside = (
        [folder for folder in sorted(models.iterdir()) if (folder / "config.json").is_file()] if models.is_dir() else []
    )
    return {**packaged(), **{folder.name: folder for folder in inside}}


def installed_names(models: Path | None = None) -> list[str]:
    """The names of the shipped models that load by name here (``installed``)."""
    return sorted(installed(models))


def missing_models(models: Path | None = None) -> list[dict]:
    """The shipped models not installed here (``shipped.CATALOGUE``): each its name, language and the commands that
    install it."""
    here = installed(models)
    return [
        {"name": name, "language": language, "install": install_hint(name)}
        for name, language in sorted(CATALOGUE.items())
        if name not in here
    ]
