"""How a model reads a sentence, and how what it reads becomes one distance per word (a grammar: span marginals over
the words).

A sentence is its tokens and the positions of its words among them (the
tree's leaves: the treebank's words, or for raw text every token but
punctuation). A model reads either the words alone or every token
(``Reading.punctuation``), left to right or right to left
(``Reading.direction``), each sentence after an ``<eos>``.

Each token read gives a distance for one gap between tokens: a model reading
left to right, at token ``t``, measures the gap before ``t`` (the ON-LSTM
paper's reading: the master forget gate closes constituents as ``t``
arrives); one reading right to left, at token ``t``, the gap after ``t``. The
gap before word ``k`` (between words ``k - 1`` and ``k``) spans every token
gap between them, punctuation included, and takes the largest of their
distances: a comma that closes a clause marks the words' gap. Word 0's
distance, which the greedy builder reads as "split word 0 off alone", is the
largest distance read up to and including it left to right, and the row's
smallest distance right to left (nothing is read before it in that direction).
With words alone, left to right, each word keeps its own distance, exactly as
the paper's models read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from onparse.settings import BACKWARD, Reading
from onparse.text.language import Sentence
from onparse.text.tokenize import normalize, normalize_punctuation


def read_positions(reading: Reading, sentence: Sentence) -> list[int]:
    """Token positions the model reads, in the order it reads them."""
    read = list(range(len(sentence.tokens))) if reading.punctuation else list(sentence.words)
    return read[::-1] if reading.direction == BACKWARD else read


def model_tokens(reading: Reading, sentence: Sentence) -> list[str]:
    """What the model reads, in order: words normalized as in training (``tokenize.normalize``), punctuation as
    one spelling per mark (``tokenize.normalize_punctuation``)."""
    words = set(sentence.words)
    return [
        normalize(sentence.tokens[i]) if i in words else normalize_punctuation(sentence.tokens[i])
        for i in read_positions(reading, sentence)
    ]


def word_ranges(reading: Reading, sentence: Sentence) -> list[tuple[int, int]]:
    """For each word, the range ``[start, end)`` of read steps (in reading order) whose distances make its own.

    An empty range (word 0 read right to left) takes the row's smallest distance.
    """
    if reading.punctuation:
        at = list(sentence.words)  # a word's step among all tokens read left to right
        n_read = len(sentence.tokens)
    else:
        at = list(range(len(sentence.words)))
        n_read = len(sentence.words)
    if reading.direction != BACKWARD:
        return [(0 if k == 0 else at[k - 1] + 1, at[k] + 1) for k in range(len(at))]
    # right to left, step s of the left-to-right order is read at n_read - 1 - s and measures the gap after token s
    ranges = [(0, 0)]
    for k in range(1, len(at)):
        first, last = at[k - 1], at[k] - 1  # token gaps after tokens at[k-1] .. at[k]-1
        ranges.append((n_read - 1 - last, n_read - first))
    return ranges


def pool(distances: Tensor, ranges: Sequence[tuple[int, int]]) -> Tensor:
    """Distances per read step (..., steps) to distances per word (..., words): each word's range's largest.

    Differentiable (the gradient reaches each range's largest step), so
    distillation trains through it as parsing reads through it.
    """
    if not ranges:
        return distances[..., :0]
    device = distances.device
    starts = torch.tensor([start for start, _ in ranges], device=device)
    lengths = torch.tensor([end - start for start, end in ranges], device=device)
    width = max(1, int(lengths.max()))
    offsets = torch.arange(width, device=device)
    index = (starts[:, None] + offsets).clamp(max=max(distances.size(-1) - 1, 0))  # words x width
    inside = offsets < lengths[:, None]
    gathered = distances[..., index]  # ... x words x width
    floor = distances.min(-1, keepdim=True).values.unsqueeze(-1).expand_as(gathered)
    pooled = torch.where(inside, gathered, torch.full_like(gathered, float("-inf"))).amax(-1)
    return torch.where(lengths > 0, pooled, floor[..., 0])


def word_span_marginals(reading: Reading, sentence: Sentence, marginals: np.ndarray) -> np.ndarray:
    """A grammar's span marginals over the tokens it read ((read + 1) x (read + 1)) as marginals over the words
    ((words + 1) x (words + 1)).

    Word fencepost ``k`` stands for every token fencepost after word ``k - 1`` up to word ``k`` (the punctuation
    between them), so word span ``[i, j)`` takes the largest marginal among the token spans that hold exactly words
    ``i .. j-1``: a lower bound on the chance that one of them is a constituent, exact when at most one can be
    (those spans differ only in the punctuation at their edges and nest, so a tree seldom holds two).
    """
    if not reading.punctuation:
        return marginals
    at = list(sentence.words)
    group_starts = [0] + [position + 1 for position in at]  # fencepost k's first token fencepost
    projected = np.maximum.reduceat(np.maximum.reduceat(marginals, group_starts, axis=0), group_starts, axis=1)
    return np.triu(projected, 1)
