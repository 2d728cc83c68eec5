"""Model directories: weight precisions round-trip, and the layer setting keeps them."""

import json

import pytest
import torch

from onparse import modeldir
from onparse.families import ModelConfig
from onparse.families.onlstm_model import LanguageModel
from onparse.vocabulary import Vocabulary

from conftest import tiny_model


@pytest.mark.parametrize("precision, tolerance", [("bf16", 1 / 128), ("int8", 1 / 127)])
def test_weights_round_trip_within_their_precision(tmp_path, precision, tolerance):
    model, vocab = tiny_model(7)
    modeldir.save(tmp_path / "m", model, vocab, default_layer=2, precision=precision)
    loaded = modeldir.load(tmp_path / "m").model.state_dict()
    for name, tensor in model.state_dict().items():
        rows = tensor.abs().amax(dim=-1, keepdim=True) if tensor.dim() == 2 else tensor.abs()
        assert torch.all((loaded[name] - tensor).abs() <= tolerance * rows + 1e-7), name


def test_int8_weights_are_about_half_the_size(tmp_path):
    torch.manual_seed(0)
    vocab = Vocabulary(["<eos>", "<unk>"] + [f"w{i}" for i in range(998)])
    model = LanguageModel(ModelConfig(vocab_size=1000, embedding_size=40, hidden_size=80, chunk_size=10))
    for precision in modeldir.PRECISIONS:
        modeldir.save(tmp_path / precision, model, vocab, default_layer=3, precision=precision)
    sizes = {p: (tmp_path / p / "weights.pt").stat().st_size for p in modeldir.PRECISIONS}
    assert sizes["int8"] < 0.6 * sizes["bf16"]
    assert json.loads((tmp_path / "int8" / "config.json").read_text())["weights"] == "int8"


def test_an_unknown_precision_is_refused(tmp_path):
    model, vocab = tiny_model()
    with pytest.raises(ValueError, match="int4"):
        modeldir.save(tmp_path / "m", model, vocab, default_layer=2, precision="int4")
    modeldir.save(tmp_path / "m", model, vocab, default_layer=2)
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "weights": "int4"}))
    with pytest.raises(modeldir.ModelDirError, match="int4"):
        modeldir.load(tmp_path / "m")
