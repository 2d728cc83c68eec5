"""Raw text to tokens, and tokens to the normalized words the model reads.

Tokens follow Penn Treebank conventions (nltk's Treebank tokenizer). The
model never sees punctuation: it was trained on treebank words, whose
punctuation leaves are dropped, so raw-text punctuation is dropped the same way.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from nltk.tokenize import TreebankWordTokenizer

_PUNCT_CHARS = frozenset(string.punctuation)
_BRACKET_TOKENS = {"-LRB-", "-RRB-", "-LCB-", "-RCB-", "-LSB-", "-RSB-"}
# Symbols the Penn Treebank tags as words (% as NN, & as CC): the model was trained on them.
_WORD_SYMBOLS = {"%", "&"}
# Penn Treebank tags of punctuation tokens; other punctuation is tagged ":".
_PUNCT_TAGS = {",": ",", ".": ".", "?": ".", "!": ".", "``": "``", "`": "``", "''": "''", "'": "''",
               "-LRB-": "-LRB-", "-RRB-": "-RRB-", "$": "$", "#": "#"}
_CURRENCY = re.compile(r"[A-Z]{1,3}\$")  # US$, C$, NZ$: tagged $ like $ itself
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_tokenizer = TreebankWordTokenizer()


def tokenize(text: str) -> list[str]:
    """Split one sentence into Penn Treebank tokens, keeping the user's spelling."""
    return _tokenizer.tokenize(text)


def is_punct(token: str) -> bool:
    """True for tokens made only of punctuation or symbols ($, #, quotes, brackets), except the word symbols % and &."""
    if token in _WORD_SYMBOLS:
        return False
    return token in _BRACKET_TOKENS or all(ch in _PUNCT_CHARS for ch in token) or _CURRENCY.fullmatch(token) is not None


def word_positions(tokens: Sequence[str]) -> list[int]:
    """Positions of the tokens the model reads: all but punctuation.

    A lone ``'`` after a token ending in s is the possessive (``investors '``),
    which the treebank tags as a word; elsewhere it is a closing quote.
    """
    return [i for i, token in enumerate(tokens)
            if not is_punct(token) or (token == "'" and i > 0 and tokens[i - 1][-1:] in ("s", "S"))]


def punct_tag(token: str) -> str:
    """The Penn Treebank tag of a punctuation token, so tools such as EVALB drop it as usual."""
    return _PUNCT_TAGS.get(token, ":")


def normalize(word: str) -> str:
    """The spelling the model was trained on: lowercase, each number written as N."""
    return _NUMBER.sub("N", word.lower())
