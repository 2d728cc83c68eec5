"""``fit.json``: the record of a fit's stages as they end, read back and checked on resume."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

from onparse.config import TrainConfig
from onparse.families import of
from onparse.fit.stages import RECORD, stages
from onparse.hardware import one_line
from onparse.plan import FitPlan, translated_plan
from onparse.store.atomic import replacing_file
from onparse.store.modeldir import read_json
from onparse.training import runfolder


class TimeUp(Exception):
    """The fit's time ran out; what was done is recorded and a resume continues."""


def read_record(out: Path) -> dict:
    """The fit's record, its plan and the stages done so far, checked field by field: RunFolderError naming
    what is wrong in a damaged or hand-edited ``fit.json``."""
    record = translated_record(read_json(out / RECORD))
    stages_done = record.get("stages")
    if (
        not isinstance(record.get("plan"), dict)
        or not isinstance(stages_done, list)
        or not all(isinstance(entry, dict) and isinstance(entry.get("name"), str) for entry in stages_done)
    ):
        raise runfolder.RunFolderError(
            f"{out / RECORD}: not a fit's record (a plan, and a list of stages each with a name)"
        )
    names = [entry["name"] for entry in stages_done]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice:
        raise runfolder.RunFolderError(f"{out / RECORD}: stage {twice} is listed twice")
    timeless = next(
        (
            entry["name"]
            for entry in stages_done
            if type(entry.get("wall_minutes")) not in (int, float) or not 0 <= entry["wall_minutes"] < math.inf
        ),
        None,
    )
    if timeless:
        raise runfolder.RunFolderError(f"{out / RECORD}: stage {timeless} has no wall_minutes (a number of minutes)")
    unfinished = record.get("unfinished", {})
    if not isinstance(unfinished, dict) or not all(type(v) in (int, float) and v >= 0 for v in unfinished.values()):
        raise runfolder.RunFolderError(
            f"{out / RECORD}: its unfinished stages must map each name to minutes, not {unfinished!r:.40}"
        )
    in_flight = record.get("in_flight", {})
    if (
        not isinstance(in_flight, dict)
        or in_flight
        and not (
            isinstance(in_flight.get("stage"), str)
            and all(type(in_flight.get(key)) in (int, float) and in_flight[key] >= 0 for key in ("since", "earlier"))
        )
    ):
        raise runfolder.RunFolderError(
            f"{out / RECORD}: its stage in flight must be a name, a start time and minutes, not {in_flight!r:.40}"
        )
    try:
        FitPlan.from_dict(record["plan"]).check()
    except (TypeError, ValueError) as err:
        raise runfolder.RunFolderError(f"{out / RECORD}: its plan does not hold ({one_line(err)})") from None
    return record


# a fit's rates and text sizes as records kept them before they were keyed by family name
OLD_RATES = {"lm_tokens_per_second": "onlstm", "grammar_words_per_second": "pcfg"}


def translated_record(record: dict) -> dict:
    """A record written before the plan had a section per family, read as one written now (once, on reading: the
    next write keeps it so): the plan's family settings in their sections (``plan.translated_plan``), the budget's
    rates, text sizes, given readings and larger-members choice keyed by family name; then the ON-LSTMs' settings
    moved later (``moved_onlstm_settings``)."""
    if not isinstance(record, dict) or not isinstance(record.get("plan"), dict):
        return record
    if "member_model" not in record["plan"]:
        return moved_onlstm_settings(record)
    old_plan = record["plan"]
    record = {**record, "plan": translated_plan(old_plan)}
    sizing = record.get("budget")
    if isinstance(sizing, dict) and "rates" in sizing:
        sizing = dict(sizing)
        for held in (sizing, sizing.get("replanned") or {}):
            if "rates" in held:
                held["rates"] = {OLD_RATES[k]: v for k, v in held["rates"].items() if k in OLD_RATES and v}
        if "corpus" in sizing:
            corpus = dict(sizing["corpus"])
            units = {"onlstm": corpus["tokens"], "pcfg": corpus.pop("grammar_words", 0)}
            sizing["corpus"] = {**corpus, "units": {k: units[k] for k in dict.fromkeys(old_plan.get("families", []))}}
        if "given" in sizing:  # the readings as the user gave them: the old plan held the ON-LSTMs' settled epochs
            given = dict(sizing["given"])
            record["plan"]["member_epochs"] = given.get("member_epochs")
            sizing["given"] = {
                **{key: given.get(key) for key in ("member_epochs", "probe_tokens", "sentences")},
                "sections": {
                    name: section
                    for name, section in (
                        ("onlstm", {"epochs": given.get("member_epochs"), "sample": given.get("member_sample")}),
                        ("pcfg", {"epochs": given.get("grammar_epochs"), "sample": given.get("grammar_sample")}),
                    )
                    if name in record["plan"]["sections"]
                },
            }
        if "larger_grammars" in sizing:
            weighed = dict(sizing.pop("larger_grammars"))
            sizing["larger"] = {"family": "pcfg", "rate": weighed.pop("grammar_words_per_second"), **weighed}
        record["budget"] = sizing
    return moved_onlstm_settings(record)


def moved_onlstm_settings(record: dict) -> dict:
    """A record written while the ON-LSTMs' reading, probe and round-student settings sat at the top of the plan
    (``plan.ONLSTM_FIELDS``), with them in the ON-LSTMs' section, the probes' given tokens too."""
    record = {**record, "plan": translated_plan(record["plan"])}
    sizing = record.get("budget")
    given = sizing.get("given") if isinstance(sizing, dict) else None
    if isinstance(given, dict) and "probe_tokens" in given:
        given = {key: value for key, value in given.items() if key != "probe_tokens"}
        sections = given.get("sections") or {}
        if isinstance(sections.get("onlstm"), dict):
            given["sections"] = {
                **sections,
                "onlstm": {**sections["onlstm"], "probe_tokens": sizing["given"]["probe_tokens"]},
            }
        record["budget"] = {**sizing, "given": given}
    return record


def check_stages_done(plan: FitPlan, out: Path, record: dict) -> None:
    """RunFolderError where the plan (a ``fit.json`` edited by hand) makes a training stage that is done something
    other than what it was trained as: its family, shape or reading."""
    done = {entry["name"] for entry in record["stages"]}
    for stage in stages(plan, out, record):
        trained = out / stage.name / "config.json"
        if stage.config is None or stage.name not in done or not trained.is_file():
            continue
        changed = stage_change(TrainConfig.from_dict(read_json(trained)), stage.config)
        if changed:
            raise runfolder.RunFolderError(
                f"{out / RECORD}: its plan makes stage {stage.name} {changed}: a plan cannot "
                "change a stage that is done (put the plan back, or start a new fit)"
            )


WRITTEN_PLAN = "written_plan"  # the plan as the fit last wrote it, so that a hand edit of ``plan`` is seen


def check_hand_edits(out: Path, record: dict) -> None:
    """RunFolderError where ``fit.json``'s plan was edited by hand since the fit wrote it in a way that changes how a
    stage that is done was trained (a focus, epochs, a learning rate): the fit would call it done, retrain nothing,
    and its card would name settings the model never had. Edits that add what is not done yet (more members or
    students) stand: the stages made of them are made again (``stages.stale_stages``)."""
    written = record.get(WRITTEN_PLAN)
    if not isinstance(written, dict) or written == record["plan"]:
        return  # a record from before this check, or no edit
    try:
        before = {stage.name: stage.config for stage in stages(FitPlan.from_dict(written), out, record)}
    except (TypeError, ValueError):
        return  # the plan as written no longer reads: the checks of the plan itself say what is wrong
    done = {entry["name"] for entry in record["stages"]}
    for stage in stages(FitPlan.from_dict(record["plan"]), out, record):
        if stage.name in done and stage.config is not None and before.get(stage.name, stage.config) != stage.config:
            edits = "; ".join(f"{key} {old!r} -> {new!r}" for key, old, new in differences(written, record["plan"]))
            raise runfolder.RunFolderError(
                f"{out / RECORD}: its plan was edited by hand ({edits}), which changes stage {stage.name}, trained "
                "already: put the plan back, or start a new fit with those settings (another --out)"
            )


def differences(was: dict, now: dict, prefix: str = "") -> list[tuple[str, object, object]]:
    """The settings that differ between two plans as JSON holds them, each by its dotted name."""
    found = []
    for key in [*was, *(key for key in now if key not in was)]:
        old, new = was.get(key), now.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            found += differences(old, new, f"{prefix}{key}.")
        elif old != new:
            found.append((prefix + key, old, new))
    return found


def stage_change(was: TrainConfig, now: TrainConfig) -> str:
    """What ``now`` makes of a stage trained as ``was``: the first of its family, its sizes and its reading that
    differs; empty where they agree."""
    settings = {
        "family": (was.family, now.family),
        **{name: (getattr(was.model, name, None), value) for name, value in asdict(now.model).items()},
        "reading": (of(was.model).describe_reading(was.reading), of(now.model).describe_reading(now.reading)),
    }
    return next((f"of {name} {new} (trained with {old})" for name, (old, new) in settings.items() if old != new), "")


def count_killed_call(record: dict, out: Path) -> None:
    """A call killed mid-stage (kill -9, a machine's end) left its stage ``in_flight``: its minutes count, from the
    stage's start to the last file the stage wrote, as a stopped call's do."""
    in_flight = record.pop("in_flight", None)
    if not in_flight:
        return
    folder = out / in_flight["stage"]
    last = (
        max((path.stat().st_mtime for path in folder.rglob("*")), default=in_flight["since"])
        if folder.is_dir()
        else in_flight["since"]
    )
    minutes = max(0.0, last - in_flight["since"]) / 60
    unfinished = record.setdefault("unfinished", {})
    unfinished[in_flight["stage"]] = unfinished.get(in_flight["stage"], 0.0) + in_flight["earlier"] + minutes


def write_record(out: Path, record: dict) -> None:
    record[WRITTEN_PLAN] = record["plan"]  # as written (``check_hand_edits``)
    with replacing_file(out / RECORD) as file:
        file.write(json.dumps(record, indent=2) + "\n")
