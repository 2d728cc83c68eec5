"""Members' outputs to a sentence's tree: the one place that decides how a model or an ensemble builds it.

An ON-LSTM member builds a binary tree greedily (``trees.build_tree``) from
one row of its distances: a layer's, or the mean of its layers
(``tree_row``); a grammar (``onparse.pcfg``), read at ``SPANS``, gives span
marginals and its tree is the one with the most expected constituents
(minimum Bayes risk, the voting's CKY). Every
member's tree gives each of its spans a vote, and a right-branching tree,
where the right-branching voter is on, as many votes as it is given (a
prior's strength: one vote, or the weight of several members); the binary
tree with the most votes wins (tree averaging, ``voting.average``). A lone
member without the voter needs no vote: its own tree is the answer, and its
spans hold all the votes (a grammar's: each span's marginal probability).

The parser, evaluation, distillation and ``onparse ensemble`` all build trees
here, so what a model directory parses to is decided once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from nltk import Tree

from onparse.config import MEAN, SPANS, Layer
from onparse.trees import build_tree, right_branching, spans
from onparse.voting import average, best_tree, vote_matrix


def reads_distances(layer: Layer) -> bool:
    """Whether a member read at ``layer`` builds its tree from distances (an ON-LSTM's layer or mean), not from span
    marginals (a grammar's ``SPANS``): what its rows in a parse's output hold."""
    return layer != SPANS


def tree_row(distances, layer: Layer):
    """The distances a tree is built from: one layer's (1-based) or the mean of all; layers on the first axis (numpy or torch)."""
    return distances.mean(0) if layer == MEAN else distances[layer - 1]


def member_tree(output: np.ndarray, layer: Layer) -> tuple[Tree, np.ndarray | None]:
    """A member's tree from its output, and the distances it was built from: at ``SPANS`` a grammar's span marginals
    ((words + 1) x (words + 1)) give the tree with the most expected constituents (no distances); otherwise an
    ON-LSTM's distances (layers x words) give the greedy builder's tree over ``layer``'s row."""
    if layer == SPANS:
        return best_tree(np.asarray(output, dtype=np.float64)), None
    row = np.asarray(tree_row(output, layer), dtype=np.float64)
    return build_tree(row), row


@dataclass
class Built:
    """A sentence's tree and how it came about; every kind of model gives this one shape."""

    rows: np.ndarray  # members x words: the distances each member built its tree from (NaN for a grammar's)
    member_trees: list[Tree]  # each member's own tree (leaves: word indices)
    tree: Tree  # the tree of the whole model: the lone member's, or the vote's
    votes: np.ndarray  # votes[i, j]: share of the voters whose trees hold words i .. j-1


@dataclass(frozen=True)
class TreeBuilder:
    """How a model turns distances into a tree: each member's layer, and how many votes a right-branching tree casts."""

    layers: tuple[Layer, ...]  # each member's: a layer, MEAN, or SPANS for a grammar
    right_branching_voter: float = 0.0  # votes of the right-branching tree: 0 (none), 1 (as a member; True), or more

    def build(self, outputs: Sequence[np.ndarray]) -> Built:
        """The tree from each member's output (in the order of ``layers``): distances (layers x words) or, at
        ``SPANS``, span marginals ((words + 1) x (words + 1))."""
        if len(outputs) != len(self.layers):
            raise ValueError(f"outputs of {len(outputs)} members for a builder of {len(self.layers)}")
        built = [member_tree(output, layer) for output, layer in zip(outputs, self.layers)]
        n = outputs[0].shape[-1] - (self.layers[0] == SPANS)
        member_trees = [tree for tree, _ in built]
        rows = np.stack([np.full(n, np.nan) if row is None else row for _, row in built])
        voters = [spans(tree) for tree in member_trees]
        weights = [1.0] * len(voters)
        if self.right_branching_voter:
            voters.append(spans(right_branching(n)))
            weights.append(float(self.right_branching_voter))
        if len(voters) == 1:
            votes = np.asarray(outputs[0], dtype=np.float64) if self.layers[0] == SPANS else vote_matrix(voters, n)
            return Built(rows, member_trees, member_trees[0], votes)
        tree, votes = average(voters, n, weights)
        return Built(rows, member_trees, tree, votes)

    def describe(self) -> str:
        """What the trees are built from, in words (for drawings and cards)."""
        if len(self.layers) > 1:
            source = f"the vote of {len(self.layers)} members' trees"
        elif self.layers[0] == MEAN:
            source = "the mean of the layers' distances"
        elif self.layers[0] == SPANS:
            source = "a grammar's span marginals"
        else:
            source = f"layer {self.layers[0]} distances"
        if not self.right_branching_voter:
            return source
        weight = float(self.right_branching_voter)
        return source + " and a right-branching tree" + ("" if weight == 1 else f" ({weight:g} votes)")
