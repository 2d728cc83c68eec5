"""Distillation: train one ON-LSTM whose distances rebuild a teacher's trees.

The teacher (an ensemble, Shayegh et al., ICLR 2024) parses the training
sentences; no gold trees are used. The student keeps its language-model loss
and adds a ranking loss on its syntactic distances (Shen et al., 2018,
"Straight to the Tree"): wherever the greedy builder (``trees.build_tree``)
must pick word ``k`` as the largest distance of a span to rebuild the
teacher's tree, ``d_k`` should exceed every other distance of that span by a
margin.

The builder cannot produce every binary tree (a right child whose own left
child has two or more words is out of its reach), so the targets are those
of the nearest tree it can build: ``split_spans`` says, for each word, the
span in which it must win.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence

from onparse.model import LanguageModel
from onparse.builder import tree_row
from onparse.config import Layer
from onparse.tokenize import normalize
from onparse.trees import Span
from onparse.vocabulary import Vocabulary


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
    """One training sentence: its words as the model reads them and its teacher targets."""

    ids: list[int]
    lo: np.ndarray
    hi: np.ndarray


def examples(sentences: Sequence[Sequence[str]], tree_spans: Sequence[set[Span]], vocab: Vocabulary) -> list[Example]:
    """Model ids and split targets of sentences (raw words) and the teacher's spans over them."""
    found = []
    for words, spans in zip(sentences, tree_spans):
        lo, hi = split_spans(spans, len(words))
        found.append(Example(vocab.ids([normalize(w) for w in words]), lo, hi))
    return found


@dataclass
class Losses:
    """One update's losses: next-word cross-entropy (nats) and the ranking hinge."""

    language_model: float
    ranking: float


def batch_losses(model: LanguageModel, batch: list[Example], vocab: Vocabulary, layer: Layer, margin: float,
                 dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """Language-model and ranking losses of sentences sorted longest first, each read from a fresh state as in parsing."""
    inputs = [torch.tensor([vocab.eos_id] + e.ids) for e in batch]
    targets = [torch.tensor(e.ids + [vocab.eos_id]) for e in batch]
    packed = pack_sequence(inputs)
    output, _, distances = model(packed.data, None, dtype, packed.batch_sizes.tolist())
    lm_loss = model.loss(output, pack_sequence(targets).data, dtype)
    padded = pad_packed_sequence(packed._replace(data=distances.t()))[0][1:]  # T x B x L: the words' steps
    row = tree_row(padded.permute(2, 1, 0), layer)  # B x T
    width = row.size(1)
    pad = lambda a: np.pad(a, (0, width - len(a)))  # noqa: E731
    lo = torch.from_numpy(np.stack([pad(e.lo) for e in batch]))
    hi = torch.from_numpy(np.stack([pad(e.hi) for e in batch]))
    lengths = torch.tensor([len(e.ids) for e in batch])
    return lm_loss, ranking_loss(row, lo, hi, lengths, margin)


def updates(model: LanguageModel, data: list[Example], vocab: Vocabulary, layer: Layer, *, batch_size: int, lr: float,
            rank_weight: float, margin: float, dtype: torch.dtype, seed: int, passes: int = 1) -> Iterator[Losses]:
    """``passes`` over ``data`` in shuffled batches of sentences of similar length; yields each update's losses.

    The model trains without dropout: it is fine-tuned briefly from a trained
    member, and packed sentences (no padding work) leave no time axis for
    variational dropout masks.
    """
    rng = random.Random(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    was_training = model.training
    model.eval()
    for _ in range(passes):
        order = sorted(range(len(data)), key=lambda i: (len(data[i].ids), rng.random()))
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        rng.shuffle(batches)
        for indices in batches:
            batch = sorted((data[i] for i in indices), key=lambda e: -len(e.ids))
            lm_loss, rank_loss = batch_losses(model, batch, vocab, layer, margin, dtype)
            optimizer.zero_grad()
            (lm_loss + rank_weight * rank_loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            optimizer.step()
            yield Losses(lm_loss.item(), rank_loss.item())
    model.train(was_training)


def n_updates(n_examples: int, batch_size: int, passes: int = 1) -> int:
    """How many updates ``updates`` makes."""
    return passes * -(-n_examples // batch_size)
