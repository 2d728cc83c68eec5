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
    k-th, cycling, e.g. ``{"hidden_size": [600, 1150]}``) and their students' directions."""

    model: OnlstmConfig = field(default_factory=lambda: replace(MEMBER_MODEL))
    variants: dict[str, list[int]] = field(default_factory=dict)
    student_directions: list[str] = setting(
        [],
        "The student from scratch reads in this direction  [default: the first "
        "voting ON-LSTM's]; repeat for one student per direction, each voting "
        "(together they see both sides of every gap).",
        option="--student-direction",
        choices=(FORWARD, BACKWARD),
    )

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
    plan_settings = ("directions", "punctuation", "probe_tokens")
    refined_in_rounds = True
    wall = (1.25, 1.25)  # a language model's dev evaluations
    parse_cost = 1 / 3  # parsing a token: no backward pass
    training: ClassVar[dict] = {}
    student_training = STUDENT_TRAINING
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
        plan's scratch learning rate and student update."""
        folder, model, reading = start
        readings = [replace(reading, direction=d) for d in section.student_directions] or [reading]
        return [
            (
                prefix + (f"scratch-{i + 1}" if i else "scratch"),
                {
                    "model": model,
                    "reading": student_reading,
                    "epochs": plan.scratch_passes,
                    "lr": plan.scratch_lr,
                    "batch_size": plan.student_batch_size,
                    "seed": seed,
                    "start": folder,
                },
            )
            for i, student_reading in enumerate(readings)
        ]
