"""Every setting a user can choose for a run, with its default, written once: parsing, distillation and training
(a fit's plan: ``onparse.plan``; the families' own sizes are theirs: ``onparse.families``).

Plain dataclasses that import neither torch nor nltk, so the command line
can show these defaults in ``--help`` without loading either.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from onparse.families import REGISTRY, OnlstmConfig, PcfgConfig, checked_layer, named, of
from onparse.settings import (
    AUTO_DTYPE,
    DTYPE_CHOICES,
    DTYPE_HELP,
    LINE_BYTES_PER_WORD,
    MAX_SENTENCE_WORDS,
    Layer,
    Reading,
    check_encoding,
    setting,
)
from onparse.text.language import check_language


@dataclass
class ParseConfig:
    """How sentences are run through a model."""

    batch_size: int = setting(256, "Sentences per batch (packed: finished sentences cost nothing).")
    max_words: int = setting(
        400,
        f"Longest sentence accepted, in words (at most {MAX_SENTENCE_WORDS:,}; 800 for a "
        f"model with grammar members); a line over {LINE_BYTES_PER_WORD} bytes a word is refused "
        "as it is read.",
        maximum=MAX_SENTENCE_WORDS,
    )
    device: str = setting("cpu", "torch device, e.g. cuda.", kind=str)
    dtype: str = setting("fp32", DTYPE_HELP, choices=DTYPE_CHOICES)

    def check(self) -> None:
        """ValueError for settings no parse can run with, named as the command line names them."""
        for name in ("batch_size", "max_words"):
            if type(getattr(self, name)) is not int or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {getattr(self, name)!r}")
        if self.max_words > MAX_SENTENCE_WORDS:
            raise ValueError(
                f"max_words is at most {MAX_SENTENCE_WORDS} (a vote is cubic in length), not {self.max_words}"
            )
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
    sample_seed: int | None = setting(
        None,
        "The seed of the sample the teacher parses  [default: the run's --seed]: "
        "students of other seeds learn the same trees.",
        kind=int,
        minimum=0,
    )
    trees: str | None = setting(
        None,
        "The file that keeps the teacher's parse of the sample  [default: teacher.jsonl in the run "
        "folder]: made once, read back by every student of the same teacher, text and sample.",
        kind=str,
    )
    rank_weight: float = setting(20.0, "Weight of the distance-ranking loss beside the language-model loss.", minimum=0)
    margin: float = setting(0.05, "Hinge margin between distances.", minimum=0)
    soft_targets: bool = setting(
        False,
        "A grammar student learns the teacher's span shares (each span's share of "
        "its votes, or its posterior), not its one tree: every tree weighed by them.",
    )
    focus: float = setting(
        0.0,
        "A grammar student learns the text's own likelihood, focused by its teacher's voters "
        "(parse-focusing): every tree weighed by exp(FOCUS x the sum of its spans' shares of the "
        "votes), no tree ruled out; 0: the teacher's trees (or --soft-targets).",
        minimum=0,
        maximum=1000,  # far past any that helps (3 and 9 were measured); exp() of more overflows to NaN weights
    )
    focus_end: float | None = setting(
        None,
        "The focus at the run's end, reached linearly from --focus  [default: "
        "--focus throughout]: 0 ends on the text's plain likelihood (unsupervised "
        "fine-tuning after the focus).",
        kind=float,
        minimum=0,
        maximum=1000,
    )

    @property
    def learns_shares(self) -> bool:
        """Whether the student reads the teacher's span shares (soft targets or focus), not its trees alone."""
        return self.soft_targets or self.focus > 0


def default_field_maximum(settings: type, name: str) -> int:
    """The largest value a settings field's option takes (``setting``'s ``maximum``)."""
    return {f.name: f for f in fields(settings)}[name].metadata["maximum"]


DISTILL_OPTIONS = tuple(
    f.name for f in fields(DistillConfig) if f.metadata
)  # what a student learns: its sample, then how


@dataclass
class TrainConfig:
    """Everything that decides a training run; saved with every checkpoint and card.

    ``distill`` set makes it a distillation run (language model plus distance
    ranking toward the teacher's trees); otherwise a language model alone.
    """

    train: list[str] = field(default_factory=list)
    dev: str | None = None
    dev_gold: str | None = None
    family: str = setting(
        OnlstmConfig.family,
        "onlstm: an ON-LSTM language model; pcfg: a neural PCFG trained on the sentences' likelihood.",
        choices=REGISTRY,
    )  # what ``model`` describes
    model: OnlstmConfig | PcfgConfig = field(default_factory=OnlstmConfig)
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
    patience: float | None = setting(
        None,
        "Stop once the dev figure the run keeps its model by has not bettered for this many passes over the "
        "training text (early stopping; 0.5: half a pass)  [default: every epoch of the schedule].",
        kind=float,
        minimum=0.01,
        maximum=1000,
    )
    default_layer: Layer = 2  # the paper's layer, written into the model directories; a student learns its trees there
    language: str = setting(
        "en",
        "The text's language (en, de, zh, ...): how text files are tokenized, recorded in the models it makes.",
        kind="language",
    )
    reading: Reading = field(
        default_factory=Reading
    )  # what the model reads of each sentence, written into the model directories
    encoding: str = setting(
        "UTF-8", "The encoding of the --train, --dev and --dev-gold files (NEGRA: latin-1).", kind="encoding"
    )
    tokenized: bool = setting(
        False,
        "Text files are already split into tokens at spaces (a treebank's leaves, a "
        "tokenizer you ran): taken as given, not tokenized again as --language.",
    )
    distill: DistillConfig | None = None
    # a seeded sample of about this many tokens of the training text instead of all of it (a fit's reading probes)
    sample_tokens: int | None = None
    select_by: str | None = None  # a key of SELECTIONS; default dev_ppl, or teacher_agreement for distillation
    keep_evaluations: bool = setting(
        False, "Keep every evaluation's model directory (epoch-EE.FF), not only the best's and the last's."
    )

    def check(self) -> None:
        """ValueError naming the first setting of a wrong type or out of range (a damaged or hand-edited
        config.json).

        Long: one check per setting, in the order a run reads them."""
        if not isinstance(self.train, list) or not all(isinstance(path, str) and path for path in self.train):
            raise ValueError(f"train must be a list of paths, not {self.train!r:.60}")
        for name in ("dev", "dev_gold"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a path, not {getattr(self, name)!r:.60}")
        whole = {"batch_size": 1, "bptt": 1, "epochs": 1, "evals_per_epoch": 1, "warmup_updates": 0, "seed": None}
        for name, least in whole.items():
            value = getattr(self, name)
            if type(value) is not int or (least is not None and value < least):
                raise ValueError(
                    f"{name} must be a whole number"
                    + (f" of at least {least}" if least is not None else "")
                    + f", not {value!r:.40}"
                )
        if self.patience is not None and (type(self.patience) not in (int, float) or not 0 < self.patience < 1e6):
            raise ValueError(f"patience must be a number of passes over the text above 0, not {self.patience!r:.40}")
        for name, low, high in (
            ("lr", 0, None),
            ("min_lr_ratio", 0, 1),
            ("weight_decay", 0, None),
            ("clip", 0, None),
            ("beta1", 0, 0.999),
        ):
            value = getattr(self, name)
            if (
                type(value) not in (int, float)
                or value < low
                or (high is not None and value > high)
                or (name in ("lr", "clip") and value == 0)
            ):
                raise ValueError(
                    f"{name} must be a number"
                    + (
                        f" from {low} to {high}"
                        if high is not None
                        else " above 0"
                        if name in ("lr", "clip")
                        else " of at least 0"
                    )
                    + f", not {value!r:.40}"
                )
        if self.dtype not in DTYPE_CHOICES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPE_CHOICES)}, not {self.dtype!r:.40}")
        for name in ("device", "language", "encoding"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, not {getattr(self, name)!r:.40}")
        check_encoding(self.encoding)
        for name in ("keep_evaluations", "tokenized"):
            if type(getattr(self, name)) is not bool:
                raise ValueError(f"{name} must be true or false, not {getattr(self, name)!r:.40}")
        check_language(self.language, self.tokenized)  # its tokenizer installed, where the text is to be tokenized
        if self.sample_tokens is not None and (type(self.sample_tokens) is not int or self.sample_tokens < 1):
            raise ValueError(f"sample_tokens must be a whole number of at least 1, not {self.sample_tokens!r:.40}")
        if self.select_by is not None and self.select_by not in SELECTIONS:
            raise ValueError(f"select_by must be one of {', '.join(SELECTIONS)}, not {self.select_by!r:.40}")
        if type(self.model) is not named(self.family).settings:
            raise ValueError(f"model settings do not describe a member of the {self.family} family")
        self.model.check()
        self.reading.check()
        of(self.model).check_reading(self.reading, student=self.distill is not None)
        checked_layer(self.default_layer, self.model)

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
        family = values.get("family", OnlstmConfig.family)
        model = named(family).settings(**values.get("model", {}))
        distill = DistillConfig(**values["distill"]) if values.get("distill") else None
        reading = Reading.from_dict(values.get("reading", {}))
        config = cls(**{**values, "model": model, "distill": distill, "reading": reading})
        config.check()
        return config


# How an ensemble gives its members their layers (``ensemble.choose``): the layer each model's directory names, each
# its own by agreement with the others' vote, one for all by how consistent its trees are between the members, or a
# fixed one for all; the last three without gold trees, the two first on unlabelled text.
LAYER_RULES = ("own", "agreement", "consistency", "fixed")


def train_config(family: str, sizes: dict, default_layer: Layer | None = None, **settings) -> TrainConfig:
    """A run's settings from the command line's: the family's own sizes among ``sizes``, its readout unless one is
    given, its training defaults where ``settings`` are None."""
    chosen = named(family)
    model = chosen.settings(**{f.name: sizes[f.name] for f in fields(chosen.settings) if f.name in sizes})
    given = {name: value for name, value in settings.items() if value is not None}
    return TrainConfig(
        family=family,
        model=model,
        **{
            **chosen.training,
            **given,
            "default_layer": chosen.default_readout(model) if default_layer is None else default_layer,
        },
    )
