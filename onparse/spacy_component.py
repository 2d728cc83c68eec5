"""onparse as a spaCy pipeline component: a constituency tree on every sentence of a Doc.

Installed with onparse (``pip install 'onparse[spacy]'``), it is registered
through spaCy's ``spacy_factories`` entry point, so any pipeline adds it by
name; the shipped model for ``nlp.lang`` is used unless ``model`` names
another. Sentences are the Doc's own (from a sentencizer or parser; the whole
Doc where it has none), their tokens taken as spaCy split them, spaces left
out, batched across Docs.

    >>> import spacy
    >>> nlp = spacy.blank("en")
    >>> _ = nlp.add_pipe("sentencizer"), nlp.add_pipe("onparse")
    >>> doc = nlp("The cat sat on the mat. Stocks fell.")
    >>> [str(sent._.onparse_tree) for sent in doc.sents]
    ['(X (X The (X cat sat)) (X on (X the mat)) .)', '(X Stocks fell .)']
    >>> [span.text for span in list(doc.sents)[0]._.onparse_constituents]
    ['The cat sat on the mat.', 'The cat sat', 'cat sat', 'on the mat', 'the mat']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from spacy.language import Language
from spacy.tokens import Doc, Span

from onparse.formats import constituent_spans
from onparse.modeldir import SHIPPED_BY_LANGUAGE
from onparse.parse import Parser

TREE, CONSTITUENTS = "onparse_tree", "onparse_constituents"  # the Span extensions set on each sentence


@Language.factory("onparse", default_config={"model": None, "batch_size": 64, "device": "cpu"})
def make_onparse(nlp: Language, name: str, model: str | None, batch_size: int, device: str) -> "ConstituencyParser":
    """The component spaCy builds for ``nlp.add_pipe("onparse", config={...})``."""
    return ConstituencyParser(nlp.lang, model, batch_size=batch_size, device=device)


class ConstituencyParser:
    """Sets ``sent._.onparse_tree`` (an nltk Tree over the sentence's tokens) and ``sent._.onparse_constituents``
    (each constituent as a Span, the whole sentence first); both stay None for a sentence that cannot be parsed
    (only spaces, or over the word limit)."""

    def __init__(self, lang: str, model: str | None = None, batch_size: int = 64, device: str = "cpu", **settings: Any):
        if model is None and lang not in SHIPPED_BY_LANGUAGE:
            raise ValueError(f"onparse ships no model for language {lang!r} (it has {', '.join(sorted(SHIPPED_BY_LANGUAGE))}): "
                             "train one with onparse fit and name it in the component's config as model")
        self.parser = Parser.load(model or SHIPPED_BY_LANGUAGE[lang], device=device, **settings)
        self.batch_size = batch_size  # Docs whose sentences are sorted into batches together
        for extension in (TREE, CONSTITUENTS):
            if not Span.has_extension(extension):
                Span.set_extension(extension, default=None)

    def __call__(self, doc: Doc) -> Doc:
        return next(self.pipe([doc]))

    def pipe(self, docs: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        docs = iter(docs)
        while group := list(islice(docs, batch_size or self.batch_size)):
            sentences = [sent for doc in group for sent in (doc.sents if doc.has_annotation("SENT_START") else [doc[:]])]
            tokens = [[token for token in sent if not token.is_space] for sent in sentences]
            parses = self.parser.parse_stream([[token.text for token in kept] or None for kept in tokens],
                                              window=len(tokens), invalid=lambda position, error: None)
            for sent, kept, parse in zip(sentences, tokens, parses):
                if parse is not None:
                    sent._.set(TREE, parse.text_tree)
                    sent._.set(CONSTITUENTS, [sent.doc[kept[start].i : kept[end - 1].i + 1]
                                              for start, end in constituent_spans(parse)])
            yield from group

