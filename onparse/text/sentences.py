"""Where one line holds several sentences: the token that starts each one after the first, and the line cut there.

A sentence ends at ``.``, ``!`` or ``?`` (and the closing quotes or brackets after it) before a capitalized word,
or at ``。``, ``！`` or ``？`` before anything; what the tokenizer keeps inside a word (``Mr.``, ``U.S.``) ends none.
A rule, not a model: it errs towards one sentence, since a line split wrongly loses more than one left whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from onparse.text.lines import TooLong
from onparse.text.tokenize import ends_a_sentence

__all__ = ["sentence_starts", "split_lines", "split_sentences"]

QUOTES = frozenset({'"', "``", "''", "\u201c", "\u201d", "\u300c", "\u300d", "\u300e", "\u300f"})
UNSPACED_ENDS = frozenset({"\u3002", "\uff01", "\uff1f"})  # 。！？ end a sentence before any word
CLOSING = frozenset({'"', "'", "''", ")", "]", "}", "\u201d", "\u2019", "\u300d", "\u300f", "\uff09", "-RRB-"})
OPENING = frozenset({'"', "``", "(", "[", "\u201c", "\u2018", "\u300c", "\u300e", "\uff08", "-LRB-"})


def sentence_starts(tokens: Sequence[str]) -> list[int]:
    """The positions of the tokens that start a sentence after the first within ``tokens`` (none: one sentence).

    Outside quotation marks only (``"Rally! Rally!" shouted ...`` is one sentence), and a period only after a
    lowercase word (``tokenize.ends_a_sentence``: ``Co. (Japan)``, ``S.p. A.`` and ``1. Buy`` end none)."""
    starts = []
    for k in range(1, len(tokens)):
        end = k - 1
        while end > 0 and tokens[end] in CLOSING:
            end -= 1
        if tokens[k] in CLOSING or sum(token in QUOTES for token in tokens[:end]) % 2:
            continue
        first = next((token for token in tokens[k:] if token not in OPENING), "")
        mark = tokens[end]
        if (
            mark in UNSPACED_ENDS
            or mark in ("!", "?")
            and first[:1].isupper()
            or mark == "."
            and end > 0
            and ends_a_sentence(tokens[end - 1], first)
        ):
            starts.append(k)
    return starts


def split_sentences(text: str, tokenize: Callable[[str], list[str]]) -> list[str]:
    """``text`` cut before each sentence after the first, as ``sentence_starts`` finds them in its tokens (each
    token the text's own characters); the pieces stripped, none empty."""
    tokens = tokenize(text)
    cuts, at, places = [], 0, []
    for token in tokens:
        found = text.find(token, at)
        places.append(found)
        if found >= 0:
            at = found + len(token)
    for start in sentence_starts(tokens):
        if places[start] >= 0:
            cuts.append(places[start])
    pieces = [text[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(text)])]
    return [piece for piece in pieces if piece]


def split_lines(lines: Iterable[bytes | TooLong], tokenize: Callable[[str], list[str]]) -> Iterator[bytes | TooLong]:
    """Each line of UTF-8 text as its sentences, a line each (``split_sentences``); a blank line, one too long or
    one that is not UTF-8 passes as it is, for the parser to say so."""
    for line in lines:
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else None
        except UnicodeDecodeError:
            text = None
        if text is None or not text.strip():
            yield line
            continue
        yield from (sentence.encode("utf-8") for sentence in split_sentences(text, tokenize))
