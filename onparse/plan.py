"""A fit's plan: every choice of ``onparse fit`` and its default, written once, recorded in ``fit.json`` and the
model's card. Plain dataclasses that import neither torch nor nltk (as ``config``), so ``--help`` shows the defaults
without loading either.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from onparse.config import LAYER_RULES, DistillConfig, TrainConfig, default_field_maximum
from onparse.families import MEAN, REGISTRY, FitSection, OnlstmConfig, PcfgConfig, checked_layer, named
from onparse.families.base import section_from_dict
from onparse.families.onlstm import AUTO, OnlstmSection
from onparse.settings import BACKWARD, FORWARD, Layer, Reading, setting, setting_of
from onparse.text.language import check_language, head_initial

# The right-branching tree's share of a teacher's votes in a head-initial language: WSJ section 22's gold trees chose
# it (the English teacher read 48.5, 52.3 and 54.3 at 0, 1/4 and 1/2), the one choice of the plain fit made on gold
HEAD_INITIAL_PRIOR = 0.5


@dataclass
class FitPlan:
    """Every choice of a fit, recorded in ``fit.json`` and the model's card."""

    train: list[str]
    dev: str
    dev_gold: str | None = None  # scored at every stage; chooses nothing unless select_by_gold
    # five: two ON-LSTMs try the directions (--direction auto), a third reads as the better, beside two grammars
    members: int = setting(5, "Members trained from random weights (language models, or grammars: --family).")
    # distillation rounds reproduced their teacher in every language measured
    rounds: int = setting(0, "Distillation rounds (each student learns the last ensemble).", minimum=0)
    member_epochs: int | None = setting(
        None,
        "Epochs of each member, grammars too unless --grammar-epochs  [default: "
        "enough to read about a million tokens (with --hours, what fits them), a sample "
        "of the text where that is less; the reading probes read no more].",
        kind=int,
    )  # as given: the fit settles each family's in its section
    evals_per_epoch: int = setting(4, "Dev evaluations (perplexity, agreement, a saved model) per epoch of each run.")
    patience: float | None = setting_of(TrainConfig, "patience")  # every training stage's
    sentences: int = setting_of(DistillConfig, "sentences")  # each teacher's
    scratch_passes: int = setting(2, "Passes of the student from scratch.")
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
    families: list[str] = setting(
        [OnlstmConfig.family, PcfgConfig.family],
        "Repeat to mix the members, as --chunk-size: member k is of the "
        "k-th family, cycling (pcfg: a neural PCFG, trained on the words' likelihood; it votes "
        "as it is in every round).",
        option="--family",
        choices=REGISTRY,
    )
    # a turn more: the German plain fit's model read 51.16 on valid.penn against 50.84
    more_members: bool | None = setting(
        None,
        "One more member of each family (a turn of --family) beside --members  "
        "[default: where --hours leave time for them with every model reading all the "
        "recipe reads, at the rates the fit's first members trained].",
        negatable=True,
        kind=bool,
    )
    # generation 0 is the first students' vote
    generations: int = setting(
        0,
        "Self-training: each generation's students (as the first ones, new seeds) learn the "
        "vote of the generation before and vote alone; the last generation is the model.",
        minimum=0,
        maximum=20,
    )  # climbs level off after two or three
    # each family's part, by name: its members' shape, reading and update, its students (``Family.section``)
    sections: dict[str, FitSection] = field(default_factory=dict)
    stop_agreement: float = setting(
        95.0,
        "End the generations after one whose vote agrees with its teacher's trees on "
        "--dev at this sentence F1 or more (no gold trees).",
        minimum=0,
        maximum=100,
    )

    def __post_init__(self) -> None:
        """A section for each family of the members that has none, with the family's defaults."""
        if isinstance(self.families, list) and isinstance(self.sections, dict):
            for name in self.families:
                if name in REGISTRY and name not in self.sections:
                    self.sections[name] = REGISTRY[name].section()

    @classmethod
    def from_dict(cls, values: dict) -> "FitPlan":
        """A plan from ``fit.json`` (one written before the plan had a section per family, translated); TypeError or
        ValueError for one that is not a plan."""
        values = translated_plan(values)
        sections = values.get("sections", {})
        if not isinstance(sections, dict) or set(sections) - set(REGISTRY):
            raise ValueError(
                f"sections are objects of settings by family ({', '.join(REGISTRY)}), not {sections!r:.40}"
            )
        return cls(
            **{
                **values,
                "sections": {
                    name: section_from_dict(REGISTRY[name].section, REGISTRY[name].settings, value)
                    for name, value in sections.items()
                },
            }
        )

    def with_section(self, family: str, **changes: object) -> "FitPlan":
        """The plan with some settings of one family's section changed (its defaults' where it had none)."""
        section = self.sections.get(family) or named(family).section()
        return replace(self, sections={**self.sections, family: replace(section, **changes)})

    def family(self, k: int) -> str:
        """Member ``k``'s family (from 1), in its turn."""
        return self.families[(k - 1) % len(self.families)]

    def section(self, k: int) -> FitSection:
        """Member ``k``'s family's section (from 1)."""
        return self.sections[self.family(k)]

    def member_settings(self, k: int) -> object:
        """Member ``k``'s sizes (from 1): its family's, in its turn."""
        return named(self.family(k)).member_settings(self.section(k), k)

    def schedule(self, k: int) -> dict:
        """Member ``k``'s epochs, update size and sample: its family's section's."""
        return named(self.family(k)).schedule(self.section(k))

    def members_of(self, family: str) -> list[int]:
        """The members (from 1) of the family of that name."""
        grouped: dict[str, list[int]] = {}
        for k in range(1, self.members + 1):
            grouped.setdefault(self.family(k), []).append(k)
        return grouped.get(family, [])

    def member_families(self) -> list[str]:
        """The families the members are of, each once, in the order of their first member."""
        return list(dict.fromkeys(self.family(k) for k in range(1, self.members + 1)))

    def directed_members(self) -> list[int]:
        """The members (from 1) of families that read in a direction (the ON-LSTMs): the reading rule's and the
        direction trial's."""
        return [k for k in range(1, self.members + 1) if named(self.family(k)).reads_either_way]

    def referees(self) -> list[int]:
        """The members (from 1) that read as trained (the grammars): their vote referees the reading probes."""
        return [k for k in range(1, self.members + 1) if not named(self.family(k)).reads_either_way]

    def choosing_members(self) -> list[int]:
        """The members (from 1) trained before the fit has chosen how its ON-LSTMs read: the probes' referees where
        the probes choose, and the direction trial's two."""
        return sorted({*(self.referees() if self.chooses_reading else []), *self.direction_trial})

    def student_counts(self) -> dict[str, int]:
        """Students from scratch of each teacher, by family: none for a family with no member to start from."""
        return {name: named(name).student_count(self.sections[name]) for name in self.member_families()}

    def reading(self, k: int, chosen: Reading | None = None) -> Reading:
        """What member ``k`` (from 1) reads: a grammar, the words left to right; an ON-LSTM, the plan's punctuation
        and its turn's direction, each where not given as the reading rule ``chosen`` (the first candidate's until
        the rule has chosen)."""
        chosen, given = chosen or self.candidate_readings()[0], self.directed_section
        punctuation = chosen.punctuation if given.punctuation is None else given.punctuation
        trial = self.direction_trial
        direction = (
            given.directions[(k - 1) % len(given.directions)]
            if given.directions != [AUTO]
            else (FORWARD, BACKWARD)[trial.index(k)]
            if k in trial
            else chosen.direction
        )
        return named(self.family(k)).fit_reading(punctuation, direction)

    def member_seed(self, k: int) -> int:
        """Member ``k``'s seed (from 1): the plan's seed + k - 1, but the direction trial's second member takes the
        first's, so that the pair differs in its direction alone (in English a seed moved a member's dev perplexity
        by 10, the direction by 0.6)."""
        trial = self.direction_trial
        return self.seed + (trial[0] if k in trial else k) - 1

    @property
    def directed_section(self) -> OnlstmSection:
        """The settings of the members that read either way: what they read (punctuation, directions), the reading
        probes and the round students; the ON-LSTMs' section, its defaults where the plan has none."""
        return self.sections.get(OnlstmConfig.family) or OnlstmSection()

    @property
    def direction_trial(self) -> list[int]:
        """The two ON-LSTM members (from 1) that settle the direction under the AUTO rule, the first reading left to
        right and the second right to left: every other ON-LSTM reads as the one with the lower dev perplexity, and
        the other does not vote (none where the directions are given or the fit has one ON-LSTM). Probes a quarter
        of a member's size could not tell the directions apart in Chinese, where full members could."""
        members = self.directed_members()
        return members[:2] if self.directed_section.directions == [AUTO] and len(members) >= 2 else []

    def candidate_readings(self) -> list[Reading]:
        """The ON-LSTMs' readings the reading probes choose among: with and without punctuation unless it is given,
        read left to right where the direction trial settles the direction, both ways under the AUTO rule without a
        trial (else the first direction given); one where nothing is left to choose."""
        given = self.directed_section
        punctuation = [True, False] if given.punctuation is None else [given.punctuation]
        directions = (
            given.directions[:1]
            if given.directions != [AUTO]
            else [FORWARD]
            if self.direction_trial
            else [FORWARD, BACKWARD]
        )
        return [Reading(p, d) for p in punctuation for d in directions]

    @property
    def teacher_right_branching(self) -> float:
        """The share of a teacher's votes the right-branching tree casts: as asked, else HEAD_INITIAL_PRIOR for a
        head-initial language. A grammar student of the English fit's first vote read 58.0 with it against 51.0, the
        Chinese 34.4 against 44.7."""
        if self.teacher_prior is not None:
            return self.teacher_prior
        return HEAD_INITIAL_PRIOR if head_initial(self.language) else 0.0

    @property
    def chooses_reading(self) -> bool:
        """Whether the fit's ON-LSTMs read as its reading rule chooses (probes first)."""
        return bool(self.directed_members()) and len(self.candidate_readings()) > 1

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
            "sentences",
            "scratch_passes",
            "seed",
            "generations",
        ):
            if type(getattr(self, name)) is not int:
                raise ValueError(f"{name} must be a whole number, not {getattr(self, name)!r:.40}")
        for name in ("keep_evaluations", "select_by_gold", "tokenized"):
            if type(getattr(self, name)) is not bool:
                raise ValueError(f"{name} must be true or false, not {getattr(self, name)!r:.40}")
        if not isinstance(self.language, str):
            raise ValueError(f"language must be a code such as en, not {self.language!r:.40}")
        check_language(self.language, self.tokenized)  # its tokenizer installed, where the text is to be tokenized
        if self.member_epochs is not None and type(self.member_epochs) is not int:
            raise ValueError(f"member_epochs must be a whole number, not {self.member_epochs!r:.40}")
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
            or min(self.rounds, self.generations) < 0
        ):
            raise ValueError(
                "members, epochs, evaluations, sentences and passes must be at least 1, rounds and generations at "
                "least 0"
            )
        if self.generations > default_field_maximum(FitPlan, "generations"):
            raise ValueError(
                f"generations are at most {default_field_maximum(FitPlan, 'generations')}, not {self.generations}"
            )
        if type(self.stop_agreement) not in (int, float) or not 0 <= self.stop_agreement <= 100:
            raise ValueError(f"stop_agreement is a sentence F1 from 0 to 100, not {self.stop_agreement!r:.40}")
        if not isinstance(self.families, list) or not self.families or set(self.families) - set(REGISTRY):
            raise ValueError(f"members' families are {' or '.join(REGISTRY)}, repeated, not {self.families!r:.40}")
        if self.more_members is not None and type(self.more_members) is not bool:
            raise ValueError(
                f"more_members must be true, false or null (where the time allows), not {self.more_members!r:.40}"
            )
        for name, section in self.sections.items():
            if not isinstance(section, REGISTRY[name].section):
                raise ValueError(f"the {name} section must be an object of {name} settings, not {section!r:.40}")
            section.check()

    def _check_together(self) -> None:
        """Settings that need each other (students and the families that make them, the reading rule and its
        referees), then each member's own settings and reading."""
        refined = [name for name in REGISTRY if REGISTRY[name].refined_in_rounds]
        if self.rounds and not any(self.members_of(name) for name in refined):
            raise ValueError(f"distillation rounds refine members of {' or '.join(refined)}: add --family {refined[0]}")
        for name, section in self.sections.items():
            if section.asks_for_students() and not self.members_of(name):
                raise ValueError(
                    f"{REGISTRY[name].students_plural} take the shape and vocabulary of a member of their family: "
                    f"add --family {name}"
                )
        if self.chooses_reading and len(self.candidate_readings()) < 4 and not self.referees():
            referees = [name for name in REGISTRY if not REGISTRY[name].reads_either_way]
            raise ValueError(
                f"the reading rule compares two probes with the vote of members read as trained: add --family "
                f"{referees[0]}, or give --punctuation or --no-punctuation (and --direction, with one directed member)"
            )
        if self.generations and not any(self.student_counts().values()):
            raise ValueError("generations are students: they need members of a family that has students")
        for k in range(1, self.members + 1):
            self.member_settings(k).check()
            self.reading(k).check()
        for layer in (self.layer, self.vote_layer):
            if layer is not None:
                owners = [name for name in self.sections if REGISTRY[name].owns(layer)]
                checked_layer(layer, self.sections[owners[0]].model if owners else None)

    @property
    def fixed_layer(self) -> Layer:
        """Every member's layer in every ensemble under the fixed rule."""
        return self.layer if self.vote_layer is None else self.vote_layer


# what the plan's family settings were named before it had a section per family: (family, section field) of each
OLD_SECTION_FIELDS = {
    "member_model": ("onlstm", "model"),
    "member_variants": ("onlstm", "variants"),
    "member_sample": ("onlstm", "sample"),
    "batch_size": ("onlstm", "batch_size"),
    "student_directions": ("onlstm", "student_directions"),
    "member_grammar": ("pcfg", "model"),
    "grammar_epochs": ("pcfg", "epochs"),
    "grammar_sample": ("pcfg", "sample"),
    "grammar_batch_size": ("pcfg", "batch_size"),
    "larger_grammars": ("pcfg", "larger"),
    "grammar_tokens": ("pcfg", "tokens"),
    "grammar_students": ("pcfg", "students"),
    "student_grammar": ("pcfg", "student_model"),
}
# the plan's settings that the ON-LSTMs' section took over later (what they read, the reading probes, round students)
ONLSTM_FIELDS = (
    "punctuation",
    "directions",
    "probe_tokens",
    "probe_epochs",
    "student_batch_size",
    "finetune_passes",
    "finetune_lr",
    "scratch_lr",
)


def translated_plan(values: dict) -> dict:
    """A plan's values as ``fit.json`` holds them, those written before the plan had a section per family moved into
    the sections of its families (the ON-LSTMs' settled epochs, then held in ``member_epochs``, into theirs), and the
    grammar students of a plan made before they were focused learning the voted tree, as planned; the ON-LSTMs'
    settings once held at the top of the plan (``ONLSTM_FIELDS``) into their section (dropped with no ON-LSTM)."""
    if not isinstance(values, dict):
        return values
    if "member_model" in values:
        values = dict(values)
        sections: dict[str, dict] = {}
        for old, (family, name) in OLD_SECTION_FIELDS.items():
            if old in values:
                sections.setdefault(family, {})[name] = values.pop(old)
        sections["onlstm"]["epochs"] = values.get("member_epochs")
        families = values.get("families") or []  # the plan's families' sections (the old plan held every family's)
        values = {**values, "sections": {name: section for name, section in sections.items() if name in families}}
    held = values.get("sections")
    moved = {name: values[name] for name in ONLSTM_FIELDS if name in values}
    if moved and isinstance(held, dict):
        values = {name: value for name, value in values.items() if name not in moved}
        if isinstance(held.get("onlstm"), dict):
            held = {**held, "onlstm": {**moved, **held["onlstm"]}}
        values["sections"] = held
    grammar = held.get("pcfg") if isinstance(held, dict) else None
    if isinstance(grammar, dict) and "focus" not in grammar:  # planned before students were focused
        values = {**values, "sections": {**held, "pcfg": {**grammar, "focus": 0.0}}}
    return values
