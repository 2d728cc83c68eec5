"""The model directory: config, vocabulary, weights and card, loaded safely.

    config.json   the member's family (ON-LSTM or PCFG), its architecture (OnlstmConfig or PcfgConfig)
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from onparse.families import FamilyModel, OnlstmConfig, Settings, checked_layer, named, of
from onparse.hardware import free_memory, one_line
from onparse.settings import Layer, Reading
from onparse.store.atomic import replacing_file, replacing_folder
from onparse.store.folders import (  # what a folder is, read without torch: re-exported as the model directory's API
    CARD_FIGURES as CARD_FIGURES,
)
from onparse.store.folders import (
    ENSEMBLE_FILES as ENSEMBLE_FILES,
)
from onparse.store.folders import (
    MODEL_FILES as MODEL_FILES,
)
from onparse.store.folders import (
    MOST_MEMBERS as MOST_MEMBERS,
)
from onparse.store.folders import (
    EnsembleDir as EnsembleDir,
)
from onparse.store.folders import (
    _card,
)
from onparse.store.folders import (
    available_models as available_models,
)
from onparse.store.folders import (
    card_figure as card_figure,
)
from onparse.store.folders import (
    check_output_file as check_output_file,
)
from onparse.store.folders import (
    copy_model as copy_model,
)
from onparse.store.folders import (
    is_ensemble_folder as is_ensemble_folder,
)
from onparse.store.folders import (
    is_model_folder as is_model_folder,
)
from onparse.store.folders import (
    model_fingerprint as model_fingerprint,
)
from onparse.store.folders import (
    pointing_at as pointing_at,
)
from onparse.store.folders import (
    read_ensemble as read_ensemble,
)
from onparse.store.folders import (
    read_json as read_json,
)
from onparse.store.folders import (
    refuse_output_file as refuse_output_file,
)
from onparse.store.folders import (
    refuse_to_replace as refuse_to_replace,
)
from onparse.store.folders import (
    save_ensemble as save_ensemble,
)
from onparse.store.folders import (
    without_figures as without_figures,
)
from onparse.store.folders import (
    write_json as write_json,
)
from onparse.store.shipped import (  # 0.2's names here for the shipped models' folder and the default
    DEFAULT_MODEL as DEFAULT_MODEL,
)
from onparse.store.shipped import (
    MODELS as MODELS,
)
from onparse.store.shipped import (  # where models are found by name: modeldir.locate and the rest read on
    ModelDirError,
    locate,
)
from onparse.text.language import ENGLISH
from onparse.text.vocabulary import Vocabulary

Model = FamilyModel  # a member of any family: its family's model class (``Family.part("model")``)

log = logging.getLogger("onparse")
FILES = ("config.json", "vocab.txt", "weights.pt")
PRECISIONS = ("bf16", "int8", "int4-words")  # how weights.pt stores the weights
SCALE = ".scale"  # suffix of a quantized matrix's per-row scales


@dataclass
class ModelBundle:
    """A loaded model with what is needed to feed it and pick its layer."""

    model: Model
    vocab: Vocabulary
    default_layer: Layer  # 1-based, as users count layers, or MEAN; a grammar's is SPANS
    path: Path | None  # None for a model not read from disk (one being trained)
    card: dict = field(default_factory=dict)
    language: str = ENGLISH  # what its text is tokenized as (onparse.text.language)
    reading: Reading = field(default_factory=Reading)  # what it reads of a sentence (onparse.text.reading)

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
    two averages (fp32), and the tables an update computes besides them for a few sentences (a grammar's rules:
    ``Family.rule_entries``)."""
    weights = sum(math.prod(shape) for shape in expected_shapes(config).values())
    return 4 * (4 * weights + 8 * of(config).rule_entries(config))


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
    not_finite = next((name for name, tensor in state.items() if not torch.isfinite(tensor).all()), None)
    if not_finite:  # a model that diverged is said where it was made, not only where it is loaded
        raise ValueError(
            f"the trained weights hold NaN or infinite values (first in {not_finite}): training diverged, so no "
            f"model is written to {path}; try a smaller learning rate or focus"
        )
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
    54.73 with its word tables in 4 bits against 54.70 in bf16.
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
    family = config.get("family", OnlstmConfig.family)  # folders written before the second family have none
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


def _what_folder(path: Path) -> str | None:
    """What a folder given as a model is where it is a fit's or a training run's (their parser is in ``model/``):
    where the model is, or that it is not made yet and how to go on."""
    for record, kind, command in (("fit.json", "a fit", "onparse fit"), ("history.jsonl", "a training run", "")):
        if (path / record).is_file():
            if (path / "model" / "config.json").is_file():
                return f"is {kind}'s folder, not a model: its parser is {path / 'model'}"
            go_on = f" ({command} --out {path} --resume goes on with it)" if command else " (its --resume goes on)"
            return f"is {kind}'s folder, which has not made its model yet{go_on}"
    return None


def load(path: Path | str | None = None) -> ModelBundle:
    """Load a model directory (a path or a shipped model's name; the default model by default) in float32.

    The config and the weights' shapes are checked against each other before
    the model is built, so a damaged or absurd directory is refused at once;
    weights holding NaN or infinity are refused too (they would parse every
    sentence into a right-branching tree without a word of warning).

    Long: the one validator of a model directory, its checks in the order a damaged folder is found out.
    """
    path = locate(path)
    if not path.is_dir():
        raise ModelDirError(f"{path}: no such model directory")
    missing = [name for name in FILES if not (path / name).is_file()]
    if missing:
        raise ModelDirError(f"{path}: {_what_folder(path) or 'model directory lacks ' + ', '.join(missing)}")
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
