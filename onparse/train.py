"""Training an ON-LSTM language model: corpora, batching, the loop, checkpoints.

The corpus is one continuous stream of sentences, each ended by ``<eos>``, cut
into ``batch_size`` parallel streams and truncated back-propagation segments of
``bptt`` steps (as in AWD-LSTM). ``Trainer.steps`` is the loop itself, a
generator of progress events; ``train`` wraps it with a progress bar, the
run folder's history, model directories and checkpoints. A checkpoint holds
everything needed to resume mid-epoch and continue exactly as an uninterrupted
run would.
"""

from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from onparse import modeldir
from onparse.atomic import replacing_file
from onparse.config import TrainConfig
from onparse.hardware import describe
from onparse.model import LanguageModel, State, compute_dtype
from onparse.tokenize import normalize, tokenize, word_positions
from onparse.treebank import TreebankError, read_gold, tree_files
from onparse.vocabulary import Vocabulary

DEV_STREAMS = 10  # parallel streams the dev corpus is cut into for perplexity
# Measures a model as it trains (dev F1 per layer, say); called in eval mode, its figures go into the history.
Evaluator = Callable[[LanguageModel, Vocabulary], dict]


def read_corpus(paths: list[str]) -> list[list[str]]:
    """Normalized sentences from .mrg trees (word-tagged leaves) or plain text (one sentence a line)."""
    sentences: list[list[str]] = []
    for path in paths:
        for file in tree_files(path):
            if file.suffix.lower() == ".mrg":
                sentences.extend([normalize(w) for w in s.words] for s in read_gold(str(file)))
            else:
                with file.open(encoding="utf-8-sig") as lines:
                    try:
                        for line in lines:
                            tokens = tokenize(line)
                            words = [normalize(tokens[i]) for i in word_positions(tokens)]
                            if words:
                                sentences.append(words)
                    except UnicodeDecodeError as err:
                        raise TreebankError(f"{file}: not UTF-8 text ({err.reason} after {len(sentences):,} sentences)") from None
    return sentences


def stream(sentences: list[list[str]], vocab: Vocabulary) -> torch.Tensor:
    """All sentences as one id stream, each followed by <eos>."""
    ids: list[int] = []
    for sentence in sentences:
        ids.extend(vocab.ids(sentence))
        ids.append(vocab.eos_id)
    return torch.tensor(ids, dtype=torch.long)


def batchify(ids: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Cut a stream into ``batch_size`` columns (steps x batch), dropping the ragged tail."""
    steps = ids.numel() // batch_size
    return ids[: steps * batch_size].view(batch_size, steps).t().contiguous()


def n_segments(data: torch.Tensor, bptt: int) -> int:
    """How many segments of ``bptt`` steps (the last may be shorter) a batchified stream holds."""
    return math.ceil((data.size(0) - 1) / bptt)


def segment(data: torch.Tensor, bptt: int, index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-word targets of segment ``index``: rows ``index * bptt`` onwards."""
    start = index * bptt
    targets = data[start + 1 : start + 1 + bptt]
    return data[start : start + targets.size(0)], targets


def detach(state: State | None) -> State | None:
    """The state without its history, so back-propagation stops at the segment's start."""
    return [(h.detach(), c.detach()) for h, c in state] if state else None


@torch.no_grad()
def perplexity(model: LanguageModel, data: torch.Tensor, bptt: int, dtype: torch.dtype) -> tuple[float, float]:
    """Perplexity of a batchified stream, and the mean |cell state| (a check on runaway counters)."""
    was_training = model.training
    model.eval()
    state, total, count = None, 0.0, 0
    for index in range(n_segments(data, bptt)):
        inputs, targets = segment(data, bptt, index)
        output, state, _ = model(inputs, state, dtype)
        total += model.loss(output, targets, dtype).item() * targets.numel()
        count += targets.numel()
    model.train(was_training)
    if not count:
        raise ValueError("the dev stream is too short for one next-word prediction")
    cell = sum(c.abs().mean().item() for _, c in state) / len(state)
    return math.exp(total / count), cell


def learning_rate(config: TrainConfig, update: int, total_updates: int) -> float:
    """Linear warm-up, then cosine decay to ``min_lr_ratio * lr``."""
    if update < config.warmup_updates:
        return config.lr * (update + 1) / config.warmup_updates
    progress = min(1.0, (update - config.warmup_updates) / max(1, total_updates - config.warmup_updates))
    floor = config.min_lr_ratio
    return config.lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


@dataclass
class RunState:
    """Where a run is: what a checkpoint restores besides weights and optimizer."""

    epoch: int = 0
    batch: int = 0
    update: int = 0
    train_seconds: float = 0.0
    tokens_seen: int = 0
    best_dev_ppl: float = float("inf")
    history: list[dict] = field(default_factory=list)


@dataclass
class Step:
    """One update done."""

    loss: float
    tokens: int
    seconds: float


@dataclass
class Evaluation:
    """Dev figures taken at a point of the run; ``best`` when its dev perplexity is the lowest so far."""

    record: dict
    best: bool
    epoch_end: bool


class Trainer:
    """A run in memory (model, optimizer, data, position); ``steps()`` is the training loop."""

    def __init__(self, config: TrainConfig, checkpoint: dict | None = None, evaluate: Evaluator | None = None):
        self.config = config
        self.evaluate = evaluate
        self.dtype = compute_dtype(config.dtype)
        self.device = torch.device(config.device)
        sentences = read_corpus(config.train)
        if not sentences:
            raise ValueError("the training corpus holds no sentences")
        self.vocab = Vocabulary(checkpoint["vocab"]) if checkpoint else Vocabulary.build(sentences, config.model.vocab_size)
        self.train_data = batchify(stream(sentences, self.vocab), config.batch_size).to(self.device)
        if self.train_data.size(0) < 2:
            raise ValueError(f"the training corpus is too small for one batch of {config.batch_size} streams")
        dev = stream(read_corpus([config.dev]), self.vocab) if config.dev else None
        if dev is not None and dev.numel() < 2 * DEV_STREAMS:  # found before training, not after the first epoch
            raise ValueError(f"the dev corpus {config.dev} holds {dev.numel()} words with their <eos>: "
                             f"at least {2 * DEV_STREAMS} are needed")
        self.dev_data = batchify(dev, DEV_STREAMS).to(self.device) if dev is not None else None
        self.batches_per_epoch = n_segments(self.train_data, config.bptt)

        torch.manual_seed(config.seed)
        self.model = LanguageModel(replace(config.model, vocab_size=len(self.vocab))).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        self.run = RunState()
        self.state: State | None = None  # the hidden state carried from one segment to the next
        if checkpoint:
            try:
                self.model.load_state_dict(checkpoint["model"])
                self.optimizer.load_state_dict(checkpoint["optimizer"])
                self.run = RunState(**checkpoint["run"])
                self.state = [(h.to(self.device), c.to(self.device)) for h, c in checkpoint["state"]] or None
                torch.set_rng_state(checkpoint["rng"])
            except (KeyError, TypeError, ValueError, RuntimeError) as err:
                reason = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
                raise RunFolderError(f"the checkpoint does not fit the run's config.json ({reason})") from None
        else:
            unigram = Counter(self.train_data.flatten().tolist())
            counts = torch.tensor([unigram.get(i, 0) + 1.0 for i in range(len(self.vocab))], device=self.device)
            with torch.no_grad():  # start from the unigram distribution, not a uniform one
                self.model.decoder_bias.copy_(torch.log(counts / counts.sum()))

    @property
    def default_layer(self) -> int:
        return min(self.config.default_layer, self.config.model.n_layers)

    def checkpoint(self) -> dict:
        """Everything ``Trainer(config, checkpoint)`` needs to continue exactly from here."""
        return {
            "config": self.config.to_dict(),
            "vocab": self.vocab.words,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "run": asdict(self.run),
            "state": [(h.cpu(), c.cpu()) for h, c in self.state or []],
            "rng": torch.get_rng_state(),
        }

    def _evaluation_points(self) -> set[int]:
        """Batches (counted from 1) after which the dev set is measured: evenly spread, the last at epoch end."""
        per_epoch = max(1, min(self.config.evals_per_epoch, self.batches_per_epoch))
        return {round(k * self.batches_per_epoch / per_epoch) for k in range(1, per_epoch + 1)}

    def steps(self) -> Iterator[Step | Evaluation]:
        """Train to the end of the schedule from wherever the run is, yielding each update and evaluation."""
        config, run, model = self.config, self.run, self.model
        total_updates = self.batches_per_epoch * config.epochs
        points = self._evaluation_points()
        model.train()
        while run.epoch < config.epochs:
            while run.batch < self.batches_per_epoch:
                started = time.monotonic()
                inputs, targets = segment(self.train_data, config.bptt, run.batch)
                for group in self.optimizer.param_groups:
                    group["lr"] = learning_rate(config, run.update, total_updates)
                output, state, _ = model(inputs, detach(self.state), self.dtype)
                loss = model.loss(output, targets, self.dtype)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
                self.optimizer.step()
                self.state = detach(state)
                seconds = time.monotonic() - started
                run.train_seconds += seconds
                run.tokens_seen += targets.numel()
                run.update += 1
                run.batch += 1
                yield Step(loss.item(), targets.numel(), seconds)
                if run.batch in points and run.batch < self.batches_per_epoch:
                    yield self._evaluate(epoch_end=False)
            run.epoch, run.batch, self.state = run.epoch + 1, 0, None
            yield self._evaluate(epoch_end=True)

    def _evaluate(self, epoch_end: bool) -> Evaluation:
        run = self.run
        epoch = run.epoch + run.batch / self.batches_per_epoch
        # enough decimals that no two evaluation points share a folder: epoch-00.25 at 4 a epoch, epoch-00.010 at 100
        decimals = max(2, len(str(len(self._evaluation_points()))))
        record = {"epoch": round(epoch, max(3, decimals)), "model_dir": f"epoch-{epoch:0{3 + decimals}.{decimals}f}",
                  "update": run.update,
                  "tokens_seen": run.tokens_seen, "train_minutes": round(run.train_seconds / 60, 2),
                  "lr": self.optimizer.param_groups[0]["lr"]}
        if self.dev_data is not None:
            record["dev_ppl"], record["dev_mean_abs_cell"] = perplexity(self.model, self.dev_data, self.config.bptt, self.dtype)
        if self.evaluate:
            self.model.eval()
            record["dev_f1_per_layer"] = self.evaluate(self.model, self.vocab)
            self.model.train()
        best = record.get("dev_ppl", 0.0) <= run.best_dev_ppl
        run.best_dev_ppl = min(run.best_dev_ppl, record.get("dev_ppl", 0.0))
        run.history.append(record)
        return Evaluation(record, best, epoch_end)


class Interrupted(Exception):
    """Training stopped on a signal (Ctrl-C, SIGTERM) after writing a checkpoint."""


@contextmanager
def deferred_signals() -> Iterator[list[str]]:
    """Turn SIGINT and SIGTERM into a request (the yielded list gets the signal's name) instead of an exception.

    The loop looks at the request between updates, so a checkpoint is never
    written from a half-done step. A second signal acts at once as usual.
    """
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}

    def request(number, frame) -> None:
        received.append(signal.Signals(number).name)
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
    never blocks a resume.
    """
    import fcntl

    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / LOCK, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise RunFolderError(f"{out_dir} is in use by another onparse train (pid {holder}): "
                                 "wait for it, or train into another --out") from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield


def run_contents(out_dir: Path) -> list[Path]:
    """What a run folder holds besides its lock."""
    return [path for path in out_dir.iterdir() if path.name != LOCK] if out_dir.is_dir() else []


def read_checkpoint(out_dir: Path) -> dict:
    """The run's checkpoint, checked to be one; RunFolderError naming what is wrong otherwise."""
    path = out_dir / "checkpoint.pt"
    if not path.is_file():
        raise RunFolderError(f"{out_dir}: no checkpoint.pt to resume from")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        reason = str(err).splitlines()[0][:120] if str(err) else type(err).__name__
        raise RunFolderError(f"{path}: damaged or not a checkpoint ({reason})") from None
    if not isinstance(checkpoint, dict) or not CHECKPOINT_KEYS <= set(checkpoint):
        raise RunFolderError(f"{path}: not a training checkpoint (a model's weights?): it lacks "
                             f"{', '.join(sorted(CHECKPOINT_KEYS - set(checkpoint if isinstance(checkpoint, dict) else ())))}")
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
        raise RunFolderError(f"{out_dir / 'config.json'}: {str(err).splitlines()[0][:160]}") from None
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
    evaluate: Evaluator | None = None,
    checkpoint_minutes: float = 10.0,
    console: Console | None = None,
) -> RunState:
    """Train (or resume) a model into ``out_dir``; ``out_dir/model`` is the best by dev perplexity.

    On SIGINT or SIGTERM the run writes a checkpoint after the update in
    flight and raises ``Interrupted``; resuming continues exactly from there.

    ``out_dir`` gets ``config.json`` (the run's settings), ``history.jsonl``
    (one line per evaluation), a model directory per evaluation
    (``epoch-EE.FF``), ``model/`` and ``checkpoint.pt``. Resuming continues
    the checkpoint with ``config``, whose epochs may be more than the run's
    (the cosine schedule then stretches to the new end).
    """
    console = console or Console(stderr=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    trainer = Trainer(config, read_checkpoint(out_dir) if resume else None, evaluate)
    with replacing_file(out_dir / "config.json") as file:
        file.write(json.dumps(config.to_dict(), indent=2) + "\n")
    run = trainer.run
    write_history(out_dir, run.history)  # a crash after an evaluation's line and before its checkpoint repeats nothing
    if resume:
        console.print(f"resumed from {out_dir / 'checkpoint.pt'}: epoch {run.epoch + 1}, batch {run.batch}")
    else:
        modeldir.save(out_dir / "epoch-00.00", trainer.model, trainer.vocab, trainer.default_layer, {"epoch": 0, "untrained": True})

    def save_checkpoint() -> None:
        temporary = out_dir / "checkpoint.tmp"
        torch.save(trainer.checkpoint(), temporary)
        os.replace(temporary, out_dir / "checkpoint.pt")  # a kill -9 mid-write leaves the previous checkpoint whole

    deadline = time.monotonic() + 60 * max_minutes if max_minutes else None
    last_checkpoint = time.monotonic()
    columns = (TextColumn("epoch {task.fields[epoch]}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[speed]} tok/s  loss {task.fields[loss]}"), TimeElapsedColumn(), TimeRemainingColumn())
    with deferred_signals() as received, Progress(*columns, console=console) as progress:
        task = progress.add_task("train", total=trainer.batches_per_epoch, completed=run.batch, epoch=run.epoch + 1,
                                 speed="-", loss="-")
        for event in trainer.steps():
            if isinstance(event, Step):
                progress.update(task, completed=run.batch, epoch=run.epoch + 1,
                                speed=f"{event.tokens / event.seconds:,.0f}", loss=f"{event.loss:.3f}")
                if not console.is_terminal and run.update % 50 == 0:  # logs get a line where a terminal gets the bar
                    console.print(f"epoch {run.epoch + 1} batch {run.batch}/{trainer.batches_per_epoch} loss {event.loss:.3f} "
                                  f"{run.tokens_seen / run.train_seconds:,.0f} tok/s")
                if received:
                    save_checkpoint()
                    raise Interrupted(f"{received[0]}: checkpoint saved at epoch {run.epoch + 1}, batch {run.batch}")
                if deadline and time.monotonic() > deadline:
                    save_checkpoint()
                    console.print(f"time limit reached: checkpoint saved at epoch {run.epoch + 1}, batch {run.batch}; "
                                  "resume the run to continue")
                    return run
                if time.monotonic() - last_checkpoint > 60 * checkpoint_minutes:
                    save_checkpoint()
                    last_checkpoint = time.monotonic()
                continue
            console.print(json.dumps(event.record))
            write_history(out_dir, run.history)
            card = {"config": config.to_dict(), "hardware": describe(config.device), **asdict(run)}
            modeldir.save(out_dir / event.record["model_dir"], trainer.model, trainer.vocab, trainer.default_layer, card)
            if event.best:
                modeldir.save(out_dir / "model", trainer.model, trainer.vocab, trainer.default_layer, card)
            save_checkpoint()
            last_checkpoint = time.monotonic()
            if event.epoch_end and run.epoch < config.epochs:
                progress.update(task, completed=0, epoch=run.epoch + 1)
    return run
