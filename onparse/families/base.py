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
from importlib import import_module
from typing import Any, ClassVar

from onparse.settings import Layer, Reading

PARTS = ("model", "training_setup", "student_objective", "dev_figures")


class Family(ABC):
    """One model family. Subclasses set the class values and the methods; one instance of each is registered."""

    name: ClassVar[str]
    settings: ClassVar[type]  # its sizes: a dataclass of ``settings.setting`` fields with a ``check`` method
    parts: ClassVar[dict[str, str]]  # each of PARTS as "module:attribute"
    reads_either_way: ClassVar[bool]  # left to right or right to left (distillation rounds refine it), or as trained
    reads_distances: ClassVar[bool]  # a parse's rows hold its distances (layers x words), or nothing (span marginals)
    training: ClassVar[dict]  # TrainConfig settings in place of the class's defaults
    student_training: ClassVar[dict]  # a student's update and rate where a run sets none
    longest_sentence: ClassVar[int]  # words it parses at most
    learns_span_shares: ClassVar[bool] = (
        False  # a student learns its teacher's span shares (soft targets), or trees alone
    )

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

    @abstractmethod
    def schedule(self, plan: Any) -> dict:
        """A fit member's epochs and update size, from the plan's settings for this family."""

    @abstractmethod
    def member_settings(self, plan: Any, k: int) -> Any:
        """A fit member's sizes: member ``k``'s (from 1) in its turn."""
