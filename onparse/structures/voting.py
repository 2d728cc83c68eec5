"""Tree averaging (Shayegh et al., ICLR 2024): the binary tree whose spans most trees agree on.

Every voter's binary tree gives each of its spans one vote (or the voter's
weight); a CYK pass over
split points returns the binary tree with the largest total of votes. Spans
every binary tree holds (single words, the whole sentence) cannot change the
choice and are not counted. The pass is vectorised over start positions, so
a 400-word sentence takes a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat

import numpy as np
from nltk import Tree

from onparse.structures.trees import LABEL, Span, binary_tree


def vote_matrix(
    span_sets: Iterable[Iterable[Span]], n_words: int, weights: Sequence[float] | None = None
) -> np.ndarray:
    """``votes[i, j]``: how many of the span sets (each counting its weight, one by default) hold the span of words
    ``i`` to ``j - 1``."""
    votes = np.zeros((n_words + 1, n_words + 1))
    for spans, weight in zip(span_sets, weights if weights is not None else repeat(1.0)):
        for start, end in set(spans):
            if 2 <= end - start < n_words:
                votes[start, end] += weight
    return votes


def best_tree(votes: np.ndarray) -> Tree:
    """The binary tree over ``len(votes) - 1`` words (leaves: word indices) with the most votes.

    Ties go to the smallest split point, the right-branching choice.
    """
    n = votes.shape[0] - 1
    if n <= 1:
        return Tree(LABEL, list(range(n)))
    best = np.zeros((n + 1, n + 1))
    split = np.zeros((n + 1, n + 1), dtype=np.int64)
    for length in range(2, n + 1):
        starts = np.arange(n - length + 1)
        ends = starts + length
        middles = starts[:, None] + np.arange(1, length)[None, :]  # every split point of every span
        totals = best[starts[:, None], middles] + best[middles, ends[:, None]]
        choice = totals.argmax(axis=1)  # first maximum: the smallest split point
        rows = np.arange(len(starts))
        best[starts, ends] = votes[starts, ends] + totals[rows, choice]
        split[starts, ends] = middles[rows, choice]

    return binary_tree(n, lambda start, end: int(split[start, end]))


def average(
    span_sets: list[set[Span]], n_words: int, weights: Sequence[float] | None = None
) -> tuple[Tree, np.ndarray]:
    """The tree with the most votes, and each span's share of the votes (``shares[i, j]``); ``weights``: each
    voter's votes (one each by default)."""
    votes = vote_matrix(span_sets, n_words, weights)
    total = sum(weights) if weights is not None else len(span_sets)
    return best_tree(votes), votes / (total or 1)
