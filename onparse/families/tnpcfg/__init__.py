"""The tensor grammar family: PCFGs of many symbols whose binary rules are a low-rank tensor (TN-PCFG: Yang, Tu & Liu,
2021), parsed in rank space (Yang, Liu & Tu, 2022) by the inside and outside passes every grammar shares
(``onparse.families.grammar``); one readout, its span marginals, as any grammar's.

Its rules couple a rule's left and right children through a latent rank, where the grammar family chooses them apart
given the parent, and it affords hundreds of symbols where that one affords tens: a grammar that errs otherwise."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from onparse.families.base import SPANS, FitSection, GrammarFamily, check_sizes
from onparse.settings import LARGEST_SIZES, Reading, setting

NAME = "tnpcfg"
# Kim, Dyer & Rush's optimizer as the grammar family's (Adam at 1e-3, gradients clipped at 3); updates of 1,000 words,
# as the rules (emissions over the vocabulary above all) cost alike whatever an update's size
TRAINING = {"lr": 1e-3, "clip": 3.0, "batch_size": 1000, "epochs": 10, "default_layer": SPANS}
# Words a member reads in a fit at the recipe's full scale: nine passes of NEGRA's sentences, where the German one that
# read 51.6 alone was kept at its eighth
TOKENS = 2_400_000


@dataclass
class TnpcfgConfig:
    """Size of a tensor grammar: its symbols, the rank of its rule tensor and the width of its symbol embeddings."""

    family: ClassVar[str] = NAME
    vocab_size: int = 10000
    nonterminals: int = setting(128, "A tensor grammar's nonterminal symbols.")
    preterminals: int = setting(256, "A tensor grammar's preterminal symbols.")
    rank: int = setting(128, "The rank of a tensor grammar's rules: its inside pass costs n^2 rank^2 + n^3 rank.")
    symbol_size: int = setting(256, "A tensor grammar's symbol embeddings and rule networks.")

    def check(self) -> None:
        """ValueError for sizes no tensor grammar can have."""
        check_sizes(
            self,
            {
                "vocab_size": LARGEST_SIZES["vocab_size"],
                "nonterminals": 65_536,
                "preterminals": 65_536,
                "rank": 8192,
                "symbol_size": 8192,
            },
        )


@dataclass
class TnpcfgSection(FitSection):
    """The tensor grammar members of a fit: their shape, how much each reads and their update."""

    model: TnpcfgConfig = field(default_factory=TnpcfgConfig)
    epochs: int | None = setting(
        None,
        "Epochs of each tensor grammar member  [default: --member-epochs where given, else enough to read about "
        "2.4 million words of sentences of 2-40 words (with --hours, what fits them)].",
        kind=int,
    )
    batch_size: int = setting(TRAINING["batch_size"], "Words of a tensor grammar member's update.")


class TNPCFG(GrammarFamily):
    """Tensor grammar members: span marginals over the words read left to right; they vote as trained."""

    name = NAME
    settings = TnpcfgConfig
    parts = {
        "model": "onparse.families.tnpcfg.model:TensorPCFG",
        "training_setup": "onparse.families.grammar_training:grammar_setup",
        "student_objective": "onparse.families.grammar_training:grammar_student",
        "dev_figures": "onparse.families.grammar_training:grammar_dev_figures",
    }
    training = TRAINING
    student_training: ClassVar[dict] = {name: TRAINING[name] for name in ("lr", "batch_size", "clip")}
    # words: the outside pass keeps four charts of n^2 x rank in float64 (about 0.65 GB at 400 words, rank 128)
    longest_sentence = 400
    section = TnpcfgSection
    option_prefix, plural, students_plural = NAME, "tensor grammars", "tensor grammar students"
    size_options, size_prefix = ("nonterminals", "preterminals", "rank", "symbol_size"), NAME
    help_title = "Tensor grammar members"

    def describe_reading(self, reading: Reading) -> str:
        return "a tensor grammar over " + ("every token" if reading.punctuation else "the words")

    def rule_entries(self, settings: TnpcfgConfig) -> int:
        """The factors over the symbols (each symbol's rank and each rank's children) and their rank-space products."""
        symbols = settings.nonterminals + settings.preterminals
        return (settings.nonterminals + 2 * symbols) * settings.rank + 3 * settings.rank**2

    def recipe_units(self, section: TnpcfgSection, text_units: float) -> float:
        return TOKENS
