"""Every default is written once: the commands' options show and use the settings dataclasses' own."""

from dataclasses import MISSING, fields

import click
import pytest

from onparse.cli import main
from onparse.config import DistillConfig, ParseConfig, TrainConfig
from onparse.families import OnlstmConfig, named
from onparse.families.onlstm import MEMBER_MODEL, STUDENT_TRAINING, OnlstmSection
from onparse.families.pcfg import PCFG_TRAINING
from onparse.plan import FitPlan
from onparse.settings import default


def defaults_of(command: str) -> dict:
    """Each option's default as the command would use it (None where it has none)."""
    found = main.commands[command]
    context = click.Context(found)
    unset = getattr(click.core, "UNSET", None)  # what newer clicks give an option without a default
    return {param.name: value for param in found.params if (value := param.get_default(context)) not in (None, unset)}


def same(option_default, setting) -> bool:
    return list(option_default) == list(setting) if isinstance(setting, list) else option_default == setting


@pytest.mark.parametrize(
    "command, settings",
    [("fit", FitPlan), ("train", TrainConfig), ("train", OnlstmConfig), ("parse", ParseConfig), ("eval", ParseConfig)],
)
def test_each_option_named_for_a_setting_defaults_to_it(command, settings):
    options = defaults_of(command)
    shared = [
        f.name
        for f in fields(settings)
        if f.name in options and (f.default is not MISSING or f.default_factory is not MISSING)
    ]
    assert shared, f"{command} shares no option with {settings.__name__}"
    for name in shared:
        assert same(options[name], default(settings, name)), (
            f"{command} --{name}: {options[name]!r} != {default(settings, name)!r}"
        )


def test_the_fits_member_sizes_and_the_distillations_settings_are_the_plans():
    fit = defaults_of("fit")
    for size in ("embedding_size", "hidden_size", "chunk_size"):  # repeated options: members vary them
        assert list(fit[size]) == [getattr(MEMBER_MODEL, size)]
    assert fit["n_layers"] == MEMBER_MODEL.n_layers and fit["vocab_size"] == MEMBER_MODEL.vocab_size
    distill = defaults_of("distill")
    assert {name: distill[name] for name in ("sentences", "rank_weight", "margin")} == {
        name: default(DistillConfig, name) for name in ("sentences", "rank_weight", "margin")
    }
    # an update's size and rate are the student's family's: an ON-LSTM's the fit's fine-tuning ones, a grammar's its own
    assert "batch_size" not in distill and "lr" not in distill  # no default of their own
    assert named("onlstm").student_training == {
        "batch_size": default(OnlstmSection, "student_batch_size"),
        "lr": default(OnlstmSection, "finetune_lr"),
    }
    assert named("pcfg").student_training == {name: PCFG_TRAINING[name] for name in ("batch_size", "lr", "clip")}
    assert distill["evals_per_epoch"] == default(FitPlan, "evals_per_epoch")


@pytest.mark.parametrize(
    "command, defaults",
    [
        ("train", [f"onlstm {TrainConfig.batch_size} streams", f"pcfg {PCFG_TRAINING['batch_size']} words"]),
        (
            "distill",
            [f"onlstm {STUDENT_TRAINING['batch_size']} sentences", f"pcfg {PCFG_TRAINING['batch_size']} words"],
        ),
    ],
)
def test_the_update_size_help_gives_every_registered_familys_default(command, defaults):
    from click.testing import CliRunner

    from onparse.families import REGISTRY
    from onparse.families.tnpcfg import TRAINING

    shown = " ".join(CliRunner().invoke(main, [command, "--help"]).output.split())
    assert f"tnpcfg {TRAINING['batch_size']} words" in shown and len(REGISTRY) == 3  # a third family's own
    assert all(found in shown for found in defaults), shown


@pytest.mark.parametrize(
    "flags, expected",
    [
        ({"fma", "avx2"}, "float32"),
        ({"avx512f", "avx512_bf16"}, "bfloat16"),
        ({"amx_bf16", "amx_tile"}, "bfloat16"),
        (set(), "float32"),
    ],
)
def test_auto_precision_takes_bf16_only_where_the_cpu_computes_it_natively(monkeypatch, flags, expected):
    """An AVX2 CPU emulates bf16 matmuls about 20x slower than fp32: training there defaults to fp32."""
    import torch

    from onparse import hardware
    from onparse.hardware import compute_dtype

    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset(flags))
    assert compute_dtype("auto", "cpu") == getattr(torch, expected)
    assert compute_dtype("bf16", "cpu") == torch.bfloat16 and compute_dtype("fp32", "cpu") == torch.float32
    assert TrainConfig().dtype == FitPlan(train=[], dev="").dtype == "auto"


def test_a_layer_keyed_in_a_record_reads_back_as_the_layer_it_was():
    from onparse.families import MEAN, SPANS, layer_from_key
    from onparse.settings import layer_key

    for layer in (1, 3, MEAN, SPANS):
        assert layer_from_key(layer_key(layer)) == layer and isinstance(layer_key(layer), str)
    with pytest.raises(ValueError):
        layer_from_key("third")
