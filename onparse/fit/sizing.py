"""How much the fit reads: the plan sized to the text and to ``--hours`` (``budget`` times this machine), and sized
again as stages end."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

import onparse.training.budget as budget
from onparse.families import named
from onparse.fit.stages import DIRECTIONS, Stage, done_entries, member_configs
from onparse.plan import FitPlan
from onparse.settings import default
from onparse.text.corpus import read_sentences

log = logging.getLogger("onparse")


SMALL_TEXT_TOKENS = 100_000  # training text under this is said to be small: a tenth of what a member reads
# Every run of a fit stops once its dev figure has not bettered for this many passes: on 300 German sentences dev
# perplexity was best after 2 to 4 passes and then rose up to twelvefold, while each run read the text 20 times; the
# shipped models' own curves (``benchmarks/early_stopping.py``, three languages) never waited two passes for a
# better point, so it costs a large text nothing
FIT_PATIENCE = 2.0


def text_size(plan: FitPlan) -> dict:
    """The training text's size as the budget weighs it: ``units`` by family (what its first member learns of it, in
    the units its throughput is timed in: ``Family.text_units``), ``tokens`` a language model reads with punctuation
    and sentence ends (the most any member reads: the probes' and students' measure), ``sentence_tokens`` on average,
    and ``sentences``; ValueError for a text of none."""
    text = read_sentences(plan.train, plan.language, plan.encoding, plan.tokenized)
    if not text:
        raise ValueError(f"the training text ({', '.join(plan.train)}) holds no sentence")
    from onparse.text.reading import model_tokens

    tokens = sum(len(model_tokens(replace(plan.reading(1), punctuation=True), sentence)) + 1 for sentence in text)
    units = {}
    for name in plan.member_families():
        family = named(name)
        reading = family.sized_reading(plan.reading(plan.members_of(name)[0]))
        units[name] = sum(family.text_units(model_tokens(reading, sentence)) for sentence in text)
    return {"tokens": tokens, "sentence_tokens": tokens / len(text), "sentences": len(text), "units": units}


def settled_plan(plan: FitPlan, out: Path, hours: float | None = None) -> tuple[FitPlan, dict | None, dict]:
    """The plan with what each model reads settled: members' epochs as asked, or enough to read what the recipe
    reads of each family (``Family.recipe_units``), a sample where that is less than the text; with ``hours``, all of
    it scaled to end within them on this machine (``budget``), with larger members where they fit too
    (``with_larger_members``), and what the record keeps of that; a turn of members more where asked
    (``budget.more_members``: where the time allows, the re-plan weighs it); and the text's size (``text_size``).
    What it weighed is logged for debugging; the fit's opening says what a person needs (``report.opening``)."""
    corpus = text_size(plan)
    plan = stopping_early(plan, corpus)
    asked = budget.larger(plan, [name for name, section in plan.sections.items() if section.larger])
    asked = budget.more_members(asked) if plan.more_members else asked
    if not hours:
        return budget.at_scale(asked, corpus, 1.0, asked), None, corpus
    log.debug(f"measuring this machine's throughput on the text, to size the fit to {hours:g} hours")
    started = time.monotonic()
    rates = budget.measure(member_configs(asked, out))
    found, sizing = budget.sized(asked, rates, corpus, hours)
    family = budget.shape_chosen_by_time(plan)
    if family and sizing["scale"] >= 1:  # time to spare with all the recipe read
        found, sizing = with_larger_members(family, plan, out, rates, corpus, hours, (found, sizing))
    if sizing["scale"] < 1 and asked.choosing_members():  # the choices first, read alike whatever the load
        found, sizing = budget.choices_read_alike(asked, rates, corpus, hours, sizing)
    # what a re-plan needs: the text's size, the readings as given, the minutes the timing took
    return (
        found,
        {
            **sizing,
            "corpus": corpus,
            "given": budget.given_reading(plan),
            "timing_minutes": round((time.monotonic() - started) / 60, 2),
        },
        corpus,
    )


def stopping_early(plan: FitPlan, corpus: dict) -> FitPlan:
    """The plan with every run stopping once it stops learning (``FIT_PATIENCE`` passes, unless --patience says),
    and, for a text under SMALL_TEXT_TOKENS, evaluated once a pass (unless --evals-per-epoch says), since it reads
    the text many times and each evaluation reads the dev text whole."""
    small = corpus["tokens"] < SMALL_TEXT_TOKENS and plan.evals_per_epoch == default(FitPlan, "evals_per_epoch")
    return replace(plan, patience=plan.patience or FIT_PATIENCE, evals_per_epoch=1 if small else plan.evals_per_epoch)


def with_larger_members(
    family: str, plan: FitPlan, out: Path, rates: budget.Rates, corpus: dict, hours: float, smaller: tuple
) -> tuple[FitPlan, dict]:
    """The plan sized with the larger members of ``family`` (``Family.larger``, timed on this machine) where they
    fit the hours with everything else reading all the recipe reads, else ``smaller`` (the plan and its sizing with
    the default ones); the sizing records both in ``larger``."""
    larger = budget.larger(plan, [family])
    rates = {**rates, family: budget.timed(budget.first_of_each(member_configs(larger, out))[family])}
    found, sizing = budget.sized(larger, rates, corpus, hours)
    fits = sizing["scale"] >= 1
    weighed = {
        "family": family,
        "chosen": fits,
        "rate": rates[family],
        "predicted_total_minutes": sizing["predicted_total_minutes"],
        "default_predicted_total_minutes": smaller[1]["predicted_total_minutes"],
    }
    before, after = plan.sections[family].model, larger.sections[family].model
    log.debug(
        f"larger {named(family).plural} ({before} grown to {after}) would take "
        f"{sizing['predicted_total_minutes']:.0f} minutes in all: {'chosen' if fits else 'no time for them'}"
    )
    chosen, chosen_sizing = (found, sizing) if fits else smaller
    return chosen, {**chosen_sizing, "larger": weighed}


def replanned(plan: FitPlan, record: dict, settled: list[Stage]) -> FitPlan | None:
    """The plan re-sized to the time left after each stage, once a member of each family is trained and the direction
    trial has chosen, at the wall rate the members' stages showed so far: the text they read over the wall minutes they
    took, whatever slowed them (a few timed updates misjudge it when other work runs beside them, and the load
    changes as the fit goes), and what it records in the budget's ``replanned`` (the
    latest) and ``replans`` (how many); None where the fit has no hours, a family's rate is not seen yet or the trial
    has not chosen (its two members read alike, whatever the load). A turn of members more is weighed once, at the
    first re-plan.

    Long: the rates, the re-sizing, the turn of members more and the record are one decision taken in order; apart,
    each would need the others' intermediate figures."""
    sizing = record.get("budget")
    if not sizing or "given" not in sizing:
        return None
    by_name = {stage.name: stage for stage in settled}
    done = done_entries(record)
    if plan.direction_trial and DIRECTIONS not in done:  # the trial compares its two members at the same reading,
        return None  # so the rest is cut only once it has chosen (a blind fit slowed by other work chose unfairly)
    # the members' rates, not the probes': a probe learns in smaller batches (PROBE_BATCH), so trains slower a token
    trained = [
        (by_name[name].config.family, entry)
        for name, entry in done.items()
        if name.startswith("member-") and name in by_name
    ]
    seen = {  # what the family's members read, and the wall seconds their stages took: evaluations, a machine
        family: (  # shared with other work, and whatever else slowed them in it
            sum(entry["tokens_seen"] for kind, entry in trained if kind == family),
            sum(60 * entry["wall_minutes"] for kind, entry in trained if kind == family and entry.get("tokens_seen")),
        )
        for family in plan.member_families()
    }
    if any(seconds <= 0 for _, seconds in seen.values()):
        return None
    # the rate in the units ``costs`` divides by, whose wall factor it multiplies back: a stage like these is
    # foreseen at the wall minutes they took a token
    rates = {family: tokens / seconds * budget.wall_factor(plan, family) for family, (tokens, seconds) in seen.items()}
    counts = {"probes": sum(name.startswith("probe-") for name in done)}
    counts.update({family: sum(kind == family for kind, _ in trained) for family in seen})
    spent = spent_minutes(record)
    given = budget.given_plan(plan, sizing["given"])
    found, again = budget.sized(plan, rates, sizing["corpus"], sizing["hours"], spent, given, counts)
    earlier = sizing.get("replanned")
    # time to spare with all the recipe read; not on a small text: what limits its members is the text, not the time
    if (
        earlier is None
        and budget.time_chooses_members(plan)
        and again["scale"] >= 1
        and sizing["corpus"]["tokens"] >= SMALL_TEXT_TOKENS
    ):
        found, again = budget.with_more_members(
            (found, again), rates, sizing["corpus"], sizing["hours"], spent, given, counts
        )
    elif earlier and "more_members" in earlier:  # weighed once: what the first re-plan chose stands
        again = {**again, "more_members": earlier["more_members"]}
    sizing["replans"] = sizing.get("replans", 0) + 1
    sizing["replanned"] = {
        "after": record["stages"][-1]["name"],
        "spent_minutes": round(spent, 1),
        **{
            key: again[key]
            for key in ("scale", "rates", "predicted_minutes", "predicted_total_minutes", "more_members")
            if key in again
        },
    }
    was = (earlier or sizing)["scale"]
    if earlier is None or abs(again["scale"] - was) > 0.05 * was:  # said when it changes what is still to train
        log.info(
            f"re-planned after {sizing['replanned']['after']}, at the wall minutes its models took: each model "
            f"still to train reads {again['scale']:.0%} of its full share (was {was:.0%}), "
            f"{again['predicted_total_minutes']:.0f} more minutes foreseen"
        )
    return found


def spent_minutes(record: dict) -> float:
    """The fit's wall minutes so far: timing the machine, the stages done, and stages stopped midway."""
    return (
        (record.get("budget") or {}).get("timing_minutes", 0.0)
        + sum(entry["wall_minutes"] for entry in record["stages"])
        + sum((record.get("unfinished") or {}).values())
    )
