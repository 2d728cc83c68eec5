"""The import path of ``onparse.structures.scoring`` as 0.2's examples gave it, kept for code written against it."""

from onparse.structures.scoring import score

__all__ = ["score"]
