"""A training run's console: one progress bar, updated in place and gone when the run ends (lines logged meanwhile
print above it), or a line every 50 updates where stderr is no terminal."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from onparse.training.train import Evaluation, Step, Trainer


class ProgressReport:
    """The progress bar of a run (a line every 50 updates where stderr is no terminal), fed the loop's events."""

    def __init__(self, running: Trainer, console: Console, title: str, say: Callable[[str], None]):
        self.running, self.console, self.title, self.say = running, console, title, say
        columns = (
            TextColumn(f"{title} epoch {{task.fields[epoch]}}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[speed]} tok/s  loss {task.fields[loss]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        # no bar where stderr is no terminal: rich would print its last frame there, a blank line in a log
        self.progress = Progress(*columns, console=console, transient=True, disable=not console.is_terminal)

    def __enter__(self) -> "ProgressReport":
        self.progress.__enter__()
        run = self.running.run
        self.task = self.progress.add_task(
            "train", total=self.running.batches_per_epoch, completed=run.batch, epoch=run.epoch + 1, speed="-", loss="-"
        )
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def step(self, event: Step) -> None:
        run = self.running.run
        self.progress.update(
            self.task,
            completed=run.batch,
            epoch=run.epoch + 1,
            speed=f"{event.tokens / event.seconds:,.0f}",
            loss=f"{event.loss:.3f}",
        )
        if not self.console.is_terminal and run.update % 50 == 0:  # logs get a line where a terminal gets the bar
            self.say(
                f"{self.title} epoch {run.epoch + 1} batch {run.batch}/{self.running.batches_per_epoch} "
                f"loss {event.loss:.3f} {run.tokens_seen / run.train_seconds:,.0f} tok/s"
            )

    def evaluation(self, event: Evaluation) -> None:
        run = self.running.run
        if event.epoch_end and run.epoch < self.running.config.epochs:
            self.progress.update(self.task, completed=0, epoch=run.epoch + 1)
