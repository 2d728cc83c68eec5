"""Distances to trees, and trees to constituent spans, leaves and one-line brackets.

Trees are ``nltk.Tree`` objects whose leaves are token positions (ints), so
the same structure can be shown with the user's tokens or scored against gold
words. Internal nodes carry the placeholder label ``X``.

Every walk here runs on an explicit stack, never by recursion: a
right-branching tree is as deep as its sentence is long, and Python's
recursion limit (1,000 frames) is shorter than sentences the options allow.
nltk's own recursive methods (``leaves``, ``pos``, ``pformat``,
``fromstring``) are therefore not used on trees of user-given size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

import numpy as np
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
    distances = np.asarray(distances, dtype=np.float64)
    leaves = list(range(len(distances))) if leaves is None else list(leaves)
    if len(distances) != len(leaves):
        raise ValueError(f"{len(distances)} distances for {len(leaves)} leaves")
    if len(leaves) <= 1:
        return Tree(LABEL, leaves)
    root: list = [None]
    pending = [(0, len(leaves), root, 0)]  # a span still to build, and the slot its subtree fills
    while pending:
        start, end, parent, slot = pending.pop()
        if end - start == 1:
            parent[slot] = leaves[start]
            continue
        split = start + int(np.argmax(distances[start:end]))
        head = leaves[split]
        if split + 1 < end:
            head = Tree(LABEL, [head, None])
            pending.append((split + 1, end, head, 1))
        if split > start:
            node = Tree(LABEL, [None, head])
            pending.append((start, split, node, 0))
            head = node
        parent[slot] = head
    return root[0]


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
    """Split each span in half (left half the larger), down to single words."""
    return binary_tree(n, lambda start, end: (start + end + 1) // 2)


def binary_tree(n: int, split: Callable[[int, int], int]) -> Tree:
    """The binary tree over words ``0 .. n-1`` that divides each span ``[start, end)`` before word ``split(start,
    end)``."""
    if n <= 1:
        return Tree(LABEL, list(range(n)))
    root: list = [None]
    pending = [(0, n, root, 0)]  # a span still to build, and the slot its subtree fills
    while pending:
        start, end, parent, slot = pending.pop()
        if end - start == 1:
            parent[slot] = start
            continue
        middle = split(start, end)
        node = Tree(LABEL, [None, None])
        pending += [(start, middle, node, 0), (middle, end, node, 1)]
        parent[slot] = node
    return root[0]


def baseline_spans(name: str, n: int) -> set[Span]:
    """The spans of a trivial baseline tree over ``n`` words, without building it."""
    if name == "right_branching":
        return {(start, n) for start in range(n - 1)}
    if name == "left_branching":
        return {(0, end) for end in range(2, n + 1)}
    if name == "balanced":
        found, pending = set(), [(0, n)]
        while pending:
            start, end = pending.pop()
            if end - start >= 2:
                middle = (start + end + 1) // 2
                found.add((start, end))
                pending += [(start, middle), (middle, end)]
        return found
    raise ValueError(f"no baseline named {name!r}")


def leaf_parents(tree: Tree) -> Iterator[tuple[object, Tree]]:
    """Each leaf, left to right, with the node directly above it (its preterminal in a treebank tree)."""
    pending: list = [(tree, None)]
    while pending:
        node, parent = pending.pop()
        if isinstance(node, Tree):
            pending.extend((child, node) for child in reversed(node))
        else:
            yield node, parent


def leaves(tree: Tree) -> list:
    """The leaves left to right (nltk's ``Tree.leaves`` without its recursion)."""
    return [leaf for leaf, _ in leaf_parents(tree)]


def labeled_spans(tree: Tree, keep: Callable[[object, Tree], bool] | None = None) -> list[tuple[str, int, int]]:
    """(label, start, end) of every node covering two or more kept leaves, children before parents.

    Positions count kept leaves only; ``keep(leaf, parent)``, called on the
    leaves left to right, decides (another parser's tree keeps the gold
    words). Unary chains give one entry per label over the same span.
    """
    found: list[tuple[str, int, int]] = []
    count = 0
    pending: list = [(tree, None, None)]  # (node, its parent, the kept-leaf count where it began once entered)
    while pending:
        node, parent, start = pending.pop()
        if start is not None:
            if count - start >= 2:
                found.append((node.label(), start, count))
        elif isinstance(node, Tree):
            pending.append((node, parent, count))
            pending.extend((child, node, None) for child in reversed(node))
        elif keep is None or keep(node, parent):
            count += 1
    return found


def spans(tree: Tree) -> set[Span]:
    """Unlabeled constituents of two or more leaves, the whole sentence included."""
    return {(start, end) for _, start, end in labeled_spans(tree)}


def from_spans(n: int, constituents: Iterable[Span]) -> Tree:
    """The tree over leaves ``0 .. n-1`` whose constituents are ``constituents`` (nested or apart): ``spans`` undone."""
    root: Tree = Tree(LABEL, [])
    stack: list[tuple[Tree, int]] = [(root, n)]  # open nodes with where they end, innermost last
    position = 0

    def leaves_until(end: int) -> None:
        nonlocal position
        while position < end:
            while stack[-1][1] <= position:
                stack.pop()
            stack[-1][0].append(position)
            position += 1

    for start, end in sorted(set(constituents) - {(0, n)}, key=lambda span: (span[0], -span[1])):
        leaves_until(start)
        while stack[-1][1] <= start:
            stack.pop()
        node = Tree(LABEL, [])
        stack[-1][0].append(node)
        stack.append((node, end))
    leaves_until(n)
    return root


def map_leaves(tree: Tree, leaf: Callable[[object], object]) -> Tree:
    """A copy of the tree with each leaf replaced by ``leaf(old_leaf)``."""
    root = Tree(tree.label(), [])
    pending = [(tree, root)]
    while pending:
        source, copy = pending.pop()
        for child in source:
            if isinstance(child, Tree):
                copy.append(Tree(child.label(), []))
                pending.append((child, copy[-1]))
            else:
                copy.append(leaf(child))
    return root


class TokenTree(Tree):
    """An nltk Tree over a sentence's tokens that nltk's drawings show in order: nltk's printer draws a bare token that
    stands beside subtrees first, so ``pretty_print`` and the SVG a notebook shows draw each such token under an
    unlabelled node. The tree itself, its string and its leaves are as nltk's parsers give them."""

    def drawable(self) -> Tree:
        """A plain copy in which every token beside a subtree hangs under an unlabelled node, as nltk draws in order."""
        mixed = any(isinstance(child, Tree) for child in self)
        return Tree(
            self.label(),
            [
                child.drawable()
                if isinstance(child, TokenTree)
                else Tree("", [child])
                if mixed and not isinstance(child, Tree)
                else child
                for child in self
            ],
        )

    def pretty_print(self, *args, **kwargs) -> None:
        self.drawable().pretty_print(*args, **kwargs)

    def _repr_svg_(self) -> str:  # nltk's own needs svgling; its printer draws SVG as well
        from nltk.tree.prettyprinter import TreePrettyPrinter

        return TreePrettyPrinter(self.drawable()).svg()


_CLOSE, _SPACE = object(), object()


VISIBLE_SPACE = "\u2423"  # ␣: a space inside a token ("New York"), as tree strings write it


def escape(token: str) -> str:
    """A token as a bracketed tree can hold it: its brackets written ``-LRB-``, ``-RRB-``, a space inside it ``␣``;
    ``unescape`` reads it back."""
    return token.replace("(", "-LRB-").replace(")", "-RRB-").replace(" ", VISIBLE_SPACE)


def unescape(leaf: str) -> str:
    """The token a leaf of a tree string onparse wrote stands for (``escape`` undone)."""
    return leaf.replace("-LRB-", "(").replace("-RRB-", ")").replace(VISIBLE_SPACE, " ")


def bracketed(tree: Tree) -> str:
    """The tree on one line, ``(X (X The cat) sat)``: nltk's ``pformat`` without its recursion."""
    parts: list[str] = []
    pending: list = [tree]
    while pending:
        node = pending.pop()
        if node is _CLOSE:
            parts.append(")")
        elif node is _SPACE:
            parts.append(" ")
        elif isinstance(node, Tree):
            parts.append(f"({node.label()} ")
            pending.append(_CLOSE)
            for k in range(len(node) - 1, -1, -1):
                pending.append(node[k])
                if k:
                    pending.append(_SPACE)
        else:
            parts.append(str(node))
    return "".join(parts)


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
    first, last = _edge_leaves(tree)
    pending = [tree]
    while pending:
        node = pending.pop()
        children: list = []
        for k, child in enumerate(node):
            if k:
                children.extend(range(last[id(node[k - 1])] + 1, first[id(child)]))
            children.append(child)
            if isinstance(child, Tree):
                pending.append(child)
        node[:] = children
    before = list(range(word_positions[0]))
    after = list(range(word_positions[-1] + 1, n_tokens))
    tree[:] = before + list(tree) + after
    return tree


def _edge_leaves(tree: Tree) -> tuple[dict[int, int], dict[int, int]]:
    """The first and last leaf under every node and leaf of a tree whose leaves are ints, keyed by ``id``."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    pending: list = [(tree, False)]
    while pending:
        node, done = pending.pop()
        if not isinstance(node, Tree):
            first[id(node)] = last[id(node)] = node
        elif done:
            first[id(node)], last[id(node)] = first[id(node[0])], last[id(node[-1])]
        else:
            pending.append((node, True))
            pending.extend((child, False) for child in node)
    return first, last
