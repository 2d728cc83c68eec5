"""The one training loop: an objective, a model, evaluations, checkpoints, a run folder.

A ``Trainer`` runs any objective: the language model (one continuous stream
of sentences, each ended by ``<eos>``, cut into ``batch_size`` parallel
streams and truncated back-propagation segments of ``bptt`` steps, as in
AWD-LSTM), a grammar's likelihood (``onparse.families.grammar_training``), or distillation
(``onparse.training.distill``: the language model plus a ranking loss on the distances
toward a teacher's trees, or a grammar's joint likelihood of each sentence and
its teacher's tree). ``Trainer.steps`` is the loop itself, a generator of
updates and evaluations; ``runfolder.train`` wraps it with the callbacks
around it: a progress bar, the run folder's history, a
model directory per evaluation, ``model/`` (the best point by the run's
selection rule, written in its card), checkpoints, signals and time limits.
A checkpoint holds everything needed to resume mid-epoch and continue exactly
as an uninterrupted run would.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Protocol

import torch
from torch import nn

from onparse.config import SELECTIONS, TrainConfig
from onparse.families import checked_layer
from onparse.hardware import compute_dtype, one_line
from onparse.settings import layer_key
from onparse.text import corpus
from onparse.text.vocabulary import Vocabulary
from onparse.training import distributed

# Measures a model as it trains (dev F1 per layer, agreement with a teacher); called in eval mode, its figures go
# into the history.
Measure = Callable[[nn.Module, Vocabulary], object]


def read_sentences(paths: list[str], language: str = "en", encoding: str = "UTF-8") -> list[list[str]]:
    """The words of each sentence of a corpus, punctuation left out (``corpus.read_sentences`` keeps it): this
    module's reader before corpora had their own module, kept for scripts written against it."""
    return [sentence.word_tokens for sentence in corpus.read_sentences(paths, language, encoding)]


def learning_rate(config: TrainConfig, update: int, total_updates: int) -> float:
    """Linear warm-up over ``warmup_updates`` (never more than a tenth of the run's updates: a short run on a small
    corpus still reaches its rate), then cosine decay to ``min_lr_ratio * lr``."""
    warmup = min(config.warmup_updates, total_updates // 10)
    if update < warmup:
        return config.lr * (update + 1) / warmup
    progress = min(1.0, (update - warmup) / max(1, total_updates - warmup))
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
    best: float | None = None  # the best value of the run's selection figure so far
    history: list[dict] = field(default_factory=list)
    best_epoch: float = 0.0  # where the text read stood at the best value (``patience`` counts from there)
    stopped_early: bool = False  # the dev figure stopped bettering for the run's patience: the run is done

    def done(self, config: TrainConfig) -> bool:
        """Whether the run has ended: every epoch of the schedule trained, or stopped early."""
        return self.epoch >= config.epochs or self.stopped_early


@dataclass
class Step:
    """One update done; ``parts`` names the objective's terms (``lm``, ``rank``) where it has several."""

    loss: float
    tokens: int
    seconds: float
    parts: dict[str, float] = field(default_factory=dict)


@dataclass
class Evaluation:
    """Dev figures taken at a point of the run; ``best`` when its selection figure is the best so far."""

    record: dict
    best: bool
    epoch_end: bool


class Objective(Protocol):
    """What a run minimises and how it cuts its data into updates."""

    batches_per_epoch: int
    train_mode: (
        bool  # whether the model trains in torch's train mode: an ON-LSTM's dropout, a compound grammar's drawn vectors
    )

    def loss(
        self, model: nn.Module, epoch: int, batch: int, dtype: torch.dtype
    ) -> tuple[torch.Tensor, int, dict[str, float]]:
        """The loss of one update, the tokens it predicts, and its terms by name."""

    def new_epoch(self) -> None:
        """Called as each epoch ends."""

    def state(self) -> list:
        """What a checkpoint must keep besides weights (a carried hidden state)."""

    def restore(self, state: list, device: torch.device) -> None:
        """Take back what ``state`` gave."""


class WholeSentenceObjective:
    """An objective over whole sentences: no state is carried from one update to the next, so a checkpoint keeps
    weights alone."""

    def new_epoch(self) -> None:
        pass

    def state(self) -> list:
        return []

    def restore(self, state: list, device: torch.device) -> None:
        pass


# A run's dev figures at an evaluation: dev_ppl (what model/ is chosen by, unless the run says otherwise) and any the
# family adds, from the model in eval mode and the run's matmul dtype.
DevFigures = Callable[[nn.Module, torch.dtype], dict[str, float]]


@dataclass
class Setup:
    """What a run trains: the model, its vocabulary, the objective, its dev figures and the figures measured at
    each evaluation."""

    model: nn.Module
    vocab: Vocabulary
    objective: Objective
    dev: DevFigures | None
    measures: dict[str, Measure] = field(default_factory=dict)


class Trainer:
    """A run in memory (model, optimizer, objective, position); ``steps()`` is the training loop.

    The caller gives the objective and what each evaluation measures
    (``setup``: a language model, ``language_model_setup``, or a
    distillation, ``onparse.training.distill``) and, resuming, the checkpoint to
    ``restore``; ``onparse.training.runfolder.trainer`` chooses them from a config.
    """

    def __init__(self, config: TrainConfig, setup: Setup, ranks: distributed.Ranks = distributed.Ranks()):
        if config.selection not in SELECTIONS:
            raise ValueError(f"select_by must be one of {', '.join(SELECTIONS)}, not {config.selection!r}")
        if config.selection == "dev_f1" and "dev_f1_per_layer" not in setup.measures:
            raise ValueError("choosing the model by dev F1 needs gold dev trees (--dev-gold)")
        self.config, self.ranks = config, ranks
        self.dtype = compute_dtype(config.dtype, config.device)
        self.device = torch.device(config.device)
        self.model, self.vocab, self.objective, self.dev = setup.model, setup.vocab, setup.objective, setup.dev
        self.measures = setup.measures
        checked_layer(config.default_layer, self.model.config)
        self.batches_per_epoch = self.objective.batches_per_epoch
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=config.lr, betas=(config.beta1, 0.999), weight_decay=config.weight_decay
        )
        self.run = RunState()
        self.replica = distributed.replicate(self.model, self.ranks)  # what the step runs: DDP across processes

    def restore(self, checkpoint: dict) -> None:
        """Continue from ``checkpoint`` (``checkpoint()``'s dict); ValueError when it does not fit this run."""
        try:
            self.model.load_state_dict(checkpoint["model"])
            self.optimizer.load_state_dict(checkpoint["optimizer"])
            self.run = RunState(**checkpoint["run"])
            self.objective.restore(distributed.scatter_columns(checkpoint["state"], self.ranks), self.device)
            torch.set_rng_state(checkpoint["rng"])
        except (KeyError, TypeError, ValueError, RuntimeError) as err:
            reason = one_line(err)
            raise ValueError(f"the checkpoint does not fit the run's config.json ({reason})") from None

    def checkpoint(self) -> dict:
        """Everything ``Trainer(config, checkpoint)`` needs to continue exactly from here."""
        return {
            "config": self.config.to_dict(),
            "vocab": self.vocab.words,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "run": asdict(self.run),
            "state": distributed.gather_columns(self.objective.state(), self.ranks, self.device),
            "rng": torch.get_rng_state(),
        }

    def _evaluation_points(self) -> set[int]:
        """Batches (counted from 1) after which the dev set is measured: evenly spread, the last at epoch end."""
        per_epoch = max(1, min(self.config.evals_per_epoch, self.batches_per_epoch))
        return {round(k * self.batches_per_epoch / per_epoch) for k in range(1, per_epoch + 1)}

    def steps(self) -> Iterator[Step | Evaluation]:
        """Train to the end of the schedule from wherever the run is, yielding each update and evaluation."""
        config, run, model, objective = self.config, self.run, self.model, self.objective
        total_updates = self.batches_per_epoch * config.epochs
        points = self._evaluation_points()
        model.train(objective.train_mode)
        evaluated = run.history and run.history[-1]["update"] == run.update
        if (
            run.batch in points and run.batch < self.batches_per_epoch and not evaluated
        ):  # stopped between an update and its evaluation
            yield self._evaluate(epoch_end=False)
        while not run.done(config):
            while run.batch < self.batches_per_epoch:
                started = time.monotonic()
                for group in self.optimizer.param_groups:
                    group["lr"] = learning_rate(config, run.update, total_updates)
                loss, tokens, parts = objective.loss(self.replica, run.epoch, run.batch, self.dtype)
                tokens = distributed.total(tokens, self.ranks, self.device)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
                self.optimizer.step()
                seconds = time.monotonic() - started
                run.train_seconds += seconds
                run.tokens_seen += tokens
                run.update += 1
                run.batch += 1
                yield Step(loss.item(), tokens, seconds, parts)
                if run.batch in points and run.batch < self.batches_per_epoch:
                    yield self._evaluate(epoch_end=False)
                    if run.stopped_early:
                        return
            run.epoch, run.batch = run.epoch + 1, 0
            objective.new_epoch()
            yield self._evaluate(epoch_end=True)

    def _evaluate(self, epoch_end: bool) -> Evaluation:
        run, config = self.run, self.config
        epoch = run.epoch + run.batch / self.batches_per_epoch
        # enough decimals that no two evaluation points share a folder: epoch-00.25 at 4 a epoch, epoch-00.010 at 100
        decimals = max(2, len(str(len(self._evaluation_points()))))
        record = {
            "epoch": round(epoch, max(3, decimals)),
            "model_dir": f"epoch-{epoch:0{3 + decimals}.{decimals}f}",
            "update": run.update,
            "tokens_seen": run.tokens_seen,
            "train_minutes": round(run.train_seconds / 60, 2),
            "lr": self.optimizer.param_groups[0]["lr"],
        }
        self.model.eval()
        if self.dev is not None:
            record.update(self.dev(self.model, self.dtype))
        for name, measure in self.measures.items():
            record[name] = measure(self.model, self.vocab)
        self.model.train(self.objective.train_mode)
        value = selection_value(record, config)
        higher = SELECTIONS[config.selection]
        best = value is None or run.best is None or (value >= run.best if higher else value <= run.best)
        if value is not None and best:
            run.best, run.best_epoch = value, epoch
        run.stopped_early = (
            config.patience is not None and value is not None and epoch - run.best_epoch >= config.patience
        )
        if run.stopped_early:
            record["stopped_early"] = f"no better {config.selection} for {epoch - run.best_epoch:g} passes"
        run.history.append(record)
        return Evaluation(record, best, epoch_end)


def selection_value(record: dict, config: TrainConfig) -> float | None:
    """The figure of an evaluation that the run's selection rule compares; None without a dev corpus."""
    if config.selection == "dev_f1":
        return record["dev_f1_per_layer"][layer_key(config.default_layer)]
    return record.get(config.selection)


def selection_rule(config: TrainConfig) -> str:
    """What a run's model/ is, in words, for its card."""
    if not config.dev and config.selection != "dev_f1":
        return "the last evaluation point (no dev corpus to choose by)"
    return {
        "dev_ppl": "the evaluation point with the lowest dev perplexity (no gold trees)",
        "teacher_agreement": "the evaluation point whose trees agree best with the teacher's on the dev text "
        "(sentence F1 against the teacher's trees; no gold trees)",
        "dev_f1": f"the evaluation point with the best dev sentence F1 of layer {config.default_layer} "
        "(gold dev trees: the original ON-LSTM protocol, not unsupervised; Shi et al., 2020)",
    }[config.selection]
