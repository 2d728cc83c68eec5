"""Training a member or a student: torchrun"s ranks (``distributed``), the one training loop (``train``),
distillation (``distill``), the console (``progress``), run folders (``runfolder``) and a fit"s budget.

Each module is imported by name (``from onparse.training import distributed``): this package imports none of them, so
that a light one loads without the heavy ones."""

__all__ = ["distributed", "train", "distill", "progress", "runfolder", "budget"]
