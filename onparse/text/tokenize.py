"""Raw text to tokens, and tokens to the normalized words the model reads.

Tokens follow Penn Treebank conventions: nltk's Treebank tokenizer, whose
token boundaries are then mended where the treebank keeps one token
(``S&L``, ``47%-controlled``, ``rock 'n' roll``, ``US$``). Every
token is the user's own text (their quote characters, not nltk's). The model
never sees punctuation: it was trained on treebank words, whose punctuation
leaves are dropped, so raw-text punctuation is dropped the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from nltk.tokenize import TreebankWordTokenizer

_BRACKET_TOKENS = {
    "-LRB-",
    "-RRB-",
    "-LCB-",
    "-RCB-",
    "-LSB-",
    "-RSB-",
    "*LRB*",
    "*RRB*",
}  # Penn's and NEGRA's spellings
# Symbols the Penn Treebank tags as words (% as NN, & as CC): the model was trained on them.
_WORD_SYMBOLS = {"%", "&"}
# Penn Treebank tags of punctuation tokens; other punctuation is tagged ":".
_PUNCT_TAGS = {
    ",": ",",
    ".": ".",
    "?": ".",
    "!": ".",
    "``": "``",
    "`": "``",
    "''": "''",
    "'": "''",
    "-LRB-": "-LRB-",
    "-RRB-": "-RRB-",
    "$": "$",
    "#": "#",
}
_CURRENCY = re.compile(r"[A-Z]{1,3}\$")
# What joins or restyles emoji without being a letter: variation selectors, the zero-width joiner, tag characters
_EMOJI_JOINERS = re.compile(
    "[\ufe00-\ufe0f\u200d\U000e0020-\U000e007f\U000e0100-\U000e01ef]"
)  # US$, C$, NZ$: tagged $ like $ itself
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_tokenizer = TreebankWordTokenizer()


_CONTRACTIONS = {"'s", "'re", "'ve", "'ll", "'d", "'m", "'n", "'em", "'t", "'cause", "'til", "'tis"}
_CLOSING = {")", "]", "}", '"', "'", "''", "-RRB-", "-RSB-", "-RCB-"}
_OPENING_SINGLE_QUOTE = re.compile(r"(?:^|[\s(\[{\"])['`\u2018]\w")
_ELISION = re.compile(r"(?:^ol|in)$")  # ol' (old), goin' (going)
_OPENING = {"(", "[", "{", "-LRB-", "-LSB-", "-LCB-"}
_LONE_CAPITAL = re.compile(r"[A-Z]\.?")
_QUOTES = {'"', "'", "''", "``", "`", "\u201c", "\u201d", "\u2018", "\u2019"}


# Typographic punctuation as the ASCII the treebank's tokenizer knows, one character for one, so that the tokens of
# the folded text are cut from the user's own: curly quotes as straight ones (don’t -> do n’t), a hyphen or en dash
# as a hyphen, and an em dash or an ellipsis as a mark that is always a token of its own (as -- and ... are).
TYPOGRAPHIC = str.maketrans(
    {
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u00ab\u00bb", '"'),
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2039\u203a", "'"),
        **dict.fromkeys("\u2010\u2011\u2013\u2212", "-"),
        **dict.fromkeys("\u2014\u2015\u2026", ";"),
        **dict.fromkeys("\u00a0\u2007\u2009\u200a\u202f", " "),
    }
)


def tokenize(text: str) -> list[str]:
    """Split one sentence into Penn Treebank tokens, each the user's own text; typographic quotes, dashes and
    ellipses split as their ASCII counterparts do (``TYPOGRAPHIC``)."""
    keycaps = {k for found in _KEYCAP.finditer(text) for k in range(found.start(), found.end())}
    folded = "".join(
        ";" if k in keycaps or _pictographic(char) else char for k, char in enumerate(text.translate(TYPOGRAPHIC))
    )
    try:
        pieces = [[start, end] for start, end in _tokenizer.span_tokenize(folded)]
    except ValueError:  # nltk could not align its tokens with the text: take them as nltk spells them
        return _tokenizer.tokenize(text)
    pieces = _split_opening_quotes(folded, pieces)
    pieces = _join_pictographs(text, _mend(folded, pieces), keycaps)
    pieces = _join_addresses(text, pieces)
    split = _split_periods([folded[start:end] for start, end in pieces])
    return _cut_as(split, [text[start:end] for start, end in pieces])


def _pictographic(char: str) -> bool:
    """An emoji or pictograph (or what joins and restyles one): split off a word as punctuation is, so that
    ``it😀`` reads as ``it 😀`` does; symbols below U+2600 (``°``, ``©``, ``€``) stay as the treebank has them."""
    return (ord(char) >= 0x2600 and unicodedata.category(char) in ("So", "Sk")) or bool(_EMOJI_JOINERS.fullmatch(char))


def _join_pictographs(text: str, pieces: list[list[int]], keycaps: set[int]) -> list[list[int]]:
    """Pieces of one emoji sequence (a skin tone, a joiner, a flag's two letters, a keycap's digit and its
    enclosing mark: ``1️⃣``) back into one token."""
    joined: list[list[int]] = []
    for start, end in pieces:
        if (
            joined
            and joined[-1][1] == start
            and all(k in keycaps or _pictographic(text[k]) for k in range(joined[-1][0], end))
        ):
            joined[-1][1] = end
        else:
            joined.append([start, end])
    return joined


# A web address or an e-mail address, one token as written (less the punctuation that ends a sentence or clause
# after it); and a keycap emoji: a digit, # or *, a presentation selector, the enclosing keycap mark
_ADDRESS = re.compile(
    r"(?:[a-z][a-z0-9+.-]*://|www\.)[^\s<>\"]*[^\s<>\".,;:!?)\]}'\u2019\u201d]"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}",
    re.IGNORECASE,
)
_KEYCAP = re.compile("[0-9#*]\ufe0f?\u20e3")


def _join_addresses(text: str, pieces: list[list[int]]) -> list[list[int]]:
    """The pieces of one web or e-mail address (``https : //example.com``, ``me @ example.org``) back into one."""
    joined: list[list[int]] = []
    for found in _ADDRESS.finditer(text):
        inside = [k for k, (start, end) in enumerate(pieces) if found.start() <= start and end <= found.end()]
        if len(inside) > 1 and pieces[inside[0]][0] == found.start() and pieces[inside[-1]][1] == found.end():
            joined.append([inside[0], inside[-1]])
    for first, last in reversed(joined):
        pieces[first : last + 1] = [[pieces[first][0], pieces[last][1]]]
    return pieces


def _cut_as(pieces: list[str], tokens: list[str]) -> list[str]:
    """``tokens`` cut where ``pieces`` (the same characters folded, some tokens split in two) are."""
    found, k, offset = [], 0, 0
    for piece in pieces:
        found.append(tokens[k][offset : offset + len(piece)])
        offset += len(piece)
        if offset == len(tokens[k]):
            k, offset = k + 1, 0
    return found


def _split_opening_quotes(text: str, pieces: list[list[int]]) -> list[list[int]]:
    """'safe -> ' safe: a single quote glued to the front of a word opens a quotation, unless a contraction ('s, 'n)."""
    result = []
    for start, end in pieces:
        token = text[start:end]
        if token[:1] == "'" and len(token) > 2 and token[1:].isalpha() and token.lower() not in _CONTRACTIONS:
            result += [[start, start + 1], [start + 1, end]]
        else:
            result.append([start, end])
    return result


def _glue(before: str, token: str) -> bool:
    """Whether two pieces with nothing between them are one treebank token."""
    return bool(
        before[-1:].isalnum()
        and token == "&"  # S&L, AT&T: the & ...
        or before.endswith("&")
        and before[:1].isalnum()
        and token[:1].isalnum()  # ... and what follows it
        or before.endswith("-")
        and any(c.isalnum() for c in before)
        and (token[:1].isalnum() or token == "$")  # 19-to-$21
        or before.endswith("-$")
        and token[:1].isdigit()
        or token[:1] == "-"
        and token[1:2].isalnum()
        and (before[-1:].isalnum() or before[-1:] in "%$")  # 47%-controlled
        or token.startswith("%-")
        and before[-1:].isdigit()
        or token == "'"
        and before.lower() == "'n"  # rock 'n' roll
        or token == "$"
        and before.isalpha()
        and before.isupper()
        and len(before) <= 3  # US$
    )


def _own_apostrophe(text: str, before: list[int], piece: list[int]) -> bool:
    """ol', goin': the apostrophe of an elision (a dropped letter) is the word's own, unless it closes a
    single-quoted passage opened earlier in the sentence.

    Only lowercase ``ol'`` and ``-in'`` words count: anywhere else a trailing
    apostrophe is a possessive or a closing quote, and the treebank splits
    names such as ``Dunkin ' Donuts`` more often than not.
    """
    word = text[before[0] : before[1]]
    return (
        text[piece[0] : piece[1]] == "'"
        and word.isalpha()
        and word.islower()
        and _ELISION.search(word) is not None
        and not _OPENING_SINGLE_QUOTE.search(text, 0, piece[0])
    )


def _mend(text: str, pieces: list[list[int]]) -> list[list[int]]:
    """Join pieces with nothing between them that the treebank keeps as one token."""
    merged: list[list[int]] = []
    for k, (start, end) in enumerate(pieces):
        token = text[start:end]
        if token == "&" and not (k + 1 < len(pieces) and pieces[k + 1][0] == end and text[end : end + 1].isalnum()):
            merged.append([start, end])  # a free-standing & ("A & B") stays a token of its own
            continue
        merged.append([start, end])
        while (
            len(merged) > 1
            and merged[-2][1] == merged[-1][0]
            and (
                _glue(text[merged[-2][0] : merged[-2][1]], text[merged[-1][0] : merged[-1][1]])
                or _own_apostrophe(text, merged[-2], merged[-1])
            )
        ):
            last = merged.pop()
            merged[-1][1] = last[1]
    return merged


def _split_periods(tokens: list[str]) -> list[str]:
    """Split a word's period off where the treebank writes it as a token of its own.

    nltk splits only a sentence's last period. The treebank also splits one
    that ends the sentence before closing brackets or quotes (``U.S.A .)``),
    one before an opening bracket (``Co . (Japan)``), a word's period before a
    quote (``gum . "``), a list number's (``2 . Take``), and a dotted
    abbreviation's before a lone capital (``S.p . A.``, ``G.m.b . H.``);
    measured on sections 00-21, each holds in at least 15 of 16 cases.
    """
    closing_from = len(tokens)
    while closing_from > 1 and tokens[closing_from - 1] in _CLOSING:
        closing_from -= 1
    last_before_closing = closing_from - 1 if closing_from < len(tokens) else None
    result = []
    for k, token in enumerate(tokens):
        following = tokens[k + 1] if k + 1 < len(tokens) else ""
        stem = token[:-1]
        if (
            len(token) > 1
            and token.endswith(".")
            and not stem.endswith(".")
            and (
                k == last_before_closing
                or following in _OPENING
                or following in _QUOTES
                and stem.isalpha()
                and not stem.isupper()
                or stem.isdigit()
                or "." in stem
                and _LONE_CAPITAL.fullmatch(following) is not None
                or ends_a_sentence(stem, next((t for t in tokens[k + 1 :] if t not in _CLOSING), ""))
            )
        ):
            result += [stem, "."]
        else:
            result.append(token)
    return result


# Lowercase abbreviations that keep their period before a capital (``et al. Smith``, ``vs. Jones``)
_LOWERCASE_ABBREVIATIONS = {"al", "approx", "ca", "cf", "etc", "ft", "lbs", "oz", "pp", "viz", "vs", "vol", "no", "op"}


def ends_a_sentence(stem: str, following: str) -> bool:
    """Whether a period after ``stem`` ends a sentence before the word ``following``: a lowercase word's period
    before a capitalized word ends one inside the line (``short. The``); a capitalized word's period before one is
    an abbreviation's as often (``Mr. Smith``, ``Corp. Chairman``), and stays the word's, as the treebank keeps it."""
    return (
        len(stem) > 1
        and stem.isalpha()
        and stem.islower()
        and stem not in _LOWERCASE_ABBREVIATIONS
        and following[:1].isupper()
    )


def is_punct(token: str) -> bool:
    """True for tokens made only of punctuation or symbols in any script (``$``, ``#``, quotes, brackets, ``，``,
    ``«``, ``–``), by Unicode category, except the word symbols % and &."""
    if unicodedata.normalize("NFKC", token).replace("\u066a", "%") in _WORD_SYMBOLS:  # ％, ﹪ and Arabic ٪ as %
        return False
    marks = [ch for ch in token if not _EMOJI_JOINERS.fullmatch(ch)]  # an emoji's presentation selector or joiner
    return (
        token in _BRACKET_TOKENS
        or (bool(marks) and all(unicodedata.category(ch)[0] in "PS" for ch in marks))
        or _CURRENCY.fullmatch(token) is not None
    )


def word_positions(tokens: Sequence[str]) -> list[int]:
    """Positions of the tokens the model reads: all but punctuation.

    A lone ``'`` after a token ending in s is the possessive (``investors '``),
    which the treebank tags as a word; elsewhere it is a closing quote.
    """
    return [
        i
        for i, token in enumerate(tokens)
        if not is_punct(token) or (token in ("'", "\u2019") and i > 0 and tokens[i - 1][-1:] in ("s", "S"))
    ]


def punct_tag(token: str) -> str:
    """The Penn Treebank tag of a punctuation token, so tools such as EVALB drop it as usual."""
    return _PUNCT_TAGS.get(token, ":")


# Full-width forms of ASCII (U+FF01-U+FF5E, as East Asian text writes Latin letters, digits and signs) as ASCII
FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}


# Within a word, typographic apostrophes and hyphens as the treebank writes them (n’t, O’Brien, well‐known)
WORD_MARKS = str.maketrans(
    {"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2010": "-", "\u2011": "-", "\u2013": "-", "\u2212": "-"}
)


def normalize(word: str) -> str:
    """The spelling the model was trained on: composed characters (NFC: ``u`` and a combining diaeresis are ``ü``),
    full-width letters, digits and signs as ASCII (``ＷＴＯ`` is ``wto``), typographic apostrophes and hyphens as
    ASCII (``n’t`` is ``n't``), lowercase, each number written as N."""
    return _NUMBER.sub("N", unicodedata.normalize("NFC", word).translate(FULL_WIDTH).translate(WORD_MARKS).lower())


# Punctuation spelt many ways, as a model reading punctuation sees it: every quote one quote, every bracket one bracket.
_PUNCT_CLASSES = {
    **dict.fromkeys(
        [
            "``",
            "''",
            "`",
            "'",
            "\u201c",
            "\u201d",
            "\u201e",
            "\u2018",
            "\u2019",
            "\u201a",
            "\u00ab",
            "\u00bb",
            "\u2039",
            "\u203a",
            "\u300c",
            "\u300d",
            "\u300e",
            "\u300f",
        ],
        '"',
    ),
    **dict.fromkeys(["-LRB-", "-LSB-", "-LCB-", "*LRB*", "[", "{", "\u3010", "\u3014", "\u300a", "\u3008"], "("),
    **dict.fromkeys(["-RRB-", "-RSB-", "-RCB-", "*RRB*", "]", "}", "\u3011", "\u3015", "\u300b", "\u3009"], ")"),
    **dict.fromkeys(["\u2013", "\u2014", "\u2015"], "--"),
    "\u2026": "...",
}


def normalize_punctuation(token: str) -> str:
    """The spelling a model reading punctuation reads: full-width forms as ASCII (NFKC), every quote ``"``, every
    opening bracket ``(`` and closing one ``)``, whether the text is a treebank's (``-LRB-``, ``````) or a user's."""
    token = unicodedata.normalize("NFKC", token)
    return _PUNCT_CLASSES.get(token, token)
