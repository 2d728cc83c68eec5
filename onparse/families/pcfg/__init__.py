"""The grammar family: neural PCFGs (``onparse.families.pcfg.model``) trained on the sentences' likelihood, whose
one readout is
their span marginals; a tree is the one with the most expected constituents (minimum Bayes risk, the voting's CKY)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from onparse.families.base import SPANS, FitSection, GrammarFamily, check_sizes
from onparse.settings import LARGEST_SIZES, Reading, setting

NAME = "pcfg"
# Where a grammar's training differs from an ON-LSTM's defaults (Kim, Dyer & Rush, 2019: Adam at 1e-3, gradients
# clipped at 3); its batch_size counts the words of an update (sentences of one length), not streams.
PCFG_TRAINING = {"lr": 1e-3, "clip": 3.0, "batch_size": 600, "epochs": 10, "default_layer": SPANS}
# The larger grammar a fit trains where its hours leave time for it (``budget.larger``): in German one read 51.0 on
# NEGRA valid against 45.8 for the default 30 x 60 in 600-word updates (the shipped model's three: 48.9-50.0 against the
# plain fit's two default ones, 47.6 and 49.3); in English no better at three times the cost
LARGER_PCFG = {"nonterminals": 64, "preterminals": 128, "batch_size": 200}
INDEPENDENT, JOINT = "independent", "joint"  # a grammar's binary productions: left and right apart, or together
PRODUCTIONS = (INDEPENDENT, JOINT)


@dataclass
class PcfgConfig:
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
        check_sizes(
            self,
            {
                "vocab_size": LARGEST_SIZES["vocab_size"],
                "nonterminals": 4096,
                "preterminals": 8192,
                "symbol_size": 8192,
            },
        )
        if self.productions not in PRODUCTIONS:
            raise ValueError(f"productions must be {' or '.join(map(repr, PRODUCTIONS))}, not {self.productions!r:.40}")
        if type(self.latent_size) is not int or not 0 <= self.latent_size <= 4096:
            raise ValueError(f"latent_size must be a whole number from 0 to 4,096, not {self.latent_size!r:.40}")
        if self.latent_size and self.productions == JOINT:
            raise ValueError("a compound grammar (latent_size) takes independent productions, not joint ones")


# Words a grammar member reads: five epochs of WSJ 00-20's or CTB 29's sentences of 2-40 words, fifteen of NEGRA's;
# the members measured were within half a point of their best by then
PCFG_TOKENS = 4_000_000
# Words a larger grammar (LARGER_PCFG) reads: nine epochs of NEGRA's, where the German one that read 51.0 was kept
LARGER_PCFG_TOKENS = 2_400_000
# Grammar students a fit trains by default: in English two students of the fit's first vote read 58.8-59.5 alone
# where the vote read 55.1
PCFG_STUDENTS = 2
# The focus of a fit's grammar students (``DistillConfig.focus``): the text's likelihood with every tree weighed by its
# teacher's voters; against students of the voted tree (same teacher, sample and seed, kept by dev perplexity) +0.76
# in English and -0.33 in German
STUDENT_FOCUS = 3.0


@dataclass
class PcfgSection(FitSection):
    """The grammar members of a fit: their shape, how much each reads (``tokens`` at the recipe's full scale: words of
    its training sentences), their update, and their students."""

    model: PcfgConfig = field(default_factory=PcfgConfig)
    epochs: int | None = setting(
        None,
        "Epochs of each grammar member  [default: --member-epochs where given, "
        "else enough to read about four million "
        "words of sentences of 2-40 words (with --hours, what fits them), a sample "
        "of the text where that is less].",
        kind=int,
    )
    batch_size: int = setting(
        PCFG_TRAINING["batch_size"],
        "Words of a grammar member's update (German 64 x 128 grammars did better at 200).",
    )
    larger: bool | None = setting(
        None,
        f"Grammar members of {LARGER_PCFG['nonterminals']} x "
        f"{LARGER_PCFG['preterminals']} symbols in {LARGER_PCFG['batch_size']}-word "
        "updates, each reading about 2.4 million words (in German 1 to 5 points better "
        "than the default shape; in English no better, at three times the cost)  [default: "
        "where --hours leave time for them with every other model reading all the "
        "recipe reads; the default shape otherwise].",
        negatable=True,
        kind=bool,
        option="--larger-grammars",
    )
    tokens: int | None = None  # settled by the fit: the words a member reads at full scale (None: PCFG_TOKENS)
    students: int | None = setting(
        None,
        "Grammars from scratch that learn the last ensemble's trees beside the "
        "ON-LSTM students (the first grammar member's shape and vocabulary, "
        "--scratch-passes passes, seeds counting up from --seed); each votes  "
        f"[default: {PCFG_STUDENTS} where the fit has grammar members, else none].",
        minimum=0,
        kind=int,
    )

    focus: float = setting(
        STUDENT_FOCUS,
        "The grammar students learn the text's likelihood focused by the teacher's voters, each "
        "tree weighed by exp(FOCUS x the sum of its spans' shares of the votes), and keep their "
        "point of lowest dev perplexity; 0: they learn the voted tree and keep their point that "
        "agrees best with it.",
        minimum=0,
        maximum=1000,  # as a student's own --focus (DistillConfig.focus)
    )

    @property
    def shape(self) -> dict:
        """The members' symbols and update size, as LARGER_PCFG names them."""
        return {
            "nonterminals": self.model.nonterminals,
            "preterminals": self.model.preterminals,
            "batch_size": self.batch_size,
        }

    def check(self) -> None:
        super().check()
        if not isinstance(self.model, PcfgConfig) or not isinstance(self.student_model, PcfgConfig | None):
            raise ValueError("a grammar section's model and student_model must be objects of grammar settings")
        if self.larger and self.shape not in (DEFAULT_SHAPE, LARGER_PCFG):
            raise ValueError(
                "--larger-grammars sets the grammars' symbols and updates: give it or --nonterminals, "
                "--preterminals and --grammar-batch-size, not both"
            )
        if self.student_model is not None and self.students == 0:
            raise ValueError(
                "--student-nonterminals and --student-preterminals shape the grammar students: ask for some too "
                "(--grammar-students)"
            )


DEFAULT_SHAPE = PcfgSection().shape  # the members' symbols and update unless asked otherwise


class PCFG(GrammarFamily):
    """Grammar members: span marginals over the words read left to right; they vote as trained."""

    name = NAME
    settings = PcfgConfig
    parts = {
        "model": "onparse.families.pcfg.model:NeuralPCFG",
        "training_setup": "onparse.families.grammar_training:grammar_setup",
        "student_objective": "onparse.families.grammar_training:grammar_student",
        "dev_figures": "onparse.families.grammar_training:grammar_dev_figures",
    }
    training = PCFG_TRAINING
    student_training: ClassVar[dict] = {name: PCFG_TRAINING[name] for name in ("lr", "batch_size", "clip")}
    longest_sentence = 800  # words: inside and outside passes are cubic (70 s at 800 words, one core)
    section = PcfgSection
    option_prefix, plural, students_plural = "grammar", "grammars", "grammar students"
    size_options = ("nonterminals", "preterminals", "symbol_size", "productions", "latent_size")
    student_sizes = ("nonterminals", "preterminals")
    help_title = "Grammar members"
    parse_cost = 1.0  # its inside and outside passes

    def describe_reading(self, reading: Reading) -> str:
        return "a grammar over " + ("every token" if reading.punctuation else "the words")

    def rule_entries(self, settings: PcfgConfig) -> int:
        """Each nonterminal's binary rules: a pair of symbols each (joint productions), else two symbols' lists."""
        symbols = settings.nonterminals + settings.preterminals
        return settings.nonterminals * symbols * (symbols if settings.productions == JOINT else 2)

    def recipe_units(self, section: PcfgSection, text_units: float) -> float:
        return section.tokens or PCFG_TOKENS

    def student_count(self, section: PcfgSection) -> int:
        """As asked, else PCFG_STUDENTS."""
        return PCFG_STUDENTS if section.students is None else section.students

    def students(self, section: PcfgSection, start, seed: int, prefix: str, plan) -> list[tuple[str, dict]]:
        """The base students, focused by the section's ``focus`` (then kept by dev perplexity, the gold-free rule
        that followed a focused student's gold figure)."""
        focused = {"focus": section.focus, "select_by": "dev_ppl"} if section.focus else {}
        return [
            (name, {**settings, **focused}) for name, settings in super().students(section, start, seed, prefix, plan)
        ]

    def larger(self, section: PcfgSection) -> PcfgSection:
        """LARGER_PCFG's symbols and update (students of that shape too), each reading LARGER_PCFG_TOKENS."""
        symbols = {name: LARGER_PCFG[name] for name in ("nonterminals", "preterminals")}
        return replace(
            section,
            model=replace(section.model, **symbols),
            batch_size=LARGER_PCFG["batch_size"],
            tokens=LARGER_PCFG_TOKENS,
        )

    def time_chooses_shape(self, section: PcfgSection) -> bool:
        """The user asked neither way and left the symbols, updates, reading and students' shape as the recipe's."""
        return (
            section.larger is None
            and section.epochs is None
            and section.student_model is None
            and section.shape == DEFAULT_SHAPE
        )
