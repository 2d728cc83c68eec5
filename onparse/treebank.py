"""Reading gold trees: LDC .mrg files, folders of them, globs, or one-tree-per-line files.

Every top-level bracketed expression is one tree, so the multi-line LDC layout
(each tree wrapped in an unlabeled outer bracket) and one-tree-per-line files
read alike. Words are the leaves whose POS tag is a word tag, as in the ON-LSTM
paper: punctuation, ``$``, ``#`` and ``-NONE-`` empty elements are dropped.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from nltk import Tree

from onparse.trees import labeled_spans

# Penn Treebank POS tags of real words; every other leaf (punctuation, $, #,
# -NONE- empty elements, -LRB-/-RRB-) is outside the ON-LSTM paper's protocol.
WORD_TAGS = frozenset(
    "CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR "
    "RBS RP SYM TO UH VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB".split()
)
_PARENS = re.compile(r"[()]")


class TreebankError(ValueError):
    """A gold file that cannot be read, with the file and line it concerns."""


@dataclass(frozen=True)
class GoldSentence:
    """The words of a gold tree and its constituents over those words."""

    words: tuple[str, ...]
    spans: frozenset[tuple[int, int]]  # (start, end) of every constituent of two or more words
    labeled: tuple[tuple[str, int, int], ...]  # (label without function tags, start, end)
    source: str  # "file:line" where the tree starts


def tree_files(path: str) -> list[Path]:
    """The files a user's PATH names: one file, every .mrg below a folder, or a glob."""
    candidate = Path(path)
    if candidate.is_file():
        return [candidate]
    if candidate.is_dir():
        files = sorted(p for p in candidate.rglob("*.[mM][rR][gG]") if p.is_file())
        if not files:
            raise TreebankError(f"{path}: no .mrg files in this folder")
        return files
    matches = sorted(Path(p) for p in glob.glob(path, recursive=True))
    if not matches:
        raise TreebankError(f"{path}: no such file, folder or glob match")
    return [file for match in matches for file in tree_files(str(match))]


def read_trees(path: Path) -> Iterator[tuple[Tree, str]]:
    """Each tree in one file with the ``file:line`` where it starts."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise TreebankError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise TreebankError(f"{path}: {err.strerror}") from None
    depth, start = 0, 0
    line, counted_to = 1, 0  # line number of text[counted_to], advanced as we go: one pass over the file

    def line_at(position: int) -> int:
        nonlocal line, counted_to
        line += text.count("\n", counted_to, position)
        counted_to = position
        return line

    for match in _PARENS.finditer(text):
        if depth == 0:
            stray = text[start : match.start()].strip()
            if stray or match.group() == ")":
                raise TreebankError(f"{path}:{line_at(match.start())}: text outside any tree: {(stray or ')')[:40]!r}")
            start = match.start()
        depth += 1 if match.group() == "(" else -1
        if depth == 0:
            source = f"{path}:{line_at(start)}"
            yield _parse_tree(text[start : match.end()], source), source
            start = match.end()
    if depth:
        raise TreebankError(f"{path}:{line_at(start)}: this tree's brackets never close")
    if text[start:].strip():
        stray = start + len(text[start:]) - len(text[start:].lstrip())
        raise TreebankError(f"{path}:{line_at(stray)}: text outside any tree: {text[stray:].strip()[:40]!r}")


def _parse_tree(bracketed: str, source: str) -> Tree:
    try:
        tree = Tree.fromstring(bracketed, remove_empty_top_bracketing=True)
    except ValueError as err:
        raise TreebankError(f"{source}: malformed tree ({err})") from None
    if isinstance(tree, str) or not tree.leaves():
        raise TreebankError(f"{source}: a tree with no leaves")
    return tree


def gold_sentence(tree: Tree, source: str = "") -> GoldSentence:
    """Words and constituents of a gold tree under the paper's protocol."""

    def is_word(_: int, preterminal: Tree | None) -> bool:
        return preterminal is not None and preterminal.label() in WORD_TAGS

    words = tuple(word for word, tag in tree.pos() if tag in WORD_TAGS)
    labeled = tuple((_bare_label(label), start, end) for label, start, end in labeled_spans(tree, is_word))
    return GoldSentence(words, frozenset((s, e) for _, s, e in labeled), labeled, source)


def _bare_label(label: str) -> str:
    """NP-SBJ-1 -> NP, PP=2 -> PP; -NONE- style labels stay whole."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0]


def read_gold(path: str) -> Iterator[GoldSentence]:
    """Every gold sentence under PATH, in file order."""
    for file in tree_files(path):
        for tree, source in read_trees(file):
            yield gold_sentence(tree, source)
