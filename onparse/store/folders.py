"""What a model folder is, without loading it (no torch): an ensemble's members, a model's or an ensemble's own
files, the JSON of configs and cards, the figures a card records, and whether replacing a folder or writing a file
loses anything (the one check before anything is deleted or written). ``modeldir`` loads and saves the weights.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from onparse.families import MEAN, checked_layer
from onparse.hardware import one_line
from onparse.settings import Layer
from onparse.store.atomic import check_writable, replacing_file, same_file
from onparse.store.shipped import MODELS, ModelDirError, installed, locate, packaged
from onparse.text.language import ENGLISH

MOST_MEMBERS = 64  # each member is a model in memory: far more than any ensemble that helps (vote gains end near ten)


def write_json(path: Path, value: dict) -> None:
    """A config or card file, written whole or not at all (``atomic.replacing_file``)."""
    with replacing_file(path) as file:
        file.write(json.dumps(value, indent=2) + "\n")


@dataclass
class EnsembleDir:
    """What an ensemble directory lists: its members and how many votes a right-branching tree casts (true: one)."""

    path: Path
    members: list[Path]
    right_branching_voter: float = 0.0
    card: dict = field(default_factory=dict)
    layers: list[Layer] | None = None  # each member's layer where the ensemble chose it; else the member's own
    fingerprints: list[str | None] | None = None  # each linked member's weights as the ensemble was made (``linked``)

    def check_members(self) -> None:
        """ModelDirError for a member named in place whose files are not those the ensemble was made with: a
        renamed or retrained folder at the linked name would otherwise vote silently (a vote that linked
        ``../onlstm-wsj`` read 61.1 instead of 53.4 once another model took that name). Parsing, quantizing and
        packaging an ensemble each check it first."""
        for member, recorded in zip(self.members, self.fingerprints or []):
            if recorded and (member / "weights.pt").is_file() and model_fingerprint(member, recorded) != recorded:
                raise ModelDirError(
                    f"{self.path / 'config.json'}: member {member} is not the model this ensemble was made with (its "
                    "files changed since: renamed, retrained or replaced); make the ensemble again with "
                    "`onparse ensemble`, or put the model it named back"
                )


FINGERPRINTED = ("config.json", "vocab.txt", "weights.pt")  # what a member loads from, so what must not change
FINGERPRINT_PREFIX = "files:"  # a fingerprint of FINGERPRINTED; a bare hash is of weights.pt alone (before 0.4)


def model_fingerprint(model: Path, like: str = FINGERPRINT_PREFIX) -> str:
    """A model directory's loaded files as a short hash; ``like`` an older fingerprint gives one of its kind (a bare
    hash: the weights alone), so ensembles made before keep loading."""
    digest = hashlib.sha256()
    names = FINGERPRINTED if like.startswith(FINGERPRINT_PREFIX) else ("weights.pt",)
    for name in names:
        if not (model / name).is_file():
            continue
        if len(names) > 1:
            digest.update(name.encode() + b"\0")
        with open(model / name, "rb") as file:
            while block := file.read(1 << 20):
                digest.update(block)
    hashed = digest.hexdigest()[:16]
    return FINGERPRINT_PREFIX + hashed if like.startswith(FINGERPRINT_PREFIX) else hashed


def linked(member: Path, ensemble: Path) -> bool:
    """Whether ``member`` lies outside the ``ensemble`` folder (named in place, not owned by it)."""
    return not Path(member).resolve().is_relative_to(ensemble.resolve())


def save_ensemble(
    path: Path,
    members: list[Path],
    right_branching_voter: float = 0.0,
    card: dict | None = None,
    layers: list[Layer] | None = None,
) -> None:
    """Write an ensemble directory naming ``members`` relative to it (and, where given, each one's layer), with the
    fingerprint of each member named in place outside it (``EnsembleDir.check_members``)."""
    path.mkdir(parents=True, exist_ok=True)
    names = [os.path.relpath(Path(member).resolve(), path.resolve()) for member in members]
    fingerprints = [model_fingerprint(Path(member)) if linked(member, path) else None for member in members]
    ensemble = {
        "ensemble": {
            "members": names,
            "right_branching_voter": right_branching_voter,
            **({"layers": layers} if layers is not None else {}),
            **({"fingerprints": fingerprints} if any(fingerprints) else {}),
        }
    }
    write_json(path / "config.json", ensemble)
    if card is not None:
        write_json(path / "card.json", card)


def pointing_at(target: Path | str, models: Path = MODELS) -> Path | None:
    """A shipped ensemble (a folder of ``models``) holding a member at or inside ``target``, which rewriting would
    change."""
    target = Path(target).resolve()
    for folder in sorted(models.iterdir()) if models.is_dir() else []:
        ensemble = read_ensemble(folder) if (folder / "config.json").is_file() else None
        if (
            ensemble
            and folder.resolve() != target
            and any(member.resolve() == target or target in member.resolve().parents for member in ensemble.members)
        ):
            return folder
    return None


MODEL_FILES = frozenset(
    {"config.json", "vocab.txt", "weights.pt", "card.json", "card.md"}
)  # all a model directory holds


ENSEMBLE_FILES = frozenset({"config.json", "card.json", "card.md", "members"})  # all an ensemble directory holds


def is_model_folder(path: Path) -> bool:
    """Whether ``path`` is a model directory holding nothing else (a real folder, not a link; its config a model's)."""
    if path.is_symlink() or not path.is_dir() or not (path / "config.json").is_file():
        return False
    return all(entry.name in MODEL_FILES and entry.is_file() and not entry.is_symlink() for entry in path.iterdir())


def is_ensemble_folder(path: Path) -> bool:
    """Whether ``path`` is an ensemble directory holding nothing else (its members/ holding model directories alone)."""
    if path.is_symlink() or not path.is_dir() or not (path / "config.json").is_file():
        return False
    try:
        if "ensemble" not in read_json(path / "config.json"):
            return False
    except ModelDirError:
        return False
    members = path / "members"
    return all(entry.name in ENSEMBLE_FILES for entry in path.iterdir()) and (
        not members.exists()
        or (
            members.is_dir()
            and not members.is_symlink()
            and all(is_model_folder(member) for member in members.iterdir())
        )
    )


def _shipped_places(models: Path) -> list[Path]:
    """Where shipped models lie: ``models`` and each model package's folder, never written into."""
    return [models.resolve(), *(folder.parent.resolve() for folder in packaged().values())]


def refuse_to_replace(target: Path, is_own_kind, kind: str, models: Path = MODELS) -> None:
    """ModelDirError unless replacing ``target`` loses nothing: a folder of ``kind`` (``is_own_kind``) or nothing at
    all, outside the shipped ``models``, that no shipped ensemble points into. Called before anything is deleted."""
    target = Path(target)
    resolved = target.resolve()
    if any(
        resolved == shipped or shipped in resolved.parents or resolved in shipped.parents
        for shipped in _shipped_places(models)
    ):
        raise ModelDirError(f"{target} is or holds a shipped model: it is never replaced; choose another --out")
    holder = pointing_at(target, models)
    if holder:
        raise ModelDirError(
            f"{target} holds a member of {holder}: rewriting it would change that model; choose another --out"
        )
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise ModelDirError(f"{target} is not a folder onparse wrote: choose another --out")
    if target.is_dir() and any(target.iterdir()) and not is_own_kind(target):
        raise ModelDirError(
            f"{target} holds files that are not {kind}'s: nothing there is deleted; choose another --out"
        )


def refuse_output_file(path: Path | str, models: Path = MODELS) -> None:
    """ModelDirError for an output file that would replace a model's own file: one inside the shipped models, inside a
    folder a shipped ensemble names, or in a model or ensemble directory. Called before anything is written."""
    folder = Path(path).resolve().parent
    if any(folder == shipped or shipped in folder.parents for shipped in _shipped_places(models)) or pointing_at(
        folder, models
    ):
        raise ModelDirError(f"{path} lies inside a shipped model: it is never written; choose another output file")
    if is_model_folder(folder) or is_ensemble_folder(folder):
        raise ModelDirError(
            f"{path} lies in the model directory {folder}: writing it there could break the model; "
            "choose another output file"
        )


def check_output_file(output: str, input_path: str | None, reads_stdin: bool) -> None:
    """The one check of an output file, before anything is read or written: ModelDirError where writing it would
    lose data (it is the input file, the file standard input reads, or a model's own file: ``refuse_output_file``);
    OSError where it cannot be written where it is (``atomic.check_writable``)."""
    if input_path not in (None, "-") and same_file(input_path, output):
        raise ModelDirError(f"--output {output} is the input file: writing it would destroy the input")
    if reads_stdin and same_file(sys.stdin, output):
        raise ModelDirError(f"--output {output} is the file standard input reads: writing it would destroy the input")
    refuse_output_file(output)
    check_writable(Path(output))


def copy_model(source: Path, target: Path) -> None:
    """Copy a model directory's own files (``MODEL_FILES``) to ``target``, never what else lies there, never
    through a link.

    A model folder that shares is the files a model needs: a link inside it
    (to a private folder, to ``/``) is neither followed nor copied.
    """
    target.mkdir(parents=True, exist_ok=True)
    for name in sorted(MODEL_FILES):
        found = source / name
        if found.is_symlink():
            raise ModelDirError(
                f"{found} is a symbolic link: a copied model takes only its own files (copy the file in, or --link)"
            )
        if found.is_file():
            shutil.copyfile(found, target / name)


def available_models(models: Path | None = None) -> list[dict]:
    """Every model that loads by name here: its name, language, what it is (a model, or an ensemble of N), its size on
    disk, the dev figure its card records, and where it lives; a damaged one by its name, its place and what is wrong
    (``broken``), so that one bad file hides none of the others."""
    found = []
    for name, path in sorted(installed(models).items()):
        try:
            found.append(_described(name, path))
        except (ModelDirError, OSError) as err:
            found.append({"name": name, "path": str(path), "broken": one_line(err, 200)})
    return found


def _described(name: str, path: Path) -> dict:
    ensemble = read_ensemble(path)
    folders = ensemble.members if ensemble else [path]
    config = read_json(folders[0] / "config.json")
    size = sum(file.stat().st_size for folder in {path, *folders} for file in folder.iterdir() if file.is_file())
    return {
        "name": name,
        "language": config.get("language", ENGLISH),
        "kind": f"ensemble of {len(folders)}" if ensemble else "model",
        "megabytes": round(size / 1e6, 1),
        "dev_f1": card_figure(card := _card(path)),
        "path": str(path),
        **({"for": card["for"]} if isinstance(card.get("for"), str) else {}),  # a model kept for research says so
    }


CARD_FIGURES = (
    "rescored",
    "int8_change",
    "dev",
)  # where cards keep figures measured on their own weights, as card_figure reads them


def card_figure(card: dict) -> dict | None:
    """The dev set and sentence F1 a shipped model's card records (cards of different ages keep it in different places,
    ``CARD_FIGURES``; a figure scored again under a corrected protocol, ``rescored``, comes first); None where the
    card holds no figure that is a number."""
    is_figure = lambda value: type(value) in (int, float) and math.isfinite(value)  # noqa: E731
    rescored, change = card.get("rescored"), card.get("int8_change")
    if isinstance(rescored, dict) and is_figure(rescored.get("sentence_f1")):
        return {"gold": rescored.get("gold"), "sentence_f1": rescored["sentence_f1"]}
    if isinstance(change, dict) and is_figure(change.get("after")):
        return {"gold": change.get("gold"), "sentence_f1": change["after"]}
    dev = card.get("dev")
    for gold, figures in (dev if isinstance(dev, dict) else {}).items():
        if isinstance(figures, dict) and is_figure(figures.get("sentence_f1")):
            return {"gold": gold, "sentence_f1": round(figures["sentence_f1"], 2)}
    return None


def without_figures(card: dict) -> dict:
    """``card`` less the figures measured on the weights it describes: what a copy of other weights may keep."""
    return {key: value for key, value in card.items() if key not in CARD_FIGURES}


def read_json(path: Path) -> dict:
    """A JSON object from a model or run folder's small file; ModelDirError naming the file otherwise."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:  # RecursionError: brackets nested thousands deep
        reason = one_line(err, 120)
        raise ModelDirError(f"{path}: not readable as JSON ({reason})") from None
    if not isinstance(value, dict):
        raise ModelDirError(f"{path}: holds {type(value).__name__}, not a JSON object")
    return value


def read_ensemble(path: Path | str | None = None) -> EnsembleDir | None:
    """The ensemble a directory describes, or None for a single model's directory (``load`` checks that one)."""
    path = locate(path)
    if not (path / "config.json").is_file():
        return None
    config = read_json(path / "config.json")
    if "ensemble" not in config:
        return None
    spec = config["ensemble"]
    members = spec.get("members") if isinstance(spec, dict) else None
    if (
        set(config) != {"ensemble"}
        or not isinstance(spec, dict)
        or set(spec) - {"members", "right_branching_voter", "layers", "fingerprints"}
    ):
        raise ModelDirError(
            f"{path / 'config.json'}: an ensemble's config holds only "
            '{"ensemble": {"members": [...], "right_branching_voter": true, false or votes, "layers": [...], '
            '"fingerprints": [...]}}'
        )
    if not isinstance(members, list) or not members or not all(isinstance(m, str) and m for m in members):
        raise ModelDirError(f"{path / 'config.json'}: the ensemble's members must be a non-empty list of folder names")
    if len(members) > MOST_MEMBERS:
        raise ModelDirError(
            f"{path / 'config.json'}: {len(members)} members is more than the {MOST_MEMBERS} an ensemble may hold"
        )
    voter = spec.get("right_branching_voter", False)
    if not isinstance(voter, (bool, int, float)) or not 0 <= voter < float("inf"):
        raise ModelDirError(
            f"{path / 'config.json'}: right_branching_voter must be true, false or a number of votes (0 or more), "
            f"not {voter!r}"
        )
    layers = spec.get("layers")
    if layers is not None and not (isinstance(layers, list) and len(layers) == len(members)):
        raise ModelDirError(f"{path / 'config.json'}: layers must list one layer (1, 2, ... or {MEAN!r}) per member")
    try:
        layers = None if layers is None else [checked_layer(layer) for layer in layers]
    except ValueError as err:
        raise ModelDirError(f"{path / 'config.json'}: layers must list one layer per member: {err}") from None
    fingerprints = spec.get("fingerprints")
    if fingerprints is not None and not (
        isinstance(fingerprints, list)
        and len(fingerprints) == len(members)
        and all(print_ is None or (isinstance(print_, str) and print_) for print_ in fingerprints)
    ):
        raise ModelDirError(
            f"{path / 'config.json'}: fingerprints must list one per member (a linked member's, else null)"
        )
    return EnsembleDir(path, [path / member for member in members], voter, _card(path), layers, fingerprints)


def _card(path: Path) -> dict:
    return read_json(path / "card.json") if (path / "card.json").is_file() else {}
