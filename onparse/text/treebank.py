"""Reading gold trees as treebanks release them: LDC .mrg files, folders of them, globs, one-tree-per-line files.

Every top-level bracketed expression is one tree, so the multi-line LDC layout
(each tree wrapped in an unlabeled outer bracket) and one-tree-per-line files
read alike; between trees, document markup lines (``<DOC>``, ``<S ID=2>``,
``<DATE> ... </DATE>``) and ``%%`` comment lines are skipped, and files are
read in a stated encoding (UTF-8 by default).

Which leaves are words is the treebank's own rule (``WordRule``): the Penn
Treebank's word tags for English, everything but ``PU`` for the Chinese
Treebank, everything but the ``$`` tags for NEGRA and TIGER, or, for other
treebanks, named punctuation tags and a fallback on the Unicode categories of
the leaves themselves. Empty elements are never words: Penn's ``-NONE-``,
NEGRA's and TIGER's traces (``(*T1*-MO -)``). The rule is
recognised from a file's tags unless given, and named in the protocol line.
"""

from __future__ import annotations

import gc
import glob
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from nltk import Tree

from onparse.structures.trees import bracketed, leaf_parents
from onparse.text.language import Sentence

# Penn Treebank POS tags of real words; every other leaf (punctuation, $, #,
# -NONE- empty elements, -LRB-/-RRB-) is outside the ON-LSTM paper's protocol.
WORD_TAGS = frozenset(
    "CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR "
    "RBS RP SYM TO UH VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB".split()
)

# Tags of the Penn Treebank's non-words: a file whose tags are nearly all Penn tags follows the Penn rule.
PTB_OTHER_TAGS = frozenset(", . : `` '' -LRB- -RRB- -LCB- -RCB- # $ -NONE- NFP HYPH AFX ADD XX".split())
EMPTY = "-NONE-"
# NEGRA's and TIGER's empty elements: a trace's tag names its index (``*T1*``, with a function label: ``*T1*-MO``)
TRACE = re.compile(r"\*T\d+\*")


def is_empty(tag: str) -> bool:
    """Whether a leaf's tag marks an empty element (Penn's ``-NONE-``, NEGRA's and TIGER's traces): no text at all."""
    bare = _bare_label(tag)
    return bare == EMPTY or TRACE.fullmatch(bare) is not None


@dataclass(frozen=True)
class WordRule:
    """Which leaves of a treebank are words; the others (punctuation, empty elements) are left out of scoring.

    Tags are compared without function labels (``$,-NK`` as ``$,``). With
    ``word_tags`` only those tags are words; otherwise a leaf is a word unless
    its tag is a punctuation tag or starts with ``punctuation_prefix``; with
    neither, unless it is made only of Unicode punctuation and symbols.
    """

    name: str
    description: str  # for the protocol line
    word_tags: frozenset[str] | None = None
    punctuation_tags: frozenset[str] = frozenset()
    punctuation_prefix: str = ""

    def is_word(self, tag: str, leaf: str) -> bool:
        if is_empty(tag):  # empty elements are never words, in any treebank
            return False
        tag = _bare_label(tag)
        if self.word_tags is not None:
            return tag in self.word_tags
        if self.punctuation_tags or self.punctuation_prefix:
            return tag not in self.punctuation_tags and not (
                self.punctuation_prefix and tag.startswith(self.punctuation_prefix)
            )
        return not all(unicodedata.category(c)[0] in "PS" for c in leaf)


RULES = {
    "ptb": WordRule(
        "ptb",
        "words are the leaves whose POS tag is a word tag (punctuation, $, # and -NONE- dropped)",
        word_tags=WORD_TAGS,
    ),
    "ctb": WordRule(
        "ctb",
        "words are the leaves not tagged PU or -NONE- (the Chinese Treebank's rule)",
        punctuation_tags=frozenset({"PU"}),
    ),
    "negra": WordRule(
        "negra",
        "words are the leaves neither traces (*T1*) nor tagged -NONE- or with a tag starting with $ "
        "(NEGRA and TIGER's rule)",
        punctuation_prefix="$",
    ),
    "unicode": WordRule(
        "unicode",
        "words are the leaves not tagged -NONE- and not made only of Unicode punctuation "
        "and symbols (no rule was named for this treebank's tags)",
    ),
}


def punctuation_rule(tags: list[str]) -> WordRule:
    """A rule naming a treebank's punctuation tags: every other leaf (but -NONE-) is a word."""
    named = frozenset(_bare_label(tag) for tag in tags)
    return WordRule(
        "tags",
        f"words are the leaves not tagged -NONE- or {', '.join(sorted(named))} (punctuation tags as named)",
        punctuation_tags=named,
    )


def detect_rule(trees: list[Tree]) -> WordRule:
    """The word rule a treebank's tags call for: CTB's PU, NEGRA's $-tags, Penn tags, or the Unicode fallback."""
    tags = Counter(_bare_label(parent.label()) for tree in trees for _, parent in leaf_parents(tree))
    if tags["PU"]:
        return RULES["ctb"]
    if any(tag.startswith("$") and len(tag) > 1 for tag in tags):
        return RULES["negra"]
    penn = sum(count for tag, count in tags.items() if tag in WORD_TAGS or tag in PTB_OTHER_TAGS)
    return RULES["ptb"] if penn >= 0.9 * sum(tags.values()) else RULES["unicode"]


# An opening bracket with its label (empty when another bracket follows), a closing one, or a leaf.
_TOKENS = re.compile(r"\(\s*[^\s()]*|\)|[^\s()]+")
_CHUNK = 2000  # trees read and converted per pause of the garbage collector
# A line of document markup (<DOC>, <S ID=2>, <DATE> 2000 </DATE>) or a %% comment, skipped between trees.
_MARKUP = re.compile(r"\s*(<.*>\s*$|%%)")
Converted = TypeVar("Converted")


class TreebankError(ValueError):
    """A gold file that cannot be read, with the file and line it concerns."""


class MissingPath(TreebankError):
    """A path a user gave that names nothing: a problem with the command (exit 2, as a missing input file)."""


@dataclass(frozen=True)
class GoldSentence:
    """The words of a gold tree and its constituents over those words, and its tokens (punctuation too) for reading."""

    words: tuple[str, ...]
    spans: frozenset[tuple[int, int]]  # (start, end) of every constituent of two or more words
    labeled: tuple[tuple[str, int, int], ...]  # (label without function tags, start, end)
    source: str  # "file:line" where the tree starts
    tokens: tuple[str, ...] = ()  # every leaf but empty elements (absent: the words alone)
    positions: tuple[int, ...] = ()  # where each word stands among the tokens

    @property
    def sentence(self) -> Sentence:
        """What a model reads of this sentence: its tokens, and which of them are the words."""
        if not self.tokens:
            return Sentence(self.words, tuple(range(len(self.words))))
        return Sentence(self.tokens, self.positions)


def tree_files(path: str) -> list[Path]:
    """The files a user's PATH names: one file (or pipe, or device), every .mrg below a folder, or a glob's matches."""
    candidate = Path(path)
    if candidate.is_dir():
        return _folder_files(candidate, path)
    if candidate.exists():  # a regular file, a pipe such as <(cat f.mrg), /dev/null: read as it is
        return [candidate]
    if candidate.is_symlink():
        raise MissingPath(f"{path}: a symbolic link to nothing (its target is missing)")
    matches = sorted(Path(p) for p in glob.glob(path, recursive=True) if Path(p).exists())
    if not matches:
        raise MissingPath(f"{path}: no such file, folder or glob match")
    found = [file for match in matches for file in (_folder_files(match, str(match)) if match.is_dir() else [match])]
    once: dict[
        Path, Path
    ] = {}  # 'dir/**' names a file as itself and again in its folder: read it once, where first named
    for file in found:
        once.setdefault(file.resolve(), file)
    return list(once.values())


def _folder_files(folder: Path, path: str) -> list[Path]:
    files = sorted(p for p in folder.rglob("*.[mM][rR][gG]") if p.is_file())
    if not files:
        raise TreebankError(f"{path}: no .mrg files in this folder")
    return files


def read_trees(path: Path, encoding: str = "UTF-8") -> Iterator[tuple[Tree, str]]:
    """Each tree in one file with the ``file:line`` where it starts.

    Brackets and words are split line by line and every tree is built on a
    stack, with no recursion, so trees of any depth read (nltk's
    ``Tree.fromstring`` recurses, and costs about 1 ms a tree with its
    pattern checks). As there, an opening bracket's first word is its label
    (empty when another bracket follows at once), and an unlabeled outer
    bracket around a single tree (the LDC layout) is removed.
    """
    for chunk in _chunks(path, lambda tree, source: (tree, source), encoding):
        yield from chunk


def read_each(
    path: str, convert: Callable[[Tree, str], Converted], encoding: str = "UTF-8", empty_trees: bool = False
) -> Iterator[Converted]:
    """``convert(tree, source)`` for every tree of every file PATH names, in file order.

    Trees are read and converted a few thousand at a time with the cyclic
    garbage collector paused: trees hold no reference cycles, and millions
    of new nodes would otherwise set the collector off again and again for
    nothing (it halves the time to read 100,000 trees).
    """
    for file in tree_files(path):
        for chunk in _chunks(file, convert, encoding, empty_trees):
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


def codec(encoding: str) -> str:
    """The codec that reads a file in ``encoding``: UTF-8 drops a byte-order mark at the start."""
    return "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding


# No treebank or corpus writes a line this long; /dev/zero, a binary file or a file without line breaks do.
LINE_CHARACTERS = 1 << 20


def text_lines(path: Path, encoding: str = "UTF-8") -> Iterator[tuple[int, str]]:
    """Each line of a text file (numbered from 1, without its line break) in bounded memory: TreebankError naming
    the file and line for an unknown encoding, bytes that are not ``encoding`` text, or a line too long to be text."""
    try:
        stream = open(path, encoding=codec(encoding))
    except LookupError:
        raise TreebankError(f"{encoding!r} is not an encoding Python knows (latin-1, gb18030, utf-8, ...)") from None
    except OSError as err:
        raise TreebankError(f"{path}: {err.strerror}") from None
    number = 0
    with stream:
        try:
            while line := stream.readline(LINE_CHARACTERS + 1):
                number += 1
                if len(line) > LINE_CHARACTERS:
                    raise TreebankError(
                        f"{path}:{number}: a line of more than {LINE_CHARACTERS:,} characters: not text"
                    )
                yield number, line.rstrip("\r\n")
        except UnicodeDecodeError as err:
            raise TreebankError(
                f"{path}:{number + 1}: not {encoding} text ({err.reason}); name the file's encoding with --encoding"
            ) from None
        except OSError as err:
            raise TreebankError(f"{path}: {err.strerror}") from None


def _chunks(
    path: Path, convert: Callable[[Tree, str], Converted], encoding: str = "UTF-8", empty_trees: bool = False
) -> Iterator[list[Converted]]:
    lines = text_lines(path, encoding)
    state = _ReadState(path, empty_trees)
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

    def __init__(self, path: Path, empty_trees: bool = False):
        self.path, self.empty_trees = path, empty_trees  # whether "(X )" is a tree (another parser's, of no words)
        self.open_nodes: list[Tree] = []
        self.source = ""
        self.error: TreebankError | None = None  # raised once the trees read before it are handed on

    def read(self, lines: Iterator[tuple[int, str]], trees: int) -> list[tuple[Tree, str]]:
        """Up to ``trees`` more complete trees (fewer only at the end of the file, or before an ``error``)."""
        found: list[tuple[Tree, str]] = []
        open_nodes = self.open_nodes
        for number, line in lines:
            if not open_nodes and _MARKUP.match(line):  # document markup or a comment between trees
                continue
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
                            found.append((_unwrapped(tree, self.source, self.empty_trees), self.source))
                        except TreebankError as err:
                            self.error = err
                            return found
                else:
                    open_nodes[-1].append(token)
            if len(found) >= trees:
                break
        return found


def _unwrapped(tree: Tree, source: str, empty_trees: bool = False) -> Tree:
    if tree.label() == "" and len(tree) == 1:
        tree = tree[0]
    if isinstance(tree, Tree) and empty_trees and not len(tree):
        return tree
    if not isinstance(tree, Tree) or not any(True for _ in leaf_parents(tree)):
        raise TreebankError(f"{source}: a tree with no leaves")
    return tree


def gold_sentence(tree: Tree, source: str = "", rule: WordRule = RULES["ptb"]) -> GoldSentence:
    """Words and constituents of a gold tree under the paper's protocol, in one walk of the tree.

    A part-of-speech node (one bracket around one leaf) that ``rule`` calls a
    word adds a word; every other node adds its label over the words below it
    when they are two or more. A bare leaf beside bracketed siblings has no
    tag, so it is no word of the treebank's: the released CTB holds such a
    misplaced label (``(CP ((WHNP-4 ...) CP (IP ...``), and it is left out. A
    node of bare leaves alone (``(S the cat)``) is no tagged tree, and is
    refused (TreebankError naming its file and line) rather than guessed at.
    """
    words: list[str] = []
    tokens: list[str] = []
    positions: list[int] = []
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
                if rule.is_word(node.label(), only):
                    words.append(only)
                    positions.append(len(tokens))
                if _bare_label(node.label()) != EMPTY:
                    tokens.append(only)
                continue
        subtrees = [child for child in node if isinstance(child, Tree)]
        if not subtrees and len(node):
            raise TreebankError(
                f"{source}: {node[0]!r} is not the only child of a part-of-speech bracket "
                f"({bracketed(node)[:60]!r}): gold trees tag every word"
            )
        pending.append((node, len(words)))
        pending.extend((child, -1) for child in reversed(subtrees))
    return GoldSentence(
        tuple(words), frozenset((s, e) for _, s, e in labeled), tuple(labeled), source, tuple(tokens), tuple(positions)
    )


@lru_cache(maxsize=4096)
def _bare_label(label: str) -> str:
    """NP-SBJ-1 -> NP, PP=2 -> PP; -NONE- style labels stay whole."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0]


def named_rule(words: str) -> WordRule:
    """A word rule by name (a key of ``RULES``) or by the treebank's punctuation tags (``"tags:PU,HYPH"``; where a
    tag holds a comma, as NEGRA's ``$,`` does, the tags are separated by ``;``: ``"tags:$,;$.;$("``)."""
    if words in RULES:
        return RULES[words]
    if words.startswith("tags:") and words[5:].strip(","):
        return punctuation_rule([tag for tag in words[5:].split(";" if ";" in words else ",") if tag])
    raise TreebankError(f"unknown word rule {words!r}: one of {', '.join(RULES)}, or tags:TAG,TAG,...")


class GoldReader:
    """Every gold sentence under PATH, in file order, read once (pipes too); ``rule`` says which leaves are words.

    Without a rule, each file's first trees' tags choose one (``detect_rule``);
    it is in ``rule`` once they are read, and files whose tags call for
    different rules (a Penn file beside CTB files) are an error, never scored
    under one file's rule. A treebank of which the rule makes most leaves
    non-words (in a file's first trees) is an error (its tags are not the
    rule's), never a table of perfect scores.
    """

    def __init__(self, path: str, rule: WordRule | None = None, encoding: str = "UTF-8"):
        self.path, self.rule, self.encoding = path, rule, encoding
        self.named = rule is not None

    def __iter__(self) -> Iterator[GoldSentence]:
        for file in tree_files(self.path):
            first = True
            for chunk in _chunks(file, lambda tree, source: (tree, source), self.encoding):
                if first and chunk and not self.named:
                    found = detect_rule([tree for tree, _ in chunk])
                    if self.rule is not None and found != self.rule:
                        raise TreebankError(
                            f"{self.path} mixes treebanks: {file} reads under the {found.name} rule, the "
                            f"files before it under the {self.rule.name} rule; score them apart, or name "
                            "one rule with --words"
                        )
                    self.rule = found
                with collector_paused():
                    sentences = [gold_sentence(tree, source, self.rule) for tree, source in chunk]
                if first and chunk:  # a file's first trees show whether the rule fits its tags
                    self._check_rule(chunk, sentences)
                    first = False
                yield from sentences

    def _check_rule(self, chunk: list[tuple[Tree, str]], sentences: list[GoldSentence]) -> None:
        """TreebankError where the rule makes most leaves non-words: punctuation is a fraction of a treebank's
        leaves."""
        leaves = sum(parent.label() != EMPTY for tree, _ in chunk for _, parent in leaf_parents(tree))
        words = sum(len(sentence.words) for sentence in sentences)
        if words < leaves / 2:
            raise TreebankError(
                f"{self.path}: only {words:,} of {leaves:,} leaves are words under the {self.rule.name} rule "
                f"({self.rule.description}): name the treebank's rule or punctuation tags with --words"
            )


def read_gold(path: str, rule: WordRule | None = None, encoding: str = "UTF-8") -> GoldReader:
    """Every gold sentence under PATH (see ``GoldReader``)."""
    return GoldReader(path, rule, encoding)


def check_gold(path: str, encoding: str = "UTF-8") -> None:
    """TreebankError, before any work, for gold trees that hold no sentence to score (an empty file or folder):
    every command that scores on gold checks here, so that none fails on an empty set after its work."""
    if next(iter(read_gold(path, encoding=encoding)), None) is None:
        raise TreebankError(f"{path}: no gold trees to score (an empty file, or no tree in it)")
