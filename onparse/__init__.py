"""onparse: unsupervised constituency parsing from raw text: a neural PCFG by default, ON-LSTM language models and
votes of both by name.

The package root imports nothing heavy so that ``onparse --help`` and
``onparse --version`` answer without loading torch; ``onparse.load`` and
``from onparse import Parser`` load the parser when asked for. Library users
import nltk (and through it whatever their environment holds) as usual: only
the ``onparse`` program, a process of its own, keeps scipy out of nltk's
import (``cli.import_nltk_quickly``).

    >>> parser = onparse.load()  # the shipped default; a name or a path for others
    >>> parser.parse("The cat sat on the mat.").text_tree.pformat()
    '(X (X The cat) (X sat (X on (X the mat))) .)'
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onparse.moved import MovedModules

if TYPE_CHECKING:  # the parser module imports torch: only when a parser is asked for
    from onparse.parsing.parse import Parser

if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):  # 0.2's import paths of moved modules
    sys.meta_path.insert(0, MovedModules())

__version__ = "0.2.0"
__all__ = ["__version__", "Parser", "available_models", "load"]


def load(name_or_path: str | Path | None = None, **settings: Any) -> Parser:
    """A ``Parser`` for a shipped model's name or a model directory's path (the default model by default).

    ``settings``: ``layer``, and the fields of ``onparse.config.ParseConfig``
    (``batch_size``, ``max_words``, ``device``, ``dtype``).
    """
    from onparse.parsing.parse import Parser

    return Parser.load(name_or_path, **settings)


def available_models() -> list[dict]:
    """Every model that loads by name here: name, language, kind, size, the dev figure its card records, path."""
    from onparse.store.modeldir import available_models as found

    return found()


def __getattr__(name: str) -> Any:
    """``from onparse import Parser`` loads the parser (and torch) only when asked for."""
    if name == "Parser":
        from onparse.parsing.parse import Parser

        return Parser
    raise AttributeError(f"module 'onparse' has no attribute {name!r}")
