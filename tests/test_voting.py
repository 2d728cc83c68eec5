"""Tree averaging: span votes and the CYK pass, by hand and against brute force."""

import itertools
import random

from nltk import Tree

from onparse.structures.trees import left_branching, right_branching, spans
from onparse.structures.voting import best_tree, vote_matrix


def all_binary_trees(start: int, end: int):
    if end - start == 1:
        yield start
        return
    for middle in range(start + 1, end):
        for left, right in itertools.product(all_binary_trees(start, middle), all_binary_trees(middle, end)):
            yield Tree("X", [left, right])


def total(votes, tree) -> float:
    return sum(votes[s, e] for s, e in spans(tree))


def test_votes_count_each_tree_once_and_skip_spans_every_tree_has():
    votes = vote_matrix([{(0, 4), (1, 4), (2, 4)}, {(0, 4), (0, 2), (2, 4)}, [(2, 4), (2, 4)]], 4)
    assert votes[2, 4] == 3 and votes[0, 2] == 1 and votes[1, 4] == 1
    assert votes[0, 4] == 0 and votes.sum() == 5


def test_the_tree_with_most_votes_wins():
    votes = vote_matrix([spans(right_branching(4)), {(0, 2), (2, 4)}, {(0, 2), (2, 4)}], 4)
    assert best_tree(votes) == Tree.fromstring("(X (X 0 1) (X 2 3))", read_leaf=int)


def test_ties_go_to_the_right_branching_tree():
    votes = vote_matrix([spans(right_branching(4)), spans(left_branching(4))], 4)
    assert best_tree(votes) == right_branching(4)


def test_matches_brute_force_on_random_votes():
    rng = random.Random(0)
    for n in range(1, 7):
        for _ in range(20):
            votes = vote_matrix(
                [spans(t) for t in rng.sample(list(all_binary_trees(0, n)), 1) * rng.randint(1, 3)]
                + [{(a, b) for a in range(n) for b in range(a + 2, n + 1) if rng.random() < 0.3}],
                n,
            )
            found = best_tree(votes)
            assert sorted(found.leaves()) == list(range(n))
            assert all(len(node) == 2 for node in found.subtrees()) or n == 1
            if n > 1:
                assert total(votes, found) == max(total(votes, t) for t in all_binary_trees(0, n))


def test_four_hundred_words():
    votes = vote_matrix(
        [spans(right_branching(400)), spans(left_branching(400))] * 2 + [spans(right_branching(400))], 400
    )
    assert spans(best_tree(votes)) == spans(right_branching(400))  # (nltk compares trees this deep recursively)
