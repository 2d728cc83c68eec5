"""The family seam: every registered family resolves its parts, readouts lead to their family, and a family added by
name is used by the tree builder without a change elsewhere."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch

from onparse import families
from onparse.families import OnlstmConfig, PcfgConfig
from onparse.families.base import Family
from onparse.settings import Reading
from onparse.structures.builder import TreeBuilder
from onparse.structures.trees import right_branching, spans


@pytest.mark.parametrize("name", families.NAMES)
def test_every_family_resolves_its_parts_and_makes_a_model_of_its_settings(name):
    family = families.named(name)
    assert all(callable(family.part(part)) for part in families.PARTS)
    own = ("onparse.families.grammar_training:", "onparse.families.grammar:") if family.unit == "words" else ()
    assert family.parts["model"].startswith(f"onparse.families.{name}.")  # its own folder, or what grammars share
    assert all(family.parts[part].startswith((f"onparse.families.{name}.", *own)) for part in families.PARTS)
    with torch.device("meta"):
        model = family.part("model")(family.settings())
    assert model.config == family.settings() and families.of(model.config) is family
    for layer in family.readouts(family.settings()):  # its readouts, read as its own (grammars share theirs)
        assert family.owns(layer) and type(families.of_readout(layer)).member_tree is type(family).member_tree


@pytest.mark.parametrize("name", families.NAMES)
def test_every_familys_model_gives_what_the_model_protocol_names(name):
    family = families.named(name)
    wanted = {n for n in dir(families.FamilyModel) if not n.startswith("_")} | set(families.FamilyModel.__annotations__)
    assert {"config", "from_weights", "sentence_outputs"} <= wanted
    with torch.device("meta"):
        model = family.part("model")(family.settings())
    assert not {n for n in wanted if not hasattr(model, n)}


def test_a_readout_belongs_to_one_family_and_a_model_of_another_refuses_it():
    assert families.checked_layer("spans", PcfgConfig()) == "spans" and families.checked_layer(3, OnlstmConfig()) == 3
    for value, settings in (
        ("spans", OnlstmConfig()),
        ("mean", PcfgConfig()),
        (4, OnlstmConfig()),
        (True, None),
        ("3", None),
    ):
        with pytest.raises(ValueError):
            families.checked_layer(value, settings)
    with pytest.raises(ValueError, match="family must be one of onlstm, pcfg"):
        families.named("lstm")


@dataclass
class ChainConfig:
    family: ClassVar[str] = "chain"
    vocab_size: int = 10


class Chain(Family):
    """A third family in one class: its output is a row per word, its tree the right-branching one."""

    name, settings, parts = "chain", ChainConfig, {}
    reads_either_way = reads_distances = True
    training: ClassVar[dict] = {}
    student_training: ClassVar[dict] = {}
    longest_sentence = 100

    def readouts(self, settings):
        return ["chain"]

    def default_readout(self, settings):
        return "chain"

    def owns(self, layer):
        return layer == "chain"

    def check_layer(self, value, settings=None):
        return value

    def member_tree(self, output, layer):
        return right_branching(output.shape[-1]), np.asarray(output[0], dtype=float)

    def words(self, output):
        return output.shape[-1]

    def describe_readout(self, layer, alone=True):
        return "chain"

    def describe_source(self, layer):
        return "a chain"

    def untrained_name(self, layer):
        return "chain"

    def check_reading(self, reading, student):
        pass

    def fit_reading(self, punctuation, direction):
        return Reading(punctuation, direction)

    def describe_reading(self, reading):
        return "a chain"

    def batch_share(self, batch_size, processes):
        return ""

    def schedule(self, plan):
        return {}

    def member_settings(self, plan, k):
        return ChainConfig()


def test_a_family_registered_by_name_votes_beside_the_others_through_the_builder_unchanged(monkeypatch):
    monkeypatch.setitem(families.REGISTRY, "chain", Chain())
    distances = np.array([[3.0, 1.0, 2.0, 0.0]])  # one layer: the greedy builder splits after word 1, then word 3
    built = TreeBuilder(("chain", 1, 1)).build([np.zeros((1, 4)), distances, distances])
    assert spans(built.member_trees[0]) == spans(right_branching(4))
    assert built.tree == built.member_trees[1]  # two ON-LSTMs outvote the chain
    assert TreeBuilder(("chain",)).describe() == "a chain" and families.checked_layer("chain") == "chain"


def test_a_family_registered_at_run_time_is_a_choice_of_the_commands_that_name_families(monkeypatch):
    from click.testing import CliRunner

    from onparse.cli import main

    monkeypatch.setitem(families.REGISTRY, "chain", Chain())
    for command in (["train", "--family", "chain"], ["fit", "--family", "chain", "--dev", "missing.txt"]):
        done = CliRunner().invoke(main, [*command, "--train", "missing.txt", "--out", "run"])
        assert done.exit_code == 2 and "missing.txt: no such file" in done.stderr, done.stderr  # past the option
    assert "chain" in CliRunner().invoke(main, ["train", "--help"]).stdout
    monkeypatch.delitem(families.REGISTRY, "chain")
    refused = CliRunner().invoke(main, ["train", "--family", "chain", "--train", "missing.txt", "--out", "run"])
    assert refused.exit_code == 2 and "'chain' is not one of" in refused.stderr
