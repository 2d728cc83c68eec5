"""A fit sized to the hours it is given: this machine's throughput measured on the fit's own text, then how much text
each model reads scaled so that the whole recipe ends within the time.

The recipe's reading (about a million tokens a language model, a text of up to two million whole, four million
words a grammar, a sample of ``plan.sentences`` for the students) is what
the shipped parsers were measured with; a fit given fewer hours than that
reads each of them scaled by one factor (never more than the recipe: longer training was not measured to help;
nor was cutting a grammar's reading less than the rest's). The cost of each stage is its
reading
over the throughput measured here, times what evaluations and parsing add
(ratios measured on the shipped fits' records).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from onparse.families import named

if TYPE_CHECKING:
    from onparse.config import TrainConfig
    from onparse.plan import FitPlan

log = logging.getLogger("onparse")

# A small text is read at most this often: past it a model learns the text by heart (its dev perplexity turns after a
# few epochs), and 400 sentences would otherwise be read 269 times over
MAX_EPOCHS = 20

TIMED_UPDATES = 6  # updates timed per family, after one that warms the caches
SLOWED = 0.7  # a wall rate under this share of the fit's own CPU rate is said to be slowed by other work
# wall time over training time of a student (a distillation step against a language model's); each family's members'
# own (``Family.wall``) and its parse's cost over training's (``Family.parse_cost``)
STUDENT_WALL = 1.5
USABLE = 0.85  # of the hours: what the plan fills, the rest is margin for what the model does not foresee
LEAST_SCALE = 0.05  # the least of the recipe's reading a model is sized to: under it, no model worth making
FIXED_MINUTES = 6.0  # the votes on the dev text and the model's copy
CHOICES_SHARE = 0.75  # of the usable hours: the most the stages that choose the ON-LSTMs' reading may take
LEAST_CHOICES_SCALE = 1 / 16  # of the recipe's reading: the least the choosing stages read (about LEAST_SCALE)


Rates = dict[str, float]  # this machine's throughput on the fit's text, by family: units a second of training


def timed(config: TrainConfig) -> float:
    """Tokens a second of a few updates of a run of ``config``, from fresh weights (nothing is written), as this
    machine gives them to the fit alone: the process's own CPU time over its threads, which other work beside it
    does not stretch as it stretches the wall time (a German fit timed beside four busy processes saw a quarter of
    its wall rate), so that a fit begun on a busy machine plans what one begun alone plans. The re-plan, once the
    first members have trained, fits the rest to the wall time they took."""
    import torch

    from onparse.training.runfolder import trainer
    from onparse.training.train import Step

    endless = replace(config, dev=None, dev_gold=None, epochs=10 * TIMED_UPDATES)  # a small text's epoch is one update
    steps = (step for step in trainer(endless).steps() if isinstance(step, Step))
    next(steps)  # the first update warms allocators and caches
    tokens = seconds = 0.0
    started = time.process_time()
    for _, step in zip(range(TIMED_UPDATES), steps):
        tokens, seconds = tokens + step.tokens, seconds + step.seconds
    own_seconds = (time.process_time() - started) / torch.get_num_threads()
    wall, alone = tokens / max(seconds, 1e-9), tokens / max(own_seconds, 1e-9)
    if wall < SLOWED * alone:
        log.debug(
            f"other work is slowing this machine ({config.family}: {wall:,.0f} tokens a second of wall time, "
            f"{alone:,.0f} of the fit's own): the fit is planned as if alone, and sized again to the time left once "
            "its first models have trained"
        )
    return max(wall, alone)


def first_of_each(members: list[TrainConfig]) -> dict[str, TrainConfig]:
    """The first member (run) of each family among ``members``, by family name."""
    first: dict[str, TrainConfig] = {}
    for config in members:
        first.setdefault(config.family, config)
    return first


def measure(members: list[TrainConfig]) -> Rates:
    """This machine's throughput for the first member of each family among ``members`` (runs)."""
    return {name: timed(config) for name, config in first_of_each(members).items()}


def reading_of(target: float, corpus: float) -> tuple[int, int | None]:
    """Epochs and sample of a model that should read about ``target`` tokens of a text of ``corpus``: once a seeded
    sample of ``target`` tokens where that is less than the text, else the whole text ``target / corpus`` times,
    rounded (at most MAX_EPOCHS). Below one epoch the reading grows with the target, so a fit short of time reads
    what fits it (rounded to a whole epoch, a Chinese member's reading jumped from half of CTB 29 to all of it, and
    a fit given 3 hours planned 119 minutes)."""
    if target < corpus:
        return 1, max(1, round(target))
    return min(MAX_EPOCHS, round(target / max(corpus, 1))), None


def read_of(epochs: int, sample: int | None, corpus: float) -> float:
    """Tokens a model reads over its run: its sample, or the text, each epoch."""
    return epochs * (sample if sample is not None else corpus)


def costs(plan: FitPlan, rates: Rates, corpus: dict, done: dict[str, int] | None = None) -> dict[str, float]:
    """Predicted wall minutes of each part of ``plan`` (its members' epochs and samples settled). ``corpus``: the
    text's ``units`` by family (what its members learn of it, in the units of its rate), ``tokens`` (a language
    model's) and ``sentence_tokens`` (a sentence's, on average). ``done``: how many ``probes`` and members of each
    family (by name) are trained already, so cost nothing more.

    Long: each family's parts (members, students, their parse of the teacher's sample) and the stages that are the
    plan's own (the probes, the generations) are summed in the order the fit runs them."""
    done = done or {}
    student_tokens = min(plan.sentences * corpus["sentence_tokens"], corpus["tokens"])
    students = plan.student_counts()
    parse_seconds = student_parse = 0.0  # a word's, the teacher's members (and a generation's students) together
    minutes = {}
    directed = [name for name in plan.member_families() if named(name).reads_either_way]
    if directed and plan.chooses_reading:  # the reading probes: short members of the first directed family
        probes = len(plan.candidate_readings()) - done.get("probes", 0)
        probing = plan.directed_section
        read = probes * probing.probe_epochs * min(probing.probe_tokens, corpus["tokens"])
        minutes["probes"] = read / rates[directed[0]] * named(directed[0]).wall[0] / 60
    for name in plan.member_families():
        family, section, count = named(name), plan.sections[name], len(plan.members_of(name))
        wall = wall_factor(plan, name)
        read = read_of(section.epochs, section.sample, corpus["units"][name])
        minutes[family.plural] = (count - done.get(name, 0)) * read / rates[name] * wall / 60
        minutes[family.students_plural] = (
            students[name] * plan.scratch_passes * student_tokens / rates[name] * STUDENT_WALL / 60
        )
        parse_seconds += count * family.parse_cost / rates[name]
        student_parse += students[name] * family.parse_cost / rates[name]
    minutes["teacher's trees"] = student_tokens * parse_seconds / 60
    if plan.generations:  # each generation as the first students, taught the vote before it: the first generation's
        # teacher holds the members and the first students, a later one that generation's students alone
        taught = sum(minutes[named(name).students_plural] for name in plan.member_families())
        minutes["generations"] = sum(
            student_tokens * (parse_seconds + student_parse if g == 1 else student_parse) / 60 + taught
            for g in range(1, plan.generations + 1)
        )
    minutes["votes"] = FIXED_MINUTES
    return minutes


def wall_factor(plan: FitPlan, family: str) -> float:
    """A family's members' wall time over their training time (``Family.wall``: with dev gold scoring or without)."""
    return named(family).wall[1 if plan.dev_gold else 0]


def at_scale(plan: FitPlan, corpus: dict, scale: float, given: FitPlan) -> FitPlan:
    """The plan reading ``scale`` of the recipe: each family's members' units and the students' sample; epochs the
    user gave (``given``: a section's own, else ``member_epochs`` for every family) stay as given, and the reading
    probes read no more than a member of the first directed family does."""
    sections = {}
    for name, section in plan.sections.items():
        asked = given.sections.get(name, section)
        units = corpus["units"].get(name, corpus["tokens"])
        epochs, sample = (
            (asked.epochs, asked.sample)
            if asked.epochs
            else (given.member_epochs, asked.sample)
            if given.member_epochs
            else reading_of(scale * named(name).recipe_units(section, units), units)
        )
        sections[name] = replace(section, epochs=epochs, sample=sample)
    directed = plan.directed_members()
    if directed:  # the probes are of the first directed member's family, and read no more than it
        name = plan.family(directed[0])
        lead = sections[name]
        probe_tokens = min(
            given.sections[name].probe_tokens, round(read_of(lead.epochs, lead.sample, corpus["tokens"]))
        )
        sections[name] = replace(
            lead, probe_tokens=probe_tokens, probe_epochs=reading_of(probe_tokens, corpus["tokens"])[0]
        )
    return replace(plan, sections=sections, sentences=max(1, round(scale * given.sentences)))


def sized(
    plan: FitPlan,
    rates: Rates,
    corpus: dict,
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
        log.debug(
            f"{hours:g} hours are few for this text on this machine: each model reads {scale:.0%} of what the "
            "recipe reads (more hours, or fewer --members, make a better parser)"
        )
    found = at_scale(plan, corpus, scale, given)
    predicted = {part: round(value, 1) for part, value in costs(found, rates, corpus, done).items()}
    return found, {
        "hours": hours,
        "scale": round(scale, 3),
        "rates": dict(rates),
        "predicted_minutes": predicted,
        "predicted_total_minutes": round(sum(predicted.values()), 1),
        "measured_at": time.strftime("%Y-%m-%d %H:%M"),
    }


def choosing_minutes(plan: FitPlan, rates: Rates, corpus: dict) -> float:
    """Predicted wall minutes of the stages that choose how the ON-LSTMs read (the reading probes, the members that
    referee them, the direction trial's two: ``FitPlan.choosing_members``)."""
    chosen_by = {"probes": len(plan.candidate_readings()) if plan.chooses_reading else 0}
    for k in plan.choosing_members():
        chosen_by[plan.family(k)] = chosen_by.get(plan.family(k), 0) + 1
    return sum(costs(plan, rates, corpus).values()) - sum(costs(plan, rates, corpus, chosen_by).values())


def choices_read_alike(plan: FitPlan, rates: Rates, corpus: dict, hours: float, sizing: dict) -> tuple[FitPlan, dict]:
    """``plan`` (as the user gave it) read up to its choices at the largest of all the recipe reads, a half, a
    quarter, ... (at least a sixteenth) whose choosing stages take at most CHOICES_SHARE of the usable hours, and
    ``sizing`` with that recorded in ``choices``. The stages that choose a language's reading and direction then
    read alike on a busy machine and an idle one (the rates are the fit's own, 1-3% apart alone and beside a busy
    process in German, and a power of two moves only where they cross its edge), and the re-plan after them sizes
    the rest to the time left: an unknown language's fit slowed by other work had cut its trial to a sixth of the
    recipe, one member reading a third of the other, and chose the worse direction."""
    room = CHOICES_SHARE * USABLE * 60 * hours
    scale = 1.0
    while scale > LEAST_CHOICES_SCALE and choosing_minutes(at_scale(plan, corpus, scale, plan), rates, corpus) > room:
        scale /= 2
    found = at_scale(plan, corpus, scale, plan)
    minutes = round(choosing_minutes(found, rates, corpus), 1)
    log.debug(
        f"the stages that choose how the ON-LSTMs read (probes, referees, the direction trial) read {scale:.0%} of "
        f"what the recipe reads, foreseen to take {minutes:.0f} minutes; the rest is sized again after them"
    )
    return found, {**sizing, "choices": {"scale": scale, "predicted_minutes": minutes}}


def hours_for_one_call(sizing: dict, hours: float) -> float | None:
    """Where the fit as sized (its least scale at most) is foreseen to take longer than ``hours`` allow, the hours
    that would make its model in one call (with a margin); else None. It stops at its hours with the best parser so
    far, and a resume finishes it (the hostile probe's C35 asks for exactly that: exit 3, then a resume to the
    model)."""
    needed = sizing["predicted_total_minutes"] / (USABLE * 60)
    return float(f"{needed * 1.2:.2g}") if needed > hours else None


def more_members(plan: FitPlan) -> FitPlan:
    """``plan`` with one more member of each of its families: a turn of the family cycle, so the vote stays balanced
    between them."""
    return replace(plan, members=plan.members + len(plan.families))


def with_more_members(
    sized_plan: tuple[FitPlan, dict],
    rates: Rates,
    corpus: dict,
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


def larger(plan: FitPlan, families: list[str]) -> FitPlan:
    """``plan`` with the larger members (``Family.larger``) of each of ``families``."""
    return replace(
        plan,
        sections={
            name: named(name).larger(section) if name in families else section
            for name, section in plan.sections.items()
        },
    )


def shape_chosen_by_time(plan: FitPlan) -> str | None:
    """The family whose members' shape the hours choose (``Family.time_chooses_shape``), where one has members."""
    return next((name for name in plan.member_families() if named(name).time_chooses_shape(plan.sections[name])), None)


def given_reading(plan: FitPlan) -> dict:
    """The readings of ``plan`` as the user gave it, for the record, so a re-plan scales what the first plan scaled:
    the common ones and what each family's section scales (``FitSection.scaled``)."""
    return {
        "member_epochs": plan.member_epochs,
        "sentences": plan.sentences,
        "sections": {name: {key: getattr(s, key) for key in s.scaled} for name, s in plan.sections.items()},
    }


def given_plan(plan: FitPlan, given: dict) -> FitPlan:
    """``plan`` with the readings the user gave (``given_reading``'s record of them)."""
    sections = {
        name: replace(section, **given.get("sections", {}).get(name, {})) for name, section in plan.sections.items()
    }
    return replace(plan, **{key: value for key, value in given.items() if key != "sections"}, sections=sections)
