"""onparse as a spaCy pipeline component: a constituency tree on every sentence of a Doc, with benepar's span
attributes.

Installed with onparse and spaCy (``pip install spacy``), it is registered
through spaCy's ``spacy_factories`` entry point, so any pipeline adds it by
name; the shipped model for ``nlp.lang`` is used unless ``model`` names
another. Sentences are the Doc's own (from a sentencizer or parser; where a
Doc has none, spaCy's rule-based sentencizer sets them, never one tree across
sentences), their tokens taken as spaCy split them, spaces left out, batched
across Docs.

What is found is kept in ``doc.user_data`` as plain numbers (token offsets
and vote shares), so Docs serialize (``to_bytes``, ``DocBin``, pickling,
``nlp.pipe(n_process=...)``) as any Doc does; the span attributes read it:
``parse_string``, ``constituents`` (every node in pre-order, single tokens
included), ``children``, ``parent`` and ``labels`` as benepar users know
them (onparse's trees are unlabeled: ``labels`` is ``("X",)`` for a constituent of two or more tokens, as
``parse_string`` writes it, and empty for a single token; a token answers
``labels``, ``parse_string`` and ``parent`` too), ``confidence`` (the share
of an ensemble's voters whose trees hold the span), and on each sentence
``onparse_tree`` (an nltk Tree) and ``onparse_constituents`` (the spans of
two or more words, the whole sentence first). A span that is no constituent
raises ``NonConstituentException``, as benepar's does; a sentence that could
not be parsed (only spaces, or over the word limit) answers None.

    >>> import spacy
    >>> nlp = spacy.blank("en")
    >>> _ = nlp.add_pipe("sentencizer"), nlp.add_pipe("onparse")
    >>> doc = nlp("The cat sat on the mat. Stocks fell.")
    >>> [sent._.parse_string for sent in doc.sents]
    ['(X (X The cat) (X sat (X on (X the mat))) .)', '(X Stocks fell .)']
    >>> [span.text for span in list(doc.sents)[0]._.onparse_constituents]
    ['The cat sat on the mat.', 'The cat', 'sat on the mat', 'on the mat', 'the mat']
    >>> [child.text for child in list(doc.sents)[0]._.children], doc[4:6]._.parent.text
    (['The cat', 'sat on the mat', '.'], 'on the mat')
    >>> [span.text for span in doc[3:6]._.constituents], doc[1]._.parent.text
    (['on the mat', 'on', 'the mat', 'the', 'mat'], 'The cat')
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from nltk import Tree
from spacy.language import Language
from spacy.pipeline import Sentencizer
from spacy.tokens import Doc, Span, Token

from onparse.config import ParseConfig
from onparse.parsing.parse import Parser
from onparse.store.shipped import SHIPPED_BY_LANGUAGE
from onparse.structures.trees import LABEL, TokenTree, bracketed, escape, from_spans, map_leaves
from onparse.text.language import visible

TREE, CONSTITUENTS = "onparse_tree", "onparse_constituents"  # onparse's own sentence attributes
KEY = "onparse"  # doc.user_data[KEY]: {a sentence's first token: what was found in it}, plain data that serializes
LENGTH = "onparse_tokens"  # doc.user_data[LENGTH]: the Doc's tokens when it was parsed


@Language.factory(
    "onparse",
    default_config={
        "model": None,
        "batch_size": 64,
        "device": "cpu",
        "layer": None,
        "max_words": ParseConfig.max_words,
    },
)
def make_onparse(
    nlp: Language, name: str, model: str | None, batch_size: int, device: str, layer: Any, max_words: int
) -> "ConstituencyParser":
    """The component spaCy builds for ``nlp.add_pipe("onparse", config={...})``.

    ``spacy.blank("zh")`` splits Chinese into characters, and onparse's
    Chinese model reads words as jieba segments them: the pipeline's
    tokenizer is switched to spaCy's jieba segmenter, with a warning.
    """
    component = ConstituencyParser(
        nlp.lang, model, batch_size=batch_size, device=device, layer=layer, max_words=max_words
    )
    if component.parser.language == "zh" and getattr(nlp.tokenizer, "segmenter", None) == "char":
        from spacy.lang.zh import ChineseTokenizer, Segmenter

        warnings.warn(
            "onparse: spacy.blank('zh') splits characters, and the Chinese model reads jieba's words: this "
            "pipeline's tokenizer now segments with jieba (spacy.blank('zh', config={'nlp': {'tokenizer': "
            "{'segmenter': 'jieba'}}}) says so from the start)",
            stacklevel=2,
        )
        nlp.tokenizer = ChineseTokenizer(nlp.vocab, segmenter=Segmenter.jieba)
    return component


class ConstituencyParser:
    """Parses each sentence of each Doc and keeps its constituents in ``doc.user_data``; the span attributes read
    them (None on a sentence that could not be parsed: only spaces, or over the word limit)."""

    def __init__(self, lang: str, model: str | None = None, batch_size: int = 64, device: str = "cpu", **settings: Any):
        if model is None and lang not in SHIPPED_BY_LANGUAGE:
            raise ValueError(
                f"onparse ships no model for language {lang!r} (it has {', '.join(sorted(SHIPPED_BY_LANGUAGE))}): "
                "train one with onparse fit and name it in the component's config as model"
            )
        if type(batch_size) is not int:
            raise ValueError(f"the onparse component's batch_size must be a whole number, not {batch_size!r}")
        if batch_size < 1:
            warnings.warn(f"onparse: batch_size {batch_size} is no batch: Docs are parsed one at a time", stacklevel=2)
        self.parser = Parser.load(model or SHIPPED_BY_LANGUAGE[lang], device=device, **settings)
        if self.parser.language != lang and lang != "xx":  # spaCy's multi-language pipeline takes any model
            raise ValueError(
                f"onparse: the model {model} reads {self.parser.language!r} text and this pipeline is "
                f"{lang!r}: its tokens would not be the model's (use spacy.blank({self.parser.language!r}))"
            )
        self.batch_size = max(1, batch_size)  # Docs whose sentences are sorted into batches together
        self.sentencizer = Sentencizer()  # sentence boundaries where a Doc arrives without any
        for name, getter in GETTERS.items():
            if not Span.has_extension(name):
                Span.set_extension(name, getter=getter)
        for name in TOKEN_ATTRIBUTES:  # a token answers as the one-token span it is
            if not Token.has_extension(name):
                Token.set_extension(
                    name, getter=lambda token, of_span=GETTERS[name]: of_span(token.doc[token.i : token.i + 1])
                )

    def __call__(self, doc: Doc) -> Doc:
        return next(self.pipe([doc]))

    def pipe(self, docs: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        docs = iter(docs)
        while group := list(islice(docs, batch_size or self.batch_size)):
            for doc in group:
                if not doc.has_annotation("SENT_START"):  # no sentencizer or parser before it: spaCy's rule-based one
                    self.sentencizer(doc)
                doc.user_data[LENGTH] = len(doc)  # parsed (what it can be), at this many tokens
            sentences = [sent for doc in group for sent in doc.sents]
            tokens = [[token.i for token in sent if not _blank(token)] for sent in sentences]
            parses = self.parser.parse_stream(
                [[sent.doc[i].text for i in kept] or None for sent, kept in zip(sentences, tokens)],
                window=len(tokens),
                invalid=lambda position, error: None,
            )
            for sent, kept, parse in zip(sentences, tokens, parses):
                if parse is not None:
                    found = parse.constituent_spans()
                    sent.doc.user_data.setdefault(KEY, {})[sent.start] = {
                        "end": sent.end,
                        "tokens": kept,
                        "chars": [sent.doc[i].idx for i in kept],
                        "spans": [list(span) for span in found],
                        "confidence": [round(parse.confidence(span), 4) for span in found],
                    }
            yield from group


class NonConstituentException(ValueError):
    """A span asked for what only a constituent of its sentence's tree has (benepar raises one of this name)."""


@dataclass
class _Node:
    """A node of a sentence's tree (a constituent, or one token as an int leaf) and the kept tokens it covers."""

    node: Tree | int
    start: int  # its first kept token's position, and one past its last
    end: int
    parent: int | None  # the index of the node above it in the sentence's pre-order list


def _sentence(span: Span) -> tuple[dict, list[_Node]] | None:
    """What was found in the sentence holding ``span``, and its tree's nodes in pre-order (one pass, no recursion:
    a right-branching tree of thousands of words is as easy as a short one)."""
    doc = span.doc
    if LENGTH not in doc.user_data:  # as benepar says: no parser ran on this Doc
        raise ValueError(
            "onparse: no parse is kept in this Doc: it was never parsed (add the component with "
            'nlp.add_pipe("onparse")), or was made by Doc.from_docs, which keeps none: run the component on it'
        )
    if doc.user_data.get(LENGTH, len(doc)) != len(doc):
        raise ValueError(
            "onparse: this Doc's tokens changed after it was parsed (retokenized, or a span copied "
            "with as_doc): run the onparse component on it again"
        )
    for start, found in doc.user_data.get(KEY, {}).items():
        if start <= span.start and span.end <= found["end"]:
            if not all(i < len(doc) and doc[i].idx == char for i, char in zip(found["tokens"], found.get("chars", []))):
                raise ValueError(
                    "onparse: this Doc's tokens changed after it was parsed (retokenized, or a span copied "
                    "with as_doc): run the onparse component on it again"
                )
            tree = from_spans(len(found["tokens"]), map(tuple, found["spans"]))
            nodes: list[_Node] = []
            pending: list[tuple[Tree | int, int | None]] = [(tree, None)]
            while pending:
                node, parent = pending.pop()
                nodes.append(
                    _Node(node, node, node + 1, parent) if isinstance(node, int) else _Node(node, 0, 0, parent)
                )
                if isinstance(node, Tree):
                    pending.extend((child, len(nodes) - 1) for child in reversed(node))
            for node in reversed(nodes):  # children come after their parent in pre-order: extents grow bottom-up
                if node.parent is not None:
                    above = nodes[node.parent]
                    above.start = node.start if above.end == 0 else min(above.start, node.start)
                    above.end = max(above.end, node.end)
            return found, nodes
    return None


def _as_span(doc: Doc, tokens: list[int], node: _Node) -> Span:
    return doc[tokens[node.start] : tokens[node.end - 1] + 1]


def _blank(token: Token) -> bool:
    """A token the parser leaves out: whitespace, or invisible marks alone (a zero-width space), as onparse's own
    tokenizers drop them (``language.tokenizer``)."""
    return token.is_space or not visible(token.text)


def _edges(span: Span) -> tuple[int, int]:
    """Where ``span`` starts and ends once spaces at its edges are left out (as the parser leaves them out)."""
    start, end = span.start, span.end
    while start < end and _blank(span.doc[start]):
        start += 1
    while end > start and _blank(span.doc[end - 1]):
        end -= 1
    return start, end


def _node(span: Span) -> tuple[dict, list[_Node], int] | None:
    """The sentence's record, its nodes and the index of the one that is exactly ``span`` (a constituent, or a
    single token; the highest such node); None where the sentence was not parsed; NonConstituentException where
    no node is ``span``."""
    found = _sentence(span)
    if found is None:
        return None
    record, nodes = found
    wanted = _edges(span)
    tokens = record["tokens"]
    for index, node in enumerate(nodes):
        if (tokens[node.start], tokens[node.end - 1] + 1) == wanted:
            return record, nodes, index
    raise NonConstituentException(
        f"onparse: {span.text!r} (tokens {span.start} to {span.end - 1}) is no constituent of its sentence's tree"
    )


def _tree(span: Span) -> Tree | str | None:
    """The tree of a constituent (a single token's: its text); of a span of whole sentences (``doc[:]``), their
    trees under one root."""
    sentences = [sent for sent in span.sents] if span.doc.has_annotation("SENT_START") else []
    if len(sentences) > 1 and (sentences[0].start, sentences[-1].end) == (span.start, span.end):
        trees = [_tree(sent) for sent in sentences]
        return Tree(LABEL, trees) if all(tree is not None for tree in trees) else None
    found = _node(span)
    if found is None:
        return None
    record, nodes, index = found
    node = nodes[index].node
    word = lambda position: span.doc[record["tokens"][position]].text  # noqa: E731
    return map_leaves(node, word) if isinstance(node, Tree) else word(node)


def _sentence_tree(span: Span) -> Tree | None:
    tree = _tree(span)
    return TokenTree.convert(tree) if isinstance(tree, Tree) else None  # as ``Parse.text_tree``: drawn in order


def _parse_string(span: Span) -> str | None:
    """The bracketed tree of a constituent (a single token's: its text; of whole sentences: their trees under one
    root)."""
    tree = _tree(span)
    if tree is None:
        return None
    return escape(tree) if isinstance(tree, str) else bracketed(map_leaves(tree, escape))  # read back as the tokens


def _labels(span: Span) -> tuple[str, ...] | None:
    """benepar's labels of a constituent: ``("X",)`` where ``parse_string`` writes a node, none for a single token."""
    found = _node(span)
    return None if found is None else (LABEL,) if isinstance(found[1][found[2]].node, Tree) else ()


def _nodes_within(span: Span, tokens_too: bool) -> list[Span] | None:
    """The nodes within ``span`` in pre-order, ``span`` first: its node and those after it in the pre-order list
    until the first that lies outside it; single tokens among them with ``tokens_too``."""
    found = _node(span)
    if found is None:
        return None
    record, nodes, index = found
    top = nodes[index]
    inside = []
    for node in nodes[index:]:
        if node is not top and not top.start <= node.start < top.end:
            break
        if tokens_too or isinstance(node.node, Tree):
            inside.append(_as_span(span.doc, record["tokens"], node))
    return inside


def _children(span: Span) -> list[Span] | None:
    found = _node(span)
    if found is None:
        return None
    record, nodes, index = found
    return [_as_span(span.doc, record["tokens"], node) for node in nodes[index + 1 :] if node.parent == index]


def _parent(span: Span) -> Span | None:
    found = _node(span)
    if found is None:
        return None
    record, nodes, index = found
    parent = nodes[index].parent
    return None if parent is None else _as_span(span.doc, record["tokens"], nodes[parent])


def _confidence(span: Span) -> float | None:
    """The share of the voters whose trees hold the constituent ``span`` (a single token: every tree holds it)."""
    found = _node(span)
    if found is None:
        return None
    record, _, _ = found
    for (start, end), share in zip(record["spans"], record["confidence"]):
        if (record["tokens"][start], record["tokens"][end - 1] + 1) == _edges(span):
            return share
    return 1.0


GETTERS = {
    TREE: _sentence_tree,
    CONSTITUENTS: lambda span: _nodes_within(span, tokens_too=False),
    "parse_string": _parse_string,
    "constituents": lambda span: _nodes_within(span, tokens_too=True),
    "children": _children,
    "parent": _parent,
    "labels": _labels,
    "confidence": _confidence,
}
TOKEN_ATTRIBUTES = ("labels", "parse_string", "parent")  # benepar's attributes of a token
