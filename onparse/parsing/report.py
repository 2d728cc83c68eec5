"""What people see: tables of scores, and progress bars while they wait (on stderr, so output stays clean)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from onparse.families import layer_from_key, of_readout
from onparse.structures.scoring import LENGTHS, REPORTED_LABELS


@contextmanager
def line_counter(description: str, shown: bool = True, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """Lines done and how fast, on stderr (``shown`` False: nothing); with a ``total`` (a file's lines) a bar and the
    time left."""
    if not shown:
        yield lambda done: None
        return
    known = (BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()) if total else ()
    columns = (
        TextColumn(f"{description}" + ("" if total else " {task.completed:,} lines")),
        *known,
        TimeElapsedColumn(),
        TextColumn("{task.fields[rate]}"),
    )
    started = time.monotonic()
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=total, rate="")

        def advance(done: int) -> None:
            progress.advance(task, done)
            lines = progress.tasks[0].completed
            progress.update(task, rate=f"{lines / max(time.monotonic() - started, 1e-9):,.1f} sentences/s")

        yield advance


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """A transient progress bar on stderr; yields the function to call with how many more are done."""
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=total)
        yield lambda done: progress.advance(task, done)


def model_table(
    models: list[dict], default: str, console: Console | None = None, as_json: bool = False, install: str = ""
) -> None:
    """``onparse models``: each model that loads by name, its language, kind, size, dev figure and place. Names and
    figures are never cut; where the folders do not fit beside them (80 columns), --json gives them. Shipped models
    not installed here follow, named, and ``install``: the commands that install one. ValueError after the table
    for models that do not load (``broken``), naming each."""
    if as_json:
        sys.stdout.write(json.dumps(models, indent=2) + "\n")
        return
    broken = [model for model in models if "broken" in model]
    missing = [model for model in models if "install" in model]
    models = [model for model in models if "broken" not in model and "install" not in model]
    console = console or wide_console()
    with_paths = console.width >= 120
    table = Table(
        title="models that load by name (--model NAME; * the default)",
        caption=None if with_paths else "their folders: onparse models --json",
    )
    names = [model["name"] + (" *" if model["name"] == default else "") for model in models]
    table.add_column("name", no_wrap=True, min_width=max(map(len, names), default=4))
    table.add_column("lang", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("MB", justify="right", no_wrap=True)
    table.add_column("F1", justify="right", no_wrap=True)
    dev_sets = [
        "/".join(Path(m["dev_f1"]["gold"]).parts[-2:]) if m["dev_f1"] and m["dev_f1"].get("gold") else "-"
        for m in models
    ]
    table.add_column("on dev set", no_wrap=True, min_width=max(map(len, dev_sets), default=1))
    if with_paths:
        table.add_column("path", overflow="fold")
    for name, model, dev_set in zip(names, models, dev_sets):
        figure = model["dev_f1"]
        table.add_row(
            name,
            model["language"],
            model["kind"].replace("ensemble of ", "vote of "),
            f"{model['megabytes']:.1f}",
            f"{figure['sentence_f1']:.1f}" if figure else "-",
            dev_set,
            *([model["path"]] if with_paths else []),
        )
    console.print(table)
    for model in models:
        if "for" in model:
            console.print(f"{model['name']}: {model['for']}", highlight=False)
    if missing:  # one install sentence for all, each model by its name
        named = ", ".join(f"{model['name']} ({model['language']})" for model in missing)
        console.print(f"not installed: {named}; to install one, {install}", highlight=False)
    if broken:  # listed after the rest, which one bad file never hides
        raise ValueError("; ".join(f"{model['name']} does not load: {model['broken']}" for model in broken))


def wide_console() -> Console:
    """Standard output for tables: a terminal's own width, files and pipes the whole row (not rich's default 80
    columns)."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


def readout_name(layer: object, alone: bool = True) -> str:
    """A readout (or its record key) as a table's row names it: a model's read alone, or an ensemble member's."""
    layer = layer_from_key(layer) if isinstance(layer, str) else layer
    return of_readout(layer).describe_readout(layer, alone)


def model_rows(result: dict) -> list[tuple[str, dict]]:
    """Table rows for a model's figures: its layers, or an ensemble's members and votes."""
    if "per_layer" in result:
        return [
            (readout_name(k) + (" (chosen)" if k == result["chosen"] else ""), figures)
            for k, figures in result["per_layer"].items()
        ]
    rows = [
        (f"member {k} ({readout_name(layer, alone=False)})", figures)
        for (k, figures), layer in zip(result["members"].items(), result["layers"])
    ]
    for key, name in (
        ("ensemble", "ensemble (tree averaging)"),
        ("ensemble_right_branching", "ensemble + right-branching voter"),
    ):
        rows.append((name + (" (chosen)" if result["chosen"] == key else ""), result[key]))
    return rows


def print_scores(result: dict, pred: str | None, as_json: bool = False) -> None:
    """``onparse eval``'s table: the model's rows (or another parser's), the baselines, the protocol under it (or
    with ``as_json`` its figures as JSON); predictions left out of the score are said on stderr."""
    if result.get("unaligned"):
        first, left_out = result["unaligned"][0], len(result["unaligned"])
        sys.stderr.write(
            f"onparse: {left_out} of {result['aligned'] + left_out} predictions left out, their leaves not "
            f"the gold words (first: {first['source']}, {first['reason']}); --json lists them\n"
        )
    if as_json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return
    title = f"{result['gold']}: {result['sentences']} sentences" + (
        f", at most {result['max_length']} words" if result["max_length"] else ""
    )
    table = Table(title=title)
    for column in ("parser", "sentence F1", "corpus F1", *REPORTED_LABELS, *(f"{n}w" for n in LENGTHS), "RB"):
        table.add_column(column, justify="left" if column == "parser" else "right", no_wrap=True)
    if pred:
        rows = [(pred, result)]
    elif "same_tokens" in result:
        rows = [
            (f"raw text ({result['same_tokens']} of {result['sentences']} sentences tokenized as the treebank)", result)
        ]
    else:
        rows = model_rows(result)
    rows += [(name.replace("_", " "), figures) for name, figures in result["baselines"].items()]
    for name, figures in rows:
        recalls = [
            f"{figures[kind][key]:.1f}" if key in figures[kind] else "-"
            for kind, keys in (("label_recall", REPORTED_LABELS), ("length_recall", LENGTHS))
            for key in keys
        ]
        table.add_row(
            name,
            f"{figures['sentence_f1']:.1f}",
            f"{figures['corpus_f1']:.1f}",
            *recalls,
            f"{figures['right_branching_agreement']:.1f}",
        )
    console = wide_console()
    console.print(table)
    if "model" in result:
        console.print(f"model: {result['model']}")
    console.print(result["protocol"], style="dim")


def evaluation_line(title: str, record: dict, kept: bool) -> str:
    """One evaluation of a run for people (the history keeps the whole record): its point, its dev figures, and
    whether it is the point the run keeps so far."""
    parts = [f"{title} epoch {record['epoch']:g}:"]
    if record.get("dev_ppl") is not None:
        parts.append(f"dev ppl {record['dev_ppl']:,.1f}")
    if record.get("teacher_agreement") is not None:
        parts.append(f"agreement with the teacher {record['teacher_agreement']:.1f}")
    gold = record.get("dev_f1_per_layer") or {}
    if gold:
        parts.append(
            "dev F1 "
            + " ".join(f"{value:.1f}" if len(gold) == 1 else f"{layer}:{value:.1f}" for layer, value in gold.items())
        )
    return " ".join(parts[:1]) + " " + ", ".join(parts[1:]) + (" (kept)" if kept else "")
