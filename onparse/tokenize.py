"""Raw text to tokens, and tokens to the normalized words the model reads.

Tokens follow Penn Treebank conventions (nltk's Treebank tokenizer). The
model never sees punctuation: it was trained on treebank words, whose
punctuation leaves are dropped, so raw-text punctuation is dropped the same way.
"""

from __future__ import annotations

import re
import string

from nltk.tokenize import TreebankWordTokenizer

# Penn Treebank POS tags of real words; every other leaf (punctuation, $, #,
# -NONE- empty elements, -LRB-/-RRB-) is outside the ON-LSTM paper's protocol.
WORD_TAGS = frozenset(
    "CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR "
    "RBS RP SYM TO UH VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB".split()
)

_PUNCT_CHARS = frozenset(string.punctuation) | {"``", "''"}
_BRACKET_TOKENS = {"-LRB-", "-RRB-", "-LCB-", "-RCB-", "-LSB-", "-RSB-"}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_tokenizer = TreebankWordTokenizer()


def tokenize(text: str) -> list[str]:
    """Split one sentence into Penn Treebank tokens, keeping the user's spelling."""
    return _tokenizer.tokenize(text)


def is_punct(token: str) -> bool:
    """True for tokens made only of punctuation or symbols ($, #, quotes, brackets)."""
    return token in _BRACKET_TOKENS or token in _PUNCT_CHARS or all(ch in _PUNCT_CHARS for ch in token)


def normalize(word: str) -> str:
    """The spelling the model was trained on: lowercase, each number written as N."""
    return _NUMBER.sub("N", word.lower())
