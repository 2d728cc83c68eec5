"""A fit sized to the hours it is given: this machine's throughput measured on the fit's own text, then how much text
each model reads scaled so that the whole recipe ends within the time.

The recipe's reading (about a million tokens a language model, a text of up to two million whole, four million
words a grammar, a sample of ``plan.sentences`` for the students) is what
the shipped parsers were measured with; a fit given fewer hours than that
reads each of them scaled by one factor (never more than the recipe: longer training was not measured to help;
nor was cutting a grammar's reading less than the rest's: experiments/notebook.md). The cost of each stage is its
reading
over the throughput measured here, times what evaluations and parsing add
(ratios measured on the shipped fits' records, ``experiments/notebook.md``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from onparse.families import GrammarConfig
from onparse.families.pcfg import LARGER_GRAMMAR
from onparse.plan import DEFAULT_GRAMMAR_SHAPE

if TYPE_CHECKING:
    from onparse.config import TrainConfig
    from onparse.plan import FitPlan

log = logging.getLogger("onparse")

# Tokens a member reads: one epoch of WSJ 00-20 (about 0.95 M) parsed best of the schedules measured; a smaller
# corpus is read more often.
MEMBER_TOKENS = 1_000_000
# ... and a text up to this many times longer is read whole, once, rather than sampled: seed for seed, CTB 29 (1.36 M
# tokens) read whole made members of dev perplexity 274 and 270 and 46.7 / 45.3 F1, a 1 M-token sample 301 and 300 and
# 41.4 / 43.7 (experiments/notebook.md)
WHOLE_TEXT_RATIO = 2
# Words a grammar member reads: five epochs of WSJ 00-20's or CTB 29's sentences of 2-40 words, fifteen of NEGRA's;
# the members measured were within half a point of their best by then (experiments/notebook.md)
GRAMMAR_TOKENS = 4_000_000
# Words a larger grammar (LARGER_GRAMMAR) reads: nine epochs of NEGRA's, where the German one that read 51.0 was kept
LARGER_GRAMMAR_TOKENS = 2_400_000
# A small text is read at most this often: past it a model learns the text by heart (its dev perplexity turns after a
# few epochs), and 400 sentences would otherwise be read 269 times over
MAX_EPOCHS = 20

TIMED_UPDATES = 6  # updates timed per family, after one that warms the caches
# wall time over training time: a language model's dev evaluations; a grammar's (its dev perplexity is an inside pass
# over every dev sentence, four times an epoch: 1.10-1.38 in the plain fits measured (experiments/notebook.md);
# scoring the dev gold trees
# too, an MBR parse each time, 1.9); students: a distillation step against a language model's
LM_WALL, GRAMMAR_WALL, GRAMMAR_SCORED_WALL, STUDENT_WALL = 1.25, 1.3, 1.9, 1.5
# parsing a word costs a fraction of training on it (no backward pass), a grammar's its inside and outside passes
LM_PARSE, GRAMMAR_PARSE = 1 / 3, 1.0
USABLE = 0.85  # of the hours: what the plan fills, the rest is margin for what the model does not foresee
LEAST_SCALE = 0.05  # the least of the recipe's reading a model is sized to: under it, no model worth making
FIXED_MINUTES = 6.0  # the votes on the dev text and the model's copy


@dataclass
class Rates:
    """Throughput of this machine on the fit's text: a language model's tokens and a grammar's words per second of
    training (None for a family the fit has no member of)."""

    onlstm_tokens: float | None
    grammar_words: float | None


def timed(config: TrainConfig) -> float:
    """Tokens a second of a few updates of a run of ``config``, from fresh weights (nothing is written)."""
    from onparse.runfolder import trainer
    from onparse.train import Step

    endless = replace(config, dev=None, dev_gold=None, epochs=10 * TIMED_UPDATES)  # a small text's epoch is one update
    steps = (step for step in trainer(endless).steps() if isinstance(step, Step))
    next(steps)  # the first update warms allocators and caches
    tokens = seconds = 0.0
    for _, step in zip(range(TIMED_UPDATES), steps):
        tokens, seconds = tokens + step.tokens, seconds + step.seconds
    return tokens / max(seconds, 1e-9)


def measure(members: list[TrainConfig]) -> Rates:
    """This machine's throughput for the first language model and the first grammar among ``members`` (runs)."""
    from onparse.families import of

    first = {}
    for config in members:
        first.setdefault(of(config.model).reads_either_way, config)  # a language model reads either way; a grammar not
    return Rates(*(timed(first[kind]) if kind in first else None for kind in (True, False)))


def reading_of(target: float, corpus: float) -> tuple[int, int | None]:
    """Epochs and sample of a model that should read about ``target`` tokens of a text of ``corpus``: once a seeded
    sample of ``target`` tokens where that is less than the text, else the whole text ``target / corpus`` times,
    rounded (at most MAX_EPOCHS). Below one epoch the reading grows with the target, so a fit short of time reads
    what fits it (rounded to a whole epoch, a Chinese member's reading jumped from half of CTB 29 to all of it, and
    a fit given 3 hours planned 119 minutes)."""
    if target < corpus:
        return 1, max(1, round(target))
    return min(MAX_EPOCHS, round(target / max(corpus, 1))), None


def member_tokens(corpus: float) -> float:
    """Tokens a language model reads at the recipe's full scale of a text of ``corpus``: MEMBER_TOKENS, or the whole
    text where that is at most WHOLE_TEXT_RATIO times as long (a sample would leave out what the members learn from)."""
    return corpus if MEMBER_TOKENS < corpus <= WHOLE_TEXT_RATIO * MEMBER_TOKENS else MEMBER_TOKENS


def read_of(epochs: int, sample: int | None, corpus: float) -> float:
    """Tokens a model reads over its run: its sample, or the text, each epoch."""
    return epochs * (sample if sample is not None else corpus)


def costs(
    plan: FitPlan, rates: Rates, corpus: dict[str, float], done: dict[str, int] | None = None
) -> dict[str, float]:
    """Predicted wall minutes of each part of ``plan`` (its members' epochs and samples settled). ``corpus``: the
    text's ``tokens`` (a language model's, sentence ends included), ``grammar_words`` (of the sentences a grammar
    learns) and ``sentence_tokens`` (a sentence's, on average). ``done``: how many ``probes``, ``language models``
    and ``grammars`` are trained already, so cost nothing more."""
    done = done or {}
    lm_to_train = len(plan.onlstm_members()) - done.get("language models", 0)
    grammars_to_train = plan.members - len(plan.onlstm_members()) - done.get("grammars", 0)
    lm, grammars = len(plan.onlstm_members()), plan.members - len(plan.onlstm_members())  # the voters, all parsing
    probes = (len(plan.candidate_readings()) if plan.chooses_reading else 0) - done.get("probes", 0)
    student_tokens = min(plan.sentences * corpus["sentence_tokens"], corpus["tokens"])
    parse_seconds = 0.0  # a word's, the teacher's members together
    minutes = {}
    if lm:
        minutes["probes"] = (
            probes * plan.probe_epochs * min(plan.probe_tokens, corpus["tokens"]) / rates.onlstm_tokens * LM_WALL / 60
        )
        minutes["language models"] = (
            lm_to_train
            * read_of(plan.member_epochs, plan.member_sample, corpus["tokens"])
            / rates.onlstm_tokens
            * LM_WALL
            / 60
        )
        minutes["language-model students"] = (
            plan.onlstm_students * plan.scratch_passes * student_tokens / rates.onlstm_tokens * STUDENT_WALL / 60
        )
        parse_seconds += lm * LM_PARSE / rates.onlstm_tokens
    if grammars:
        minutes["grammars"] = (
            grammars_to_train
            * read_of(plan.grammar_epochs, plan.grammar_sample, corpus["grammar_words"])
            / rates.grammar_words
            * (GRAMMAR_SCORED_WALL if plan.dev_gold else GRAMMAR_WALL)
            / 60
        )
        minutes["grammar students"] = (
            plan.grammar_student_count * plan.scratch_passes * student_tokens / rates.grammar_words * STUDENT_WALL / 60
        )
        parse_seconds += grammars * GRAMMAR_PARSE / rates.grammar_words
    minutes["teacher's trees"] = student_tokens * parse_seconds / 60
    if plan.generations:  # each generation as the first students, taught the vote before it: the first generation's
        # teacher holds the members and the first students, a later one that generation's students alone
        students = (plan.onlstm_students * LM_PARSE / rates.onlstm_tokens if lm else 0.0) + (
            plan.grammar_student_count * GRAMMAR_PARSE / rates.grammar_words if grammars else 0.0
        )
        taught = minutes.get("language-model students", 0.0) + minutes.get("grammar students", 0.0)
        minutes["generations"] = sum(
            student_tokens * (parse_seconds + students if g == 1 else students) / 60 + taught
            for g in range(1, plan.generations + 1)
        )
    minutes["votes"] = FIXED_MINUTES
    return minutes


def at_scale(plan: FitPlan, corpus: dict[str, float], scale: float, given: FitPlan) -> FitPlan:
    """The plan reading ``scale`` of the recipe: each language model's tokens, each grammar's words and the students'
    sample; epochs the user gave (``given``) stay as given (``member_epochs`` for the grammars too, unless
    ``grammar_epochs``
    says otherwise), and the reading probes read no more than a member does."""
    member = (
        (given.member_epochs, given.member_sample)
        if given.member_epochs
        else reading_of(scale * member_tokens(corpus["tokens"]), corpus["tokens"])
    )
    grammar = (
        (given.grammar_epochs, given.grammar_sample)
        if given.grammar_epochs
        else (given.member_epochs, None)
        if given.member_epochs
        else reading_of(scale * (plan.grammar_tokens or GRAMMAR_TOKENS), corpus["grammar_words"])
    )
    probe_tokens = min(given.probe_tokens, round(read_of(*member, corpus["tokens"])))
    return replace(
        plan,
        probe_tokens=probe_tokens,
        probe_epochs=reading_of(probe_tokens, corpus["tokens"])[0],
        member_epochs=member[0],
        member_sample=member[1],
        grammar_epochs=grammar[0],
        grammar_sample=grammar[1],
        sentences=max(1, round(scale * given.sentences)),
    )


def sized(
    plan: FitPlan,
    rates: Rates,
    corpus: dict[str, float],
    hours: float,
    spent: float = 0.0,
    given: FitPlan | None = None,
    done: dict[str, int] | None = None,
) -> tuple[FitPlan, dict]:
    """The plan at the largest scale of the recipe's reading (at most all of it) whose predicted minutes fill USABLE
    of ``hours`` less the ``spent`` minutes, and what the fit records of it: the rates, the scale and the predicted
    minutes. ``given`` is the plan as the user gave it (``plan`` itself for a new fit: a re-plan passes the one
    recorded), ``done`` what is trained already (``costs``). The cost grows with the scale, so halving settles it."""
    given = given or plan
    left = USABLE * 60 * hours - spent
    low, high = 0.0, 1.0

    def fits(scale: float) -> bool:
        return sum(costs(at_scale(plan, corpus, scale, given), rates, corpus, done).values()) <= left

    if fits(high):
        low = high
    for _ in range(20):
        if low == high:
            break
        middle = (low + high) / 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    scale = max(low, LEAST_SCALE)
    if low < 0.1:
        log.warning(
            f"{hours:g} hours are few for this text on this machine: each model reads {scale:.0%} of what the "
            "recipe reads (more hours, or fewer --members, make a better parser)"
        )
    found = at_scale(plan, corpus, scale, given)
    predicted = {part: round(value, 1) for part, value in costs(found, rates, corpus, done).items()}
    return found, {
        "hours": hours,
        "scale": round(scale, 3),
        "rates": {"lm_tokens_per_second": rates.onlstm_tokens, "grammar_words_per_second": rates.grammar_words},
        "predicted_minutes": predicted,
        "predicted_total_minutes": round(sum(predicted.values()), 1),
        "measured_at": time.strftime("%Y-%m-%d %H:%M"),
    }


def check_enough(sizing: dict, hours: float) -> None:
    """A warning, before the first stage, where the fit as sized (its least scale at most) is foreseen to take longer
    than ``hours`` allow, naming the hours that would: the fit stops at its hours with no model yet, and a resume
    finishes it (the hostile probe's C35 asks for exactly that: exit 3, then a resume to the model)."""
    needed = sizing["predicted_total_minutes"] / (USABLE * 60)
    if needed > hours:
        log.warning(
            f"--hours {hours:g} is too few for a model of this text on this machine: the smallest fit "
            f"(each model reading {sizing['scale']:.0%} of what the recipe reads) is foreseen to take "
            f"{sizing['predicted_total_minutes']:.1f} minutes, so it will stop at its hours before its model and "
            f"`--resume` finishes it; --hours {float(f'{needed * 1.2:.2g}'):g} or more makes one in one call"
        )


def more_members(plan: FitPlan) -> FitPlan:
    """``plan`` with one more member of each of its families: a turn of the family cycle, so the vote stays balanced
    between them."""
    return replace(plan, members=plan.members + len(plan.families))


def with_more_members(
    sized_plan: tuple[FitPlan, dict],
    rates: Rates,
    corpus: dict[str, float],
    hours: float,
    spent: float,
    given: FitPlan,
    done: dict[str, int],
) -> tuple[FitPlan, dict]:
    """A plan sized with every model reading all the recipe reads (``sized_plan``: the plan and its sizing) with one
    more member of each family where they still fit the hours, and the sizing with what it weighed: the turn's
    members and its minutes at the recipe's full reading."""
    plan, sizing = sized_plan
    grown = at_scale(more_members(plan), corpus, 1.0, given)
    predicted = {part: round(value, 1) for part, value in costs(grown, rates, corpus, done).items()}
    minutes = round(sum(predicted.values()), 1)
    weighed = {
        "chosen": minutes <= USABLE * 60 * hours - spent,
        "members": grown.members,
        "predicted_total_minutes": minutes,
    }
    if not weighed["chosen"]:
        return plan, {**sizing, "more_members": weighed}
    return grown, {
        **sizing,
        "predicted_minutes": predicted,
        "predicted_total_minutes": minutes,
        "more_members": weighed,
    }


def time_chooses_members(plan: FitPlan) -> bool:
    """Whether the hours choose the members' number: the user asked neither way."""
    return plan.more_members is None


def larger(plan: FitPlan) -> FitPlan:
    """``plan`` with the larger grammar members (and students of their shape), each reading LARGER_GRAMMAR_TOKENS."""
    symbols = {name: LARGER_GRAMMAR[name] for name in ("nonterminals", "preterminals")}
    return replace(
        plan,
        member_grammar=replace(plan.member_grammar, **symbols),
        grammar_batch_size=LARGER_GRAMMAR["batch_size"],
        grammar_tokens=LARGER_GRAMMAR_TOKENS,
    )


def time_chooses_grammars(plan: FitPlan) -> bool:
    """Whether the hours choose the grammars' shape: the user asked neither way and left their symbols, updates,
    reading and students' shape as the recipe's."""
    return (
        plan.larger_grammars is None
        and bool(plan.members_of(GrammarConfig.family))
        and plan.grammar_epochs is None
        and plan.student_grammar is None
        and plan.grammar_shape == DEFAULT_GRAMMAR_SHAPE
    )


# what a re-plan needs of the plan as the user gave it: the readings ``at_scale`` scales unless they were given
GIVEN = ("member_epochs", "member_sample", "grammar_epochs", "grammar_sample", "probe_tokens", "sentences")


def given_reading(plan: FitPlan) -> dict:
    """The readings of ``plan`` as the user gave it, for the record, so a re-plan scales what the first plan scaled."""
    return {name: getattr(plan, name) for name in GIVEN}
