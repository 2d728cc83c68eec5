"""Every setting a user can choose, with its default, written once.

Plain dataclasses that import neither torch nor nltk, so the command line
can show these defaults in ``--help`` without loading either.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

# Matmul precisions by their user-facing names, and the torch dtype each names.
COMPUTE_DTYPES = {"fp32": "float32", "bf16": "bfloat16"}

MEAN = "mean"  # the layer name for distances averaged over all layers
Layer = int | str  # 1-based layer number, or MEAN


@dataclass
class ModelConfig:
    """Architecture and regularization of an ON-LSTM language model."""

    vocab_size: int = 10000
    embedding_size: int = 400
    hidden_size: int = 1150
    n_layers: int = 3
    chunk_size: int = 10
    dropout: float = 0.3  # on the last layer's output
    dropouth: float = 0.2  # between layers
    dropouti: float = 0.3  # on the embeddings
    dropoute: float = 0.05  # whole words dropped from the embedding table
    wdrop: float = 0.2  # DropConnect on the recurrent weights

    def check(self) -> None:
        """Raise ValueError for sizes no model can have (600.0 is not a size: sizes are whole numbers)."""
        for name in ("vocab_size", "embedding_size", "hidden_size", "n_layers", "chunk_size"):
            if type(getattr(self, name)) is not int:
                raise ValueError(f"{name} must be a whole number, not {getattr(self, name)!r}")
        for name in ("dropout", "dropouth", "dropouti", "dropoute", "wdrop"):
            if type(getattr(self, name)) not in (int, float):
                raise ValueError(f"{name} must be a number, not {getattr(self, name)!r}")
        for name in ("vocab_size", "embedding_size", "hidden_size", "n_layers", "chunk_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        for name in ("hidden_size", "embedding_size"):
            if getattr(self, name) % self.chunk_size:
                raise ValueError(f"{name} {getattr(self, name)} is not a multiple of chunk size {self.chunk_size}")
        for name in ("dropout", "dropouth", "dropouti", "dropoute", "wdrop"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), not {getattr(self, name)}")


FORWARD, BACKWARD = "forward", "backward"  # the directions a model reads a sentence in


@dataclass(frozen=True)
class Reading:
    """What a model reads of a sentence (``onparse.reading``): its punctuation too or words alone, and which way."""

    punctuation: bool = False  # every token, punctuation included, or the words alone (the ON-LSTM paper's input)
    direction: str = FORWARD  # left to right (FORWARD) or right to left (BACKWARD)

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


# The longest sentence any setting accepts: an ensemble's vote is a CYK pass,
# cubic in length (2 s at 1,000 words, 16 s at 2,000), and no sentence is longer.
MAX_SENTENCE_WORDS = 2000
# Bytes a line may hold for each word allowed: lines longer than that are refused as they are read.
LINE_BYTES_PER_WORD = 100


@dataclass
class ParseConfig:
    """How sentences are run through a model."""

    batch_size: int = 256  # sentences per packed batch
    max_words: int = 400  # longest sentence accepted, at most MAX_SENTENCE_WORDS
    device: str = "cpu"
    dtype: str = "fp32"  # a key of COMPUTE_DTYPES


# How a run picks its model/ among its evaluation points: the figure, and whether higher is better.
# dev_f1 reads gold trees: the original ON-LSTM protocol, labelled as such, never a default (Shi et al., 2020).
SELECTIONS = {"dev_ppl": False, "teacher_agreement": True, "dev_f1": True}


@dataclass
class DistillConfig:
    """A distillation run: a teacher's trees over the training text, learnt by a student through its distances."""

    teacher: str = ""  # model or ensemble directory whose trees are learnt
    start: str = ""  # model directory: the student's shape and vocabulary, and its weights unless from_scratch
    from_scratch: bool = False  # fresh weights (drawn with the run's seed) instead of start's
    sentences: int = 40000  # training sentences the teacher parses (a seeded sample)
    sample_seed: int | None = None  # the sample's seed (default: the run's), so students of one teacher can share it
    trees: str = ""  # the file the teacher's trees are kept in (default: teacher.jsonl in the run folder)
    rank_weight: float = 20.0  # weight of the distance-ranking loss beside the language-model loss
    margin: float = 0.05  # hinge margin between distances


@dataclass
class TrainConfig:
    """Everything that decides a training run; saved with every checkpoint and card.

    ``distill`` set makes it a distillation run (language model plus distance
    ranking toward the teacher's trees); otherwise a language model alone.
    """

    train: list[str] = field(default_factory=list)
    dev: str | None = None
    dev_gold: str | None = None
    model: ModelConfig = field(default_factory=ModelConfig)
    batch_size: int = 64
    bptt: int = 70
    epochs: int = 7
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup_updates: int = 100
    weight_decay: float = 1.2e-6
    clip: float = 0.25
    seed: int = 1111
    dtype: str = "bf16"
    device: str = "cpu"
    evals_per_epoch: int = 1  # dev perplexity (and F1) this many times an epoch
    default_layer: Layer = 2  # the paper's layer, written into the model directories; a student learns its trees there
    language: str = "en"  # how text files are tokenized (onparse.language), written into the model directories
    reading: Reading = field(default_factory=Reading)  # what the model reads of each sentence, written into the model directories
    encoding: str = "UTF-8"  # of the train, dev and dev-gold files
    distill: DistillConfig | None = None
    select_by: str | None = None  # a key of SELECTIONS; default dev_ppl, or teacher_agreement for distillation

    @property
    def selection(self) -> str:
        """The figure that picks the run's model/: never gold trees unless asked for by name."""
        return self.select_by or ("teacher_agreement" if self.distill else "dev_ppl")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown training settings: {', '.join(sorted(unknown))}")
        model = ModelConfig(**values.get("model", {}))
        distill = DistillConfig(**values["distill"]) if values.get("distill") else None
        reading = Reading.from_dict(values.get("reading", {}))
        return cls(**{**values, "model": model, "distill": distill, "reading": reading})
