"""The ON-LSTM family (Shen et al., 2019): language models whose master forget gates give each word a distance per
layer; a tree is built greedily top-down from one layer's distances or their mean
(``onparse.families.onlstm_model``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from onparse.families.base import Family
from onparse.settings import LARGEST_SIZES, Layer, Reading, setting

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


def tree_row(distances, layer: Layer):
    """The distances a tree is built from: one layer's (1-based) or the mean of all; layers on the first axis
    (numpy or torch)."""
    return distances.mean(0) if layer == MEAN else distances[layer - 1]


class ONLSTM(Family):
    """ON-LSTM members: distances per layer, read at a layer or their mean; either way, words or every token."""

    name = NAME
    settings = OnlstmConfig
    parts = {
        "model": "onparse.families.onlstm_model:OnlstmModel",
        "training_setup": "onparse.families.onlstm_training:language_model_setup",
        "student_objective": "onparse.families.onlstm_training:onlstm_student",
        "dev_figures": "onparse.families.onlstm_training:onlstm_dev_figures",
    }
    reads_either_way = True
    reads_distances = True
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

        from onparse.trees import build_tree

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

    def schedule(self, plan: Any) -> dict:
        return {"epochs": plan.member_epochs, "batch_size": plan.batch_size, "sample_tokens": plan.member_sample}

    def member_settings(self, plan: Any, k: int) -> OnlstmConfig:
        """``member_model``, with each varied size at member ``k``'s turn in its cycle."""
        return replace(
            plan.member_model, **{name: sizes[(k - 1) % len(sizes)] for name, sizes in plan.member_variants.items()}
        )
