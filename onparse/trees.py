"""Distances to trees, and trees to constituent spans.

Trees are ``nltk.Tree`` objects whose leaves are token positions (ints), so
the same structure can be shown with the user's tokens or scored against gold
words. Internal nodes carry the placeholder label ``X``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from nltk import Tree

LABEL = "X"
Span = tuple[int, int]
Leaf = TypeVar("Leaf")


def build_tree(distances: Sequence[float], leaves: Sequence[Leaf] | None = None) -> Tree:
    """The ON-LSTM paper's greedy top-down builder.

    Split before the word with the largest distance ``i``: the words before it
    form the left subtree, and word ``i`` joins the tree of the words after it,
    ``[left, [w_i, right]]``. Ties go to the leftmost word, as numpy's argmax.
    Leaves are word indices unless ``leaves`` names them; no words give an
    empty tree.
    """
    distances = [float(d) for d in distances]
    leaves = list(range(len(distances))) if leaves is None else list(leaves)
    if len(distances) != len(leaves):
        raise ValueError(f"{len(distances)} distances for {len(leaves)} leaves")
    if len(leaves) <= 1:
        return Tree(LABEL, leaves)
    return _build(distances, leaves)


def _build(distances: list[float], leaves: list[Leaf]) -> Tree | Leaf:
    if len(leaves) == 1:
        return leaves[0]
    split = max(range(len(distances)), key=distances.__getitem__)
    head: Tree | Leaf = leaves[split]
    if split + 1 < len(leaves):
        head = Tree(LABEL, [head, _build(distances[split + 1 :], leaves[split + 1 :])])
    if split == 0:
        return head
    return Tree(LABEL, [_build(distances[:split], leaves[:split]), head])


def right_branching(n: int) -> Tree:
    """(w0 (w1 (w2 ...))): the baseline that favours English."""
    return build_tree([float(n - i) for i in range(n)])


def left_branching(n: int) -> Tree:
    """(((w0 w1) w2) ...)."""
    tree: Tree | int = 0
    for i in range(1, n):
        tree = Tree(LABEL, [tree, i])
    return tree if isinstance(tree, Tree) else Tree(LABEL, [tree])


def balanced(n: int) -> Tree:
    """Split each span in half (left half the larger), recursively."""

    def split(lo: int, hi: int) -> Tree | int:
        if hi - lo == 1:
            return lo
        mid = (lo + hi + 1) // 2
        return Tree(LABEL, [split(lo, mid), split(mid, hi)])

    tree = split(0, n)
    return tree if isinstance(tree, Tree) else Tree(LABEL, [tree])


def labeled_spans(tree: Tree, keep: Callable[[int, Tree], bool] | None = None) -> list[tuple[str, int, int]]:
    """(label, start, end) of every node covering two or more kept leaves.

    Positions count kept leaves only; ``keep(leaf_index, preterminal_or_none)``
    decides, so gold trees drop punctuation and empty elements by POS tag.
    Unary chains give one entry per label over the same span.
    """
    spans: list[tuple[str, int, int]] = []
    count = 0
    leaf_index = 0

    def visit(node: Tree | object, parent: Tree | None) -> None:
        nonlocal count, leaf_index
        if not isinstance(node, Tree):
            if keep is None or keep(leaf_index, parent):
                count += 1
            leaf_index += 1
            return
        start = count
        for child in node:
            visit(child, node)
        if count - start >= 2:
            spans.append((node.label(), start, count))

    visit(tree, None)
    return spans


def spans(tree: Tree) -> set[Span]:
    """Unlabeled constituents of two or more leaves, the whole sentence included."""
    return {(start, end) for _, start, end in labeled_spans(tree)}


def map_leaves(tree: Tree, leaf: Callable[[object], object]) -> Tree:
    """The same tree with each leaf replaced by ``leaf(old_leaf)``."""
    return Tree(tree.label(), [map_leaves(child, leaf) if isinstance(child, Tree) else leaf(child) for child in tree])


def attach_punctuation(words_tree: Tree, word_positions: Sequence[int], n_tokens: int) -> Tree:
    """Put the tokens the model did not read back into a tree over the words.

    ``words_tree`` has word indices as leaves; the result has token positions
    (word ``k`` is token ``word_positions[k]``). A token between words ``a``
    and ``b`` joins the smallest constituent spanning both, between the
    children holding them, so it crosses no bracket; tokens before the first
    or after the last word join the root.
    """
    if not word_positions:
        return Tree(LABEL, list(range(n_tokens)))
    tree = map_leaves(words_tree, word_positions.__getitem__)

    def rebuild(node: Tree | int) -> Tree | int:
        if not isinstance(node, Tree):
            return node
        children: list[Tree | int] = []
        for k, child in enumerate(node):
            if k:
                children.extend(range(_last_leaf(node[k - 1]) + 1, _first_leaf(child)))
            children.append(rebuild(child))
        return Tree(node.label(), children)

    root = rebuild(tree)
    before = list(range(word_positions[0]))
    after = list(range(word_positions[-1] + 1, n_tokens))
    return Tree(root.label(), before + list(root) + after)


def _first_leaf(node: Tree | int) -> int:
    return node.leaves()[0] if isinstance(node, Tree) else node


def _last_leaf(node: Tree | int) -> int:
    return node.leaves()[-1] if isinstance(node, Tree) else node
