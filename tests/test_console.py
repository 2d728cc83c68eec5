"""What a person sees on a terminal while a model trains: lines logged meanwhile stand above the one progress bar,
never on its line, and the bar is gone when the run ends."""

import io
import logging
import re
from types import SimpleNamespace

from rich.console import Console

from onparse.commands.common import show_messages
from onparse.training.progress import ProgressReport
from onparse.training.train import Step


def screen(raw: str) -> list[str]:
    """The lines a terminal shows after ``raw`` (rich's control codes: carriage return, erase line, cursor up)."""
    lines, row, column = [""], 0, 0
    for token in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\r|\n|[^\x1b\r\n]+", raw):
        if token == "\n":
            row, column = row + 1, 0
            lines += [""] * (row + 1 - len(lines))
        elif token == "\r":
            column = 0
        elif token == "\x1b[2K":
            lines[row] = ""
        elif token.startswith("\x1b[") and token.endswith("A"):
            row -= int(token[2:-1] or 1)
        elif not token.startswith("\x1b"):  # text (colours and the cursor's visibility change nothing shown)
            lines[row] = lines[row][:column] + token + lines[row][column + len(token) :]
            column += len(token)
    return [line for line in lines if line]


def test_a_line_logged_during_training_stands_above_the_bar_and_the_bar_goes_when_the_run_ends():
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    show_messages(None)  # what the commands log, for people
    log = logging.getLogger("onparse.test")
    run = SimpleNamespace(batch=0, epoch=0, update=0, tokens_seen=0, train_seconds=1.0)
    running = SimpleNamespace(run=run, batches_per_epoch=10, config=SimpleNamespace(epochs=2))
    seen = []
    with ProgressReport(running, terminal, "member-1", log.info) as report:
        for k in range(1, 6):
            run.batch = run.update = k
            report.step(Step(loss=6.0, tokens=100, seconds=0.1))
            if k == 3:
                log.info("member-1 epoch 0.5: dev ppl 726.2")
                terminal.file.flush()
                seen = screen(terminal.file.getvalue())
    assert seen[0] == "member-1 epoch 0.5: dev ppl 726.2" and "━" in seen[-1]  # the line, then the bar below it
    assert screen(terminal.file.getvalue()) == ["member-1 epoch 0.5: dev ppl 726.2"]  # the bar gone, the line kept
