"""The fit: its stages run one after the other, each recorded as it ends, to the model or to the hours."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

from rich.console import Console

from onparse.fit.anytime import publish, published, voting_stages
from onparse.fit.card import write_card
from onparse.fit.console import fit_clock, opening, stage_line, stage_words
from onparse.fit.records import check_hand_edits, check_stages_done, count_killed_call, read_record, write_record
from onparse.fit.runners import run_stage, unused_after
from onparse.fit.sizing import replanned, settled_plan, spent_minutes
from onparse.fit.stages import FINAL, RECORD, stages, stale_stages
from onparse.hardware import describe
from onparse.plan import FitPlan
from onparse.text.treebank import check_gold
from onparse.training import distributed, runfolder

log = logging.getLogger("onparse")
# less of a fit's hours left than this is none: a call stopped at its hours leaves seconds the record does not count
# (loading between stages), and a resume given them stopped again after one update
LEAST_LEFT_MINUTES = 1.0


@contextlib.contextmanager
def opened_fit(out: Path, plan: FitPlan | None, ranks: distributed.Ranks = distributed.Ranks()) -> Iterator[str]:
    """The fit's folder held for this process (rank 0's alone under torchrun): ``plan`` None resumes the fit recorded
    there, a new plan needs a folder holding no fit; RunFolderError otherwise. Yields the device the fit runs on."""
    with runfolder.locked_run(out) if ranks.main else contextlib.nullcontext():
        if plan is None and not (out / RECORD).is_file():
            raise runfolder.RunFolderError(f"{out}: no {RECORD} to resume from")
        if ranks.main and plan is not None and runfolder.run_contents(out):
            raise runfolder.RunFolderError(
                f"{out} already holds a fit: continue it with --resume, or choose another --out"
            )
        yield plan.device if plan else read_record(out)["plan"]["device"]


def fit(
    plan: FitPlan | None,
    out: Path,
    resume: bool = False,
    hours: float | None = None,
    console: Console | None = None,
    command: str = "",
    stage_done: Callable[[str], None] | None = None,
    ranks: distributed.Ranks = distributed.Ranks(),
) -> dict:
    """Run (or resume, with the plan recorded in ``out``) the recipe into ``out``; returns the record.
    ``out/model`` is the parser.

    ``hours`` limits this call: the stage in flight checkpoints and TimeUp is
    raised; ``resume`` continues. ``stage_done`` is told each stage's name as
    it is recorded.

    Under torchrun (``ranks``: the launch's, as its command read them) every
    process trains the members together (DDP); then rank 0 goes on alone with
    the ensembles and the distillation stages, and the other processes end.

    Long: one loop over the stages, each step of a stage (run, time, record, re-plan, retire, report) in the order
    it happens.
    """
    console = (console or Console(stderr=True)) if ranks.main else Console(quiet=True)
    deadline = time.monotonic() + 3600 * hours if hours else None
    if resume:
        record = read_record(out)
        count_killed_call(record, out)
        left = 60 * record["budget"]["hours"] - spent_minutes(record) if "budget" in record else 0.0
        if hours is None and left >= LEAST_LEFT_MINUTES:  # the budget holds across calls: what is left of its hours
            deadline = time.monotonic() + 60 * left
            if ranks.main:
                log.info(
                    f"resuming with {left:.0f} of the fit's {record['budget']['hours']:g} hours' minutes left "
                    "(--hours gives this call another budget)"
                )
        elif hours is None and "budget" in record and ranks.main:  # its hours spent: a resume is asked to finish it
            log.info(
                f"the fit's {record['budget']['hours']:g} hours are spent: resuming to its end (--hours limits it)"
            )
        plan = FitPlan.from_dict(record["plan"])
        if plan.direction_trial and not record.get("direction_trial"):
            raise runfolder.RunFolderError(
                f"{out}: this fit was begun by an onparse whose probes chose the direction; "
                "resume it with that version, or start a new fit"
            )
        check_stages_done(plan, out, record)
        check_hand_edits(out, record)
    else:
        plan.check()
        if plan.dev_gold:
            check_gold(plan.dev_gold, plan.encoding)
        distributed.join(plan.device, ranks)  # the launch's processes meet: rank 0 alone times the machine and
        if ranks.main:  # settles the plan, and every process trains as it says
            plan, sizing, corpus = settled_plan(plan, out, hours)
            record = {
                "plan": asdict(plan),
                "command": command,
                "hardware": describe(plan.device),
                "stages": [],
                **({"budget": sizing} if sizing else {}),
                **({"direction_trial": True} if plan.direction_trial else {}),
            }
            for level, line in opening(out, len(stages(plan, out, record)), corpus, sizing, hours):
                log.log(level, line)
            out.mkdir(parents=True, exist_ok=True)
            write_record(out, record)
        distributed.wait_for_all()
        if not ranks.main:
            record = read_record(out)
            plan = FitPlan.from_dict(record["plan"])
    while True:
        settled = stages(plan, out, record)  # what is left, as settled by the stages done
        done = {entry["name"] for entry in record["stages"]}
        todo = [stage for stage in settled if stage.name not in done]
        if not todo:
            break
        stale = stale_stages(settled, record, out) | ({FINAL} & done)  # the final model: of every stage before it
        if stale:  # a stage done before one of its inputs was (re)made, as a fit.json edited for another member makes
            for entry in [entry for entry in record["stages"] if entry["name"] in stale]:  # its minutes still count
                record.setdefault("unfinished", {})[entry["name"]] = entry.get("wall_minutes", 0.0)
            record["stages"] = [entry for entry in record["stages"] if entry["name"] not in stale]
            continue
        stage, number = todo[0], len(settled) - len(todo) + 1
        alone = (
            stage.config.distill is not None if stage.config else stage.reference is None and not stage.trial
        )  # the members are done
        if ranks.world > 1 and alone:  # (every rank weighs the probes, and trains the members after them)
            if not ranks.main:
                distributed.go_alone()
                return record
            ranks = distributed.go_alone()
        if ranks.main:
            log.info(f"stage {number}/{len(settled)}: {stage_words(stage)}; {fit_clock(record)}")
        started = time.monotonic()
        earlier = record.setdefault("unfinished", {}).pop(stage.name, 0.0)  # minutes of earlier calls stopped mid-stage
        record["in_flight"] = {"stage": stage.name, "since": time.time(), "earlier": earlier}  # what a kill -9 leaves
        if ranks.main:
            write_record(out, record)
        # no parser yet: a stage that makes one trains to its end whatever the hours, so the fit leaves a parser
        first_parser = published(out) is None and stage.name in voting_stages(settled) and stage.config is not None
        try:
            entry = {
                "name": stage.name,
                **run_stage(stage, plan, out, None if first_parser else deadline, console, ranks),
            }
        except BaseException:  # stopped mid-stage (time limit, signal, error): its minutes count when the stage ends
            record["unfinished"][stage.name] = earlier + (time.monotonic() - started) / 60
            del record["in_flight"]
            if ranks.main:
                with contextlib.suppress(OSError):  # on a full disk the stage's own error is the one to report
                    write_record(out, record)
            raise
        entry["wall_minutes"] = round(earlier + (time.monotonic() - started) / 60, 2)
        if deadline is not None and time.monotonic() > deadline and first_parser and ranks.main:
            past = (time.monotonic() - deadline) / 60
            log.warning(f"{stage.name} trained {past:.1f} minutes past the hours: the fit's first parser")
            entry["past_the_hours_minutes"] = round(past, 2)
        del record["in_flight"]
        record["stages"].append(entry)
        if ranks.main:
            if again := replanned(plan, record, settled):
                plan, record["plan"] = again, asdict(again)
            write_record(out, record)
            for run in [] if plan.keep_evaluations else unused_after(stage, entry):
                runfolder.retire(out / run)  # the rule has chosen: the run's figures are in the record
        if ranks.world > 1:  # the other processes train as rank 0's plan says, re-planned or not
            distributed.wait_for_all()
            if not ranks.main:
                plan = FitPlan.from_dict(read_record(out)["plan"])
        if ranks.main:
            log.info(stage_line(entry), extra={"record": entry})
            now = publish(out, stage, entry, settled, {e["name"] for e in record["stages"]}, plan.right_branching_voter)
            if now:
                to_come = len(now["still_to_come"])
                log.info(f"{out / FINAL} is now {stage.name}, the best parser so far ({to_come} stages to come)")
        if stage_done:
            stage_done(stage.name)
    if ranks.main:
        write_card(out / FINAL, record)
    return record
