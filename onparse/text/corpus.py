"""Training and dev text as corpora ship it: bracketed trees (their leaves) or plain text, one sentence a line.

A sentence keeps its punctuation: which tokens are words is the treebank's
rule for trees and the punctuation test (``tokenize.word_positions``) for
text, and what a model reads of a sentence is its own reading's choice
(``onparse.text.reading``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING

from onparse.settings import Reading
from onparse.text.language import ENGLISH, Sentence, tokenizer, unspaced_script, written_without_spaces
from onparse.text.reading import model_tokens
from onparse.text.treebank import read_gold, text_lines, tree_files

if TYPE_CHECKING:
    from onparse.config import TrainConfig

TREE_SUFFIXES = (".mrg", ".penn")  # files of bracketed trees; any other file is text, one sentence a line
COMMENT = "%%"  # starts a comment line in a text file (the NEGRA corpus's header)
# An id before the sentence, "ID<TAB>sentence" (NEGRA's "   17:", Leipzig's "17"), with Tatoeba's language code after it
# ("17<TAB>eng<TAB>sentence"): an id holds a digit, so a file of TAB-separated tokens keeps its first token.
ID_FIELD = re.compile(r"\s*[\w.:-]*\d[\w.:-]*\t(?:[a-z]{3}\t)?")
ID_SAMPLE = 100  # lines that decide whether a file's lines carry ids


def is_comment(line: str) -> bool:
    """A line that is a comment in a NEGRA-style file (one whose sentence lines carry ids): elsewhere, text."""
    return line.startswith(COMMENT)


def id_end(line: str) -> int:
    """Where the sentence of a line that starts with an id (``ID_FIELD``) starts; 0 for a line without one."""
    found = ID_FIELD.match(line)
    return found.end() if found else 0


def sentence_lines(lines: Iterable[str]) -> Iterator[str]:
    """The sentences of a text file, one a line: where the file's first sentence lines all start with an id (a tab
    after it), as NEGRA's do, each line's id left out and ``%%`` comment lines skipped; elsewhere a line starting
    ``%%`` is a sentence like any other ("%% of the votes went to him")."""
    content = (line for line in lines if line.strip())
    first = list(islice(content, ID_SAMPLE))
    sentences = [line for line in first if not is_comment(line)]
    ids = bool(sentences) and all(id_end(line) for line in sentences)
    for line in chain(first, content):
        if ids and is_comment(line):
            continue
        yield line[id_end(line) :] if ids else line


BRACKETED = re.compile(
    r"\s*\(.*\(.*\)\s*$"
)  # a line that opens and closes as a bracketed tree does, with a node inside


def refuse_trees_as_text(file: Path, lines: list[str]) -> None:
    """ValueError for a text file whose first lines are all bracketed trees: trained on as text, its brackets and
    tags would be the words (``np nnp jj``); the name says which it is."""
    if len(lines) >= 2 and all(BRACKETED.match(line) for line in lines):
        raise ValueError(
            f"{file} holds bracketed trees, one a line: name it .mrg (or .penn) to read their leaves, "
            "or give its sentences as text"
        )


UNSPACED_PIECE = 12  # characters between spaces, on average, past which text is taken for unsegmented


def refuse_unspaced_text(file: Path, lines: list[str], language: str) -> None:
    """ValueError for text mostly in a script written without spaces (Thai, Chinese, ...) and not split into words by
    hand (more than ``UNSPACED_PIECE`` characters between spaces on average) given a language split at spaces (xx,
    en, ...): each line would be a word or two."""
    pieces = sum(len(line.split()) for line in lines)
    long_pieces = pieces and sum(map(len, lines)) > UNSPACED_PIECE * pieces
    script = None if written_without_spaces(language) or not long_pieces else unspaced_script("".join(lines))
    if script:
        raise ValueError(
            f"{file} looks written without spaces between words, as {script!r} is, but --language {language} "
            f"splits at spaces: give --language {script} (or text split into words with spaces)"
        )


def read_sentences(
    paths: list[str], language: str = ENGLISH, encoding: str = "UTF-8", tokenized: bool = False
) -> list[Sentence]:
    """Sentences with at least one word, punctuation kept, from trees (.mrg, .penn: the treebank's leaves, its words
    by its own rule) or plain text (one sentence a line, ``sentence_lines``, tokenized as ``language``, or split at
    spaces where ``tokenized``), in ``encoding``."""
    split = str.split if tokenized else tokenizer(language)
    sentences: list[Sentence] = []
    for path in paths:
        for file in tree_files(path):
            if file.suffix.lower() in TREE_SUFFIXES:
                sentences.extend(gold.sentence for gold in read_gold(str(file), encoding=encoding))
                continue
            lines = sentence_lines(line for _, line in text_lines(file, encoding))
            first = list(islice(lines, ID_SAMPLE))
            refuse_trees_as_text(file, first)
            if not tokenized:
                refuse_unspaced_text(file, first, language)
            sentences.extend(Sentence.of_tokens(split(line)) for line in chain(first, lines))
    return [sentence for sentence in sentences if sentence.words]


def read_corpus(
    paths: list[str],
    language: str = ENGLISH,
    encoding: str = "UTF-8",
    reading: Reading = Reading(),
    tokenized: bool = False,
) -> list[list[str]]:
    """``read_sentences`` as the model reads them (``reading.model_tokens``): its tokens, normalized, in its order."""
    return [model_tokens(reading, sentence) for sentence in read_sentences(paths, language, encoding, tokenized)]


def sample(sentences: list[list[str]], tokens: int, seed: int) -> list[list[str]]:
    """A seeded sample of about ``tokens`` tokens (each sentence's and its end's) of ``sentences``, in the corpus's
    order: the same for every run given one seed, so that runs which compare readings see the same text."""
    order = list(range(len(sentences)))
    random.Random(seed).shuffle(order)
    chosen, count = set(), 0
    for i in order:
        if count >= tokens:
            break
        chosen.add(i)
        count += len(sentences[i]) + 1
    return [sentence for i, sentence in enumerate(sentences) if i in chosen]


def training_sentences(config: TrainConfig) -> list[list[str]]:
    """A run's training text as its model reads it: the whole corpus, or its ``sample_tokens`` sample (seeded by the
    run's seed)."""
    sentences = read_corpus(config.train, config.language, config.encoding, config.reading, config.tokenized)
    return sample(sentences, config.sample_tokens, config.seed) if config.sample_tokens else sentences
