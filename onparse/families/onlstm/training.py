"""Training an ON-LSTM: its language model over one stream of text (truncated back-propagation, perplexity), and as
a student, that objective with a ranking loss on its distances toward a teacher's trees (the family's parts
``training_setup``, ``student_objective`` and ``dev_figures``)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence

from onparse.config import TrainConfig
from onparse.families.onlstm import tree_row
from onparse.families.onlstm.model import OnlstmModel, State
from onparse.settings import Layer, Reading
from onparse.structures.trees import Span
from onparse.text.corpus import read_corpus, training_sentences
from onparse.text.language import Sentence
from onparse.text.reading import model_tokens, pool, word_ranges
from onparse.text.vocabulary import Vocabulary
from onparse.training import distributed
from onparse.training.train import DevFigures, Setup, WholeSentenceObjective

DEV_STREAMS = 10  # parallel streams the dev corpus is cut into for perplexity


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
def perplexity(model: OnlstmModel, data: torch.Tensor, bptt: int, dtype: torch.dtype) -> tuple[float, float]:
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


class LanguageModelObjective:
    """Next-word cross-entropy over bptt segments of one stream, the hidden state carried from segment to segment."""

    train_mode = True

    def __init__(self, data: torch.Tensor, bptt: int):
        self.data, self.bptt = data, bptt
        self.batches_per_epoch = n_segments(data, bptt)
        self.hidden: State | None = None

    def loss(
        self, model: OnlstmModel, epoch: int, batch: int, dtype: torch.dtype
    ) -> tuple[torch.Tensor, int, dict[str, float]]:
        inputs, targets = segment(self.data, self.bptt, batch)
        output, hidden, _ = model(inputs, detach(self.hidden), dtype)
        self.hidden = detach(hidden)
        return model.loss(output, targets, dtype), targets.numel(), {}

    def new_epoch(self) -> None:
        self.hidden = None

    def state(self) -> list:
        return [(h.cpu(), c.cpu()) for h, c in self.hidden or []]

    def restore(self, state: list, device: torch.device) -> None:
        self.hidden = [(h.to(device), c.to(device)) for h, c in state] or None


def stream_perplexity(data: torch.Tensor | None, bptt: int) -> DevFigures | None:
    """A language model's dev figures over a batchified dev stream: perplexity, and the mean |cell state|."""
    if data is None:
        return None

    def figures(model: nn.Module, dtype: torch.dtype) -> dict[str, float]:
        ppl, cell = perplexity(model, data, bptt, dtype)
        return {"dev_ppl": ppl, "dev_mean_abs_cell": cell}

    return figures


def dev_stream(config: TrainConfig, vocab: Vocabulary, device: torch.device) -> torch.Tensor | None:
    """The dev corpus cut into DEV_STREAMS columns for perplexity; ValueError before training when it is too short."""
    if not config.dev:
        return None
    dev = stream(read_corpus([config.dev], config.language, config.encoding, config.reading, config.tokenized), vocab)
    if dev.numel() < 2 * DEV_STREAMS:
        raise ValueError(
            f"the dev corpus {config.dev} holds {dev.numel()} words with their <eos>: "
            f"at least {2 * DEV_STREAMS} are needed"
        )
    return batchify(dev, DEV_STREAMS).to(device)


def language_model_setup(
    config: TrainConfig, checkpoint: dict | None = None, ranks: distributed.Ranks = distributed.Ranks()
) -> Setup:
    """A language model from random weights (decoder bias at the unigram distribution) and its vocabulary from the
    corpus.

    Under torchrun each rank trains on its own columns of the batch: contiguous shards of the token stream.
    """
    device = torch.device(config.device)
    sentences = training_sentences(config)
    if not sentences:
        raise ValueError("the training corpus holds no sentences")
    vocab = Vocabulary(checkpoint["vocab"]) if checkpoint else Vocabulary.build(sentences, config.model.vocab_size)
    data = batchify(stream(sentences, vocab), config.batch_size).to(device)
    if data.size(0) < 2:
        raise ValueError(f"the training corpus is too small for one batch of {config.batch_size} streams")
    dev = dev_stream(config, vocab, device)
    torch.manual_seed(config.seed)
    model = OnlstmModel(replace(config.model, vocab_size=len(vocab))).to(device)
    if not checkpoint:
        unigram = Counter(data.flatten().tolist())
        counts = torch.tensor([unigram.get(i, 0) + 1.0 for i in range(len(vocab))], device=device)
        with torch.no_grad():  # start from the unigram distribution, not a uniform one
            model.decoder_bias.copy_(torch.log(counts / counts.sum()))
    own = data[:, distributed.own_columns(config.batch_size, ranks)].contiguous()
    return Setup(model, vocab, LanguageModelObjective(own, config.bptt), stream_perplexity(dev, config.bptt))


def split_spans(tree_spans: set[Span], n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """For each word k, the span [lo_k, hi_k) of the builder's recursion in which d_k must be the largest.

    Follows the builder top-down over the teacher's tree (its spans of two or
    more words): a span whose left child is one word splits at its first word;
    otherwise it splits before its right child, whose first word then joins
    the rest as a leaf (the nearest the builder comes when that right child
    has a larger left child of its own). Distances ``hi - lo`` rebuild that
    tree exactly.
    """
    lo, hi = np.zeros(n_words, dtype=np.int64), np.zeros(n_words, dtype=np.int64)
    pending = [(0, n_words)] if n_words else []
    while pending:
        start, end = pending.pop()
        # the teacher's left child of [start, end): its largest span starting at `start` (one word if none)
        middle = max([b for a, b in tree_spans if a <= start < b < end], default=start + 1)
        split = start if middle == start + 1 else middle
        lo[split], hi[split] = start, end
        if split == start:
            if end - start > 1:
                pending.append((start + 1, end))
        else:
            pending.append((start, middle))
            if middle + 1 < end:
                pending.append((middle + 1, end))
    return lo, hi


def ranking_loss(distances: Tensor, lo: Tensor, hi: Tensor, lengths: Tensor, margin: float) -> Tensor:
    """Mean hinge ``max(0, margin - (d_k - d_j))`` over every word j of the span in which word k must win.

    ``distances``, ``lo`` and ``hi`` are B x T (padding beyond ``lengths`` is ignored).
    """
    positions = torch.arange(distances.size(1), device=distances.device)
    inside = (lo.unsqueeze(2) <= positions) & (positions < hi.unsqueeze(2))  # [b, k, j]: j in k's span
    inside &= positions.view(1, -1, 1) != positions.view(1, 1, -1)
    inside &= (positions < lengths.unsqueeze(1)).unsqueeze(2)
    gaps = distances.unsqueeze(2) - distances.unsqueeze(1)  # d_k - d_j
    hinge = torch.relu(margin - gaps)[inside]
    return hinge.mean() if hinge.numel() else distances.sum() * 0.0


@dataclass
class Example:
    """One training sentence: what the model reads of it, how its steps make the words' distances, its teacher
    targets."""

    ids: list[int]
    ranges: list[tuple[int, int]]  # each word's read steps (``reading.word_ranges``)
    lo: np.ndarray
    hi: np.ndarray


def examples(
    sentences: Sequence[Sentence], tree_spans: Sequence[set[Span]], vocab: Vocabulary, reading: Reading = Reading()
) -> list[Example]:
    """Model ids and split targets of sentences and the teacher's spans over their words."""
    found = []
    for sentence, teacher in zip(sentences, tree_spans):
        lo, hi = split_spans(teacher, len(sentence.words))
        found.append(Example(vocab.ids(model_tokens(reading, sentence)), word_ranges(reading, sentence), lo, hi))
    return found


def batch_losses(
    model: OnlstmModel, batch: list[Example], vocab: Vocabulary, layer: Layer, margin: float, dtype: torch.dtype
) -> tuple[Tensor, Tensor]:
    """Language-model and ranking losses of sentences sorted longest first, each read from a fresh state as in
    parsing."""
    inputs = [torch.tensor([vocab.eos_id] + e.ids) for e in batch]
    targets = [torch.tensor(e.ids + [vocab.eos_id]) for e in batch]
    packed = pack_sequence(inputs)
    output, _, distances = model(packed.data, None, dtype, packed.batch_sizes.tolist())
    lm_loss = model.loss(output, pack_sequence(targets).data, dtype)
    padded = pad_packed_sequence(packed._replace(data=distances.t()))[0][1:]  # T x B x L: the read steps
    steps = tree_row(padded.permute(2, 1, 0), layer)  # B x T
    words = [pool(steps[b, : len(e.ids)], e.ranges) for b, e in enumerate(batch)]
    row = torch.nn.utils.rnn.pad_sequence(words, batch_first=True)  # B x words
    width = row.size(1)
    pad = lambda a: np.pad(a, (0, width - len(a)))  # noqa: E731
    lo = torch.from_numpy(np.stack([pad(e.lo) for e in batch]))
    hi = torch.from_numpy(np.stack([pad(e.hi) for e in batch]))
    lengths = torch.tensor([len(e.ranges) for e in batch])
    return lm_loss, ranking_loss(row, lo, hi, lengths, margin)


class DistillationObjective(WholeSentenceObjective):
    """Language-model loss plus ``rank_weight`` times the ranking loss, over shuffled batches of similar-length
    sentences.

    The model trains without dropout: packed sentences (no padding work) leave
    no time axis for variational dropout masks, and the ranking targets are
    sharp. Each epoch's order is drawn from the seed and the epoch alone, so a
    resumed run sees the batches an uninterrupted one would.
    """

    train_mode = False

    def __init__(
        self,
        data: list[Example],
        vocab: Vocabulary,
        layer: Layer,
        batch_size: int,
        rank_weight: float,
        margin: float,
        seed: int,
    ):
        self.data, self.vocab, self.layer = data, vocab, layer
        self.batch_size, self.rank_weight, self.margin, self.seed = batch_size, rank_weight, margin, seed
        self.batches_per_epoch = -(-len(data) // batch_size)
        self._order: tuple[int, list[list[int]]] | None = None

    def batches(self, epoch: int) -> list[list[int]]:
        """The epoch's batches of example indices: sorted by length, cut, shuffled."""
        if self._order is None or self._order[0] != epoch:
            rng = random.Random(self.seed * 1000 + epoch)
            order = sorted(range(len(self.data)), key=lambda i: (len(self.data[i].ids), rng.random()))
            batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
            rng.shuffle(batches)
            self._order = (epoch, batches)
        return self._order[1]

    def loss(
        self, model: OnlstmModel, epoch: int, batch: int, dtype: torch.dtype
    ) -> tuple[Tensor, int, dict[str, float]]:
        examples_ = sorted((self.data[i] for i in self.batches(epoch)[batch]), key=lambda e: -len(e.ids))
        lm_loss, rank_loss = batch_losses(model, examples_, self.vocab, self.layer, self.margin, dtype)
        tokens = sum(len(e.ids) + 1 for e in examples_)
        return lm_loss + self.rank_weight * rank_loss, tokens, {"lm": lm_loss.item(), "rank": rank_loss.item()}


def onlstm_student(
    config: TrainConfig, sentences: list[Sentence], found: list[list[Span]], vocab: Vocabulary, shares: None = None
):  # it learns trees alone (``Family.learns_span_shares``)
    """An ON-LSTM student's objective: its language model and the ranking loss toward the teacher's trees."""
    return DistillationObjective(
        examples(sentences, [set(s) for s in found], vocab, config.reading),
        vocab,
        config.default_layer,
        config.batch_size,
        config.distill.rank_weight,
        config.distill.margin,
        config.seed,
    )


def onlstm_dev_figures(config: TrainConfig, sentences: list[Sentence], vocab: Vocabulary, device: torch.device):
    """An ON-LSTM student's dev figures: its perplexity on the dev text read as a stream."""
    return stream_perplexity(dev_stream(config, vocab, device), config.bptt)
