"""A run folder: what one training run leaves, the callbacks around the training loop, and the one place that
starts, resumes or replaces a run.

    config.json     the run's settings (TrainConfig)
    history.jsonl   one line per evaluation
    epoch-EE.FF/    the model directories of the untrained start, the best and the last evaluation (every evaluation's
                    with ``keep_evaluations``); model/ the best by the run's selection rule
    checkpoint.pt   everything needed to continue exactly (weights, optimizer, position, carried state, RNG)
    teacher.jsonl   a distillation's teacher trees (when no other file is named)

``prepare`` decides start, resume or replace, and deletes only a folder it
has recognised as a run folder holding nothing else, whose inputs it has
checked first, and that no shipped model points into. ``trainer`` gives a
config its objective (language model or distillation); ``train`` runs the
loop with its callbacks (progress bar, history, model directories,
checkpoints, signals, time limit).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict
from pathlib import Path

import torch
from rich.console import Console

from onparse.config import TrainConfig
from onparse.families import named, of
from onparse.hardware import describe, one_line
from onparse.parsing.evaluate import dev_f1
from onparse.parsing.report import evaluation_line
from onparse.store import modeldir
from onparse.store.atomic import replacing_file
from onparse.text.treebank import check_gold, tree_files
from onparse.training import distributed
from onparse.training.distill import distillation_setup
from onparse.training.progress import ProgressReport
from onparse.training.train import Evaluation, RunState, Step, Trainer, selection_rule

log = logging.getLogger("onparse")

# What a run folder may hold: anything else is not the run's, and nothing here deletes it.
RUN_FILES = {"config.json", "history.jsonl", "checkpoint.pt", "checkpoint.tmp", "teacher.jsonl"}
RUN_FOLDERS = ("epoch-", "model")
EVALUATION = re.compile(r"epoch-\d+\.\d+")  # an evaluation's model directory
UNTRAINED = "epoch-00.00"  # the weights a run started from, kept beside the best and last evaluations
FEW_UPDATES = 50  # a run of fewer updates is said to learn little before it starts


def trainer(
    config: TrainConfig,
    checkpoint: dict | None = None,
    work_dir: Path | None = None,
    ranks: distributed.Ranks = distributed.Ranks(),
) -> Trainer:
    """The run's Trainer: its objective chosen from the config (distillation where ``config.distill`` says so, else the
    family's own ``training_setup``), dev F1 per layer measured where ``config.dev_gold`` is given (for the record),
    resumed from ``checkpoint`` where one is given (RunFolderError when it does not fit)."""
    modeldir.check_memory(config.model)  # refused before a size no memory here holds is allocated
    ranks = distributed.join(config.device, ranks)
    if config.distill:
        if ranks.world > 1:
            raise ValueError("distillation trains in one process: run onparse distill without torchrun")
        setup = distillation_setup(config, checkpoint, work_dir)
    else:
        setup = named(config.family).part("training_setup")(config, checkpoint, ranks)
    if config.dev_gold:  # for the record; it chooses model/ only under select_by="dev_f1"
        setup.measures["dev_f1_per_layer"] = dev_f1(config.dev_gold, config.encoding, config.reading)
    found = Trainer(config, setup, ranks)
    if checkpoint:
        try:
            found.restore(checkpoint)
        except ValueError as err:
            raise RunFolderError(str(err)) from None
    return found


class Interrupted(Exception):
    """Training stopped on a signal (Ctrl-C, SIGTERM) after writing a checkpoint."""


@contextmanager
def deferred_signals() -> Iterator[list[str]]:
    """Turn SIGINT and SIGTERM into a request (the yielded list gets the signal's name) instead of an exception.

    The loop looks at the request between updates, so a checkpoint is never
    written from a half-done step; a line says so at once, since an evaluation in
    flight may take minutes. A second signal acts at once as usual.
    """
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}

    def request(number, frame) -> None:
        received.append(signal.Signals(number).name)
        sys.stderr.write(
            f"onparse: {received[-1]} received: stopping after this update, with a checkpoint "
            "(a second signal stops at once, without one)\n"
        )
        for other, handler in previous.items():
            signal.signal(other, handler)

    for number in previous:
        signal.signal(number, request)
    try:
        yield received
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class RunFolderError(ValueError):
    """A run folder that cannot be resumed or started: damaged, or in use by another run."""


LOCK = ".lock"  # held by the process training in a run folder, so a second one is refused
CHECKPOINT_KEYS = {"config", "vocab", "model", "optimizer", "run", "state", "rng"}


@contextmanager
def locked_run(out_dir: Path) -> Iterator[None]:
    """Hold the run folder for this process; RunFolderError if another process holds it.

    An advisory lock (``fcntl.flock``) on ``out_dir/.lock``: the system
    releases it when the process ends, even on ``kill -9``, so a stale lock
    never blocks a resume. A run refused before it wrote anything leaves no
    trace: a folder this call made, holding its lock alone, goes with it.
    """
    import fcntl

    made = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with _held(out_dir, fcntl):
            yield
    finally:
        if made and not run_contents(out_dir):
            (out_dir / LOCK).unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # another process may have begun writing there since
                out_dir.rmdir()


@contextmanager
def _held(out_dir: Path, fcntl) -> Iterator[None]:
    with open(out_dir / LOCK, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise RunFolderError(
                f"{out_dir} is in use by another onparse run (pid {holder}): wait for it, or give another --out"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield


def run_contents(out_dir: Path) -> list[Path]:
    """What a run folder holds besides its lock."""
    return [path for path in out_dir.iterdir() if path.name != LOCK] if out_dir.is_dir() else []


def is_run_folder(path: Path) -> bool:
    """Whether ``path`` holds a run's files and nothing else (its model directories holding models alone)."""
    if path.is_symlink() or not path.is_dir():
        return False
    for entry in path.iterdir():
        if entry.name == LOCK or (entry.name in RUN_FILES and entry.is_file() and not entry.is_symlink()):
            continue
        if not (entry.name.startswith(RUN_FOLDERS) and modeldir.is_model_folder(entry)):
            return False
    return True


def check_inputs(config: TrainConfig, out_dir: Path) -> None:
    """Refuse a new run whose inputs are missing, or that lie inside ``out_dir``, before anything there is deleted."""
    for path in [*config.train, config.dev, config.dev_gold]:
        if path:
            tree_files(path)  # TreebankError naming a path that matches nothing
    if config.dev_gold:
        check_gold(config.dev_gold, config.encoding)
    if config.distill:
        for role, model in (("teacher", config.distill.teacher), ("student", config.distill.start)):
            where = modeldir.locate(model)
            if not where.is_dir():
                raise modeldir.ModelDirError(f"{where}: no such model directory (the {role})")
            if out_dir.resolve() in where.resolve().parents or out_dir.resolve() == where.resolve():
                raise RunFolderError(
                    f"the {role} {where} lies inside --out {out_dir}: starting afresh there would delete it"
                )


@contextmanager
def opened(
    out_dir: Path,
    resume: bool,
    overwrite: bool,
    new_config: Callable[[], TrainConfig],
    epochs: int | None = None,
    ranks: distributed.Ranks = distributed.Ranks(),
) -> Iterator[TrainConfig]:
    """The run folder held (``locked_run``) and the run's config: its own to resume (checked with its checkpoint),
    or ``new_config()`` to start afresh.

    The one place a run folder is replaced: only with ``overwrite``, only a
    folder that is a run's alone (``is_run_folder``), outside the shipped
    models (``modeldir.refuse_to_replace``), and only once the new run's
    inputs are found (``check_inputs``). Anything else is refused, with
    nothing deleted and nothing written. Under torchrun, rank 0 alone holds
    and prepares the folder.
    """
    main = ranks.main
    if main and not resume and run_contents(out_dir):
        modeldir.refuse_to_replace(out_dir, is_run_folder, "a training run")
        if not overwrite:
            raise RunFolderError(
                f"{out_dir} already holds a run: continue it with --resume, or start afresh with --overwrite"
            )
    with locked_run(out_dir) if main else nullcontext():
        if resume:
            config = saved_config(out_dir)
            read_checkpoint(out_dir)  # refused now, with its reason, rather than after reading the corpus
            if epochs:
                config.epochs = epochs
        else:
            config = new_config()
            config.check()
            if main:
                check_inputs(config, out_dir)
            if main and run_contents(out_dir):
                for path in run_contents(out_dir):
                    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        yield config


def read_checkpoint(out_dir: Path) -> dict:
    """The run's checkpoint, checked to be one; RunFolderError naming what is wrong otherwise."""
    path = out_dir / "checkpoint.pt"
    if not path.is_file():
        raise RunFolderError(f"{out_dir}: no checkpoint.pt to resume from")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        reason = one_line(err, 120)
        raise RunFolderError(f"{path}: damaged or not a checkpoint ({reason})") from None
    if not isinstance(checkpoint, dict) or not CHECKPOINT_KEYS <= set(checkpoint):
        raise RunFolderError(
            f"{path}: not a training checkpoint (a model's weights?): it lacks "
            f"{', '.join(sorted(CHECKPOINT_KEYS - set(checkpoint if isinstance(checkpoint, dict) else ())))}"
        )
    return checkpoint


def saved_config(out_dir: Path) -> TrainConfig:
    """The config a run folder was started with; RunFolderError when it is missing or damaged."""
    try:
        values = modeldir.read_json(out_dir / "config.json")
        config = TrainConfig.from_dict(values)
        config.model.check()
    except modeldir.ModelDirError as err:
        raise RunFolderError(str(err)) from None
    except (TypeError, ValueError) as err:
        raise RunFolderError(f"{out_dir / 'config.json'}: {one_line(err)}") from None
    return config


def write_history(out_dir: Path, history: list[dict]) -> None:
    """``history.jsonl`` rewritten whole from the run's own record, so it always matches the checkpoint."""
    with replacing_file(out_dir / "history.jsonl") as file:
        file.writelines(json.dumps(record) + "\n" for record in history)


def train(
    config: TrainConfig,
    out_dir: Path,
    resume: bool = False,
    max_minutes: float | None = None,
    checkpoint_minutes: float = 10.0,
    console: Console | None = None,
    title: str = "train",
    command: str = "",
    ranks: distributed.Ranks = distributed.Ranks(),
) -> RunState:
    """Train (or resume) a model into ``out_dir``; ``out_dir/model`` is the best point by the run's selection rule.
    ``command``, the command line as typed, goes into every card the run writes; ``ranks``, the processes of a
    torchrun launch as its command read them (one by default).

    On SIGINT or SIGTERM the run writes a checkpoint after the update in
    flight and raises ``Interrupted``; resuming continues exactly from there.

    Under torchrun every rank runs this: all train and evaluate alike, and
    rank 0 alone prints and writes the run folder.

    ``out_dir`` gets ``config.json`` (the run's settings), ``history.jsonl``
    (one line per evaluation), the model directories of the untrained start,
    the best and the last evaluation (``epoch-EE.FF``; every evaluation's with
    ``config.keep_evaluations``), ``model/`` and ``checkpoint.pt``. Resuming continues
    the checkpoint with ``config``, whose epochs may be more than the run's
    (the cosine schedule then stretches to the new end). The run is done when
    ``run.epoch == config.epochs``; a time limit returns earlier.
    """
    if ranks.main:  # the other ranks of a torchrun launch write nothing
        out_dir.mkdir(parents=True, exist_ok=True)
    running = trainer(config, read_checkpoint(out_dir) if resume else None, out_dir, ranks)
    ranks, layer, run = running.ranks, config.default_layer, running.run
    console = (console or Console(stderr=True)) if ranks.main else Console(quiet=True)  # the progress bar's
    say = log.info if ranks.main else log.debug  # what a run reports goes to logging: one clean line each
    if ranks.main:
        with replacing_file(out_dir / "config.json") as file:
            file.write(json.dumps(config.to_dict(), indent=2) + "\n")
        write_history(
            out_dir, run.history
        )  # a crash after an evaluation's line and before its checkpoint repeats nothing
        if not resume:
            modeldir.save(
                out_dir / UNTRAINED,
                running.model,
                running.vocab,
                layer,
                {"epoch": 0, "untrained": True},
                language=config.language,
                reading=config.reading,
            )
    if resume:
        say(f"resumed from {out_dir / 'checkpoint.pt'}: epoch {run.epoch + 1}, batch {run.batch}")
    elif ranks.main and config.epochs * running.batches_per_epoch < FEW_UPDATES:
        updates = config.epochs * running.batches_per_epoch
        log.warning(
            f"{title}: {updates} update{'s' * (updates != 1)} in all ({running.batches_per_epoch} an epoch): too few "
            "to learn much from this text (it is small for the batch; more epochs, a smaller --batch-size or more text)"
        )
    if ranks.world > 1:
        say(f"training on {ranks.world} processes, {of(config.model).batch_share(config.batch_size, ranks.world)} each")
    checkpoints = Checkpoints(running, out_dir, max_minutes, checkpoint_minutes)
    saver = EvaluationSaver(running, config, out_dir, command)
    with deferred_signals() as received, ProgressReport(running, console, title, say) as report:
        for event in running.steps():
            if isinstance(event, Step):
                report.step(event)
                if checkpoints.after_step(received, say):
                    return run
            else:
                say(
                    evaluation_line(title, event.record, event.best),
                    extra={"record": {"run": title, **event.record, "kept": event.best}},
                )
                saver.evaluation(event)
                checkpoints.save()
                report.evaluation(event)
    return run


class Checkpoints:
    """When a run writes its checkpoint: every ``every_minutes``, after each evaluation, on a signal (then it stops:
    ``Interrupted``) and at its time limit (then the loop returns). Every rank gathers the carried states; rank 0
    writes, replacing the file only once whole."""

    def __init__(self, running: Trainer, out_dir: Path, max_minutes: float | None, every_minutes: float):
        self.running, self.out_dir, self.every = running, out_dir, 60 * every_minutes
        self.deadline = None if max_minutes is None else time.monotonic() + 60 * max_minutes
        self.last = time.monotonic()

    def save(self) -> None:
        checkpoint = self.running.checkpoint()  # every rank: the carried states are gathered from all of them
        if self.running.ranks.main:
            temporary = self.out_dir / "checkpoint.tmp"
            modeldir.save_tensors(checkpoint, temporary)
            os.replace(
                temporary, self.out_dir / "checkpoint.pt"
            )  # a kill -9 mid-write leaves the previous checkpoint whole
        self.last = time.monotonic()

    def after_step(self, received: list[str], say: Callable[[str], None]) -> bool:
        """Checkpoint where due; True when the time limit ends the run; Interrupted on a signal (to any rank)."""
        run = self.running.run
        stop, time_up, due = distributed.any_rank(
            [
                bool(received),
                self.deadline is not None and time.monotonic() > self.deadline,
                time.monotonic() - self.last > self.every,
            ],
            self.running.ranks,
            self.running.device,
        )
        if stop or time_up or due:
            self.save()
        if stop:
            raise Interrupted(
                f"{received[0] if received else 'a signal to another process'}: "
                f"checkpoint saved at epoch {run.epoch + 1}, batch {run.batch}"
            )
        if time_up:
            say(
                f"time limit reached: checkpoint saved at epoch {run.epoch + 1}, batch {run.batch}; resume the run "
                f"to continue"
            )
        return time_up


class EvaluationSaver:
    """What an evaluation leaves in the run folder (rank 0): the history, its model directory, and ``model/`` when
    it is the best point so far, each with the run's card."""

    def __init__(self, running: Trainer, config: TrainConfig, out_dir: Path, command: str):
        self.running, self.config, self.out_dir, self.command = running, config, out_dir, command
        kept = out_dir / "model" / "card.json"  # a resumed run's best point so far
        self.best = modeldir.read_json(kept)["selected"]["model_dir"] if kept.is_file() else None

    def evaluation(self, event: Evaluation) -> None:
        if not self.running.ranks.main:
            return
        running, config = self.running, self.config
        write_history(self.out_dir, running.run.history)
        card = {
            "config": config.to_dict(),
            **({"command": self.command} if self.command else {}),
            "hardware": describe(config.device),
            "processes": running.ranks.world,
            "matmul_dtype": str(running.dtype).removeprefix("torch."),
            "model_selection": selection_rule(config),
            "selected": event.record,
            **asdict(running.run),
        }
        for folder in [event.record["model_dir"]] + (["model"] if event.best else []):
            modeldir.save(
                self.out_dir / folder,
                running.model,
                running.vocab,
                config.default_layer,
                card,
                language=config.language,
                reading=config.reading,
            )
        if event.best:
            self.best = event.record["model_dir"]
        if not config.keep_evaluations:
            remove_evaluations(self.out_dir, keep={UNTRAINED, event.record["model_dir"], self.best})


def remove_evaluations(out_dir: Path, keep: set[str] = frozenset()) -> None:
    """Remove a run's evaluation model directories not in ``keep`` (``model/`` holds the best's copy): only folders
    named as evaluations that hold a model and nothing else, so nothing that is not the run's is deleted."""
    for entry in out_dir.iterdir():
        if EVALUATION.fullmatch(entry.name) and entry.name not in keep and modeldir.is_model_folder(entry):
            shutil.rmtree(entry)


def settle(out_dir: Path) -> None:
    """A finished run's folder reduced to what its model needs, its settings and its history (config.json,
    history.jsonl, model/): its checkpoint and its evaluations' model directories removed, for a fit whose stages
    are done and never resumed (``fit --keep-evaluations`` keeps them)."""
    remove_evaluations(out_dir)
    for name in ("checkpoint.pt", "checkpoint.tmp"):
        found = out_dir / name
        if found.is_file() and not found.is_symlink():
            found.unlink()


def retire(out_dir: Path) -> None:
    """A run whose model served one choice and is never used again (a fit's reading probe, once the rule has chosen):
    its settings and history kept, everything else removed."""
    if not is_run_folder(out_dir):
        raise RunFolderError(f"{out_dir} is not a training run's folder: nothing removed")
    for found in out_dir.iterdir():
        if found.name in ("config.json", "history.jsonl", LOCK):
            continue
        if found.is_dir() and not found.is_symlink():
            shutil.rmtree(found)
        else:
            found.unlink()
