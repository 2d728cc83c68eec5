"""Model directories: weight precisions round-trip, and the layer setting keeps them."""

import json

import pytest
import torch
from conftest import tiny_model

from onparse.families import OnlstmConfig
from onparse.families.onlstm.model import OnlstmModel
from onparse.store import modeldir
from onparse.text.vocabulary import Vocabulary


@pytest.mark.parametrize("precision, tolerance", [("bf16", 1 / 128), ("int8", 1 / 127)])
def test_weights_round_trip_within_their_precision(tmp_path, precision, tolerance):
    model, vocab = tiny_model(7)
    modeldir.save(tmp_path / "m", model, vocab, default_layer=2, precision=precision)
    loaded = modeldir.load(tmp_path / "m").model.state_dict()
    for name, tensor in model.state_dict().items():
        rows = tensor.abs().amax(dim=-1, keepdim=True) if tensor.dim() == 2 else tensor.abs()
        assert torch.all((loaded[name] - tensor).abs() <= tolerance * rows + 1e-7), name


def test_int8_weights_are_about_half_the_size_and_4_bit_word_tables_smaller_again(tmp_path):
    torch.manual_seed(0)
    vocab = Vocabulary(["<eos>", "<unk>"] + [f"w{i}" for i in range(998)])
    model = OnlstmModel(OnlstmConfig(vocab_size=1000, embedding_size=40, hidden_size=80, chunk_size=10))
    for precision in modeldir.PRECISIONS:
        modeldir.save(tmp_path / precision, model, vocab, default_layer=3, precision=precision)
    sizes = {p: (tmp_path / p / "weights.pt").stat().st_size for p in modeldir.PRECISIONS}
    assert sizes["int8"] < 0.6 * sizes["bf16"]
    assert sizes["int4-words"] < sizes["int8"] - 0.4 * 1000 * 40  # the embeddings' 1000 rows of 40 at half a byte
    assert json.loads((tmp_path / "int8" / "config.json").read_text())["weights"] == "int8"


def test_4_bit_word_tables_round_trip_within_a_fourteenth_of_each_row_and_the_rest_as_int8(tmp_path):
    model, vocab = tiny_model(7)
    modeldir.save(tmp_path / "m", model, vocab, default_layer=2, precision="int4-words")
    stored = torch.load(tmp_path / "m" / "weights.pt", weights_only=True)
    assert stored["embedding.weight"].dtype == torch.uint8 and stored["layers.0.input_proj.weight"].dtype == torch.int8
    loaded = modeldir.load(tmp_path / "m").model.state_dict()
    for name, tensor in model.state_dict().items():
        tolerance = 1 / 14 if name == "embedding.weight" else 1 / 254 if tensor.dim() == 2 else 1 / 128
        rows = tensor.abs().amax(dim=-1, keepdim=True) if tensor.dim() == 2 else tensor.abs()
        assert torch.all((loaded[name] - tensor).abs() <= tolerance * rows + 1e-7), name


def test_an_unknown_precision_is_refused(tmp_path):
    model, vocab = tiny_model()
    with pytest.raises(ValueError, match="int4"):
        modeldir.save(tmp_path / "m", model, vocab, default_layer=2, precision="int4")
    modeldir.save(tmp_path / "m", model, vocab, default_layer=2)
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "weights": "int4"}))
    with pytest.raises(modeldir.ModelDirError, match="int4"):
        modeldir.load(tmp_path / "m")


@pytest.mark.parametrize("body", ["raise RuntimeError('no GPU here')", "def broken(:\n", "import sys\nsys.exit(3)"])
def test_a_model_package_that_fails_at_import_is_skipped_with_one_line(tmp_path, monkeypatch, caplog, body):
    from importlib.metadata import EntryPoint

    from click.testing import CliRunner

    from onparse.cli import main
    from onparse.store import shipped

    package = tmp_path / "onparse_model_broken"
    package.mkdir()
    (package / "__init__.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    point = EntryPoint(name="broken", value="onparse_model_broken", group=shipped.GROUP)
    monkeypatch.setattr(shipped, "entry_points", lambda group: [point])
    monkeypatch.setattr(shipped, "_BROKEN", set())
    listed = CliRunner().invoke(main, ["models"])
    assert listed.exit_code == 0 and "pcfg-wsj" in listed.stdout, listed.output
    said = [record.getMessage() for record in caplog.records if "onparse_model_broken" in record.getMessage()]
    assert len(said) == 1 and "does not import" in said[0] and "\n" not in said[0] and "Traceback" not in listed.output
    parsed = CliRunner().invoke(main, ["--model", "pcfg-wsj", "The cat sat."])
    assert parsed.exit_code == 0 and parsed.stdout.startswith("(X "), parsed.output


def test_a_users_package_is_refused_a_shipped_models_name(tmp_path):
    from onparse.store.packaging import build_package

    model, vocab = tiny_model()
    modeldir.save(tmp_path / "mine", model, vocab, default_layer=2)
    with pytest.raises(ValueError, match="pcfg-wsj is the name of a shipped model"):
        build_package(tmp_path / "mine", tmp_path / "wheels", "pcfg-wsj")
    assert not (tmp_path / "wheels").exists() or not any((tmp_path / "wheels").iterdir())


def test_a_model_whose_training_diverged_is_refused_where_it_is_saved_and_nothing_is_written(tmp_path):
    model, vocab = tiny_model()
    with torch.no_grad():
        next(model.parameters()).fill_(float("nan"))
    with pytest.raises(ValueError, match="NaN or infinite values .* training diverged"):
        modeldir.save(tmp_path / "diverged", model, vocab, default_layer=2)
    assert not (tmp_path / "diverged").exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize("option", ["--focus", "--focus-end"])
def test_a_focus_past_any_that_trains_is_refused_before_training(option, tiny_model_dir, tmp_path):
    from click.testing import CliRunner

    from onparse.cli import main

    result = CliRunner().invoke(
        main,
        ["distill", "--teacher", str(tiny_model_dir), "--train", "x.txt", "--out", str(tmp_path / "s"), option]
        + ["1e39"],
    )
    assert result.exit_code == 2 and f"{option}': 1e+39 is not in the range" in result.stderr
    assert not (tmp_path / "s").exists()


def test_a_fits_folder_given_as_a_model_says_where_its_parser_is_or_that_it_has_none_yet(tmp_path):
    (tmp_path / "fit").mkdir()
    (tmp_path / "fit" / "fit.json").write_text('{"plan": {}, "stages": []}')
    with pytest.raises(modeldir.ModelDirError, match="has not made its model yet .*onparse fit --out .* --resume"):
        modeldir.load(tmp_path / "fit")
    model, vocab = tiny_model()
    modeldir.save(tmp_path / "fit" / "model", model, vocab, default_layer=2)
    with pytest.raises(modeldir.ModelDirError, match=f"its parser is {tmp_path / 'fit' / 'model'}"):
        modeldir.load(tmp_path / "fit")
