"""Models on disk: outputs opened once complete (``atomic``), model folders checked (``folders``), shipped models
found by name (``shipped``), model directories loaded and saved (``modeldir``), packed as pip packages
(``packaging``) and quantized (``quantize``).

Each module is imported by name (``from onparse.store import atomic``): this package imports none of them, so
that a light one loads without the heavy ones."""

__all__ = ["atomic", "folders", "shipped", "modeldir", "packaging", "quantize"]
