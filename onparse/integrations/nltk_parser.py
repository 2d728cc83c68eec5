"""onparse as an nltk parser: ``ParserI`` over token lists, yielding nltk ``Tree``s of the tokens given, a
preterminal over each token as a treebank's trees have (``X`` over a word, a Penn tag over punctuation), so nltk's
``pretty_print`` and ``draw`` show them as they are.

    >>> from onparse.integrations.nltk_parser import ONLSTMParser
    >>> parser = ONLSTMParser()  # the shipped default; ONLSTMParser("onlstm-negra") for German
    >>> print(parser.parse_one("The cat sat on the mat .".split()).pformat(margin=200))
    (X (X (X The) (X cat)) (X (X sat) (X (X on) (X (X the) (X mat)))) (. .))
    >>> [str(tree) for tree in parser.parse_all(["Stocks", "fell", "."])]
    ['(X (X Stocks) (X fell) (. .))']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from nltk import Tree
from nltk.parse.api import ParserI

from onparse.parsing.parse import Parser


class ONLSTMParser(ParserI):
    """An onparse model (or ensemble) behind nltk's parser interface: one tree per sentence, tokens taken as given."""

    def __init__(self, model: str | Path | None = None, **settings: Any):
        self.parser = Parser.load(model, **settings)

    def grammar(self):
        raise NotImplementedError("an ON-LSTM parser reads trees from a language model, not from a grammar")

    def parse(self, sent: Sequence[str], *args: Any, **kwargs: Any) -> Iterator[Tree]:
        """An iterator over the one tree of ``sent`` (a list of tokens)."""
        yield self.parser.parse_tokens([sent])[0].nltk_tree

    def parse_sents(self, sents: Iterable[Sequence[str]], *args: Any, **kwargs: Any) -> Iterator[Iterator[Tree]]:
        """One iterator per sentence, the sentences run in length-sorted batches (``Parser.parse_sents``)."""

        def token_lists() -> Iterator[Sequence[str]]:
            for position, sent in enumerate(sents, 1):
                if sent is None or isinstance(sent, str):
                    raise TypeError(f"sentence {position}: nltk's parsers take token lists, not {sent!r:.40}")
                yield sent

        for parse in self.parser.parse_sents(token_lists()):  # a stream: read a bounded window ahead
            yield iter([parse.nltk_tree])
