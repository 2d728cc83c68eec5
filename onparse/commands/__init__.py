"""The command line below ``onparse.cli``: what every command shares (``common``: the group, one-line failures and
exit codes, checks before torch loads), the options declared once (``options``), and what each command does
between its options and the library (inputs and outputs opened, the library called, every failure one line and an
exit code). This package imports none of its modules."""

__all__ = ["common", "options", "parse", "evaluate", "training", "ensemble"]
