"""onparse: unsupervised constituency parsing with an ON-LSTM language model.

The package root imports nothing heavy so that ``onparse --help`` and
``onparse --version`` answer without loading torch; ``from onparse import
Parser`` loads the parser when asked for. Library users import nltk (and
through it whatever their environment holds) as usual: only the ``onparse``
program, a process of its own, keeps scipy out of nltk's import
(``cli.import_nltk_quickly``).
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    """``from onparse import Parser`` loads the parser (and torch) only when asked for."""
    if name == "Parser":
        from onparse.parse import Parser

        return Parser
    raise AttributeError(f"module 'onparse' has no attribute {name!r}")
