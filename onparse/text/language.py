"""Text to tokens for each language: what a model directory records so it is fed as it was trained.

English keeps the Penn Treebank tokenizer (``onparse.text.tokenize``), which
matches the English models' training data token for token. Chinese is
segmented into words with jieba; every other language is split with spaCy's
rule-based tokenizer for it (``spacy.blank(code)``, offline, dozens of
languages). Both are optional (the extra ``languages``, or each by its name); text
already split into tokens (``--tokenized``) needs neither. Punctuation
(Unicode categories) and normalization (lowercase, digits of every script as
``N``) are the same for every language (``onparse.text.tokenize``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

ENGLISH = "en"
JIEBA = "pip install 'jieba>=0.42'"  # what onparse's extra [languages] holds, each named as an index serves it
SPACY = "pip install 'spacy>=3.7'"


@dataclass(frozen=True)
class Sentence:
    """A sentence's tokens and the positions of its words (the tree's leaves) among them, ascending.

    The words are what trees and scores are over; the other tokens are
    punctuation, which a model may read (``onparse.text.reading``) but no tree holds.
    """

    tokens: tuple[str, ...]
    words: tuple[int, ...]

    @classmethod
    def of_tokens(cls, tokens: Sequence[str]) -> "Sentence":
        """A tokenized sentence of raw text: its words are every token but punctuation (``tokenize.word_positions``)."""
        from onparse.text.tokenize import word_positions

        return cls(tuple(tokens), tuple(word_positions(tokens)))

    @property
    def word_tokens(self) -> list[str]:
        """The words, as written."""
        return [self.tokens[i] for i in self.words]


# Languages whose phrases put their heads first: verb before object, prepositions, noun before relative clause (WALS
# features 83A, 85A and 90A), the word orders that go with right-branching trees (Dryer 1992, "The Greenbergian word
# order correlations"). Chinese (relative clauses first) and German (object before verb in subordinate clauses) are
# not; Japanese, Korean, Turkish and Hindi are head-final.
HEAD_INITIAL = frozenset(
    {
        "en",
        "fr",
        "es",
        "it",
        "pt",
        "ca",
        "gl",
        "ro",
        "ga",
        "cy",
        "ar",
        "he",
        "id",
        "ms",
        "tl",
        "sw",
        "th",
        "vi",
        "ru",
        "uk",
        "pl",
        "cs",
        "sk",
        "sl",
        "hr",
        "sr",
        "bg",
        "mk",
        "sv",
        "da",
        "nb",
        "nn",
        "no",
        "is",
        "el",
        "sq",
        "lt",
        "lv",
    }
)


def head_initial(language: str) -> bool:
    return language in HEAD_INITIAL


# Languages whose script is written without spaces between words: their text is segmented, never split at spaces.
UNSPACED = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo"})


def written_without_spaces(language: str) -> bool:
    return language in UNSPACED


# Scripts written without spaces between words (by the first word of their characters' Unicode names) and the
# language each most likely writes
UNSPACED_SCRIPTS = {
    "THAI": "th",
    "LAO": "lo",
    "KHMER": "km",
    "MYANMAR": "my",
    "TIBETAN": "bo",
    "CJK": "zh",
    "HIRAGANA": "ja",
    "KATAKANA": "ja",
}


def unspaced_script(text: str) -> str | None:
    """The language code of the script without spaces most of ``text``'s letters are written in (th, zh, ja, ...);
    None where most are not (Japanese wins over Chinese where any kana is written)."""
    scripts = [UNSPACED_SCRIPTS.get(unicodedata.name(ch, "").split(" ")[0]) for ch in text if ch.isalpha()]
    found = [code for code in scripts if code]
    if not found or len(found) * 2 <= len(scripts):
        return None
    return "ja" if "ja" in found else max(set(found), key=found.count)


class LanguageError(ValueError):
    """A language onparse cannot tokenize here (unknown code, or its tokenizer library missing)."""


def tokenizer(language: str = ENGLISH) -> Callable[[str], list[str]]:
    """The function that splits one sentence of ``language`` (an ISO 639-1 code such as en, de, zh) into tokens, the
    text's characters composed first (NFC), so text typed in decomposed form splits and reads as composed text does."""
    split = _splitter(language)

    def tokens(text: str) -> list[str]:
        text = unicodedata.normalize("NFC", text)
        return joined_marks([kept for token in split(text) if (kept := visible(token))], text)

    return tokens


DOUBLED_MARKS = frozenset("\u2014\u2015\u2026\u22ef")  # a dash or an ellipsis that is written twice as one mark


def joined_marks(tokens: list[str], text: str) -> list[str]:
    """Tokens of one mark written twice or more with nothing between (``——``, ``……``, as Chinese writes a dash and
    an ellipsis) as one token, whichever splitter cut them."""
    joined: list[str] = []
    at, last_end = 0, -1
    for token in tokens:
        start = text.find(token, at)
        end = start + len(token) if start >= 0 else -1
        if (
            joined
            and start >= 0
            and start == last_end
            and set(token) <= DOUBLED_MARKS
            and len(set(token)) == 1
            and set(joined[-1]) == set(token)
        ):
            joined[-1] += token
        else:
            joined.append(token)
        if start >= 0:
            at, last_end = end, end
    return joined


def visible(token: str) -> str:
    """A token without the invisible format marks at its edges (zero-width space, soft hyphen, direction marks): a
    mark alone is no token."""
    start, end = 0, len(token)
    while start < end and unicodedata.category(token[start]) == "Cf":
        start += 1
    while end > start and unicodedata.category(token[end - 1]) == "Cf":
        end -= 1
    return token[start:end]


def check_language(language: str, tokenized: bool) -> None:
    """LanguageError for a code that names no language here, or, where the text is to be tokenized (not
    ``tokenized``: given as tokens), for one whose tokenizer is not installed."""
    if not tokenized:
        tokenizer(language)
    elif language not in (ENGLISH, "zh"):
        try:
            import spacy
        except ImportError:  # a code is taken as given where nothing could tell it; the tokens need no tokenizer
            return
        try:
            spacy.util.get_lang_class(language)
        except ImportError:
            raise LanguageError(
                f"{language!r} is not a language code spaCy knows (de, fr, zh, ...; xx: its "
                "multi-language tokenizer, for any language written with spaces)"
            ) from None


@lru_cache(maxsize=None)
def _splitter(language: str) -> Callable[[str], list[str]]:
    if language == ENGLISH:
        from onparse.text.tokenize import tokenize

        return tokenize
    if language == "zh":
        try:
            import jieba
        except ImportError:
            raise LanguageError(f"segmenting Chinese needs jieba: {JIEBA} (or give tokens with --tokenized)") from None
        jieba.setLogLevel(60)  # its dictionary-loading chatter would land on stderr
        return lambda text: [token for token in jieba.lcut(text) if token.strip()]
    try:
        import spacy
    except ImportError:
        raise LanguageError(f"tokenizing {language!r} needs spaCy: {SPACY} (or give tokens with --tokenized)") from None
    try:
        spacy.util.get_lang_class(language)
    except ImportError:
        raise LanguageError(
            f"{language!r} is not a language code spaCy knows (de, fr, zh, ...; xx: its multi-language "
            "tokenizer, for any language written with spaces)"
        ) from None
    try:
        split = spacy.blank(language).tokenizer
    except ImportError as err:  # a language whose tokenizer needs a package of its own (ja: SudachiPy, th: PyThaiNLP)
        needs = " ".join(str(err).split())
        raise LanguageError(f"tokenizing {language!r} needs a package that is not installed: {needs}") from None
    return lambda text: [token.text for token in split(text) if not token.is_space]
