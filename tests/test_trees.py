"""Tree building on hand-worked distance vectors, baselines, punctuation, spans."""

import pytest
from nltk import Tree

from onparse.structures.trees import (
    attach_punctuation,
    balanced,
    build_tree,
    labeled_spans,
    left_branching,
    right_branching,
    spans,
)


def test_greedy_builder_matches_hand_worked_example():
    # argmax 3 splits [0 1 2] | [3 4 5]; on the left argmax 1 gives [0] [1 2];
    # on the right word 3 heads the tree of [4 5].
    tree = build_tree([0.1, 0.5, 0.2, 0.9, 0.3, 0.4], [0, 1, 2, 3, 4, 5])
    assert tree == Tree.fromstring("(X (X 0 (X 1 2)) (X 3 (X 4 5)))", read_leaf=int)


def test_split_at_first_word_makes_it_head_of_the_rest():
    assert build_tree([0.9, 0.1, 0.5], [0, 1, 2]) == Tree.fromstring("(X 0 (X 1 2))", read_leaf=int)


def test_ties_go_to_the_leftmost_word():
    assert spans(build_tree([0.5, 0.5, 0.5, 0.5], [0, 1, 2, 3])) == spans(right_branching(4))


def test_one_word_and_errors():
    assert build_tree([0.3], [7]) == Tree("X", [7])
    with pytest.raises(ValueError):
        build_tree([0.1], [1, 2])
    assert build_tree([]) == Tree("X", [])
    assert build_tree([0.2, 0.1]) == Tree("X", [0, 1])


def test_baselines():
    assert spans(right_branching(4)) == {(0, 4), (1, 4), (2, 4)}
    assert spans(left_branching(4)) == {(0, 2), (0, 3), (0, 4)}
    assert spans(balanced(5)) == {(0, 5), (0, 3), (0, 2), (3, 5)}


def test_punctuation_joins_the_smallest_constituent_spanning_its_neighbours():
    # tokens: "The cat , sadly , slept ." ; words at 0 1 3 5
    words_tree = Tree.fromstring("(X (X 0 1) (X 2 3))", read_leaf=int)  # leaves: word indices
    full = attach_punctuation(words_tree, [0, 1, 3, 5], 7)
    assert full == Tree.fromstring("(X (X 0 1) 2 (X 3 4 5) 6)", read_leaf=int)
    assert full.leaves() == list(range(7))


def test_punctuation_at_the_edges_joins_the_root():
    words_tree = Tree.fromstring("(X 0 1)", read_leaf=int)
    assert attach_punctuation(words_tree, [1, 2], 4) == Tree.fromstring("(X 0 1 2 3)", read_leaf=int)
    assert attach_punctuation(Tree("X", []), [], 2) == Tree("X", [0, 1])


def test_labeled_spans_count_kept_leaves_and_keep_unary_labels():
    tree = Tree.fromstring("(S (NP (DT a) (NN b)) (VP (VP (VB c) (, ,) (RB d))))")
    kept = labeled_spans(tree, lambda leaf, pre: pre.label() != ",")
    assert sorted(kept) == [("NP", 0, 2), ("S", 0, 4), ("VP", 2, 4), ("VP", 2, 4)]
