"""What people see: tables of scores, and progress bars while they wait (on stderr, so output stays clean)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from onparse.config import MEAN, SPANS
from onparse.scoring import REPORTED_LABELS


@contextmanager
def line_counter(description: str, shown: bool = True, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """Lines done and how fast, on stderr (``shown`` False: nothing); with a ``total`` (a file's lines) a bar and the
    time left."""
    if not shown:
        yield lambda done: None
        return
    known = (BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()) if total else ()
    columns = (TextColumn(f"{description}" + ("" if total else " {task.completed:,} lines")), *known, TimeElapsedColumn(),
               TextColumn("{task.fields[rate]}"))
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


def model_table(models: list[dict], default: str, console: Console | None = None) -> None:
    """``onparse models``: each model that loads by name, its language, kind, size, dev figure and place. Names and
    figures are never cut; where the folders do not fit beside them (80 columns), --json gives them."""
    console = console or wide_console()
    with_paths = console.width >= 120
    table = Table(title="models that load by name (--model NAME; * the default)",
                  caption=None if with_paths else "their folders: onparse models --json")
    names = [model["name"] + (" *" if model["name"] == default else "") for model in models]
    table.add_column("name", no_wrap=True, min_width=max(map(len, names), default=4))
    table.add_column("lang", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("MB", justify="right", no_wrap=True)
    table.add_column("F1", justify="right", no_wrap=True)
    dev_sets = ["/".join(Path(m["dev_f1"]["gold"]).parts[-2:]) if m["dev_f1"] and m["dev_f1"].get("gold") else "-" for m in models]
    table.add_column("on dev set", no_wrap=True, min_width=max(map(len, dev_sets), default=1))
    if with_paths:
        table.add_column("path", overflow="fold")
    for name, model, dev_set in zip(names, models, dev_sets):
        figure = model["dev_f1"]
        table.add_row(name, model["language"], model["kind"].replace("ensemble of ", "vote of "), f"{model['megabytes']:.1f}",
                      f"{figure['sentence_f1']:.1f}" if figure else "-", dev_set, *([model["path"]] if with_paths else []))
    console.print(table)


def wide_console() -> Console:
    """Standard output for tables: a terminal's own width, files and pipes the whole row (not rich's default 80 columns)."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


READOUT_NAMES = {MEAN: "ON-LSTM mean of layers", SPANS: "PCFG (span marginals, MBR tree)"}
MEMBER_READOUTS = {SPANS: "PCFG"}  # an ensemble member's readout as its row names it (a layer by its number)


def model_rows(result: dict) -> list[tuple[str, dict]]:
    """Table rows for a model's figures: its layers, or an ensemble's members and votes."""
    if "per_layer" in result:
        return [(READOUT_NAMES.get(k, f"ON-LSTM layer {k}") + (" (chosen)" if k == result["chosen"] else ""), figures)
                for k, figures in result["per_layer"].items()]
    rows = [(f"member {k} ({MEMBER_READOUTS.get(layer, f'layer {layer}')})", figures)
            for (k, figures), layer in zip(result["members"].items(), result["layers"])]
    for key, name in (("ensemble", "ensemble (tree averaging)"), ("ensemble_right_branching", "ensemble + right-branching voter")):
        rows.append((name + (" (chosen)" if result["chosen"] == key else ""), result[key]))
    return rows


def print_scores(result: dict, pred: str | None) -> None:
    """``onparse eval``'s table: the model's rows (or another parser's), the baselines, the protocol under it."""
    title = f"{result['gold']}: {result['sentences']} sentences" + (f", at most {result['max_length']} words" if result["max_length"] else "")
    table = Table(title=title)
    for column in ("parser", "sentence F1", "corpus F1", *REPORTED_LABELS):
        table.add_column(column, justify="left" if column == "parser" else "right", no_wrap=True)
    if pred:
        rows = [(pred, result)]
    elif "same_tokens" in result:
        rows = [(f"raw text ({result['same_tokens']} of {result['sentences']} sentences tokenized as the treebank)", result)]
    else:
        rows = model_rows(result)
    rows += [(name.replace("_", " "), figures) for name, figures in result["baselines"].items()]
    for name, figures in rows:
        labels = [f"{figures['label_recall'][label]:.1f}" if label in figures["label_recall"] else "-" for label in REPORTED_LABELS]
        table.add_row(name, f"{figures['sentence_f1']:.1f}", f"{figures['corpus_f1']:.1f}", *labels)
    console = wide_console()
    console.print(table)
    if "model" in result:
        console.print(f"model: {result['model']}")
    console.print(result["protocol"], style="dim")
