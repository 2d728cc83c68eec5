"""What every model family answers, so that nothing outside a family's module asks which family a member is.

A family (supar's model kinds, registered by name in ``onparse.families``) gives its settings class, its readouts
(an ON-LSTM's layers and their mean, a grammar's span marginals) and how an output read at one becomes a tree, the
readings it allows, its training defaults, and where its heavier parts live: the model class, the training from text
alone, the student objective and the dev figures. Those are named as ``module:attribute`` (entry points, resolved
when used), so a family's declaration imports neither torch nor the training code, and the command line can show its
settings without loading either.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    import numpy as np

from onparse.settings import FORWARD, Layer, Reading

PARTS = ("model", "training_setup", "student_objective", "dev_figures")
MAX_TRAINING_WORDS = 40  # a grammar learns from sentences of 2 to this many words (Kim, Dyer & Rush, 2019)
SPANS = "spans"  # a grammar's one readout: the tree with the most expected constituents under its span marginals


class FamilyModel(Protocol):
    """What a family's model class (its ``model`` part) gives the rest of onparse: its settings, one output a sentence
    for the tree builder, and a way back from saved weights. A torch module; its training is its family's
    ``training_setup`` and ``student_objective``."""

    config: Any  # the family's settings
    stores_matmul_weights: bool  # a parser keeps its weights in the matmul dtype once, or casts as it computes

    @classmethod
    def from_weights(cls, config: Any, state: dict) -> "FamilyModel":
        """A model of ``config`` with the weights of a saved ``state_dict``."""

    def no_words_output(self) -> "np.ndarray":
        """The output of a sentence without words, found without running the model."""

    def sentence_outputs(
        self, read: list[list[int]], batch: list, reading: Reading, eos_id: int, compute_dtype: Any
    ) -> "list[np.ndarray]":
        """One output a sentence of ``batch`` (``read``: the ids the model reads of each), as its family's
        ``member_tree`` reads it."""


@dataclass
class FitSection:
    """A family's part of a fit's plan (``FitPlan.sections``, by family name): how much each of its members reads
    (settled by the fit unless given), its update, its students of each teacher and its members' shape (``model``).
    A family subclasses it with the defaults and whatever else it decides; its fields with a help text are options of
    ``onparse fit``, named ``--PREFIX-FIELD`` (``Family.option_prefix``) unless the field names its option."""

    model: Any = None  # the members' settings (the family's ``settings``)
    epochs: int | None = None  # each member's: as given (None: --member-epochs, else what the recipe reads)
    sample: int | None = None  # settled by the fit: the units of the sample each member reads (None: the text)
    batch_size: int = 64
    students: int | None = None  # students from scratch of each teacher (None: the family's default)
    student_model: Any = None  # the students' settings (None: their start's)
    larger: bool | None = None  # members of the family's larger shape (``Family.larger``); None: where time allows
    # what the fit settles to its hours from what the user gave, the given kept in the record for a re-plan
    scaled: ClassVar[tuple[str, ...]] = ("epochs", "sample")

    def asks_for_students(self) -> bool:
        """Whether the section asks for students (beside the family's default): they need a member to start from."""
        return bool(self.students) or self.student_model is not None

    def check(self) -> None:
        """ValueError for a section that cannot run: the members' and students' settings checked too."""
        for name in ("epochs", "sample", "students"):
            value = getattr(self, name)
            least = 0 if name == "students" else 1
            if value is not None and (type(value) is not int or value < least):
                raise ValueError(f"{name} must be a whole number of at least {least}, not {value!r:.40}")
        if self.larger is not None and type(self.larger) is not bool:
            raise ValueError(f"larger must be true, false or null (where the time allows), not {self.larger!r:.40}")
        if type(self.batch_size) is not int or self.batch_size < 1:
            raise ValueError(f"batch_size must be a whole number of at least 1, not {self.batch_size!r:.40}")
        for settings in (self.model, self.student_model):
            if settings is not None:
                settings.check()


def check_sizes(settings: object, largest: dict[str, int]) -> None:
    """ValueError for a size of ``settings`` that is no whole number from 1 to its ``largest``."""
    for name, most in largest.items():
        value = getattr(settings, name)
        if type(value) is not int or not 1 <= value <= most:
            raise ValueError(f"{name} must be a whole number from 1 to {most:,}, not {value!r:.40}")


def section_from_dict(section: type[FitSection], settings: type, values: dict) -> FitSection:
    """A family's section from ``fit.json``: its settings objects made from their dicts (TypeError or ValueError for
    what is no section)."""
    if not isinstance(values, dict):
        raise ValueError(f"a family's section of a plan is an object, not {values!r:.40}")
    made = {
        name: settings(**value) if name in ("model", "student_model") and isinstance(value, dict) else value
        for name, value in values.items()
    }
    if made.get("model") is None:
        made.pop("model", None)
    found = section(**made)
    for name in ("model", "student_model"):
        if getattr(found, name) is not None and not isinstance(getattr(found, name), settings):
            raise ValueError(f"{name} must be an object of {settings.__name__} settings")
    return found


def section_options(section: type[FitSection]) -> list[str]:
    """The section's fields that are options of ``onparse fit`` (those with a help text)."""
    return [f.name for f in fields(section) if "help" in f.metadata]


class Family(ABC):
    """One model family. Subclasses set the class values and the methods; one instance of each is registered."""

    name: ClassVar[str]
    settings: ClassVar[type]  # its sizes: a dataclass of ``settings.setting`` fields with a ``check`` method
    parts: ClassVar[dict[str, str]]  # each of PARTS as "module:attribute"
    reads_either_way: ClassVar[bool]  # left to right or right to left (distillation rounds refine it), or as trained
    reads_distances: ClassVar[bool]  # a parse's rows hold its distances (layers x words), or nothing (span marginals)
    training: ClassVar[dict]  # TrainConfig settings in place of the class's defaults
    student_training: ClassVar[dict]  # a student's update and rate where a run sets none
    batch_unit: ClassVar[tuple[str, str]]  # what an update's size counts: a member's, a student's
    longest_sentence: ClassVar[int]  # words it parses at most
    learns_span_shares: ClassVar[bool] = (
        False  # a student learns its teacher's span shares (soft targets), or trees alone
    )
    # In a fit: its section of the plan and the prefix of the section's options, the names of its members and
    # students in the budget and the card, the unit its throughput counts (``text_units``), whether distillation
    # rounds refine its members (or they vote again as trained), its wall time over its training time (evaluations;
    # scored on dev gold trees too) and its parse's cost over training's per unit of text
    section: ClassVar[type[FitSection]] = FitSection
    option_prefix: ClassVar[str]
    # Its sizes on the command line (``train``, ``fit``): the fields of ``settings`` that are options, as ``--NAME``,
    # or ``--PREFIX-NAME`` with a ``size_prefix`` (a family added later takes one, so no name is two families');
    # those a fit's members may vary (repeated: member k takes the k-th), those its students may take apart
    # (``--student-NAME``), and the title of its part of ``fit --help``
    size_options: ClassVar[tuple[str, ...]] = ()
    size_prefix: ClassVar[str] = ""
    varied_sizes: ClassVar[tuple[str, ...]] = ()
    student_sizes: ClassVar[tuple[str, ...]] = ()
    plural: ClassVar[str]
    students_plural: ClassVar[str]
    unit: ClassVar[str] = "tokens"
    refined_in_rounds: ClassVar[bool] = False
    wall: ClassVar[tuple[float, float]] = (1.25, 1.25)
    parse_cost: ClassVar[float] = 1.0

    @property
    def help_title(self) -> str:
        """The title of its section of ``fit --help`` (a family may name it better)."""
        return f"Members: {self.plural}"

    def rule_entries(self, settings: Any) -> int:
        """Entries of the tables an update computes from the weights and holds besides them (a grammar's rules), for
        the memory a model of ``settings`` takes to train; none by default."""
        return 0

    def part(self, name: str) -> Any:
        """One of the family's heavier parts (``PARTS``), imported when first asked for."""
        module, attribute = self.parts[name].split(":")
        return getattr(import_module(module), attribute)

    @abstractmethod
    def readouts(self, settings: object) -> list[Layer]:
        """Every readout a model of ``settings`` gives a tree from."""

    @abstractmethod
    def default_readout(self, settings: object) -> Layer:
        """The readout a newly trained model of ``settings`` parses with."""

    @abstractmethod
    def owns(self, layer: object) -> bool:
        """Whether ``layer`` names one of this family's readouts (of some size)."""

    @abstractmethod
    def check_layer(self, value: object, settings: object | None = None) -> Layer:
        """``value`` as one of the readouts of a model of ``settings`` (of any size where None); ValueError
        otherwise."""

    @abstractmethod
    def member_tree(self, output, layer: Layer):
        """A member's tree from its output read at ``layer``, and the distances it was built from (None where none)."""

    @abstractmethod
    def words(self, output) -> int:
        """The words of the sentence an output is of."""

    @abstractmethod
    def describe_readout(self, layer: Layer, alone: bool = True) -> str:
        """A readout in words: for a table's row of a model read alone, or for an ensemble member's row."""

    @abstractmethod
    def describe_source(self, layer: Layer) -> str:
        """What a lone member's trees are built from at ``layer``, in words (for drawings and cards)."""

    @abstractmethod
    def untrained_name(self, layer: Layer) -> str:
        """The untrained control's row name for a model read at ``layer``."""

    @abstractmethod
    def check_reading(self, reading: Reading, student: bool) -> None:
        """ValueError for a reading a model of this family cannot have (as a student where ``student``)."""

    @abstractmethod
    def fit_reading(self, punctuation: bool, direction: str) -> Reading:
        """What a fit's member of this family reads, given the plan's punctuation and its turn's direction."""

    @abstractmethod
    def describe_reading(self, reading: Reading) -> str:
        """A reading in words, for cards and stage changes."""

    @abstractmethod
    def batch_share(self, batch_size: int, processes: int) -> str:
        """What each of several processes trains on of an update."""

    def schedule(self, section: FitSection) -> dict:
        """A fit member's epochs, update size and sample, from the plan's section for this family."""
        return {"epochs": section.epochs, "batch_size": section.batch_size, "sample_tokens": section.sample}

    def member_settings(self, section: FitSection, k: int) -> Any:
        """A fit member's sizes: member ``k``'s (from 1) in its turn."""
        return section.model

    def sized_reading(self, reading: Reading) -> Reading:
        """What the budget counts of a sentence for a member reading it as ``reading``: the same, unless the family
        says otherwise."""
        return reading

    def text_units(self, tokens: list[str]) -> int:
        """What a sentence of ``tokens`` (as ``sized_reading`` reads it) adds to the text a member learns, in the
        units its throughput is timed in (the budget's): every token and the sentence's end, unless the family says
        otherwise."""
        return len(tokens) + 1

    def recipe_units(self, section: FitSection, text_units: float) -> float:
        """The units a member reads at the recipe's full scale, of a text of ``text_units``: the text once, unless the
        family says otherwise."""
        return text_units

    def student_count(self, section: FitSection) -> int:
        """Students from scratch of each teacher: as the section asks, else none."""
        return section.students or 0

    def students(self, section: FitSection, start: Any, seed: int, prefix: str, plan: Any) -> list[tuple[str, dict]]:
        """Each student from scratch of one teacher as its name and its run's settings (a TrainConfig's, beside the
        fit's common ones); ``start`` is the voter it starts from: its folder, settings and reading."""
        folder, model, _ = start
        return [
            (
                f"{prefix}{self.option_prefix}-student-{i + 1}",
                {
                    "family": self.name,
                    "model": section.student_model or model,
                    "epochs": plan.scratch_passes,
                    "seed": seed + i,
                    "start": folder,
                    **self.student_training,
                    "default_layer": self.default_readout(model),
                },
            )
            for i in range(self.student_count(section))
        ]

    def larger(self, section: FitSection) -> FitSection:
        """The section with larger members (--larger-..., or where the hours choose the shape: ``time_chooses_shape``);
        the section as it is for a family with no larger shape."""
        return section

    def time_chooses_shape(self, section: FitSection) -> bool:
        """Whether the hours choose between the section's shape and ``larger``: the user left the shape as the
        recipe's and asked for neither."""
        return False


class GrammarFamily(Family):
    """A family of grammars (``onparse.families.grammar``): span marginals over the words read left to right, their
    one readout; trained by the likelihood of sentences of 2 to ``MAX_TRAINING_WORDS`` words, counted in words."""

    reads_either_way = False  # its trees are over the words read left to right
    reads_distances = False
    learns_span_shares = True  # every tree weighed by the shares of its spans (``grammar.share_span_scores``)
    unit = "words"
    batch_unit = ("words", "words")  # updates of sentences of one length, so many words
    # its dev perplexity is an inside pass over every dev sentence, four times an epoch: 1.10-1.38 in the plain fits
    # measured; scoring the dev gold trees too, an MBR parse each time, 1.9
    wall = (1.3, 1.9)

    def readouts(self, settings: object) -> list[Layer]:
        return [SPANS]

    def default_readout(self, settings: object) -> Layer:
        return SPANS

    def owns(self, layer: object) -> bool:
        return layer == SPANS and isinstance(layer, str)

    def check_layer(self, value: object, settings: object | None = None) -> Layer:
        if not self.owns(value):
            raise ValueError(f"{value!r} is no layer of a grammar: its trees come from its span marginals ({SPANS!r})")
        return SPANS

    def member_tree(self, output, layer: Layer):
        """The tree with the most expected constituents under the span marginals ((words + 1) x (words + 1))."""
        import numpy as np

        from onparse.structures.voting import best_tree

        return best_tree(np.asarray(output, dtype=np.float64)), None

    def words(self, output) -> int:
        return output.shape[-1] - 1

    def describe_readout(self, layer: Layer, alone: bool = True) -> str:
        return "PCFG (span marginals, MBR tree)" if alone else "PCFG"

    def describe_source(self, layer: Layer) -> str:
        return "a grammar's span marginals"

    def untrained_name(self, layer: Layer) -> str:
        return "pcfg"

    def check_reading(self, reading: Reading, student: bool) -> None:
        """ValueError for what no grammar reads: right to left (its trees are over the words, either way), or, as a
        student, punctuation (its teacher's trees are over the words)."""
        if reading.direction != FORWARD:
            raise ValueError("a grammar reads left to right (its trees are over the words, either way)")
        if student and reading.punctuation:
            raise ValueError("a grammar student reads the words alone: its teacher's trees are over the words")

    def fit_reading(self, punctuation: bool, direction: str) -> Reading:
        """The words, left to right (in English punctuation parsed worse)."""
        return Reading()

    def batch_share(self, batch_size: int, processes: int) -> str:
        """Its batch is words of sentences of one length."""
        return f"one in {processes} of the sentences of each {batch_size}-word batch"

    def text_units(self, tokens: list[str]) -> int:
        """The words of a sentence it learns from (two to MAX_TRAINING_WORDS), else none."""
        return len(tokens) if 2 <= len(tokens) <= MAX_TRAINING_WORDS else 0
