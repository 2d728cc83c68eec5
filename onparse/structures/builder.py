"""Members' outputs to a sentence's tree: the one place that decides how a model or an ensemble builds it.

Each member's family makes its own tree from its output at the member's
readout (``onparse.families``): an ON-LSTM's greedy builder over one row of
its distances (a layer's or the mean of its layers), a grammar's tree with the
most expected constituents under its span marginals. Every member's tree gives
each of its spans a vote, and a right-branching tree, where the right-branching
voter is on, as many votes as it is given (a prior's strength: one vote, or the
weight of several members); the binary tree with the most votes wins (tree
averaging, ``voting.average``). A lone member without the voter needs no vote:
its own tree is the answer, and its spans hold all the votes (a grammar's: each
span's marginal probability).

The parser, evaluation, distillation and ``onparse ensemble`` all build trees
here, so what a model directory parses to is decided once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from nltk import Tree

from onparse.families import Family, of_readout
from onparse.settings import Layer
from onparse.structures.trees import right_branching, spans
from onparse.structures.voting import average, vote_matrix


def reads_distances(layer: Layer) -> bool:
    """Whether a member read at ``layer`` builds its tree from distances (an ON-LSTM's layer or mean), not from span
    marginals (a grammar's): what its rows in a parse's output hold."""
    return of_readout(layer).reads_distances


@dataclass
class Built:
    """A sentence's tree and how it came about; every kind of model gives this one shape."""

    rows: np.ndarray  # members x words: the distances each member built its tree from (NaN for a grammar's)
    member_trees: list[Tree]  # each member's own tree (leaves: word indices)
    tree: Tree  # the tree of the whole model: the lone member's, or the vote's
    votes: np.ndarray  # votes[i, j]: share of the voters whose trees hold words i .. j-1


@dataclass(frozen=True)
class TreeBuilder:
    """How a model turns its members' outputs into a tree: each member's readout, and how many votes a right-branching
    tree casts."""

    layers: tuple[Layer, ...]  # each member's readout: an ON-LSTM's layer or mean, a grammar's span marginals
    right_branching_voter: float = 0.0  # votes of the right-branching tree: 0 (none), 1 (as a member; True), or more

    @cached_property
    def families(self) -> list[Family]:
        """Each member's family, found once from its readout (``build`` runs for every sentence)."""
        return [of_readout(layer) for layer in self.layers]

    def build(self, outputs: Sequence[np.ndarray]) -> Built:
        """The tree from each member's output (in the order of ``layers``), each read by its family."""
        if len(outputs) != len(self.layers):
            raise ValueError(f"outputs of {len(outputs)} members for a builder of {len(self.layers)}")
        families = self.families
        built = [family.member_tree(output, layer) for family, output, layer in zip(families, outputs, self.layers)]
        n = families[0].words(outputs[0])
        member_trees = [tree for tree, _ in built]
        rows = np.stack([np.full(n, np.nan) if row is None else row for _, row in built])
        voters = [spans(tree) for tree in member_trees]
        weights = [1.0] * len(voters)
        if self.right_branching_voter:
            voters.append(spans(right_branching(n)))
            weights.append(float(self.right_branching_voter))
        if len(voters) == 1:
            votes = vote_matrix(voters, n) if families[0].reads_distances else np.asarray(outputs[0], dtype=np.float64)
            return Built(rows, member_trees, member_trees[0], votes)
        tree, votes = average(voters, n, weights)
        return Built(rows, member_trees, tree, votes)

    def describe(self) -> str:
        """What the trees are built from, in words (for drawings and cards)."""
        if len(self.layers) > 1:
            source = f"the vote of {len(self.layers)} members' trees"
        else:
            source = of_readout(self.layers[0]).describe_source(self.layers[0])
        if not self.right_branching_voter:
            return source
        weight = float(self.right_branching_voter)
        return source + " and a right-branching tree" + ("" if weight == 1 else f" ({weight:g} votes)")
