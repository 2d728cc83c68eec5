"""The model in models/ loads by default and parses."""

from onparse.modeldir import DEFAULT_MODEL, load
from onparse.parse import Parser


def test_shipped_model_directory_is_complete_and_compact():
    files = {p.name: p.stat().st_size for p in DEFAULT_MODEL.iterdir()}
    assert {"config.json", "vocab.txt", "weights.pt", "card.json", "card.md"} <= set(files)
    assert sum(files.values()) < 60 * 2**20


def test_shipped_model_loads_and_parses():
    bundle = load()
    assert bundle.model.config.n_layers == 3 and len(bundle.vocab) == bundle.model.config.vocab_size
    parse = Parser(bundle).parse(["The company said its profit rose 10 % in the third quarter."])[0]
    assert parse.layer == bundle.default_layer
    assert parse.tree.leaves() == list(range(len(parse.tokens)))
    assert parse.words_tree.leaves() == list(range(len(parse.word_positions)))
    assert all(len(node) == 2 for node in parse.words_tree.subtrees())  # binary over the words
    assert "<unk>" not in parse.model_input[:6]


def test_shipped_models_are_found_by_name(tmp_path, monkeypatch):
    from onparse import modeldir

    assert modeldir.locate("onlstm-wsj") == DEFAULT_MODEL
    assert modeldir.locate(None) == DEFAULT_MODEL
    monkeypatch.chdir(tmp_path)
    (tmp_path / "onlstm-wsj").mkdir()  # a folder of that name here wins: paths come first
    assert modeldir.locate("onlstm-wsj") == tmp_path.joinpath("onlstm-wsj").relative_to(tmp_path)
