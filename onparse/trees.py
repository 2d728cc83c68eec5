"""The import path of ``onparse.structures.trees`` as 0.2's examples gave it, kept for code written against it."""

from onparse.structures.trees import bracketed, build_tree, right_branching, spans

__all__ = ["bracketed", "build_tree", "right_branching", "spans"]
