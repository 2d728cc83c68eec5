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
