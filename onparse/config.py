"""Every setting a user can choose, with its default, written once.

Plain dataclasses that import neither torch nor nltk, so the command line
can show these defaults in ``--help`` without loading either.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any, ClassVar

# Matmul precisions by their user-facing names, and the torch dtype each names.
COMPUTE_DTYPES = {"fp32": "float32", "bf16": "bfloat16"}
# bf16 where the device computes it natively (``hardware.native_bf16``), fp32 elsewhere: on a CPU without
# AVX-512 BF16 or AMX, torch emulates bf16 matmuls about 20x slower than fp32 (docs/speed.md).
AUTO_DTYPE = "auto"
DTYPE_CHOICES = (AUTO_DTYPE, *COMPUTE_DTYPES)
DTYPE_HELP = ("Matmul precision: auto is bf16 where the device computes it natively (AVX-512 BF16, AMX, a GPU), fp32 "
              "elsewhere.")

MEAN = "mean"  # the layer name for distances averaged over all layers
SPANS = "spans"  # the one readout of a model without layers (a PCFG): the tree with the most expected constituents
Layer = int | str  # 1-based layer number, MEAN, or SPANS

ONLSTM, PCFG = "onlstm", "pcfg"  # the member families: ON-LSTM language models (onparse.model), neural PCFGs (onparse.pcfg)
FAMILIES = (ONLSTM, PCFG)


def check_encoding(encoding: str) -> None:
    """ValueError for a text encoding Python does not know."""
    import codecs

    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"{encoding!r} is not an encoding Python knows (latin-1, gb18030, utf-8, ...)") from None


def checked_layer(value: object, n_layers: int | None = None) -> Layer:
    """``value`` as a layer: a whole number from 1 (up to ``n_layers`` where given) or MEAN; for a model without
    layers (``n_layers`` 0, a grammar) SPANS alone; ValueError otherwise.

    The one check of a layer, at every boundary (options, config files, the API): ``True`` and ``"3"`` are no layers.
    """
    if value == SPANS and isinstance(value, str) and not n_layers:
        return SPANS
    if n_layers == 0:
        raise ValueError(f"{value!r} is no layer of a grammar: its trees come from its span marginals ({SPANS!r})")
    if value == MEAN and isinstance(value, str):
        return MEAN
    if type(value) is not int or value < 1:
        raise ValueError(f"{value!r} is neither a layer number (1, 2, ...) nor {MEAN!r}")
    if n_layers is not None and value > n_layers:
        raise ValueError(f"layer {value} does not exist: the model has layers 1 to {n_layers} (or {MEAN!r}, their mean)")
    return value


def layer_key(layer: Layer) -> str:
    """A layer as records and cards key it (JSON keys are strings): "2", "mean", "spans"; ``layer_from_key`` reads it back."""
    return str(layer)


def layer_from_key(key: str) -> Layer:
    """The layer a record's key names (``layer_key``): a number for a layer's, the name for a readout's."""
    return checked_layer(int(key) if key.isascii() and key.isdigit() else key)


def readouts(n_layers: int) -> list[Layer]:
    """Every layer a model's trees may be read from: each layer and their mean, or a grammar's span marginals."""
    return [*range(1, n_layers + 1), MEAN] if n_layers else [SPANS]


FORWARD, BACKWARD = "forward", "backward"  # the directions a model reads a sentence in

# Where a grammar's training differs from an ON-LSTM's defaults (Kim, Dyer & Rush, 2019: Adam at 1e-3, gradients
# clipped at 3); its batch_size counts the words of an update (sentences of one length), not streams.
GRAMMAR_TRAINING = {"lr": 1e-3, "clip": 3.0, "batch_size": 600, "epochs": 10, "default_layer": SPANS}
# An ON-LSTM student's update (sentences) and learning rate where a distillation run does not set them: the fit's
# fine-tuning settings. A grammar student takes its own training's (GRAMMAR_TRAINING).
STUDENT_TRAINING = {"lr": 5e-4, "batch_size": 32}

def setting(default: Any, help: str, **option: Any) -> Any:
    """A settings field whose command-line option is generated from it (``commandline.options_of``): its help,
    and where given its option name (``option``), ``choices`` (a list default: the option repeats), ``minimum``
    (default 1 for numbers; None: any), ``maximum``, ``kind`` (what a None default stands for: int, str, "layer",
    "language", "encoding") and ``negatable`` (a flag with a --no- form)."""
    metadata = {"help": help, **option}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


# Sizes past these are no model any machine here could hold: refused before anything of that size is allocated.
LARGEST_SIZES = {"vocab_size": 10_000_000, "embedding_size": 65_536, "hidden_size": 65_536, "n_layers": 64, "chunk_size": 65_536}


@dataclass
class ModelConfig:
    """Architecture and regularization of an ON-LSTM language model; the ON-LSTM family's traits as class values."""

    family: ClassVar[str] = ONLSTM
    reads_either_way: ClassVar[bool] = True  # left to right or right to left; distillation rounds refine it
    training: ClassVar[dict] = {}  # TrainConfig settings in place of the class's defaults
    student_training: ClassVar[dict] = STUDENT_TRAINING  # a student's update and rate where a run sets none
    longest_sentence: ClassVar[int] = 2000  # words: its distances are linear in length (8 s at 2,000 words, one core)
    vocab_size: int = 10000
    embedding_size: int = setting(400, "An ON-LSTM's word embeddings.")
    hidden_size: int = setting(1150, "An ON-LSTM's hidden state per layer (a multiple of the chunk size).")
    n_layers: int = setting(3, "An ON-LSTM's layers.", option="--layers")
    chunk_size: int = setting(10, "Hidden units per master-gate level (hidden/chunk levels).")
    dropout: float = 0.3  # on the last layer's output
    dropouth: float = 0.2  # between layers
    dropouti: float = 0.3  # on the embeddings
    dropoute: float = 0.05  # whole words dropped from the embedding table
    wdrop: float = 0.2  # DropConnect on the recurrent weights

    @staticmethod
    def check_reading(reading: "Reading", student: bool) -> None:
        """An ON-LSTM reads any tokens, either way."""

    @staticmethod
    def fit_reading(punctuation: bool, direction: str) -> "Reading":
        """What a fit's ON-LSTM member reads: as the plan says in its turn."""
        return Reading(punctuation, direction)

    @staticmethod
    def describe_reading(reading: "Reading") -> str:
        return reading.direction + (" with punctuation" if reading.punctuation else ", words alone")

    @staticmethod
    def batch_share(batch_size: int, processes: int) -> str:
        """What each of several processes trains on of an update (its batch is parallel streams)."""
        return f"{batch_size // processes} of the {batch_size} streams"

    def check(self) -> None:
        """Raise ValueError for sizes no model can have (600.0 is not a size: sizes are whole numbers)."""
        for name in ("vocab_size", "embedding_size", "hidden_size", "n_layers", "chunk_size"):
            if type(getattr(self, name)) is not int:
                raise ValueError(f"{name} must be a whole number, not {getattr(self, name)!r}")
        for name in ("dropout", "dropouth", "dropouti", "dropoute", "wdrop"):
            if type(getattr(self, name)) not in (int, float):
                raise ValueError(f"{name} must be a number, not {getattr(self, name)!r}")
        for name in ("vocab_size", "embedding_size", "hidden_size", "n_layers", "chunk_size"):
            if not 1 <= getattr(self, name) <= LARGEST_SIZES[name]:
                raise ValueError(f"{name} must be from 1 to {LARGEST_SIZES[name]:,}, not {getattr(self, name)}")
        for name in ("hidden_size", "embedding_size"):
            if getattr(self, name) % self.chunk_size:
                raise ValueError(f"{name} {getattr(self, name)} is not a multiple of chunk size {self.chunk_size}")
        for name in ("dropout", "dropouth", "dropouti", "dropoute", "wdrop"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), not {getattr(self, name)}")


INDEPENDENT, JOINT = "independent", "joint"  # a grammar's binary productions: left and right apart, or together
PRODUCTIONS = (INDEPENDENT, JOINT)


@dataclass
class GrammarConfig:
    """Size of a neural PCFG member (``onparse.pcfg``): its symbols and the width of their embeddings; the grammar
    family's traits as class values."""

    family: ClassVar[str] = PCFG
    reads_either_way: ClassVar[bool] = False  # its trees are over the words read left to right; it votes as trained
    training: ClassVar[dict] = GRAMMAR_TRAINING
    student_training: ClassVar[dict] = {name: GRAMMAR_TRAINING[name] for name in ("lr", "batch_size", "clip")}
    longest_sentence: ClassVar[int] = 800  # words: inside and outside passes are cubic (70 s at 800 words, one core)
    vocab_size: int = 10000
    nonterminals: int = setting(30, "A grammar's nonterminal symbols.")
    preterminals: int = setting(60, "A grammar's preterminal symbols.")
    symbol_size: int = setting(256, "A grammar's symbol embeddings and rule networks.")
    productions: str = setting(INDEPENDENT, "A grammar's binary rules: independent (p(A -> B C) as a left and a right "
                               "choice, cheap for many symbols) or joint (one table, Kim et al.'s neural PCFG: more "
                               "expressive for few symbols, slower).", choices=(INDEPENDENT, JOINT))
    latent_size: int = setting(0, "A compound grammar's sentence vector (Kim, Dyer & Rush, 2019: 64): each sentence gets "
                               "its own root and production rules; 0, one grammar for every sentence. Independent "
                               "productions only.", minimum=0, maximum=4096)

    n_layers = 0  # a grammar has no layers: its trees come from its span marginals (SPANS)

    @staticmethod
    def check_reading(reading: "Reading", student: bool) -> None:
        """ValueError for what no grammar reads: right to left (its trees are over the words either way), or, as a
        student, punctuation (its teacher's trees are over the words)."""
        if reading.direction != FORWARD:
            raise ValueError("a grammar reads left to right (its trees are over the words, either way)")
        if student and reading.punctuation:
            raise ValueError("a grammar student reads the words alone: its teacher's trees are over the words")

    @staticmethod
    def fit_reading(punctuation: bool, direction: str) -> "Reading":
        """What a fit's grammar member reads: the words, left to right (in English punctuation parsed worse)."""
        return Reading()

    @staticmethod
    def describe_reading(reading: "Reading") -> str:
        return "a grammar over " + ("every token" if reading.punctuation else "the words")

    @staticmethod
    def batch_share(batch_size: int, processes: int) -> str:
        """What each of several processes trains on of an update (its batch is words of sentences of one length)."""
        return f"one in {processes} of the sentences of each {batch_size}-word batch"

    def check(self) -> None:
        """ValueError for sizes no grammar can have."""
        for name, largest in (("vocab_size", LARGEST_SIZES["vocab_size"]), ("nonterminals", 4096), ("preterminals", 8192),
                              ("symbol_size", 8192)):
            value = getattr(self, name)
            if type(value) is not int or not 1 <= value <= largest:
                raise ValueError(f"{name} must be a whole number from 1 to {largest:,}, not {value!r:.40}")
        if self.productions not in PRODUCTIONS:
            raise ValueError(f"productions must be {' or '.join(map(repr, PRODUCTIONS))}, not {self.productions!r:.40}")
        if type(self.latent_size) is not int or not 0 <= self.latent_size <= 4096:
            raise ValueError(f"latent_size must be a whole number from 0 to 4,096, not {self.latent_size!r:.40}")
        if self.latent_size and self.productions == JOINT:
            raise ValueError("a compound grammar (latent_size) takes independent productions, not joint ones")


# Each member family's settings, by the family's name: the one place a family name becomes a class.
FAMILY_SETTINGS: dict[str, type[ModelConfig] | type[GrammarConfig]] = {
    settings.family: settings for settings in (ModelConfig, GrammarConfig)}


def family_settings(family: str) -> type[ModelConfig] | type[GrammarConfig]:
    """The settings class of a member family; ValueError for a name that is no family."""
    if family not in FAMILY_SETTINGS:
        raise ValueError(f"family must be one of {', '.join(FAMILY_SETTINGS)}, not {family!r:.40}")
    return FAMILY_SETTINGS[family]


# A fit's direction rule: members 1 and 2 read forward and backward, the others in the direction whose member had the
# lower dev perplexity. A sentence's probability is the same read either way, so the direction a model fits better is
# the one its inductive bias suits: on CTB, NEGRA and WSJ it is also the one whose trees score better (experiments/notebook.md).
AUTO = "auto"


@dataclass(frozen=True)
class Reading:
    """What a model reads of a sentence (``onparse.reading``): its punctuation too or words alone, and which way."""

    punctuation: bool = setting(False, "Whether the model reads the punctuation tokens too (trees and scores stay over "
                                "the words; the ON-LSTM paper's input is the words alone).", negatable=True)
    direction: str = setting(FORWARD, "Read each sentence left to right (forward) or right to left (backward).",
                             choices=(FORWARD, BACKWARD))

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


@dataclass
class ParseConfig:
    """How sentences are run through a model."""

    batch_size: int = setting(256, "Sentences per batch (packed: finished sentences cost nothing).")
    max_words: int = setting(400, f"Longest sentence accepted, in words (at most {MAX_SENTENCE_WORDS:,}; 800 for a "
                             f"model with grammar members); a line over {LINE_BYTES_PER_WORD} bytes a word is refused "
                             "as it is read.", maximum=MAX_SENTENCE_WORDS)
    device: str = setting("cpu", "torch device, e.g. cuda.", kind=str)
    dtype: str = setting("fp32", DTYPE_HELP, choices=DTYPE_CHOICES)

    def check(self) -> None:
        """ValueError for settings no parse can run with, named as the command line names them."""
        for name in ("batch_size", "max_words"):
            if type(getattr(self, name)) is not int or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {getattr(self, name)!r}")
        if self.max_words > MAX_SENTENCE_WORDS:
            raise ValueError(f"max_words is at most {MAX_SENTENCE_WORDS} (a vote is cubic in length), not {self.max_words}")
        if self.dtype not in DTYPE_CHOICES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPE_CHOICES)}, not {self.dtype!r}")
        if not isinstance(self.device, str):
            raise ValueError(f"device must be a torch device name such as cpu or cuda, not {self.device!r}")


# How a run picks its model/ among its evaluation points: the figure, and whether higher is better.
# dev_f1 reads gold trees: the original ON-LSTM protocol, labelled as such, never a default (Shi et al., 2020).
SELECTIONS = {"dev_ppl": False, "teacher_agreement": True, "dev_f1": True}


@dataclass
class DistillConfig:
    """A distillation run: a teacher's trees over the training text, learnt by a student through its distances."""

    teacher: str = ""  # model or ensemble directory whose trees are learnt
    start: str = ""  # model directory: the student's shape and vocabulary, and its weights unless from_scratch
    from_scratch: bool = False  # fresh weights (drawn with the run's seed) instead of start's
    sentences: int = setting(40000, "Training sentences the teacher parses (a seeded sample).")
    sample_seed: int | None = None  # the sample's seed (default: the run's), so students of one teacher can share it
    trees: str = ""  # the file the teacher's trees are kept in (default: teacher.jsonl in the run folder)
    rank_weight: float = setting(20.0, "Weight of the distance-ranking loss beside the language-model loss.", minimum=0)
    margin: float = setting(0.05, "Hinge margin between distances.", minimum=0)


@dataclass
class TrainConfig:
    """Everything that decides a training run; saved with every checkpoint and card.

    ``distill`` set makes it a distillation run (language model plus distance
    ranking toward the teacher's trees); otherwise a language model alone.
    """

    train: list[str] = field(default_factory=list)
    dev: str | None = None
    dev_gold: str | None = None
    family: str = setting(ONLSTM, "onlstm: an ON-LSTM language model; pcfg: a neural PCFG trained on the sentences' "
                          "likelihood.", choices=FAMILIES)  # what ``model`` describes
    model: ModelConfig | GrammarConfig = field(default_factory=ModelConfig)
    batch_size: int = 64
    bptt: int = setting(70, "Steps of backpropagation through time an ON-LSTM's update reads.")
    epochs: int = 7
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup_updates: int = 100
    weight_decay: float = 1.2e-6
    beta1: float = 0.9  # Adam's decay of its gradient average (the second moment's stays 0.999)
    clip: float = 0.25
    seed: int = setting(1111, "The run's seed: weights, dropout and the order of the text.", minimum=None)
    dtype: str = setting(AUTO_DTYPE, DTYPE_HELP, choices=DTYPE_CHOICES)
    device: str = setting("cpu", "torch device, e.g. cuda.", kind=str)
    evals_per_epoch: int = setting(1, "Dev evaluations (perplexity, F1, a saved model) per epoch, evenly spread.")
    default_layer: Layer = 2  # the paper's layer, written into the model directories; a student learns its trees there
    language: str = setting("en", "The text's language (en, de, zh, ...): how text files are tokenized, recorded in the "
                            "models it makes.", kind="language")
    reading: Reading = field(default_factory=Reading)  # what the model reads of each sentence, written into the model directories
    encoding: str = setting("UTF-8", "The encoding of the --train, --dev and --dev-gold files (NEGRA: latin-1).",
                            kind="encoding")
    tokenized: bool = setting(False, "Text files are already split into tokens at spaces (a treebank's leaves, a "
                              "tokenizer you ran): taken as given, not tokenized again as --language.")
    distill: DistillConfig | None = None
    select_by: str | None = None  # a key of SELECTIONS; default dev_ppl, or teacher_agreement for distillation
    keep_evaluations: bool = setting(False, "Keep every evaluation's model directory (epoch-EE.FF), not only the best's "
                                     "and the last's.")

    def check(self) -> None:
        """ValueError naming the first setting of a wrong type or out of range (a damaged or hand-edited config.json)."""
        if not isinstance(self.train, list) or not all(isinstance(path, str) and path for path in self.train):
            raise ValueError(f"train must be a list of paths, not {self.train!r:.60}")
        for name in ("dev", "dev_gold"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a path, not {getattr(self, name)!r:.60}")
        whole = {"batch_size": 1, "bptt": 1, "epochs": 1, "evals_per_epoch": 1, "warmup_updates": 0, "seed": None}
        for name, least in whole.items():
            value = getattr(self, name)
            if type(value) is not int or (least is not None and value < least):
                raise ValueError(f"{name} must be a whole number" + (f" of at least {least}" if least is not None else "")
                                 + f", not {value!r:.40}")
        for name, low, high in (("lr", 0, None), ("min_lr_ratio", 0, 1), ("weight_decay", 0, None), ("clip", 0, None),
                                ("beta1", 0, 0.999)):
            value = getattr(self, name)
            if type(value) not in (int, float) or value < low or (high is not None and value > high) or (name in ("lr", "clip") and value == 0):
                raise ValueError(f"{name} must be a number" + (f" from {low} to {high}" if high is not None else " above 0" if name in ("lr", "clip") else " of at least 0")
                                 + f", not {value!r:.40}")
        if self.dtype not in DTYPE_CHOICES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPE_CHOICES)}, not {self.dtype!r:.40}")
        for name in ("device", "language", "encoding"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, not {getattr(self, name)!r:.40}")
        check_encoding(self.encoding)
        for name in ("keep_evaluations", "tokenized"):
            if type(getattr(self, name)) is not bool:
                raise ValueError(f"{name} must be true or false, not {getattr(self, name)!r:.40}")
        if self.select_by is not None and self.select_by not in SELECTIONS:
            raise ValueError(f"select_by must be one of {', '.join(SELECTIONS)}, not {self.select_by!r:.40}")
        if type(self.model) is not family_settings(self.family):
            raise ValueError(f"model settings do not describe a member of the {self.family} family")
        self.model.check()
        self.reading.check()
        self.model.check_reading(self.reading, student=self.distill is not None)
        checked_layer(self.default_layer, self.model.n_layers)

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
        if not isinstance(values.get("model", {}), dict) or not isinstance(values.get("distill") or {}, dict):
            raise ValueError("model and distill must be objects of settings")
        family = values.get("family", ONLSTM)
        model = family_settings(family)(**values.get("model", {}))
        distill = DistillConfig(**values["distill"]) if values.get("distill") else None
        reading = Reading.from_dict(values.get("reading", {}))
        config = cls(**{**values, "model": model, "distill": distill, "reading": reading})
        config.check()
        return config


def training_defaults(family: str) -> dict:
    """The TrainConfig settings a family takes in place of the class's defaults (none for an ON-LSTM)."""
    return dict(family_settings(family).training)


def setting_of(settings: type, name: str) -> Any:
    """A field declared as ``settings``'s field ``name`` is (its default and its option), for a class that passes it on."""
    found = {f.name: f for f in fields(settings)}[name]
    return field(default=found.default, metadata=found.metadata)


def default(settings: type, name: str) -> object:
    """The default of field ``name`` of a settings dataclass: what the command line shows and uses, written once here."""
    found = {f.name: f for f in fields(settings)}[name]
    return found.default_factory() if found.default is MISSING else found.default


# How an ensemble gives its members their layers (``ensemble.choose``): the layer each model's directory names, each
# its own by agreement with the others' vote, one for all by how consistent its trees are between the members, or a
# fixed one for all; the last three without gold trees, the two first on unlabelled text.
LAYER_RULES = ("own", "agreement", "consistency", "fixed")


# The members' architecture: small enough that four train in well under an hour on two cores.
MEMBER_MODEL = ModelConfig(embedding_size=200, hidden_size=600, n_layers=3, chunk_size=10)
VARIED_SIZES = ("embedding_size", "hidden_size", "chunk_size")  # what members may vary: the layers stay, so one layer rule fits all


@dataclass
class FitPlan:
    """Every choice of a fit, recorded in ``fit.json`` and the model's card."""

    train: list[str]
    dev: str
    dev_gold: str | None = None  # scored at every stage; chooses nothing unless select_by_gold
    members: int = setting(4, "Members trained from random weights (language models, or grammars: --family).")
    # distillation rounds reproduced their teacher in every language measured (experiments/notebook.md)
    rounds: int = setting(0, "Distillation rounds (each student learns the last ensemble).", minimum=0)
    member_model: ModelConfig = field(default_factory=lambda: ModelConfig(**asdict(MEMBER_MODEL)))
    # members cycle through these sizes, e.g. {"hidden_size": [600, 1150], "chunk_size": [5, 10, 20]} (absent: member_model's)
    member_variants: dict[str, list[int]] = field(default_factory=dict)
    member_epochs: int | None = setting(None, "Epochs of each member  [default: enough to read about a million tokens, "
                                        "at least one].", kind=int)  # None: about MEMBER_TOKENS tokens
    evals_per_epoch: int = setting(4, "Dev evaluations (perplexity, agreement, a saved model) per epoch of each run.")
    batch_size: int = 64  # language-model streams of the members
    sentences: int = setting_of(DistillConfig, "sentences")  # each teacher's
    student_batch_size: int = STUDENT_TRAINING["batch_size"]  # sentences per distillation update
    finetune_passes: int = 1
    finetune_lr: float = STUDENT_TRAINING["lr"]
    scratch_passes: int = setting(2, "Passes of the student from scratch.")
    scratch_lr: float = 2e-3
    rank_weight: float = setting_of(DistillConfig, "rank_weight")
    margin: float = setting_of(DistillConfig, "margin")
    layer: Layer = setting(MEAN, "The layer students learn their teacher's trees at.", kind="layer")
    layer_rule: str = setting("agreement", "own: each member's own layer (--layer); agreement: each ensemble gives each "
                              "member the layer agreeing best with the others' vote on --dev; consistency: the one layer "
                              "whose trees agree best between the members on --dev, for all; fixed: --vote-layer for all.",
                              choices=LAYER_RULES)
    vote_layer: Layer | None = setting(None, "With --layer-rule fixed: every member's layer in every vote (default: "
                                       "--layer). Another layer than the learnt one keeps students' trees apart.", kind="layer")
    right_branching_voter: float = 0.0  # a right-branching tree's votes: a prior for right-branching languages, never chosen on gold unless asked
    select_by_gold: bool = setting(False, "Choose checkpoints and the voter on --dev-gold (the original ON-LSTM protocol: "
                                   "not unsupervised; the card says so).")
    keep_evaluations: bool = setting_of(TrainConfig, "keep_evaluations")  # every run's
    seed: int = setting(1111, "The first member's seed; every other run's counts from it.", minimum=None)
    dtype: str = setting_of(TrainConfig, "dtype")
    device: str = setting_of(TrainConfig, "device")
    language: str = setting_of(TrainConfig, "language")
    encoding: str = setting_of(TrainConfig, "encoding")
    tokenized: bool = setting_of(TrainConfig, "tokenized")
    punctuation: bool = setting(False, "Whether every model reads the punctuation tokens too (trees and scores stay over "
                                "the words).", negatable=True)
    directions: list[str] = setting([FORWARD], "Repeat to vary the members, as --chunk-size: member k reads in the k-th "
                                    "direction, cycling. auto: members 1 and 2 read forward and backward, the rest in the "
                                    "direction of the two that fits the dev text better (lower perplexity).",
                                    option="--direction", choices=(FORWARD, BACKWARD, AUTO))
    families: list[str] = setting([ONLSTM], "Repeat to mix the members, as --chunk-size: member k is of the k-th family, "
                                  "cycling (pcfg: a neural PCFG, trained on the words' likelihood; it votes as it is in "
                                  "every round).", option="--family", choices=FAMILIES)
    member_grammar: GrammarConfig = field(default_factory=GrammarConfig)  # the grammar members' size
    grammar_epochs: int | None = setting(None, "Epochs of each grammar member  [default: enough to read about four million "
                                         "words of sentences of 2-40 words, at least one].", kind=int)
    grammar_batch_size: int = setting(GRAMMAR_TRAINING["batch_size"], "Words of a grammar member's update (German 64 x "
                                      "128 grammars did better at 200).")
    student_directions: list[str] = setting([], "The student from scratch reads in this direction  [default: the first "
                                            "voting ON-LSTM's]; repeat for one student per direction, each voting "
                                            "(together they see both sides of every gap).", option="--student-direction",
                                            choices=(FORWARD, BACKWARD))
    grammar_students: int = setting(0, "Grammars from scratch that learn the last ensemble's trees beside the ON-LSTM "
                                    "students (the first grammar member's shape and vocabulary, --scratch-passes passes, "
                                    "seeds counting up from --seed); each votes.", minimum=0)
    student_grammar: GrammarConfig | None = None  # the grammar students' shape (None: the first grammar member's)
    # generation 0 is the first students' vote
    generations: int = setting(0, "Self-training: each generation's students (as the first ones, new seeds) learn the "
                               "vote of the generation before and vote alone; the last generation is the model.", minimum=0)
    stop_agreement: float = setting(95.0, "End the generations after one whose vote agrees with its teacher's trees on "
                                    "--dev at this sentence F1 or more (no gold trees).", minimum=0, maximum=100)

    @classmethod
    def from_dict(cls, values: dict) -> "FitPlan":
        """A plan from ``fit.json``; TypeError or ValueError for one that is not a plan."""
        values = dict(values)
        if not isinstance(values.get("member_model"), dict):
            raise ValueError("member_model must be an object of model settings")
        if not isinstance(values.get("member_grammar", {}), dict):
            raise ValueError("member_grammar must be an object of grammar settings")
        if not isinstance(values.get("student_grammar") or {}, dict):
            raise ValueError("student_grammar must be an object of grammar settings")
        student_grammar = values.get("student_grammar")
        return cls(**{**values, "member_model": ModelConfig(**values["member_model"]),
                      "member_grammar": GrammarConfig(**values.get("member_grammar", {})),
                      "student_grammar": GrammarConfig(**student_grammar) if student_grammar else None})

    def family(self, k: int) -> str:
        """Member ``k``'s family (from 1), in its turn."""
        return self.families[(k - 1) % len(self.families)]

    def language_models(self) -> list[int]:
        """The members (from 1) that are ON-LSTMs: the ones that read in a direction, and that students start from."""
        return [k for k in range(1, self.members + 1) if family_settings(self.family(k)).reads_either_way]

    def reading(self, k: int, better: str | None = None) -> Reading:
        """What member ``k`` (from 1) reads: a grammar, the words left to right; an ON-LSTM, the plan's punctuation
        in its turn's direction, or under the AUTO rule the first two ON-LSTMs forward and backward, the others in the
        ``better`` direction (forward until it is known)."""
        settings = family_settings(self.family(k))
        if self.directions == [AUTO] and settings.reads_either_way:
            turn = self.language_models().index(k)
            return settings.fit_reading(self.punctuation, (FORWARD, BACKWARD)[turn] if turn < 2 else better or FORWARD)
        return settings.fit_reading(self.punctuation, self.directions[(k - 1) % len(self.directions)])

    def check(self) -> None:
        """ValueError for a plan that cannot run (a setting of a wrong type or out of range, a missing file)."""
        if not isinstance(self.train, list) or not all(isinstance(path, str) for path in self.train) or not isinstance(self.dev, str):
            raise ValueError("train must be a list of paths and dev a path")
        for name in ("members", "rounds", "evals_per_epoch", "batch_size", "sentences", "student_batch_size",
                     "finetune_passes", "scratch_passes", "seed", "grammar_students", "generations"):
            if type(getattr(self, name)) is not int:
                raise ValueError(f"{name} must be a whole number, not {getattr(self, name)!r:.40}")
        for name in ("punctuation", "keep_evaluations", "select_by_gold", "tokenized"):
            if type(getattr(self, name)) is not bool:
                raise ValueError(f"{name} must be true or false, not {getattr(self, name)!r:.40}")
        if self.member_epochs is not None and type(self.member_epochs) is not int:
            raise ValueError(f"member_epochs must be a whole number, not {self.member_epochs!r:.40}")
        if not isinstance(self.member_model, ModelConfig) or not isinstance(self.member_variants, dict) or not isinstance(self.directions, list):
            raise ValueError("member_model and member_variants must be objects, directions a list")
        if type(self.right_branching_voter) not in (int, float, bool) or self.right_branching_voter < 0:
            raise ValueError(f"right_branching_voter must be a number of votes, not {self.right_branching_voter!r:.40}")
        if self.select_by_gold and not self.dev_gold:
            raise ValueError("choosing on gold trees needs them: give --dev-gold")
        if self.layer_rule not in LAYER_RULES:
            raise ValueError(f"the layer rule is {' or '.join(LAYER_RULES)}, not {self.layer_rule!r}")
        if min(self.members, self.member_epochs or 1, self.evals_per_epoch, self.sentences, self.scratch_passes) < 1 or min(
                self.rounds, self.grammar_students, self.generations) < 0:
            raise ValueError("members, epochs, evaluations, sentences and passes must be at least 1, rounds, grammar "
                             "students and generations at least 0")
        if type(self.stop_agreement) not in (int, float) or not 0 <= self.stop_agreement <= 100:
            raise ValueError(f"stop_agreement is a sentence F1 from 0 to 100, not {self.stop_agreement!r:.40}")
        unvaried = set(self.member_variants) - set(VARIED_SIZES)
        if unvaried:
            raise ValueError(f"members can vary only their {', '.join(VARIED_SIZES)}, not {', '.join(sorted(unvaried))}")
        if not self.directions or (AUTO in self.directions and self.directions != [AUTO]):
            raise ValueError(f"members read in directions ({FORWARD}, {BACKWARD}, repeated) or by the {AUTO!r} rule alone")
        if not isinstance(self.families, list) or not self.families or set(self.families) - set(FAMILIES):
            raise ValueError(f"members' families are {' or '.join(FAMILIES)}, repeated, not {self.families!r:.40}")
        if self.grammar_epochs is not None and (type(self.grammar_epochs) is not int or self.grammar_epochs < 1):
            raise ValueError(f"grammar_epochs must be a whole number of at least 1, not {self.grammar_epochs!r:.40}")
        if type(self.grammar_batch_size) is not int or self.grammar_batch_size < 1:
            raise ValueError(f"grammar_batch_size must be a whole number of at least 1, not {self.grammar_batch_size!r:.40}")
        if (not isinstance(self.student_directions, list) or set(self.student_directions) - {FORWARD, BACKWARD}
                or len(set(self.student_directions)) < len(self.student_directions)):
            raise ValueError(f"students read {FORWARD}, {BACKWARD} or both, each once, not {self.student_directions!r:.40}")
        if not self.language_models() and (self.rounds or self.directions == [AUTO] or self.student_directions):
            raise ValueError("distillation rounds, students' directions and the auto direction rule need ON-LSTM members: "
                             "add --family onlstm")
        if self.grammar_students and GrammarConfig.family not in self.families[: self.members]:
            raise ValueError("grammar students take the shape and vocabulary of a grammar member: add --family pcfg")
        if not isinstance(self.member_grammar, GrammarConfig) or not isinstance(self.student_grammar, GrammarConfig | None):
            raise ValueError("member_grammar and student_grammar must be objects of grammar settings")
        self.member_grammar.check()
        if self.student_grammar is not None:
            self.student_grammar.check()
            if not self.grammar_students:
                raise ValueError("student_grammar is the grammar students' shape: ask for grammar students too")
        if self.generations and not (self.language_models() or self.grammar_students):
            raise ValueError("generations are students: they need ON-LSTM members or grammar students")
        for k in range(1, self.members + 1):
            member_config(self, k).check()
            self.reading(k).check()
        for layer in (self.layer, self.vote_layer):
            if layer is not None:
                checked_layer(layer, self.member_model.n_layers)

    @property
    def fixed_layer(self) -> Layer:
        """Every member's layer in every ensemble under the fixed rule."""
        return self.layer if self.vote_layer is None else self.vote_layer


def member_schedule(plan: FitPlan, k: int) -> dict:
    """Member ``k``'s epochs and update size: the plan's for grammars, or for ON-LSTMs."""
    if plan.family(k) == GrammarConfig.family:
        return {"epochs": plan.grammar_epochs, "batch_size": plan.grammar_batch_size}
    return {"epochs": plan.member_epochs, "batch_size": plan.batch_size}


def member_config(plan: FitPlan, k: int) -> ModelConfig | GrammarConfig:
    """Member ``k``'s architecture: ``member_grammar`` for a grammar; else ``member_model``, with each varied size at
    member ``k``'s turn in its cycle."""
    if plan.family(k) == GrammarConfig.family:
        return plan.member_grammar
    return replace(plan.member_model, **{name: sizes[(k - 1) % len(sizes)] for name, sizes in plan.member_variants.items()})
