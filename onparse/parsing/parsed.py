"""One parsed sentence (``Parse``): what the user gave, what the model read, what it built, and its forms (brackets,
an nltk tree over the user's tokens, JSON, a picture); and the error a sentence no model can take raises."""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from nltk import Tree

from onparse.structures.builder import Built, TreeBuilder, reads_distances
from onparse.structures.trees import LABEL, Span, TokenTree, bracketed, escape, map_leaves, spans
from onparse.text.tokenize import punct_tag


def visible_controls(token: str) -> str:
    """A token with its control characters written as escapes (``\\x00``): what a picture (XML) can hold."""
    return "".join(
        char.encode("unicode_escape").decode("ascii") if unicodedata.category(char) == "Cc" else char for char in token
    )


class InputError(ValueError):
    """A sentence or setting the parser will not take (empty, too long, no such layer); ``setting``: the
    ``ParseConfig`` field or ``layer`` it concerns, for a command line to name its option."""

    def __init__(self, message: str, setting: str | None = None):
        super().__init__(message)
        self.setting = setting


@dataclass
class Parse:
    """One parsed sentence, the same shape for a single model and an ensemble: what the user gave, what the model
    read, what it built."""

    tokens: list[str]
    """The sentence's tokens, as the user wrote them."""
    word_positions: list[int]
    """The tokens that are words, the tree's leaves (punctuation left out)."""
    model_input: list[str]
    """What the first member read: its normalized tokens in its order, unknown ones as ``<unk>``."""
    distances: list[np.ndarray]
    """Each member's output: syntactic distances (layers x words), or a grammar's span marginals."""
    builder: TreeBuilder
    """Each member's layer and whether a right-branching tree voted."""
    built: Built
    """Each member's tree, the votes, the rows the trees were built from."""
    tree: Tree
    """The words' tree with punctuation attached; leaves are token positions."""

    def __repr__(self) -> str:
        """Short: the tokens' count and the bracketed tree (the arrays are ``to_dict()``'s)."""
        tree = self.bracket()
        return f"Parse({len(self.tokens)} tokens, {tree if len(tree) <= 200 else tree[:197] + '...'})"

    @property
    def words_tree(self) -> Tree:
        """The built binary tree over the words alone; leaves are word indices."""
        return self.built.tree

    @property
    def tree_distances(self) -> np.ndarray:
        """Members x words: the distances each member built its tree from (its layer, or the mean of its layers); a
        grammar's row is NaN, its tree coming from its span marginals."""
        return self.built.rows

    @property
    def text_tree(self) -> TokenTree:
        """The tree with the user's own tokens as leaves (punctuation attached), as nltk's parsers give; it draws in
        order (``TokenTree``)."""
        return TokenTree.convert(map_leaves(self.tree, self.tokens.__getitem__))

    @property
    def votes(self) -> np.ndarray:
        """votes[i, j]: the share of voters whose trees hold words i .. j-1 (1 for a lone member's own spans)."""
        return self.built.votes

    def tagged_tree(self, punct: bool = True, token: Callable[[str], str] = str) -> Tree:
        """The printed tree with a preterminal over each token (``X`` over a word, a Penn tag over punctuation), as a
        treebank has: the shape nltk's drawing (``pretty_print``, ``draw``) and EVALB expect. ``token`` spells each
        leaf (``--format mrg`` escapes brackets)."""
        words = set(self.word_positions)

        def preterminal(position: int) -> Tree:
            tag = LABEL if position in words else punct_tag(escape(self.tokens[position]))  # Penn's -LRB- for (
            return Tree(tag, [token(self.tokens[position])])

        return map_leaves(self.printed_tree(punct), preterminal)

    def svg(self, punct: bool = True) -> str:
        """The tree drawn as SVG (nltk's ``TreePrettyPrinter``) on one line: a word's preterminal is ``X``, a
        punctuation mark's its Penn tag."""
        from nltk.tree.prettyprinter import TreePrettyPrinter

        return " ".join(TreePrettyPrinter(self.tagged_tree(punct, token=visible_controls)).svg().split())

    def _repr_svg_(self) -> str:
        """Jupyter shows a parse as its tree's picture."""
        return self.svg()

    @property
    def nltk_tree(self) -> Tree:
        """The tree nltk's tools draw as it is (``parse.nltk_tree.pretty_print()``): a preterminal over each token."""
        return self.tagged_tree()

    def printed_tree(self, punct: bool = True) -> Tree:
        """The tree to show, over token positions: with punctuation attached, or over the words alone."""
        return self.tree if punct else map_leaves(self.words_tree, self.word_positions.__getitem__)

    def constituent_spans(self, punct: bool = True) -> list[Span]:
        """Each constituent of the printed tree as (first token, last token + 1), in token positions, outermost first.

        Positions index ``tokens`` with or without punctuation, so spans mean
        the same in both; the whole sentence is included, single tokens are not.
        """
        if punct:
            found = spans(self.tree)
        else:  # the words tree's spans are over word indices
            found = {
                (self.word_positions[start], self.word_positions[end - 1] + 1) for start, end in spans(self.words_tree)
            }
        return sorted(found, key=lambda span: (span[0], -span[1]))

    def confidence(self, span: Span) -> float:
        """The share of the voters whose trees hold the words of a token span (1 for spans every tree has)."""
        first = bisect.bisect_left(self.word_positions, span[0])
        end = bisect.bisect_left(self.word_positions, span[1])
        if not 2 <= end - first < len(self.word_positions):
            return 1.0
        return float(self.votes[first, end])

    def bracket(self, punct: bool = True) -> str:
        """One line: ``(X (X The cat) (X sat (X on (X the mat))))``, brackets inside tokens escaped."""
        return bracketed(map_leaves(self.printed_tree(punct), lambda position: escape(self.tokens[position])))

    def to_dict(self, punct: bool = True) -> dict:
        """Tokens, model input, distances, and the printed tree with its spans (token positions): what
        ``--format json`` writes.

        The same keys for a single model and an ensemble: ``layers`` holds each
        member's layer (``spans`` for a grammar), ``distances`` the row each
        member built its tree from, ``layer_distances`` every layer of every
        member (both null for a grammar), and ``confidence`` each span's share
        of the voters whose trees hold it (a lone ON-LSTM: 1; a lone grammar:
        the span's marginal probability).
        """
        found = self.constituent_spans(punct)
        rounded = lambda rows: None if rows is None else [[round(float(d), 5) for d in row] for row in rows]  # noqa: E731
        return {
            "tokens": self.tokens,
            "model_input": self.model_input,
            "word_positions": self.word_positions,
            "layers": list(self.builder.layers),
            "right_branching_voter": self.builder.right_branching_voter,
            "distances": [
                rounded([row])[0] if reads_distances(layer) else None
                for row, layer in zip(self.tree_distances, self.builder.layers)
            ],
            "layer_distances": [
                rounded(member) if reads_distances(layer) else None
                for member, layer in zip(self.distances, self.builder.layers)
            ],
            "spans": found,
            "confidence": [round(self.confidence(span), 4) for span in found],
            "tree": self.bracket(punct),
        }
