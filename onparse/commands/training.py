"""What the training commands (train, distill, fit) share between their options and the library: one run's
folder and last line, and what a stop early says (one line, the way to continue, an exit code)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from onparse.commandline import (
    check_device,
    fail,
    import_nltk_quickly,
    library_errors,
    refuse_given_options,
    set_threads,
    show_messages,
    typed_command,
)


@contextmanager
def training_errors(command: str, out_dir: Path) -> Iterator[None]:
    """What every training command says when it stops early: one line, the way to continue, an exit code."""
    from onparse import runfolder
    from onparse.fit import TimeUp

    resume = f"onparse {command} --out {out_dir} --resume"
    try:
        with library_errors(runfolder.RunFolderError), signals_interrupt():
            yield
    except TimeUp as stop:
        fail(f"--hours reached in stage {stop} (checkpointed): continue with {resume}", 3, kind="stopped")
    except runfolder.Interrupted as stop:
        fail(f"interrupted by {stop}; {how_to_continue(out_dir, resume)}", 130)
    except KeyboardInterrupt:  # Ctrl-C outside a training loop (a teacher's parse, a stage's set-up)
        fail(f"interrupted by SIGINT; {how_to_continue(out_dir, resume)}", 130)


def how_to_continue(out_dir: Path, resume: str) -> str:
    """The resume command where the run folder holds a run to continue; otherwise that nothing was kept."""
    if any((out_dir / name).is_file() for name in ("config.json", "fit.json")):
        return f"continue with: {resume}"
    return "it had written nothing: run the command again"


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``runfolder.Interrupted`` in the main thread, as Ctrl-C raises KeyboardInterrupt,
    so that a training command stopped outside its loop says how to continue (a loop defers them itself)."""
    from onparse.runfolder import Interrupted

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(number, frame) -> None:
        raise Interrupted(f"{signal.Signals(number).name} outside a training loop (the last checkpoint stands)")

    previous = {number: signal.signal(number, interrupt) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_training(
    out_dir: Path,
    resume: bool,
    overwrite: bool,
    epochs: int | None,
    max_minutes: float | None,
    threads: int | None,
    messages: str | None,
    new_config,
    command: str,
) -> None:
    """What ``train`` and ``distill`` share: the run folder (lock, resume, overwrite), errors, the last line."""
    import_nltk_quickly()
    from onparse import distributed, runfolder
    from onparse.train import selection_rule

    if resume:  # given now, a setting other than how long and how far this call runs would be silently ignored
        refuse_given_options(
            {"out_dir", "resume", "epochs", "max_minutes", "threads", "messages"},
            "--resume continues the run with the settings in its config.json",
            "start another run in another --out",
        )
    set_threads(threads)
    ranks = distributed.from_environment()  # the launch's processes, decided here once and passed down
    with (
        training_errors(command, out_dir),
        runfolder.opened(out_dir, resume, overwrite, new_config, epochs, ranks) as config,
    ):
        check_device(config.device)
        run = runfolder.train(
            config,
            out_dir,
            resume=resume,
            max_minutes=max_minutes,
            console=show_messages(messages),
            command=typed_command(),
            ranks=ranks,
        )
        distributed.leave()  # on an error, the process's exit ends the launch: torchrun stops the other ranks
    if not ranks.main:
        return
    done = f"trained {run.epoch} epochs, {run.tokens_seen:,} tokens, {run.train_seconds / 60:.1f} min"
    if run.history:
        click.echo(f"{done}; best model ({selection_rule(config)}) in {out_dir / 'model'}")
    else:
        click.echo(
            f"{done}; stopped before the first evaluation, so no model yet: "
            f"continue with onparse {command} --out {out_dir} --resume"
        )


def run_fit(plan, out_dir: Path, hours: float | None, threads: int | None, messages: str | None) -> None:
    """``fit``: a new ``plan`` checked before its folder is made (a refused plan leaves nothing behind), or (None)
    the fit in ``out_dir`` resumed; its stages run to the model, or to ``hours``."""
    from onparse import distributed
    from onparse.fit import fit, opened_fit

    set_threads(threads)
    if plan is not None:
        try:  # a plan the options make that cannot run is a problem with the command: exit 2, as a bad option's
            plan.check()
        except ValueError as err:
            fail(str(err))
    ranks = distributed.from_environment()  # the launch's processes, decided here once and passed down
    with training_errors("fit", out_dir), opened_fit(out_dir, plan, ranks) as device:
        check_device(device)
        fit(
            plan,
            out_dir,
            resume=plan is None,
            hours=hours,
            console=show_messages(messages),
            command=typed_command(),
            ranks=ranks,
        )
    if ranks.main:
        click.echo(f"fit done: the parser is {out_dir / 'model'} (its card.md lists every stage)")
