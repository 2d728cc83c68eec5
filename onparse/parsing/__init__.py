"""Parsing with loaded models: one parsed sentence (``parsed``), the parser (``parse``), output formats, evaluation
on gold trees, ensembles and what people see (``report``).

Each module is imported by name (``from onparse.parsing import parsed``): this package imports none of them, so
that a light one loads without the heavy ones."""

__all__ = ["parsed", "parse", "formats", "evaluate", "ensemble", "report"]
