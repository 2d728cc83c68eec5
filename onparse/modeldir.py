"""The model directory: config, vocabulary, weights and card, loaded safely.

    config.json   the member's family (ON-LSTM or PCFG), its architecture (ModelConfig or GrammarConfig)
                  and the default parsing layer (a grammar's: "spans")
    vocab.txt     one normalized word per line; line k is id k
    weights.pt    state dict, read with ``torch.load(weights_only=True)``: bf16, or (config
                  ``"weights": "int8"``) matrices as int8 rows with a float scale each, or
                  (``"int4-words"``) the same with the word tables (a row per word) in 4 bits
    card.json     training recipe and measured figures (card.md renders them)

An ensemble directory has only config.json, ``{"ensemble": {"members": [...],
"right_branching_voter": false}}``, and a card: members are model
directories, named relative to the ensemble's (inside it or anywhere else),
each parsing with its own default layer. ``right_branching_voter`` is
false, true (a right-branching tree casts one vote, as a member does) or a
number of votes.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from onparse.atomic import check_writable, replacing_file, replacing_folder, same_file
from onparse.families import MEAN, ModelConfig, Settings, checked_layer, named, of
from onparse.hardware import free_memory, one_line
from onparse.language import ENGLISH
from onparse.settings import Layer, Reading
from onparse.shipped import (  # where models are found by name: modeldir.locate and the rest read on
    MODELS,
    ModelDirError,
    installed,
    locate,
    packaged,
)
from onparse.vocabulary import Vocabulary

Model = torch.nn.Module  # a member of any family: its family's model class (``Family.part("model")``)

log = logging.getLogger("onparse")
FILES = ("config.json", "vocab.txt", "weights.pt")
PRECISIONS = ("bf16", "int8", "int4-words")  # how weights.pt stores the weights
SCALE = ".scale"  # suffix of a quantized matrix's per-row scales
MOST_MEMBERS = 64  # each member is a model in memory: far more than any ensemble that helps (vote gains end near ten)


@dataclass
class ModelBundle:
    """A loaded model with what is needed to feed it and pick its layer."""

    model: Model
    vocab: Vocabulary
    default_layer: Layer  # 1-based, as users count layers, or MEAN; a grammar's is SPANS
    path: Path | None  # None for a model not read from disk (one being trained)
    card: dict = field(default_factory=dict)
    language: str = ENGLISH  # what its text is tokenized as (onparse.language)
    reading: Reading = field(default_factory=Reading)  # what it reads of a sentence (onparse.reading)

    @property
    def family(self) -> str:
        return self.model.config.family


def new_model(config: Settings) -> Model:
    """A member of the family ``config`` describes, with fresh weights."""
    return of(config).part("model")(config)


def expected_shapes(config: Settings) -> dict[str, tuple[int, ...]]:
    """Each weight's shape for ``config``, found without allocating a model of that size."""
    with torch.device("meta"):
        return {name: tuple(tensor.shape) for name, tensor in new_model(config).state_dict().items()}


def training_bytes(config: Settings) -> int:
    """About what training a model of ``config`` holds at once, in bytes: its weights with their gradients and Adam's
    two averages (fp32), and a grammar's rule tables for an update of a few sentences (joint productions: one
    entry per nonterminal and pair of symbols)."""
    weights = sum(math.prod(shape) for shape in expected_shapes(config).values())
    symbols = getattr(config, "nonterminals", 0) + getattr(config, "preterminals", 0)
    rules = (
        getattr(config, "nonterminals", 0) * symbols * (symbols if getattr(config, "productions", "") == "joint" else 2)
    )
    return 4 * (4 * weights + 8 * rules)


def check_memory(config: Settings) -> None:
    """ValueError, before anything of that size is allocated, for a model whose training would not fit in the memory
    this process may still take (``hardware.free_memory``)."""
    need, free = training_bytes(config), free_memory()
    if free is not None and need > free:
        raise ValueError(
            f"training a model of these sizes needs about {need / 2**30:,.1f} GiB and this process may take "
            f"{free / 2**30:,.1f} GiB: choose smaller sizes"
        )


def save(
    path: Path,
    model: Model,
    vocab: Vocabulary,
    default_layer: Layer,
    card: dict | None = None,
    precision: str = "bf16",
    language: str = ENGLISH,
    reading: Reading = Reading(),
) -> None:
    """Write a model directory, replacing any at ``path`` only once complete.

    bf16 weights keep the paper-size model near 50 MB; ``precision="int8"``
    halves that again, each matrix row stored as int8 with its own scale;
    ``"int4-words"`` halves the word tables once more (most of a small model).
    """
    state = {k: v.detach().float() for k, v in model.state_dict().items()}
    with replacing_folder(path) as folder:
        _write_config(folder, model.config, default_layer, precision, language, reading)
        vocab.save(folder / "vocab.txt")
        save_tensors(
            {k: v.to(torch.bfloat16) for k, v in state.items()}
            if precision == "bf16"
            else quantize(state, word_table_rows(precision, len(vocab))),
            folder / "weights.pt",
        )
        if card is not None:
            write_json(folder / "card.json", card)


def write_json(path: Path, value: dict) -> None:
    """A config or card file, written whole or not at all (``atomic.replacing_file``)."""
    with replacing_file(path) as file:
        file.write(json.dumps(value, indent=2) + "\n")


def save_tensors(value: object, path: Path) -> None:
    """``torch.save``, with a failed write (a full disk) an OSError naming the file, as other writes give."""
    try:
        torch.save(value, path)
    except RuntimeError as err:  # torch's writer reports a full disk as a RuntimeError
        raise OSError(28, f"cannot be written ({one_line(err, 80)})", str(path)) from None


def word_table_rows(precision: str, vocab_size: int) -> int | None:
    """The row count that marks a word table stored in 4 bits at ``precision`` (None: none is)."""
    return vocab_size if precision == "int4-words" else None


def is_word_table(shape: tuple[int, ...], word_rows: int | None) -> bool:
    """A matrix with a row per word (an ON-LSTM's embeddings, a grammar's emissions) that packs two to a byte.

    A word's row is read alone, so its 16 levels err for that word only; on CTB 30 the Chinese fit's vote read
    54.73 with its word tables in 4 bits against 54.70 in bf16 (experiments/notebook.md).
    """
    return word_rows is not None and len(shape) == 2 and shape[0] == word_rows and shape[1] % 2 == 0


def quantize(state: dict[str, torch.Tensor], word_rows: int | None = None) -> dict[str, torch.Tensor]:
    """Matrices as int8 rows scaled by each row's largest magnitude / 127, and (``word_rows`` given) the word tables
    as 4-bit rows scaled by it / 7, two to a uint8; vectors in bf16."""
    stored = {}
    for name, tensor in state.items():
        if tensor.dim() != 2:
            stored[name] = tensor.to(torch.bfloat16)
            continue
        levels = 7 if is_word_table(tuple(tensor.shape), word_rows) else 127
        scale = tensor.abs().amax(dim=1).clamp_min(1e-12) / levels
        rows = torch.round(tensor / scale[:, None]).clamp(-levels, levels).to(torch.int16)
        stored[name] = (
            rows.to(torch.int8) if levels == 127 else ((rows[:, 0::2] + 8) | ((rows[:, 1::2] + 8) << 4)).to(torch.uint8)
        )
        stored[name + SCALE] = scale
    return stored


def dequantize(stored: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The float32 weights ``quantize`` stored."""
    return {
        name: _levels(tensor) * stored[name + SCALE][:, None] if name + SCALE in stored else tensor.float()
        for name, tensor in stored.items()
        if not name.endswith(SCALE)
    }


def _levels(tensor: torch.Tensor) -> torch.Tensor:
    """A quantized matrix's integer levels as floats: int8 as stored, a uint8 matrix's 4-bit pairs (low half first)
    unpacked to twice its columns."""
    if tensor.dtype != torch.uint8:
        return tensor.float()
    pairs = torch.stack([(tensor & 15).to(torch.int16) - 8, (tensor >> 4).to(torch.int16) - 8], dim=2)
    return pairs.reshape(tensor.shape[0], -1).float()


def _write_config(
    path: Path,
    config: Settings,
    default_layer: Layer,
    precision: str,
    language: str = ENGLISH,
    reading: Reading = Reading(),
) -> None:
    checked_layer(default_layer, config)
    if precision not in PRECISIONS:
        raise ValueError(f"weights are stored as one of {', '.join(PRECISIONS)}, not {precision!r}")
    text = (
        json.dumps(
            {
                "family": config.family,
                "model": asdict(config),
                "default_layer": default_layer,
                "weights": precision,
                "language": language,
                "reading": asdict(reading),
            },
            indent=2,
        )
        + "\n"
    )
    with replacing_file(path / "config.json") as file:
        file.write(text)


@dataclass
class EnsembleDir:
    """What an ensemble directory lists: its members and how many votes a right-branching tree casts (true: one)."""

    path: Path
    members: list[Path]
    right_branching_voter: float = 0.0
    card: dict = field(default_factory=dict)
    layers: list[Layer] | None = None  # each member's layer where the ensemble chose it; else the member's own


def save_ensemble(
    path: Path,
    members: list[Path],
    right_branching_voter: float = 0.0,
    card: dict | None = None,
    layers: list[Layer] | None = None,
) -> None:
    """Write an ensemble directory naming ``members`` relative to it (and, where given, each one's layer)."""
    path.mkdir(parents=True, exist_ok=True)
    names = [os.path.relpath(Path(member).resolve(), path.resolve()) for member in members]
    ensemble = {
        "ensemble": {
            "members": names,
            "right_branching_voter": right_branching_voter,
            **({"layers": layers} if layers is not None else {}),
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
        "dev_f1": card_figure(_card(path)),
        "path": str(path),
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


def languages(path: Path | str | None = None) -> set[str]:
    """The languages a model or an ensemble's members read (their configs alone, no weights loaded): one, or an
    ensemble gone wrong."""
    ensemble = read_ensemble(path)
    folders = ensemble.members if ensemble else [locate(path)]
    return {_model_config(folder)[3] for folder in folders}


def check_languages(text_language: str, **models: Path | str) -> None:
    """ValueError unless every model named (by its role: teacher=..., student=...) reads ``text_language``."""
    for role, model in models.items():
        found = languages(model)
        if found != {text_language}:
            raise ValueError(
                f"the {role} {model} reads {', '.join(sorted(found))} text; this text is {text_language!r}: "
                "a model learns and teaches in its own language"
            )


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
        or set(spec) - {"members", "right_branching_voter", "layers"}
    ):
        raise ModelDirError(
            f"{path / 'config.json'}: an ensemble's config holds only "
            '{"ensemble": {"members": [...], "right_branching_voter": true, false or votes, "layers": [...]}}'
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
    return EnsembleDir(path, [path / member for member in members], voter, _card(path), layers)


def _card(path: Path) -> dict:
    return read_json(path / "card.json") if (path / "card.json").is_file() else {}


def _model_config(path: Path) -> tuple[Settings, Layer, str, str, Reading]:
    """A single model's architecture (its family's), default layer, weights precision, language and reading, each
    checked for type and range."""
    config = read_json(path / "config.json")
    unknown = set(config) - {"family", "model", "default_layer", "weights", "language", "reading"}
    if unknown or not isinstance(config.get("model"), dict):
        raise ModelDirError(
            f"{path / 'config.json'}: expected keys family, model, default_layer, weights, language and reading"
            + (f" (unknown: {', '.join(sorted(unknown))})" if unknown else " (no model settings)")
        )
    family = config.get("family", ModelConfig.family)  # folders written before the second family have none
    try:
        model_config = named(family).settings(**config["model"])
        model_config.check()
    except (TypeError, ValueError) as err:
        raise ModelDirError(f"{path / 'config.json'}: {err}") from None
    try:
        layer = checked_layer(config.get("default_layer"), model_config)
    except ValueError as err:
        raise ModelDirError(f"{path / 'config.json'}: default_layer: {err}") from None
    precision = config.get("weights", "bf16")
    if precision not in PRECISIONS:
        raise ModelDirError(
            f"{path / 'config.json'}: weights must be one of {', '.join(PRECISIONS)}, not {precision!r}"
        )
    language = config.get("language", ENGLISH)
    if not (isinstance(language, str) and language.isascii() and language.replace("-", "").isalpha()):
        raise ModelDirError(
            f"{path / 'config.json'}: language must be a language code such as en, de or zh, not {language!r}"
        )
    try:
        reading = Reading.from_dict(config.get("reading", {}))
    except (TypeError, ValueError) as err:
        raise ModelDirError(f"{path / 'config.json'}: {err}") from None
    return model_config, layer, precision, language, reading


def load(path: Path | str | None = None) -> ModelBundle:
    """Load a model directory (a path or a shipped model's name; the default model by default) in float32.

    The config and the weights' shapes are checked against each other before
    the model is built, so a damaged or absurd directory is refused at once;
    weights holding NaN or infinity are refused too (they would parse every
    sentence into a right-branching tree without a word of warning).
    """
    path = locate(path)
    if not path.is_dir():
        raise ModelDirError(f"{path}: no such model directory")
    missing = [name for name in FILES if not (path / name).is_file()]
    if missing:
        raise ModelDirError(f"{path}: model directory lacks {', '.join(missing)}")
    model_config, layer, precision, language, reading = _model_config(path)
    card = _card(path)
    try:
        vocab = Vocabulary.load(path / "vocab.txt")
    except (OSError, ValueError) as err:  # UnicodeDecodeError is a ValueError
        raise ModelDirError(f"{path / 'vocab.txt'}: cannot be read ({one_line(err, 120)})") from None
    if len(vocab) != model_config.vocab_size:
        raise ModelDirError(f"{path}: vocab.txt has {len(vocab)} words, config says {model_config.vocab_size}")
    try:  # weights_only: a file that would need to run code to load is refused, never run
        state = torch.load(path / "weights.pt", map_location="cpu", weights_only=True, mmap=True)
    except Exception:
        raise ModelDirError(
            f"{path}: weights.pt is not a plain file of tensors (damaged, truncated, or carrying code)"
        ) from None
    expected = expected_shapes(model_config)
    kinds = dict.fromkeys(expected, "float")  # what each tensor is stored as: float, or quantized rows
    if precision != "bf16":
        word_rows = word_table_rows(precision, model_config.vocab_size)
        kinds.update(
            {
                name: "uint8" if is_word_table(shape, word_rows) else "int8"
                for name, shape in expected.items()
                if len(shape) == 2
            }
        )
        kinds.update({name + SCALE: "float" for name, shape in expected.items() if len(shape) == 2})
        expected.update({name + SCALE: shape[:1] for name, shape in list(expected.items()) if len(shape) == 2})
        expected.update(
            {
                name: (shape[0], shape[1] // 2)
                for name, shape in list(expected.items())
                if is_word_table(shape, word_rows)
            }
        )
    tensors = isinstance(state, dict) and all(isinstance(tensor, torch.Tensor) for tensor in state.values())
    found = {name: tuple(tensor.shape) for name, tensor in state.items()} if tensors else {}
    if found != expected:  # checked before anything the size of the config is built
        wrong = sorted(set(expected) ^ set(found)) or [name for name in expected if expected[name] != found[name]]
        raise ModelDirError(
            f"{path}: weights.pt does not fit config.json (first difference: {wrong[0]}: "
            f"{found.get(wrong[0])} in the weights, {expected.get(wrong[0])} by the config)"
        )

    def stored_as(tensor: torch.Tensor) -> str:
        return "float" if tensor.is_floating_point() else str(tensor.dtype).removeprefix("torch.")

    retyped = next((name for name, tensor in state.items() if stored_as(tensor) != kinds[name]), None)
    if retyped:  # weights cast to another type load as other numbers: another tree, without a word
        raise ModelDirError(
            f"{path}: weights.pt stores {retyped} as {state[retyped].dtype}, where config.json's {precision} "
            f"weights hold {kinds[retyped]} values: the model is damaged"
        )
    not_finite = next(
        (name for name, tensor in state.items() if tensor.is_floating_point() and not torch.isfinite(tensor).all()),
        None,
    )
    if not_finite:
        raise ModelDirError(
            f"{path}: weights.pt holds NaN or infinite values (first in {not_finite}): the model is damaged"
        )
    weights = state if precision == "bf16" else dequantize(state)
    model = of(model_config).part("model").from_weights(model_config, weights).eval()
    return ModelBundle(model, vocab, layer, path, card, language, reading)
