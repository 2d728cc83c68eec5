"""onparse: unsupervised constituency parsing with an ON-LSTM language model.

The package root imports nothing heavy so that ``onparse --help`` and
``onparse --version`` answer without loading torch.
"""

import sys

__version__ = "0.1.0"


class _ScipyNotForNltk:
    """An import hook that keeps nltk's package import from loading scipy.

    ``import nltk`` loads every submodule, and its collocation statistics try
    ``scipy.stats`` (0.5 s, a third of a one-sentence run's start-up beyond
    ``import torch``) for tests onparse never uses; nltk falls back on its own
    when scipy is missing. Only imports made while nltk is initialising are
    refused: scipy imports normally at any other time.
    """

    @staticmethod
    def find_spec(name: str, path=None, target=None):
        nltk = sys.modules.get("nltk")
        if name == "scipy" and nltk is not None and getattr(nltk.__spec__, "_initializing", False):
            raise ModuleNotFoundError("scipy is not loaded for nltk by onparse", name=name)
        return None


sys.meta_path.insert(0, _ScipyNotForNltk)


def __getattr__(name: str):
    """``from onparse import Parser`` loads the parser (and torch) only when asked for."""
    if name == "Parser":
        from onparse.parse import Parser

        return Parser
    raise AttributeError(f"module 'onparse' has no attribute {name!r}")
