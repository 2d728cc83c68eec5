"""The one tree builder: a lone member's tree, layers and their mean, and votes against brute force."""

import random

import numpy as np
import pytest
from test_voting import all_binary_trees

from onparse.families.onlstm import tree_row
from onparse.structures.builder import TreeBuilder
from onparse.structures.trees import build_tree, right_branching, spans


def votes_held(tree, span_sets, weights=None) -> float:
    """How many votes a tree collects: each voter's spans of two or more words, short of the whole sentence, times
    its weight."""
    n = len(tree.leaves()) if hasattr(tree, "leaves") else 1
    weights = weights or [1.0] * len(span_sets)
    return sum(
        w * len({s for s in spans(tree) if 2 <= s[1] - s[0] < n} & voter) for voter, w in zip(span_sets, weights)
    )


def test_a_lone_member_gives_its_layers_tree_and_holds_every_vote():
    distances = np.array([[0.1, 0.9, 0.2, 0.5], [0.7, 0.1, 0.6, 0.2], [0.3, 0.3, 0.3, 0.9]])
    for layer, row in ((1, distances[0]), (2, distances[1]), ("mean", distances.mean(0))):
        built = TreeBuilder((layer,)).build([distances])
        assert built.tree == build_tree(row) and built.member_trees == [built.tree]
        assert np.allclose(built.rows, [row])
        inner = [s for s in spans(built.tree) if 2 <= s[1] - s[0] < 4]
        assert all(built.votes[s] == 1.0 for s in inner) and built.votes.sum() == len(inner)


def test_the_ensemble_tree_has_the_most_votes_of_all_binary_trees():
    rng = random.Random(3)
    for _ in range(40):
        n = rng.randint(2, 6)
        members = [np.array([[rng.random() for _ in range(n)] for _ in range(2)]) for _ in range(3)]
        layers = tuple(rng.choice([1, 2, "mean"]) for _ in members)
        voter = rng.choice([0, True, round(rng.uniform(0.2, 3), 2)])  # none, one vote, or a prior's weight
        built = TreeBuilder(layers, voter).build(members)
        voters = [spans(build_tree(tree_row(d, layer))) for d, layer in zip(members, layers)]
        weights = [1.0] * len(voters) + ([float(voter)] if voter else [])
        voters += [spans(right_branching(n))] if voter else []
        assert built.member_trees == [build_tree(tree_row(d, layer)) for d, layer in zip(members, layers)]
        best = max(votes_held(tree, voters, weights) for tree in all_binary_trees(0, n)) if n > 1 else 0
        assert votes_held(built.tree, voters, weights) == pytest.approx(best)
        assert built.votes.max() <= 1.0 + 1e-9 and built.votes[0, n] == 0.0  # the whole sentence holds no vote


def test_a_lone_member_with_the_right_branching_voter_votes():
    distances = np.array([[0.1, 0.2, 0.9, 0.3, 0.4]])  # left-leaning: splits before word 2
    built = TreeBuilder((1,), right_branching_voter=True).build([distances])
    assert built.member_trees == [build_tree(distances[0])]
    assert set(np.unique(built.votes)) <= {0.0, 0.5, 1.0}


def test_the_right_branching_voters_weight_decides_against_the_members():
    left = np.array([[0.1, 0.2, 0.3, 0.9, 0.4, 0.5]])  # every member splits before word 3
    members = [left] * 3
    rb = right_branching(6)
    assert TreeBuilder((1,) * 3, 2.9).build(members).tree == build_tree(left[0])  # fewer votes than the members hold
    outvoted = TreeBuilder((1,) * 3, 3.1).build(members)
    assert outvoted.tree == rb
    inner = [s for s in spans(rb) if 2 <= s[1] - s[0] < 6]
    assert all(outvoted.votes[s] == pytest.approx(3.1 / 6.1) for s in inner if s not in spans(build_tree(left[0])))


def test_distances_must_match_the_members():
    with pytest.raises(ValueError, match="2 members for a builder of 1"):
        TreeBuilder((1,)).build([np.zeros((2, 3)), np.zeros((2, 3))])


def test_describe_names_what_builds_the_tree():
    assert TreeBuilder((2,)).describe() == "layer 2 distances"
    assert TreeBuilder(("mean",)).describe() == "the mean of the layers' distances"
    assert TreeBuilder((1, 2, 3), True).describe() == "the vote of 3 members' trees and a right-branching tree"
    assert (
        TreeBuilder((1, 2, 3), 1.5).describe() == "the vote of 3 members' trees and a right-branching tree (1.5 votes)"
    )
