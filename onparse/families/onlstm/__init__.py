"""The ON-LSTM family (Shen et al., 2019): language models whose master forget gates give each word a distance per
layer; a tree is built greedily top-down from one layer's distances or their mean
(``onparse.families.onlstm.model``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from onparse.families.base import Family, FitSection
from onparse.settings import BACKWARD, FORWARD, LARGEST_SIZES, Layer, Reading, setting

NAME = "onlstm"
MEAN = "mean"  # the readout of the distances averaged over all layers
# A student's update (sentences) and learning rate where a distillation run does not set them: the fit's fine-tuning
# settings.
STUDENT_TRAINING = {"lr": 5e-4, "batch_size": 32}
# A fit's reading rule: where punctuation or direction is not given, short ON-LSTM probes learn a sample of the text in
# each candidate reading, and the members read as the probe whose trees agree best with the vote of the other probes
# and the grammar members on the dev text (no gold trees; the fit's ``readings`` stage). A grammar reads the words
# whatever the ON-LSTMs read, so it referees every reading alike; in English, Chinese and German the rule chose the
# reading the gold figures would have.
AUTO = "auto"


@dataclass
class OnlstmConfig:
    """Architecture and regularization of an ON-LSTM language model."""

    family: ClassVar[str] = NAME
    vocab_size: int = setting(10000, "Words in the vocabulary (the most frequent; the rest are <unk>).", minimum=3)
    embedding_size: int = setting(400, "An ON-LSTM's word embeddings.")
    hidden_size: int = setting(1150, "An ON-LSTM's hidden state per layer (a multiple of the chunk size).")
    n_layers: int = setting(3, "An ON-LSTM's layers.", option="--layers")
    chunk_size: int = setting(10, "Hidden units per master-gate level (hidden/chunk levels).")
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
            if not 1 <= getattr(self, name) <= LARGEST_SIZES[name]:
                raise ValueError(f"{name} must be from 1 to {LARGEST_SIZES[name]:,}, not {getattr(self, name)}")
        for name in ("hidden_size", "embedding_size"):
            if getattr(self, name) % self.chunk_size:
                raise ValueError(f"{name} {getattr(self, name)} is not a multiple of chunk size {self.chunk_size}")
        for name in ("dropout", "dropouth", "dropouti", "dropoute", "wdrop"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), not {getattr(self, name)}")


# A fit's members: small enough that four train in well under an hour on two cores.
MEMBER_MODEL = OnlstmConfig(embedding_size=200, hidden_size=600, n_layers=3, chunk_size=10)
VARIED_SIZES = ("embedding_size", "hidden_size", "chunk_size")  # what members may vary: one layer rule fits all
# Tokens a member reads: one epoch of WSJ 00-20 (about 0.95 M) parsed best of the schedules measured; a smaller
# corpus is read more often.
MEMBER_TOKENS = 1_000_000
# ... and a text up to this many times longer is read whole, once, rather than sampled: seed for seed, CTB 29 (1.36 M
# tokens) read whole made members of dev perplexity 274 and 270 and 46.7 / 45.3 F1, a 1 M-token sample 301 and 300 and
# 41.4 / 43.7
WHOLE_TEXT_RATIO = 2


@dataclass
class OnlstmSection(FitSection):
    """The ON-LSTM members of a fit: their model (``MEMBER_MODEL``), the sizes they vary (member k takes each size's
    k-th, cycling, e.g. ``{"hidden_size": [600, 1150]}``), what they read (punctuation, directions: given, or chosen
    by the reading rule's probes) and their students' directions, update and rates."""

    model: OnlstmConfig = field(default_factory=lambda: replace(MEMBER_MODEL))
    variants: dict[str, list[int]] = field(default_factory=dict)
    directions: list[str] = setting(
        [AUTO],
        "Repeat to vary the members, as --chunk-size: member k reads in the k-th "
        "direction, cycling. auto: the first two ON-LSTM members read left to right and "
        "right to left, every other one as the one with the lower dev perplexity, and the "
        "other does not vote (no gold trees; with one ON-LSTM, the reading probes choose).",
        option="--direction",
        choices=(FORWARD, BACKWARD, AUTO),
    )
    punctuation: bool | None = setting(
        None,
        "Whether the ON-LSTMs read the punctuation tokens too (trees and scores "
        "stay over the words)  [default: chosen by reading probes: short ON-LSTMs learn a sample of the "
        "text with and without it, and the ON-LSTMs read as the probe whose trees agree "
        "best with the other probes' and the grammar members' vote on --dev (no gold "
        "trees)].",
        option="--punctuation",
        negatable=True,
        kind=bool,
    )
    probe_tokens: int = setting(
        250_000, "Tokens of the training text (a seeded sample) each reading probe learns.", option="--probe-tokens"
    )
    probe_epochs: int = 1  # settled by the fit: a text smaller than probe_tokens is read more often
    scaled: ClassVar[tuple[str, ...]] = (*FitSection.scaled, "probe_tokens")
    student_directions: list[str] = setting(
        [],
        "The student from scratch reads in this direction  [default: the first "
        "voting ON-LSTM's]; repeat for one student per direction, each voting "
        "(together they see both sides of every gap).",
        option="--student-direction",
        choices=(FORWARD, BACKWARD),
    )
    # students of each distillation round fine-tune their member; students from scratch start from fresh weights
    finetune_passes: int = 1
    finetune_lr: float = STUDENT_TRAINING["lr"]
    student_batch_size: int = STUDENT_TRAINING["batch_size"]  # sentences per distillation update
    scratch_lr: float = 2e-3

    def asks_for_students(self) -> bool:
        return super().asks_for_students() or bool(self.student_directions)

    def check(self) -> None:
        super().check()
        if not isinstance(self.model, OnlstmConfig) or not isinstance(self.variants, dict):
            raise ValueError("an ON-LSTM section's model and variants must be objects")
        unvaried = set(self.variants) - set(VARIED_SIZES)
        if unvaried:
            raise ValueError(
                f"members can vary only their {', '.join(VARIED_SIZES)}, not {', '.join(sorted(unvaried))}"
            )
        if (
            not isinstance(self.student_directions, list)
            or set(self.student_directions) - {FORWARD, BACKWARD}
            or len(set(self.student_directions)) < len(self.student_directions)
        ):
            raise ValueError(
                f"students read {FORWARD}, {BACKWARD} or both, each once, not {self.student_directions!r:.40}"
            )
        if self.punctuation is not None and type(self.punctuation) is not bool:
            raise ValueError(
                f"punctuation must be true, false or null (chosen by the reading rule), not {self.punctuation!r:.40}"
            )
        if (
            not isinstance(self.directions, list)
            or not self.directions
            or set(self.directions) - {FORWARD, BACKWARD, AUTO}
            or (AUTO in self.directions and self.directions != [AUTO])
        ):
            raise ValueError(
                f"members read in directions ({FORWARD}, {BACKWARD}, repeated) or by the {AUTO!r} rule alone, "
                f"not {self.directions!r:.40}"
            )
        for name in ("probe_tokens", "probe_epochs", "finetune_passes", "student_batch_size"):
            if type(getattr(self, name)) is not int or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {getattr(self, name)!r:.40}")
        for name in ("finetune_lr", "scratch_lr"):
            if type(getattr(self, name)) not in (int, float) or not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a positive number, not {getattr(self, name)!r:.40}")


def tree_row(distances, layer: Layer):
    """The distances a tree is built from: one layer's (1-based) or the mean of all; layers on the first axis
    (numpy or torch)."""
    return distances.mean(0) if layer == MEAN else distances[layer - 1]


class ONLSTM(Family):
    """ON-LSTM members: distances per layer, read at a layer or their mean; either way, words or every token."""

    name = NAME
    settings = OnlstmConfig
    parts = {
        "model": "onparse.families.onlstm.model:OnlstmModel",
        "training_setup": "onparse.families.onlstm.training:language_model_setup",
        "student_objective": "onparse.families.onlstm.training:onlstm_student",
        "dev_figures": "onparse.families.onlstm.training:onlstm_dev_figures",
    }
    reads_either_way = True
    reads_distances = True
    section = OnlstmSection
    option_prefix, plural, students_plural, unit = "onlstm", "ON-LSTMs", "ON-LSTM students", "tokens"
    size_options = ("embedding_size", "hidden_size", "n_layers", "chunk_size")
    varied_sizes = VARIED_SIZES
    help_title = "ON-LSTM members"
    refined_in_rounds = True
    wall = (1.25, 1.25)  # a language model's dev evaluations
    parse_cost = 1 / 3  # parsing a token: no backward pass
    training: ClassVar[dict] = {}
    student_training = STUDENT_TRAINING
    batch_unit = ("streams", "sentences")  # a language model reads parallel streams; a student, whole sentences
    longest_sentence = 2000  # words: its distances are linear in length (8 s at 2,000 words, one core)

    def readouts(self, settings: OnlstmConfig) -> list[Layer]:
        return [*range(1, settings.n_layers + 1), MEAN]

    def default_readout(self, settings: OnlstmConfig) -> Layer:
        """The paper's layer 2, or the top one of a smaller model."""
        return min(2, settings.n_layers)

    def owns(self, layer: object) -> bool:
        return (layer == MEAN and isinstance(layer, str)) or (type(layer) is int and layer >= 1)

    def check_layer(self, value: object, settings: OnlstmConfig | None = None) -> Layer:
        if not self.owns(value):
            raise ValueError(f"{value!r} is neither a layer number (1, 2, ...) nor {MEAN!r}")
        if settings is not None and value != MEAN and value > settings.n_layers:
            raise ValueError(
                f"layer {value} does not exist: the model has layers 1 to {settings.n_layers} (or {MEAN!r}, their mean)"
            )
        return value

    def member_tree(self, output, layer: Layer):
        """The greedy builder's tree over ``layer``'s row of the distances (layers x words)."""
        import numpy as np

        from onparse.structures.trees import build_tree

        row = np.asarray(tree_row(output, layer), dtype=np.float64)
        return build_tree(row), row

    def words(self, output) -> int:
        return output.shape[-1]

    def describe_readout(self, layer: Layer, alone: bool = True) -> str:
        if not alone:
            return f"layer {layer}"
        return "ON-LSTM mean of layers" if layer == MEAN else f"ON-LSTM layer {layer}"

    def describe_source(self, layer: Layer) -> str:
        return "the mean of the layers' distances" if layer == MEAN else f"layer {layer} distances"

    def untrained_name(self, layer: Layer) -> str:
        return f"layer_{layer}"

    def check_reading(self, reading: Reading, student: bool) -> None:
        """An ON-LSTM reads any tokens, either way."""

    def fit_reading(self, punctuation: bool, direction: str) -> Reading:
        return Reading(punctuation, direction)

    def describe_reading(self, reading: Reading) -> str:
        return reading.direction + (" with punctuation" if reading.punctuation else ", words alone")

    def batch_share(self, batch_size: int, processes: int) -> str:
        """Its batch is parallel streams."""
        return f"{batch_size // processes} of the {batch_size} streams"

    def member_settings(self, section: OnlstmSection, k: int) -> OnlstmConfig:
        """The section's model, with each varied size at member ``k``'s turn in its cycle."""
        return replace(section.model, **{name: sizes[(k - 1) % len(sizes)] for name, sizes in section.variants.items()})

    def sized_reading(self, reading: Reading) -> Reading:
        """Every token with punctuation: the most a member may read (the reading rule may choose it)."""
        return replace(reading, punctuation=True)

    def recipe_units(self, section: OnlstmSection, text_units: float) -> float:
        """MEMBER_TOKENS, or the whole text where that is at most WHOLE_TEXT_RATIO times as long (a sample would leave
        out what the members learn from)."""
        return text_units if MEMBER_TOKENS < text_units <= WHOLE_TEXT_RATIO * MEMBER_TOKENS else MEMBER_TOKENS

    def student_count(self, section: OnlstmSection) -> int:
        """One per direction asked for, else one."""
        return len(section.student_directions) or 1

    def students(self, section: OnlstmSection, start, seed: int, prefix: str, plan) -> list[tuple[str, dict]]:
        """A student per direction (one reading as its start where none is asked for), all from ``seed``, at the
        section's scratch learning rate and student update."""
        folder, model, reading = start
        readings = [replace(reading, direction=d) for d in section.student_directions] or [reading]
        return [
            (
                prefix + (f"scratch-{i + 1}" if i else "scratch"),
                {
                    "model": model,
                    "reading": student_reading,
                    "epochs": plan.scratch_passes,
                    "lr": section.scratch_lr,
                    "batch_size": section.student_batch_size,
                    "seed": seed,
                    "start": folder,
                },
            )
            for i, student_reading in enumerate(readings)
        ]
