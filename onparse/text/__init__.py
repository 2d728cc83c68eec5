"""Text as models read it: lines from a byte stream, batches, tokens per language, the vocabulary, what a model
reads of a sentence, training corpora and gold treebanks. No model.

Each module is imported by name (``from onparse.text import lines``): this package imports none of them, so
that a light one loads without the heavy ones."""

__all__ = ["lines", "batching", "tokenize", "language", "vocabulary", "reading", "corpus", "treebank"]
