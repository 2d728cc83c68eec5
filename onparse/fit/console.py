"""What a fit says to people as it goes: its opening (what it makes, how long, what to do if that is too long), a
header for each stage in words, a line as each ends, and its clock. ``fit.json`` and the card keep the figures."""

from __future__ import annotations

import logging
from pathlib import Path

from onparse.families import named
from onparse.fit.sizing import SMALL_TEXT_TOKENS
from onparse.fit.stages import DIRECTIONS, FINAL, READINGS, Stage
from onparse.training.budget import hours_for_one_call


def opening(out: Path, stages: int, corpus: dict, sizing: dict | None, hours: float | None) -> list[tuple[int, str]]:
    """Three short lines before the first stage, each with its logging level: what the fit makes from what, how long
    it should take, and what to do if that is too long (a warning where the hours are too few for the whole). The
    sizing's details (rates, how much each model reads, the stages that choose) are in ``fit.json`` and the card."""
    small = corpus["tokens"] < SMALL_TEXT_TOKENS
    what = f"fitting a parser to {out / FINAL}: {stages} stages, from {corpus['sentences']:,} sentences" + (
        " (a small text: more text makes a better parser)" if small else ""
    )
    needed = hours_for_one_call(sizing, hours or 0.0) if sizing else None
    if sizing is None:
        how_long = "no --hours: each model reads its full share of the text, hours on a few cores (--hours H: H hours)"
    elif needed:
        how_long = (
            f"about {sizing['predicted_total_minutes']:.0f} minutes here, more than --hours {hours:g}: it stops at "
            f"them and --resume goes on (--hours {needed:g} does it in one call)"
        )
    else:
        how_long = f"about {sizing['predicted_total_minutes']:.0f} minutes here (sized to --hours {hours:g})"
    too_long = f"too long? Ctrl-C keeps the best parser so far; `onparse fit --out {out} --resume` goes on"
    return [(logging.INFO, what), (logging.WARNING if needed else logging.INFO, how_long), (logging.INFO, too_long)]


def stage_words(stage: Stage) -> str:
    """A stage's name in words, its folder's name after it."""
    if stage.name == FINAL:
        said = "the fit's parser: the last vote"
    elif stage.name == READINGS:
        said = "choosing what the ON-LSTMs read (punctuation or not)"
    elif stage.name == DIRECTIONS:
        said = "choosing which way the ON-LSTMs read"
    elif stage.config is None:
        said = f"the vote of {len(stage.members)} models" + (f", students of {stage.teacher}" if stage.teacher else "")
    elif stage.config.distill is not None:
        said = f"one of the {named(stage.config.family).students_plural}, learning the vote's trees"
    elif stage.name.startswith("probe-"):
        reading = stage.config.reading
        said = "a short ON-LSTM that tries reading " + ("punctuation too" if reading.punctuation else "words alone")
        said += f", {reading.direction}"
    else:
        said = f"one of the {named(stage.config.family).plural}, trained on the text"
    return f"{said} ({stage.name})"


def stage_line(entry: dict) -> str:
    """A fit's stage done, for people (fit.json keeps its record): its minutes and what it kept."""
    kept = entry.get("selected") or {}
    figures = [f"kept epoch {kept['epoch']:g}"] if "epoch" in kept else []
    figures += [f"dev ppl {kept['dev_ppl']:,.1f}"] if "dev_ppl" in kept else []
    figures += [f"agreement {kept['teacher_agreement']:.1f}"] if "teacher_agreement" in kept else []
    figures += [f"dev F1 {entry['dev_f1']:.1f}"] if isinstance(entry.get("dev_f1"), (int, float)) else []
    return f"stage {entry['name']} done in {entry['wall_minutes']:.1f} min" + (
        ", " + ", ".join(figures) if figures else ""
    )


def fit_clock(record: dict) -> str:
    """How far a fit is in minutes, and how long it has still to go where it was sized (--hours): what its last
    sizing foresaw, less what it spent; past that, said so rather than a forecast already passed."""
    spent = sum(entry.get("wall_minutes", 0.0) for entry in record.get("stages", []))
    sizing = record.get("budget") or {}
    spent += sizing.get("timing_minutes", 0.0)
    again = sizing.get("replanned")
    foreseen = (
        again["spent_minutes"] + again["predicted_total_minutes"] if again else sizing.get("predicted_total_minutes")
    )
    if not foreseen:
        return f"{spent:.0f} min so far"
    if spent < foreseen:
        return f"{spent:.0f} min so far, about {foreseen - spent:.0f} to go"
    return f"{spent:.0f} min so far, past the {foreseen:.0f} foreseen"
