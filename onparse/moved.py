"""Import paths of modules that moved, kept for code written against them: ``onparse.train`` is
``onparse.training.train``, ``onparse.nltk_parser`` ``onparse.integrations.nltk_parser``, and so on (``MOVED``).
The old name gives the module itself, not a copy, wherever another copy of onparse lies on the path."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import warnings
from types import ModuleType

from onparse import parsing, store, structures, text, training

# where the package by role put the modules that sat in onparse/ in 0.2: each role names its own (``__all__``)
ROLES = {role.__name__.removeprefix("onparse."): role.__all__ for role in (text, structures, store, parsing, training)}
MOVED = {
    **{f"onparse.{name}": f"onparse.{role}.{name}" for role, names in ROLES.items() for name in names},
    "onparse.families.onlstm_model": "onparse.families.onlstm.model",
    "onparse.families.onlstm_training": "onparse.families.onlstm.training",
    "onparse.families.pcfg_model": "onparse.families.pcfg.model",
    "onparse.families.pcfg_training": "onparse.families.grammar_training",  # what every grammar family trains with
    "onparse.nltk_parser": "onparse.integrations.nltk_parser",
    "onparse.spacy_component": "onparse.integrations.spacy_component",
    "onparse.commandline": "onparse.commands.common",
    "onparse.options": "onparse.commands.options",
    "onparse.recipe": "onparse.fit",
    "onparse.model": "onparse.families.onlstm.model",
    "onparse.pcfg": "onparse.families.pcfg.model",
    "onparse.grammar": "onparse.families.grammar_training",
}


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module at its new one."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.target} after 0.2.0: import it from there (the old name goes in 1.0)",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """The module ran under its own name already."""


class MovedModules(importlib.abc.MetaPathFinder):
    """Finds a moved module by its old name (``MOVED``)."""

    def find_spec(self, name: str, path=None, target=None):
        if name not in MOVED:
            return None
        return importlib.util.spec_from_loader(name, _Alias(MOVED[name]))
