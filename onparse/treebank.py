"""The import path of ``onparse.text.treebank`` as 0.2's examples gave it, kept for code written against it."""

from onparse.text.treebank import gold_sentence, read_trees

__all__ = ["gold_sentence", "read_trees"]
