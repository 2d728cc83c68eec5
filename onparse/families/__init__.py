"""Model families by name (supar's name-to-class registry of model kinds): the one place a family's name, a readout
or a settings class leads to what it means. A third family is one more module registered here.

    >>> from onparse import families
    >>> families.named("pcfg").readouts(families.named("pcfg").settings())
    ['spans']
    >>> families.checked_layer("mean")
    'mean'
"""

from __future__ import annotations

from onparse.families.base import PARTS, SPANS, Family, FamilyModel, FitSection
from onparse.families.onlstm import MEAN, ONLSTM, OnlstmConfig
from onparse.families.pcfg import PCFG, PcfgConfig
from onparse.families.tnpcfg import TNPCFG
from onparse.settings import Layer

__all__ = [
    "PARTS",
    "Family",
    "FamilyModel",
    "FitSection",
    "MEAN",
    "SPANS",
    "OnlstmConfig",
    "PcfgConfig",
    "REGISTRY",
    "NAMES",
    "named",
    "of",
    "of_readout",
    "checked_layer",
    "layer_from_key",
    "readouts",
]

REGISTRY: dict[str, Family] = {family.name: family for family in (ONLSTM(), PCFG(), TNPCFG())}
NAMES = tuple(REGISTRY)
Settings = object  # any family's sizes: its ``settings`` class


def named(name: object) -> Family:
    """The family of that name; ValueError for a name that is no family."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"family must be one of {', '.join(REGISTRY)}, not {name!r:.40}")
    return REGISTRY[name]


def of(settings: object) -> Family:
    """The family a settings object (or class) describes."""
    return named(settings.family)


def of_readout(layer: object) -> Family:
    """The family whose readout ``layer`` is; ValueError (as an ON-LSTM's layers are checked) for none."""
    for family in REGISTRY.values():
        if family.owns(layer):
            return family
    return REGISTRY[ONLSTM.name].check_layer(layer)  # raises, naming what a layer may be


def checked_layer(value: object, settings: object | None = None) -> Layer:
    """``value`` as a readout of a model of ``settings`` (of any family and size where None); ValueError otherwise.

    The one check of a layer, at every boundary (options, config files, the API): ``True`` and ``"3"`` are no layers.
    """
    if settings is None:
        return of_readout(value).check_layer(value)
    return of(settings).check_layer(value, settings)


def layer_from_key(key: str) -> Layer:
    """The layer a record's key names (``settings.layer_key``): a number for a layer's, the name for a readout's."""
    return checked_layer(int(key) if key.isascii() and key.isdigit() else key)


def readouts(settings: object) -> list[Layer]:
    """Every readout a model of ``settings`` gives a tree from."""
    return of(settings).readouts(settings)
