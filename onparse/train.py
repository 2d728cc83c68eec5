"""Training an ON-LSTM language model: corpora, batching, the loop, checkpoints.

The corpus is one continuous stream of sentences, each ended by ``<eos>``, cut
into ``batch_size`` parallel streams and truncated back-propagation segments of
``bptt`` steps (as in AWD-LSTM). A checkpoint holds everything needed to resume
mid-epoch; every epoch also leaves a compact model directory, so the
F1-against-compute curve can be drawn after the fact.
"""

from __future__ import annotations

import json
import math
import platform
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from onparse import modeldir
from onparse.model import COMPUTE_DTYPES, LanguageModel, ModelConfig
from onparse.tokenize import is_punct, normalize, tokenize
from onparse.treebank import read_gold, tree_files
from onparse.vocabulary import Vocabulary

@dataclass
class TrainConfig:
    """Everything that decides a training run; saved with every checkpoint and card."""

    train: list[str]
    dev: str | None = None
    dev_gold: str | None = None
    vocab_size: int = 10000
    embedding_size: int = 400
    hidden_size: int = 1150
    n_layers: int = 3
    chunk_size: int = 10
    dropout: float = 0.3
    dropouth: float = 0.2
    dropouti: float = 0.3
    dropoute: float = 0.05
    wdrop: float = 0.2
    batch_size: int = 64
    bptt: int = 70
    epochs: int = 7
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup_updates: int = 100
    weight_decay: float = 1.2e-6
    clip: float = 0.25
    seed: int = 1111
    dtype: str = "bf16"
    default_layer: int = 2

    def model_config(self, vocab_size: int) -> ModelConfig:
        """The architecture part of this config (every ModelConfig field but the vocabulary size)."""
        names = {f.name for f in fields(ModelConfig)} - {"vocab_size"}
        return ModelConfig(vocab_size=vocab_size, **{name: getattr(self, name) for name in names})


def read_corpus(paths: list[str]) -> list[list[str]]:
    """Normalized sentences from .mrg trees (word-tagged leaves) or plain text (one sentence a line)."""
    sentences: list[list[str]] = []
    for path in paths:
        for file in tree_files(path):
            if file.suffix.lower() == ".mrg":
                sentences.extend([normalize(w) for w in s.words] for s in read_gold(str(file)))
            else:
                with file.open(encoding="utf-8") as lines:
                    for line in lines:
                        words = [normalize(t) for t in tokenize(line) if not is_punct(t)]
                        if words:
                            sentences.append(words)
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


def detach(state: list) -> list:
    return [(h.detach(), c.detach()) for h, c in state]


@torch.no_grad()
def perplexity(model: LanguageModel, data: torch.Tensor, bptt: int, dtype: torch.dtype) -> tuple[float, float]:
    """Perplexity of a batchified stream, and the mean |cell state| (a check on runaway counters)."""
    model.eval()
    state, total, count, cell = None, 0.0, 0, 0.0
    for start in range(0, data.size(0) - 1, bptt):
        inputs, targets = data[start : start + bptt], data[start + 1 : start + 1 + bptt]
        inputs = inputs[: targets.size(0)]
        output, state, _ = model(inputs, state, dtype)
        logits = model.logits(output, dtype).float()
        total += torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1), reduction="sum").item()
        count += targets.numel()
    cell = sum(c.abs().mean().item() for _, c in state) / len(state)
    model.train()
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


def hardware() -> str:
    """The CPU model, thread count and torch build, for cards and benchmark notes."""
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {torch.get_num_threads()} threads, no GPU, torch {torch.__version__}"


def train(
    config: TrainConfig,
    out_dir: Path,
    resume: bool = False,
    max_minutes: float | None = None,
    checkpoint_minutes: float = 10.0,
    console: Console | None = None,
    epochs: int | None = None,
) -> RunState:
    """Train (or resume) a model into ``out_dir``; ``out_dir/model`` is the best by dev perplexity.

    Resuming takes the run's saved config and corpus paths; ``epochs`` may
    lengthen it (the cosine schedule then stretches to the new end).
    """
    console = console or Console(stderr=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    checkpoint_path = out_dir / "checkpoint.pt"
    dtype = COMPUTE_DTYPES[config.dtype]

    if resume:
        checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=True)
        config = TrainConfig(**{**checkpoint["config"], **({"epochs": epochs} if epochs else {})})
    sentences = read_corpus(config.train)
    if not sentences:
        raise ValueError("the training corpus holds no sentences")
    if resume:
        vocab = Vocabulary(checkpoint["vocab"])
    else:
        vocab = Vocabulary.build(sentences, config.vocab_size)
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    train_data = batchify(stream(sentences, vocab), config.batch_size)
    dev_data = batchify(stream(read_corpus([config.dev]), vocab), 10) if config.dev else None

    model = LanguageModel(config.model_config(len(vocab)))
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    run = RunState()
    if resume:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        run = RunState(**checkpoint["run"])
        torch.set_rng_state(checkpoint["rng"])
        console.print(f"resumed from {checkpoint_path}: epoch {run.epoch + 1}, batch {run.batch}")
    else:
        unigram = Counter(train_data.flatten().tolist())
        counts = torch.tensor([unigram.get(i, 0) + 1.0 for i in range(len(vocab))])
        with torch.no_grad():  # start from the unigram distribution, not a uniform one
            model.decoder_bias.copy_(torch.log(counts / counts.sum()))
        modeldir.save(out_dir / "epoch-00", model, vocab, config.default_layer, {"epoch": 0, "untrained": True})

    batches_per_epoch = math.ceil((train_data.size(0) - 1) / config.bptt)
    total_updates = batches_per_epoch * config.epochs
    deadline = time.monotonic() + 60 * max_minutes if max_minutes else None

    def save_checkpoint() -> None:
        payload = {
            "config": asdict(config),
            "vocab": vocab.words,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "run": asdict(run),
            "rng": torch.get_rng_state(),
        }
        torch.save(payload, checkpoint_path.with_suffix(".tmp"))
        checkpoint_path.with_suffix(".tmp").replace(checkpoint_path)

    columns = (TextColumn("epoch {task.fields[epoch]}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[speed]} tok/s  loss {task.fields[loss]}"), TimeElapsedColumn(), TimeRemainingColumn())
    model.train()
    last_checkpoint = time.monotonic()
    with Progress(*columns, console=console) as progress:
        while run.epoch < config.epochs:
            task = progress.add_task("train", total=batches_per_epoch, completed=run.batch, epoch=run.epoch + 1, speed="-", loss="-")
            state = None
            for batch in range(run.batch, batches_per_epoch):
                started = time.monotonic()
                start = batch * config.bptt
                inputs = train_data[start : start + config.bptt]
                targets = train_data[start + 1 : start + 1 + config.bptt]
                inputs = inputs[: targets.size(0)]
                for group in optimizer.param_groups:
                    group["lr"] = learning_rate(config, run.update, total_updates)
                output, state, _ = model(inputs, detach(state) if state else None, dtype)
                loss = model.loss(output, targets, dtype)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
                optimizer.step()
                elapsed = time.monotonic() - started
                run.train_seconds += elapsed
                run.tokens_seen += targets.numel()
                run.update += 1
                run.batch = batch + 1
                progress.update(task, advance=1, speed=f"{targets.numel() / elapsed:,.0f}", loss=f"{loss.item():.3f}")
                if not console.is_terminal and run.batch % 50 == 0:  # logs get a line where a terminal gets the bar
                    console.print(f"epoch {run.epoch + 1} batch {run.batch}/{batches_per_epoch} loss {loss.item():.3f} "
                                  f"{run.tokens_seen / run.train_seconds:,.0f} tok/s")
                if deadline and time.monotonic() > deadline:
                    save_checkpoint()
                    console.print(f"time limit reached: checkpoint saved at epoch {run.epoch + 1}, batch {run.batch}; continue with --resume")
                    return run
                if time.monotonic() - last_checkpoint > 60 * checkpoint_minutes:
                    save_checkpoint()
                    last_checkpoint = time.monotonic()
            progress.remove_task(task)
            run.epoch += 1
            run.batch = 0
            record = {"epoch": run.epoch, "tokens_seen": run.tokens_seen, "train_minutes": round(run.train_seconds / 60, 2),
                      "lr": optimizer.param_groups[0]["lr"]}
            if dev_data is not None:
                record["dev_ppl"], record["dev_mean_abs_cell"] = perplexity(model, dev_data, config.bptt, dtype)
            if config.dev_gold:
                from onparse.evaluate import layer_f1  # only runs that ask for F1 need the parser

                record["dev_f1_per_layer"] = layer_f1(model, vocab, config.dev_gold)
            run.history.append(record)
            console.print(json.dumps(record))
            with (out_dir / "history.jsonl").open("a") as log:
                log.write(json.dumps(record) + "\n")
            best = record.get("dev_ppl", 0.0) <= run.best_dev_ppl
            run.best_dev_ppl = min(run.best_dev_ppl, record.get("dev_ppl", 0.0))
            card = {"config": asdict(config), "hardware": hardware(), **asdict(run)}
            modeldir.save(out_dir / f"epoch-{run.epoch:02d}", model, vocab, config.default_layer, card)
            if best:
                modeldir.save(out_dir / "model", model, vocab, config.default_layer, card)
            save_checkpoint()
            last_checkpoint = time.monotonic()
    return run
