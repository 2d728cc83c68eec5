"""The building blocks of settings, below every family and every command: a settings field with its option's
help (``setting``), the matmul precisions, layers as values, reading directions, what a model reads of a sentence
(``Reading``) and the longest sentence any setting accepts.

Plain dataclasses that import neither torch nor nltk, so the command line can show defaults in ``--help`` without
loading either.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

# Matmul precisions by their user-facing names, and the torch dtype each names.
COMPUTE_DTYPES = {"fp32": "float32", "bf16": "bfloat16"}
# bf16 where the device computes it natively (``hardware.native_bf16``), fp32 elsewhere: on a CPU without
# AVX-512 BF16 or AMX, torch emulates bf16 matmuls about 20x slower than fp32 (docs/speed.md).
AUTO_DTYPE = "auto"
DTYPE_CHOICES = (AUTO_DTYPE, *COMPUTE_DTYPES)
DTYPE_HELP = (
    "Matmul precision: auto is bf16 where the device computes it natively (AVX-512 BF16, AMX, a GPU), fp32 elsewhere."
)


Layer = int | str  # 1-based layer number, or a readout's name (an ON-LSTM's "mean", a grammar's "spans")
FORWARD, BACKWARD = "forward", "backward"  # the directions a model reads a sentence in


def check_encoding(encoding: str) -> None:
    """ValueError for a text encoding Python does not know."""
    import codecs

    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"{encoding!r} is not an encoding Python knows (latin-1, gb18030, utf-8, ...)") from None


def layer_key(layer: Layer) -> str:
    """A layer as records and cards key it (JSON keys are strings): "2", "mean", "spans"; ``layer_from_key`` reads
    it back."""
    return str(layer)


def setting(default: Any, help: str, **option: Any) -> Any:
    """A settings field whose command-line option is generated from it (``options.options_of``): its help,
    and where given its option name (``option``), ``choices`` (a list default: the option repeats), ``minimum``
    (default 1 for numbers; None: any), ``maximum``, ``kind`` (what a None default stands for: int, str, "layer",
    "language", "encoding") and ``negatable`` (a flag with a --no- form)."""
    metadata = {"help": help, **option}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


# Sizes past these are no model any machine here could hold: refused before anything of that size is allocated.
LARGEST_SIZES = {
    "vocab_size": 10_000_000,
    "embedding_size": 65_536,
    "hidden_size": 65_536,
    "n_layers": 64,
    "chunk_size": 65_536,
}


def setting_of(settings: type, name: str) -> Any:
    """A field declared as ``settings``'s field ``name`` is (its default and its option), for a class that passes
    it on."""
    found = {f.name: f for f in fields(settings)}[name]
    return field(default=found.default, metadata=found.metadata)


def default(settings: type, name: str) -> object:
    """The default of field ``name`` of a settings dataclass: what the command line shows and uses, written once
    here."""
    found = {f.name: f for f in fields(settings)}[name]
    return found.default_factory() if found.default is MISSING else found.default


@dataclass(frozen=True)
class Reading:
    """What a model reads of a sentence (``onparse.text.reading``): its punctuation too or words alone, which way."""

    punctuation: bool = setting(
        False,
        "Whether the model reads the punctuation tokens too (trees and scores stay over "
        "the words; the ON-LSTM paper's input is the words alone).",
        negatable=True,
    )
    direction: str = setting(
        FORWARD, "Read each sentence left to right (forward) or right to left (backward).", choices=(FORWARD, BACKWARD)
    )

    def check(self) -> None:
        """ValueError for a reading no model can have."""
        if type(self.punctuation) is not bool:
            raise ValueError(f"punctuation must be true or false, not {self.punctuation!r}")
        if self.direction not in (FORWARD, BACKWARD):
            raise ValueError(f"direction must be {FORWARD!r} or {BACKWARD!r}, not {self.direction!r}")

    @classmethod
    def from_dict(cls, values: object) -> "Reading":
        """A reading from a config file's dict, checked; ValueError naming what is wrong."""
        if not isinstance(values, dict):
            raise ValueError(f"reading must be an object with punctuation and direction, not {values!r:.40}")
        unknown = set(values) - {"punctuation", "direction"}
        if unknown:
            raise ValueError(f"unknown reading settings: {', '.join(sorted(map(str, unknown)))}")
        reading = cls(**values)
        reading.check()
        return reading


# The longest sentence any setting accepts: an ensemble's vote is a CYK pass, cubic in length (a vote of four
# ON-LSTMs: 37 s at 2,000 words, one core), and no sentence is longer; a family may allow less (``longest_sentence``).
MAX_SENTENCE_WORDS = 2000
# Bytes a line may hold for each word allowed: lines longer than that are refused as they are read.
LINE_BYTES_PER_WORD = 100
