"""The grammar family: neural PCFGs (``onparse.families.pcfg_model``) trained on the sentences' likelihood, whose
one readout is
their span marginals; a tree is the one with the most expected constituents (minimum Bayes risk, the voting's CKY)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from onparse.families.base import Family
from onparse.settings import FORWARD, LARGEST_SIZES, Layer, Reading, setting

NAME = "pcfg"
SPANS = "spans"  # the one readout: the tree with the most expected constituents
# Where a grammar's training differs from an ON-LSTM's defaults (Kim, Dyer & Rush, 2019: Adam at 1e-3, gradients
# clipped at 3); its batch_size counts the words of an update (sentences of one length), not streams.
GRAMMAR_TRAINING = {"lr": 1e-3, "clip": 3.0, "batch_size": 600, "epochs": 10, "default_layer": SPANS}
# The larger grammar a fit trains where its hours leave time for it (``budget.larger``): in German one read 51.0 on
# NEGRA valid against 45.8 for the default 30 x 60 in 600-word updates (the shipped model's three: 48.9-50.0 against the
# plain fit's two default ones, 47.6 and 49.3); in English no better at three times the cost (experiments/notebook.md)
LARGER_GRAMMAR = {"nonterminals": 64, "preterminals": 128, "batch_size": 200}
INDEPENDENT, JOINT = "independent", "joint"  # a grammar's binary productions: left and right apart, or together
PRODUCTIONS = (INDEPENDENT, JOINT)


@dataclass
class GrammarConfig:
    """Size of a neural PCFG member: its symbols and the width of their embeddings."""

    family: ClassVar[str] = NAME
    vocab_size: int = 10000
    nonterminals: int = setting(30, "A grammar's nonterminal symbols.")
    preterminals: int = setting(60, "A grammar's preterminal symbols.")
    symbol_size: int = setting(256, "A grammar's symbol embeddings and rule networks.")
    productions: str = setting(
        INDEPENDENT,
        "A grammar's binary rules: independent (p(A -> B C) as a left and a right "
        "choice, cheap for many symbols) or joint (one table, Kim et al.'s neural PCFG: more "
        "expressive for few symbols, slower).",
        choices=(INDEPENDENT, JOINT),
    )
    latent_size: int = setting(
        0,
        "A compound grammar's sentence vector (Kim, Dyer & Rush, 2019: 64): each sentence gets "
        "its own root and production rules; 0, one grammar for every sentence. Independent "
        "productions only.",
        minimum=0,
        maximum=4096,
    )

    def check(self) -> None:
        """ValueError for sizes no grammar can have."""
        for name, largest in (
            ("vocab_size", LARGEST_SIZES["vocab_size"]),
            ("nonterminals", 4096),
            ("preterminals", 8192),
            ("symbol_size", 8192),
        ):
            value = getattr(self, name)
            if type(value) is not int or not 1 <= value <= largest:
                raise ValueError(f"{name} must be a whole number from 1 to {largest:,}, not {value!r:.40}")
        if self.productions not in PRODUCTIONS:
            raise ValueError(f"productions must be {' or '.join(map(repr, PRODUCTIONS))}, not {self.productions!r:.40}")
        if type(self.latent_size) is not int or not 0 <= self.latent_size <= 4096:
            raise ValueError(f"latent_size must be a whole number from 0 to 4,096, not {self.latent_size!r:.40}")
        if self.latent_size and self.productions == JOINT:
            raise ValueError("a compound grammar (latent_size) takes independent productions, not joint ones")


class Grammar(Family):
    """Grammar members: span marginals over the words read left to right; they vote as trained."""

    name = NAME
    settings = GrammarConfig
    parts = {
        "model": "onparse.families.pcfg_model:NeuralPCFG",
        "training_setup": "onparse.families.pcfg_training:grammar_setup",
        "student_objective": "onparse.families.pcfg_training:grammar_student",
        "dev_figures": "onparse.families.pcfg_training:grammar_dev_figures",
    }
    reads_either_way = False  # its trees are over the words read left to right
    reads_distances = False
    training = GRAMMAR_TRAINING
    student_training: ClassVar[dict] = {name: GRAMMAR_TRAINING[name] for name in ("lr", "batch_size", "clip")}
    learns_span_shares = True  # every tree weighed by the shares of its spans (``pcfg_model.share_span_scores``)
    longest_sentence = 800  # words: inside and outside passes are cubic (70 s at 800 words, one core)

    def readouts(self, settings: GrammarConfig) -> list[Layer]:
        return [SPANS]

    def default_readout(self, settings: GrammarConfig) -> Layer:
        return SPANS

    def owns(self, layer: object) -> bool:
        return layer == SPANS and isinstance(layer, str)

    def check_layer(self, value: object, settings: GrammarConfig | None = None) -> Layer:
        if not self.owns(value):
            raise ValueError(f"{value!r} is no layer of a grammar: its trees come from its span marginals ({SPANS!r})")
        return SPANS

    def member_tree(self, output, layer: Layer):
        """The tree with the most expected constituents under the span marginals ((words + 1) x (words + 1))."""
        import numpy as np

        from onparse.voting import best_tree

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
        """ValueError for what no grammar reads: right to left (its trees are over the words either way), or, as a
        student, punctuation (its teacher's trees are over the words)."""
        if reading.direction != FORWARD:
            raise ValueError("a grammar reads left to right (its trees are over the words, either way)")
        if student and reading.punctuation:
            raise ValueError("a grammar student reads the words alone: its teacher's trees are over the words")

    def fit_reading(self, punctuation: bool, direction: str) -> Reading:
        """The words, left to right (in English punctuation parsed worse)."""
        return Reading()

    def describe_reading(self, reading: Reading) -> str:
        return "a grammar over " + ("every token" if reading.punctuation else "the words")

    def batch_share(self, batch_size: int, processes: int) -> str:
        """Its batch is words of sentences of one length."""
        return f"one in {processes} of the sentences of each {batch_size}-word batch"

    def schedule(self, plan: Any) -> dict:
        return {
            "epochs": plan.grammar_epochs,
            "batch_size": plan.grammar_batch_size,
            "sample_tokens": plan.grammar_sample,
        }

    def member_settings(self, plan: Any, k: int) -> GrammarConfig:
        return plan.member_grammar
