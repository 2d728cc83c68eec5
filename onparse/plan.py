"""A fit's plan: every choice of ``onparse fit`` and its default, written once, recorded in ``fit.json`` and the
model's card. Plain dataclasses that import neither torch nor nltk (as ``config``), so ``--help`` shows the defaults
without loading either.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from onparse.config import AUTO, LAYER_RULES, DistillConfig, TrainConfig, default_field_maximum
from onparse.families import MEAN, REGISTRY, GrammarConfig, OnlstmConfig, checked_layer, named
from onparse.families.onlstm import STUDENT_TRAINING
from onparse.families.pcfg import GRAMMAR_TRAINING, LARGER_GRAMMAR
from onparse.language import check_language, head_initial
from onparse.settings import (
    BACKWARD,
    FORWARD,
    Layer,
    Reading,
    default,
    setting,
    setting_of,
)

# Grammar students a fit trains by default where it has grammar members: in English two students of the fit's first
# vote read 58.8-59.5 alone where the vote read 55.1 (experiments/notebook.md)
GRAMMAR_STUDENTS = 2
# The right-branching tree's share of a teacher's votes in a head-initial language: WSJ section 22's gold trees chose
# it (the English teacher read 48.5, 52.3 and 54.3 at 0, 1/4 and 1/2), the one choice of the plain fit made on gold
HEAD_INITIAL_PRIOR = 0.5

# The grammar members' symbols and update size unless asked otherwise (where the time allows: LARGER_GRAMMAR)
DEFAULT_GRAMMAR_SHAPE = {
    "nonterminals": default(GrammarConfig, "nonterminals"),
    "preterminals": default(GrammarConfig, "preterminals"),
    "batch_size": GRAMMAR_TRAINING["batch_size"],
}
# The members' architecture: small enough that four train in well under an hour on two cores.
MEMBER_MODEL = OnlstmConfig(embedding_size=200, hidden_size=600, n_layers=3, chunk_size=10)
VARIED_SIZES = (
    "embedding_size",
    "hidden_size",
    "chunk_size",
)  # what members may vary: the layers stay, so one layer rule fits all


@dataclass
class FitPlan:
    """Every choice of a fit, recorded in ``fit.json`` and the model's card."""

    train: list[str]
    dev: str
    dev_gold: str | None = None  # scored at every stage; chooses nothing unless select_by_gold
    # five: two ON-LSTMs try the directions (--direction auto), a third reads as the better, beside two grammars
    members: int = setting(5, "Members trained from random weights (language models, or grammars: --family).")
    # distillation rounds reproduced their teacher in every language measured (experiments/notebook.md)
    rounds: int = setting(0, "Distillation rounds (each student learns the last ensemble).", minimum=0)
    member_model: OnlstmConfig = field(default_factory=lambda: OnlstmConfig(**asdict(MEMBER_MODEL)))
    # members cycle through these sizes, e.g. {"hidden_size": [600, 1150], "chunk_size": [5, 10, 20]} (absent:
    # member_model's)
    member_variants: dict[str, list[int]] = field(default_factory=dict)
    member_epochs: int | None = setting(
        None,
        "Epochs of each member, grammars too unless --grammar-epochs  [default: "
        "enough to read about a million tokens (with --hours, what fits them), a sample "
        "of the text where that is less; the reading probes read no more].",
        kind=int,
    )  # None: about MEMBER_TOKENS tokens
    member_sample: int | None = None  # settled by the fit: the tokens of the sample each member reads (None: the text)
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
    layer_rule: str = setting(
        "fixed",
        "fixed: --vote-layer for all (the mean of an ON-LSTM's layers by default); own: "
        "each member's own layer (--layer); agreement: each ensemble gives each member the layer "
        "agreeing best with the others' vote on --dev; consistency: the one layer whose trees agree "
        "best between the members on --dev, for all.",
        choices=LAYER_RULES,
    )
    vote_layer: Layer | None = setting(
        None,
        "With --layer-rule fixed: every member's layer in every vote (default: "
        "--layer). Another layer than the learnt one keeps students' trees apart.",
        kind="layer",
    )
    right_branching_voter: float = (
        0.0  # a right-branching tree's votes: a prior for right-branching languages, never chosen on gold unless asked
    )
    teacher_prior: float | None = setting(
        None,
        "The share of the students' teacher's votes the right-branching tree "
        "casts (the model's own vote gives it none)  [default: "
        f"{HEAD_INITIAL_PRIOR:g} for head-initial languages (en, fr, es, ar, ...), "
        "else 0; the share was chosen on WSJ section 22's gold trees].",
        minimum=0,
        kind=float,
    )
    select_by_gold: bool = setting(
        False,
        "Choose checkpoints and the voter on --dev-gold (the original ON-LSTM protocol: "
        "not unsupervised; the card says so).",
    )
    keep_evaluations: bool = setting_of(TrainConfig, "keep_evaluations")  # every run's
    seed: int = setting(1111, "The first member's seed; every other run's counts from it.", minimum=None)
    dtype: str = setting_of(TrainConfig, "dtype")
    device: str = setting_of(TrainConfig, "device")
    language: str = setting_of(TrainConfig, "language")
    encoding: str = setting_of(TrainConfig, "encoding")
    tokenized: bool = setting_of(TrainConfig, "tokenized")
    punctuation: bool | None = setting(
        None,
        "Whether the ON-LSTMs read the punctuation tokens too (trees and scores "
        "stay over the words)  [default: chosen by reading probes: short ON-LSTMs learn a sample of the "
        "text with and without it, and the ON-LSTMs read as the probe whose trees agree "
        "best with the other probes' and the grammar members' vote on --dev (no gold "
        "trees)].",
        negatable=True,
        kind=bool,
    )
    directions: list[str] = setting(
        [AUTO],
        "Repeat to vary the members, as --chunk-size: member k reads in the k-th "
        "direction, cycling. auto: the first two ON-LSTM members read left to right and "
        "right to left, every other one as the one with the lower dev perplexity, and the "
        "other does not vote (no gold trees; with one ON-LSTM, the reading probes choose).",
        option="--direction",
        choices=(FORWARD, BACKWARD, AUTO),
    )
    probe_tokens: int = setting(250_000, "Tokens of the training text (a seeded sample) each reading probe learns.")
    probe_epochs: int = 1  # settled by the fit: a text smaller than probe_tokens is read more often
    families: list[str] = setting(
        [OnlstmConfig.family, GrammarConfig.family],
        "Repeat to mix the members, as --chunk-size: member k is of the "
        "k-th family, cycling (pcfg: a neural PCFG, trained on the words' likelihood; it votes "
        "as it is in every round).",
        option="--family",
        choices=REGISTRY,
    )
    member_grammar: GrammarConfig = field(default_factory=GrammarConfig)  # the grammar members' size
    grammar_epochs: int | None = setting(
        None,
        "Epochs of each grammar member  [default: --member-epochs where given, "
        "else enough to read about four million "
        "words of sentences of 2-40 words (with --hours, what fits them), a sample "
        "of the text where that is less].",
        kind=int,
    )
    grammar_sample: int | None = (
        None  # settled by the fit: the tokens of the sample each grammar reads (None: the text)
    )
    grammar_batch_size: int = setting(
        GRAMMAR_TRAINING["batch_size"],
        "Words of a grammar member's update (German 64 x 128 grammars did better at 200).",
    )
    larger_grammars: bool | None = setting(
        None,
        f"Grammar members of {LARGER_GRAMMAR['nonterminals']} x "
        f"{LARGER_GRAMMAR['preterminals']} symbols in {LARGER_GRAMMAR['batch_size']}-word "
        "updates, each reading about 2.4 million words (in German 1 to 5 points better "
        "than the default shape; in English no better, at three times the cost)  [default: "
        "where --hours leave time for them with every other model reading all the "
        "recipe reads; the default shape otherwise].",
        negatable=True,
        kind=bool,
    )
    grammar_tokens: int | None = (
        None  # settled by the fit: the words a grammar member reads at full scale (None: budget's)
    )
    # a turn more: the German plain fit's model read 51.16 on valid.penn against 50.84 (experiments/notebook.md)
    more_members: bool | None = setting(
        None,
        "One more member of each family (a turn of --family) beside --members  "
        "[default: where --hours leave time for them with every model reading all the "
        "recipe reads, at the rates the fit's first members trained].",
        negatable=True,
        kind=bool,
    )
    student_directions: list[str] = setting(
        [],
        "The student from scratch reads in this direction  [default: the first "
        "voting ON-LSTM's]; repeat for one student per direction, each voting "
        "(together they see both sides of every gap).",
        option="--student-direction",
        choices=(FORWARD, BACKWARD),
    )
    grammar_students: int | None = setting(
        None,
        "Grammars from scratch that learn the last ensemble's trees beside the "
        "ON-LSTM students (the first grammar member's shape and vocabulary, "
        "--scratch-passes passes, seeds counting up from --seed); each votes  "
        f"[default: {GRAMMAR_STUDENTS} where the fit has grammar members, else none].",
        minimum=0,
        kind=int,
    )
    student_grammar: GrammarConfig | None = None  # the grammar students' shape (None: the first grammar member's)
    # generation 0 is the first students' vote
    generations: int = setting(
        0,
        "Self-training: each generation's students (as the first ones, new seeds) learn the "
        "vote of the generation before and vote alone; the last generation is the model.",
        minimum=0,
        maximum=20,
    )  # climbs level off after two or three (experiments/notebook.md)
    stop_agreement: float = setting(
        95.0,
        "End the generations after one whose vote agrees with its teacher's trees on "
        "--dev at this sentence F1 or more (no gold trees).",
        minimum=0,
        maximum=100,
    )

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
        return cls(
            **{
                **values,
                "member_model": OnlstmConfig(**values["member_model"]),
                "member_grammar": GrammarConfig(**values.get("member_grammar", {})),
                "student_grammar": GrammarConfig(**student_grammar) if student_grammar else None,
            }
        )

    def family(self, k: int) -> str:
        """Member ``k``'s family (from 1), in its turn."""
        return self.families[(k - 1) % len(self.families)]

    def member_settings(self, k: int) -> OnlstmConfig | GrammarConfig:
        """Member ``k``'s sizes (from 1): its family's, in its turn."""
        return named(self.family(k)).member_settings(self, k)

    def schedule(self, k: int) -> dict:
        """Member ``k``'s epochs and update size: the plan's settings for its family."""
        return named(self.family(k)).schedule(self)

    def members_of(self, family: str) -> list[int]:
        """The members (from 1) of the family of that name."""
        grouped: dict[str, list[int]] = {}
        for k in range(1, self.members + 1):
            grouped.setdefault(self.family(k), []).append(k)
        return grouped.get(family, [])

    def onlstm_members(self) -> list[int]:
        """The members (from 1) that are ON-LSTMs: the ones that read in a direction, and that students start from."""
        return [k for k in range(1, self.members + 1) if named(self.family(k)).reads_either_way]

    def reading(self, k: int, chosen: Reading | None = None) -> Reading:
        """What member ``k`` (from 1) reads: a grammar, the words left to right; an ON-LSTM, the plan's punctuation
        and its turn's direction, each where not given as the reading rule ``chosen`` (the first candidate's until
        the rule has chosen)."""
        chosen = chosen or self.candidate_readings()[0]
        punctuation = chosen.punctuation if self.punctuation is None else self.punctuation
        trial = self.direction_trial
        direction = (
            self.directions[(k - 1) % len(self.directions)]
            if self.directions != [AUTO]
            else (FORWARD, BACKWARD)[trial.index(k)]
            if k in trial
            else chosen.direction
        )
        return named(self.family(k)).fit_reading(punctuation, direction)

    def member_seed(self, k: int) -> int:
        """Member ``k``'s seed (from 1): the plan's seed + k - 1, but the direction trial's second member takes the
        first's, so that the pair differs in its direction alone (in English a seed moved a member's dev perplexity
        by 10, the direction by 0.6: experiments/notebook.md)."""
        trial = self.direction_trial
        return self.seed + (trial[0] if k in trial else k) - 1

    @property
    def direction_trial(self) -> list[int]:
        """The two ON-LSTM members (from 1) that settle the direction under the AUTO rule, the first reading left to
        right and the second right to left: every other ON-LSTM reads as the one with the lower dev perplexity, and
        the other does not vote (none where the directions are given or the fit has one ON-LSTM). Probes a quarter
        of a member's size could not tell the directions apart in Chinese, where full members could
        (experiments/notebook.md)."""
        members = self.onlstm_members()
        return members[:2] if self.directions == [AUTO] and len(members) >= 2 else []

    def candidate_readings(self) -> list[Reading]:
        """The ON-LSTMs' readings the reading probes choose among: with and without punctuation unless it is given,
        read left to right where the direction trial settles the direction, both ways under the AUTO rule without a
        trial (else the first direction given); one where nothing is left to choose."""
        punctuation = [True, False] if self.punctuation is None else [self.punctuation]
        directions = (
            self.directions[:1]
            if self.directions != [AUTO]
            else [FORWARD]
            if self.direction_trial
            else [FORWARD, BACKWARD]
        )
        return [Reading(p, d) for p in punctuation for d in directions]

    @property
    def grammar_shape(self) -> dict:
        """The grammar members' symbols and update size, as LARGER_GRAMMAR names them."""
        return {
            "nonterminals": self.member_grammar.nonterminals,
            "preterminals": self.member_grammar.preterminals,
            "batch_size": self.grammar_batch_size,
        }

    @property
    def grammar_student_count(self) -> int:
        """The grammar students each teacher has: as asked, else GRAMMAR_STUDENTS where the fit has grammar members."""
        if self.grammar_students is not None:
            return self.grammar_students
        return GRAMMAR_STUDENTS if self.members_of(GrammarConfig.family) else 0

    @property
    def onlstm_students(self) -> int:
        """The ON-LSTM students from scratch each teacher has: one per direction asked for, else one (none without
        ON-LSTM members)."""
        return (len(self.student_directions) or 1) if self.onlstm_members() else 0

    @property
    def teacher_right_branching(self) -> float:
        """The share of a teacher's votes the right-branching tree casts: as asked, else HEAD_INITIAL_PRIOR for a
        head-initial language. A grammar student of the English fit's first vote read 58.0 with it against 51.0, the
        Chinese 34.4 against 44.7 (experiments/notebook.md)."""
        if self.teacher_prior is not None:
            return self.teacher_prior
        return HEAD_INITIAL_PRIOR if head_initial(self.language) else 0.0

    @property
    def chooses_reading(self) -> bool:
        """Whether the fit's ON-LSTMs read as its reading rule chooses (probes first)."""
        return bool(self.onlstm_members()) and len(self.candidate_readings()) > 1

    def check(self) -> None:
        """ValueError for a plan that cannot run (a setting of a wrong type or out of range, settings that do not go
        together, a language with no tokenizer here), each member's settings and reading checked too."""
        self._check_types()
        self._check_ranges()
        self._check_together()

    def _check_types(self) -> None:
        """Each setting of the type it must be (a fit.json written by hand may hold anything)."""
        if (
            not isinstance(self.train, list)
            or not all(isinstance(path, str) for path in self.train)
            or not isinstance(self.dev, str)
        ):
            raise ValueError("train must be a list of paths and dev a path")
        for name in (
            "members",
            "rounds",
            "evals_per_epoch",
            "batch_size",
            "sentences",
            "student_batch_size",
            "finetune_passes",
            "scratch_passes",
            "seed",
            "generations",
        ):
            if type(getattr(self, name)) is not int:
                raise ValueError(f"{name} must be a whole number, not {getattr(self, name)!r:.40}")
        if self.punctuation is not None and type(self.punctuation) is not bool:
            raise ValueError(
                f"punctuation must be true, false or null (chosen by the reading rule), not {self.punctuation!r:.40}"
            )
        for name in ("keep_evaluations", "select_by_gold", "tokenized"):
            if type(getattr(self, name)) is not bool:
                raise ValueError(f"{name} must be true or false, not {getattr(self, name)!r:.40}")
        if not isinstance(self.language, str):
            raise ValueError(f"language must be a code such as en, not {self.language!r:.40}")
        check_language(self.language, self.tokenized)  # its tokenizer installed, where the text is to be tokenized
        for name in ("member_epochs", "grammar_students"):
            if getattr(self, name) is not None and type(getattr(self, name)) is not int:
                raise ValueError(f"{name} must be a whole number, not {getattr(self, name)!r:.40}")
        if (
            not isinstance(self.member_model, OnlstmConfig)
            or not isinstance(self.member_variants, dict)
            or not isinstance(self.directions, list)
        ):
            raise ValueError("member_model and member_variants must be objects, directions a list")
        if type(self.right_branching_voter) not in (int, float, bool) or self.right_branching_voter < 0:
            raise ValueError(f"right_branching_voter must be a number of votes, not {self.right_branching_voter!r:.40}")

    def _check_ranges(self) -> None:
        """Each setting within its range and among its choices."""
        if self.select_by_gold and not self.dev_gold:
            raise ValueError("choosing on gold trees needs them: give --dev-gold")
        if self.layer_rule not in LAYER_RULES:
            raise ValueError(f"the layer rule is {' or '.join(LAYER_RULES)}, not {self.layer_rule!r}")
        if (
            min(self.members, self.member_epochs or 1, self.evals_per_epoch, self.sentences, self.scratch_passes) < 1
            or min(self.rounds, self.grammar_students or 0, self.generations) < 0
        ):
            raise ValueError(
                "members, epochs, evaluations, sentences and passes must be at least 1, rounds, grammar "
                "students and generations at least 0"
            )
        if self.generations > default_field_maximum(FitPlan, "generations"):
            raise ValueError(
                f"generations are at most {default_field_maximum(FitPlan, 'generations')}, not {self.generations}"
            )
        if type(self.stop_agreement) not in (int, float) or not 0 <= self.stop_agreement <= 100:
            raise ValueError(f"stop_agreement is a sentence F1 from 0 to 100, not {self.stop_agreement!r:.40}")
        unvaried = set(self.member_variants) - set(VARIED_SIZES)
        if unvaried:
            raise ValueError(
                f"members can vary only their {', '.join(VARIED_SIZES)}, not {', '.join(sorted(unvaried))}"
            )
        if not self.directions or (AUTO in self.directions and self.directions != [AUTO]):
            raise ValueError(
                f"members read in directions ({FORWARD}, {BACKWARD}, repeated) or by the {AUTO!r} rule alone"
            )
        if not isinstance(self.families, list) or not self.families or set(self.families) - set(REGISTRY):
            raise ValueError(f"members' families are {' or '.join(REGISTRY)}, repeated, not {self.families!r:.40}")
        if self.grammar_epochs is not None and (type(self.grammar_epochs) is not int or self.grammar_epochs < 1):
            raise ValueError(f"grammar_epochs must be a whole number of at least 1, not {self.grammar_epochs!r:.40}")
        if type(self.grammar_batch_size) is not int or self.grammar_batch_size < 1:
            raise ValueError(
                f"grammar_batch_size must be a whole number of at least 1, not {self.grammar_batch_size!r:.40}"
            )
        for name in ("larger_grammars", "more_members"):
            if getattr(self, name) is not None and type(getattr(self, name)) is not bool:
                raise ValueError(
                    f"{name} must be true, false or null (where the time allows), not {getattr(self, name)!r:.40}"
                )
        if self.larger_grammars and self.grammar_shape not in (DEFAULT_GRAMMAR_SHAPE, LARGER_GRAMMAR):
            raise ValueError(
                "--larger-grammars sets the grammars' symbols and updates: give it or --nonterminals, "
                "--preterminals and --grammar-batch-size, not both"
            )

    def _check_together(self) -> None:
        """Settings that need each other (students and the families that make them, the reading rule and its
        referees), then each member's own settings and reading."""
        if (
            not isinstance(self.student_directions, list)
            or set(self.student_directions) - {FORWARD, BACKWARD}
            or len(set(self.student_directions)) < len(self.student_directions)
        ):
            raise ValueError(
                f"students read {FORWARD}, {BACKWARD} or both, each once, not {self.student_directions!r:.40}"
            )
        if not self.onlstm_members() and (self.rounds or self.student_directions):
            raise ValueError("distillation rounds and students' directions need ON-LSTM members: add --family onlstm")
        if self.chooses_reading and len(self.candidate_readings()) < 4 and not self.members_of(GrammarConfig.family):
            raise ValueError(
                "the reading rule compares two probes with the grammar members' trees: add --family pcfg, or "
                "give --punctuation or --no-punctuation (and --direction, with one ON-LSTM member)"
            )
        for name in ("probe_tokens", "probe_epochs"):
            if type(getattr(self, name)) is not int or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {getattr(self, name)!r:.40}")
        if self.grammar_students and not self.members_of(GrammarConfig.family):
            raise ValueError("grammar students take the shape and vocabulary of a grammar member: add --family pcfg")
        if not isinstance(self.member_grammar, GrammarConfig) or not isinstance(
            self.student_grammar, GrammarConfig | None
        ):
            raise ValueError("member_grammar and student_grammar must be objects of grammar settings")
        self.member_grammar.check()
        if self.student_grammar is not None:
            self.student_grammar.check()
            if not self.grammar_student_count:
                raise ValueError("student_grammar is the grammar students' shape: ask for grammar students too")
        if self.generations and not (self.onlstm_members() or self.grammar_student_count):
            raise ValueError("generations are students: they need ON-LSTM members or grammar students")
        for k in range(1, self.members + 1):
            self.member_settings(k).check()
            self.reading(k).check()
        for layer in (self.layer, self.vote_layer):
            if layer is not None:
                checked_layer(layer, self.member_model)

    @property
    def fixed_layer(self) -> Layer:
        """Every member's layer in every ensemble under the fixed rule."""
        return self.layer if self.vote_layer is None else self.vote_layer
