"""Reading gold trees: LDC .mrg files, folders of them, globs, or one-tree-per-line files.

Every top-level bracketed expression is one tree, so the multi-line LDC layout
(each tree wrapped in an unlabeled outer bracket) and one-tree-per-line files
read alike. Words are the leaves whose POS tag is a word tag, as in the ON-LSTM
paper: punctuation, ``$``, ``#`` and ``-NONE-`` empty elements are dropped.
"""

from __future__ import annotations

import gc
import glob
import re
from functools import lru_cache
from typing import TypeVar
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nltk import Tree

from onparse.trees import bracketed, leaf_parents

# Penn Treebank POS tags of real words; every other leaf (punctuation, $, #,
# -NONE- empty elements, -LRB-/-RRB-) is outside the ON-LSTM paper's protocol.
WORD_TAGS = frozenset(
    "CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR "
    "RBS RP SYM TO UH VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB".split()
)

# An opening bracket with its label (empty when another bracket follows), a closing one, or a leaf.
_TOKENS = re.compile(r"\(\s*[^\s()]*|\)|[^\s()]+")
_CHUNK = 2000  # trees read and converted per pause of the garbage collector
Converted = TypeVar("Converted")


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
    """The files a user's PATH names: one file (or pipe, or device), every .mrg below a folder, or a glob's matches."""
    candidate = Path(path)
    if candidate.is_dir():
        return _folder_files(candidate, path)
    if candidate.exists():  # a regular file, a pipe such as <(cat f.mrg), /dev/null: read as it is
        return [candidate]
    if candidate.is_symlink():
        raise TreebankError(f"{path}: a symbolic link to nothing (its target is missing)")
    matches = sorted(Path(p) for p in glob.glob(path, recursive=True) if Path(p).exists())
    if not matches:
        raise TreebankError(f"{path}: no such file, folder or glob match")
    return [file for match in matches for file in (_folder_files(match, str(match)) if match.is_dir() else [match])]


def _folder_files(folder: Path, path: str) -> list[Path]:
    files = sorted(p for p in folder.rglob("*.[mM][rR][gG]") if p.is_file())
    if not files:
        raise TreebankError(f"{path}: no .mrg files in this folder")
    return files


def read_trees(path: Path) -> Iterator[tuple[Tree, str]]:
    """Each tree in one file with the ``file:line`` where it starts.

    Brackets and words are split line by line and every tree is built on a
    stack, with no recursion, so trees of any depth read (nltk's
    ``Tree.fromstring`` recurses, and costs about 1 ms a tree with its
    pattern checks). As there, an opening bracket's first word is its label
    (empty when another bracket follows at once), and an unlabeled outer
    bracket around a single tree (the LDC layout) is removed.
    """
    for chunk in _chunks(path, lambda tree, source: (tree, source)):
        yield from chunk


def read_each(path: str, convert: Callable[[Tree, str], Converted]) -> Iterator[Converted]:
    """``convert(tree, source)`` for every tree of every file PATH names, in file order.

    Trees are read and converted a few thousand at a time with the cyclic
    garbage collector paused: trees hold no reference cycles, and millions
    of new nodes would otherwise set the collector off again and again for
    nothing (it halves the time to read 100,000 trees).
    """
    for file in tree_files(path):
        for chunk in _chunks(file, convert):
            yield from chunk


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside the block (reference counting still frees everything).

    For work that builds and keeps many acyclic objects (trees, gold
    sentences, span sets): the collector would walk them again and again.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _chunks(path: Path, convert: Callable[[Tree, str], Converted]) -> Iterator[list[Converted]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise TreebankError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise TreebankError(f"{path}: {err.strerror}") from None
    lines = enumerate(text.splitlines(), 1)
    state = _ReadState(path)
    while True:
        with collector_paused():
            chunk = [convert(tree, source) for tree, source in state.read(lines, trees=_CHUNK)]
        yield chunk
        if state.error:
            raise state.error
        if len(chunk) < _CHUNK:
            break
    if state.open_nodes:
        raise TreebankError(f"{state.source}: this tree's brackets never close")




_new_node = Tree.__new__


class _ReadState:
    """Where ``read_trees`` is in a file: the brackets still open, and where the tree they belong to began."""

    def __init__(self, path: Path):
        self.path = path
        self.open_nodes: list[Tree] = []
        self.source = ""
        self.error: TreebankError | None = None  # raised once the trees read before it are handed on

    def read(self, lines: Iterator[tuple[int, str]], trees: int) -> list[tuple[Tree, str]]:
        """Up to ``trees`` more complete trees (fewer only at the end of the file, or before an ``error``)."""
        found: list[tuple[Tree, str]] = []
        open_nodes = self.open_nodes
        for number, line in lines:
            for token in _TOKENS.findall(line):
                if token[0] == "(":
                    node = _new_node(Tree)  # Tree.__init__ only checks its children, and we have none yet
                    node.set_label(token[1:].lstrip())
                    if open_nodes:
                        open_nodes[-1].append(node)
                    else:
                        self.source = f"{self.path}:{number}"
                    open_nodes.append(node)
                elif not open_nodes:
                    self.error = TreebankError(f"{self.path}:{number}: text outside any tree: {line.strip()[:40]!r}")
                    return found
                elif token == ")":
                    tree = open_nodes.pop()
                    if not open_nodes:
                        try:
                            found.append((_unwrapped(tree, self.source), self.source))
                        except TreebankError as err:
                            self.error = err
                            return found
                else:
                    open_nodes[-1].append(token)
            if len(found) >= trees:
                break
        return found


def _unwrapped(tree: Tree, source: str) -> Tree:
    if tree.label() == "" and len(tree) == 1:
        tree = tree[0]
    if not isinstance(tree, Tree) or not any(True for _ in leaf_parents(tree)):
        raise TreebankError(f"{source}: a tree with no leaves")
    return tree


def gold_sentence(tree: Tree, source: str = "") -> GoldSentence:
    """Words and constituents of a gold tree under the paper's protocol, in one walk of the tree.

    A part-of-speech node (one bracket around one leaf) whose tag is a word
    tag adds a word; every other node adds its label over the words below it
    when they are two or more. A leaf anywhere else (a bare word among a
    node's subtrees) has no tag to say whether it is a word, so the tree is
    refused (TreebankError naming its file and line) rather than scored with
    a guess.
    """
    words: list[str] = []
    labeled: list[tuple[str, int, int]] = []
    pending: list = [(tree, -1)]  # (node, the word count where it began once entered; -1 before)
    while pending:
        node, start = pending.pop()
        if start >= 0:
            if len(words) - start >= 2:
                labeled.append((_bare_label(node.label()), start, len(words)))
            continue
        if len(node) == 1:
            (only,) = node
            if not isinstance(only, Tree):
                if node.label() in WORD_TAGS:
                    words.append(only)
                continue
        pending.append((node, len(words)))
        for child in reversed(node):
            if not isinstance(child, Tree):
                raise TreebankError(f"{source}: {child!r} is not the only child of a part-of-speech bracket "
                                    f"({bracketed(node)[:60]!r}): gold trees tag every word")
            pending.append((child, -1))
    return GoldSentence(tuple(words), frozenset((s, e) for _, s, e in labeled), tuple(labeled), source)


@lru_cache(maxsize=4096)
def _bare_label(label: str) -> str:
    """NP-SBJ-1 -> NP, PP=2 -> PP; -NONE- style labels stay whole."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0]


def read_gold(path: str) -> Iterator[GoldSentence]:
    """Every gold sentence under PATH, in file order."""
    return read_each(path, gold_sentence)
