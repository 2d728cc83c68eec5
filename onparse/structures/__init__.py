"""Trees and votes: the greedy builder and spans (``trees``), tree averaging (``voting``), the one tree builder
over any model"s outputs (``builder``) and the F1 protocol (``scoring``). Plain data, no torch.

Each module is imported by name (``from onparse.structures import trees``): this package imports none of them, so
that a light one loads without the heavy ones."""

__all__ = ["trees", "voting", "builder", "scoring"]
