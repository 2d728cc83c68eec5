"""The model in models/ loads by default and parses."""

import pytest

from onparse.parsing.parse import Parser
from onparse.store.shipped import DEFAULT_MODEL, MODELS


def test_shipped_models_are_complete_and_compact():
    assert {"config.json", "card.json", "card.md"} <= {p.name for p in DEFAULT_MODEL.iterdir()}
    assert (
        sum(p.stat().st_size for p in MODELS.rglob("*") if p.is_file()) < 185 * 2**20
        # the GPU members (issue 21), the German and Chinese models (29), grammars (33): 64 x 128 in German, pcfg-wsj
        # alone, students of the German and Chinese votes (43), the best single ON-LSTM beside the paper's (66)
    )


def test_shipped_model_loads_and_parses():
    parser = Parser.load()
    assert all(len(m.bundle.vocab) == m.model.config.vocab_size for m in parser.members)
    parse = parser.parse("The company said its profit rose 10 % in the third quarter.")
    assert parse.builder.layers == tuple(m.bundle.default_layer for m in parser.members)
    assert parse.tree.leaves() == list(range(len(parse.tokens)))
    assert parse.words_tree.leaves() == list(range(len(parse.word_positions)))
    assert all(len(node) == 2 for node in parse.words_tree.subtrees())  # binary over the words
    assert "<unk>" not in parse.model_input[:6]


def test_shipped_models_are_found_by_name(tmp_path, monkeypatch):
    from onparse.store import modeldir

    assert modeldir.locate("onlstm-wsj") == MODELS / "onlstm-wsj"
    assert modeldir.locate(None) == DEFAULT_MODEL
    monkeypatch.chdir(tmp_path)
    (tmp_path / "onlstm-wsj").mkdir()  # a shipped model's name is never shadowed by a folder here: ./ names that
    assert modeldir.locate("onlstm-wsj") == MODELS / "onlstm-wsj"
    assert modeldir.locate("./onlstm-wsj") == tmp_path.joinpath("onlstm-wsj").relative_to(tmp_path)


def test_the_help_names_the_default_model():
    from click.testing import CliRunner

    from onparse.cli import main

    help_text = " ".join(CliRunner().invoke(main, ["parse", "--help"]).output.split())
    assert f"models/{DEFAULT_MODEL.name}" in help_text.replace("- ", "-")  # click wraps at hyphens
    import onparse

    front = " ".join(CliRunner().invoke(main, ["--help"]).output.split()).replace("- ", "-")
    assert f"The default model, {DEFAULT_MODEL.name}, is a neural PCFG" in front  # what the default is, as it is
    assert "neural PCFG by default" in onparse.__doc__ and "with an ON-LSTM language model." not in front


@pytest.mark.parametrize(
    "name, language, text, tokens, n_words",
    [
        (
            "onlstm-negra",
            "de",
            "Die Mäuse „laufen“ über die Straße.",
            ["Die", "Mäuse", "„", "laufen", "“", "über", "die", "Straße", "."],
            6,
        ),
        ("onlstm-ctb", "zh", "我们在北京大学学习中文。", ["我们", "在", "北京大学", "学习", "中文", "。"], 5),
    ],
)
def test_the_language_models_tokenize_and_parse_their_language(name, language, text, tokens, n_words):
    parser = Parser.load(name)
    families = [m.bundle.family for m in parser.members]
    assert parser.language == language and set(families) == {"onlstm", "pcfg"}  # both families vote (issue 33)
    assert [m.layer for m in parser.members] == ["mean" if family == "onlstm" else "spans" for family in families]
    parse = parser.parse(text)
    assert (
        parse.tokens == tokens and len(parse.word_positions) == n_words
    )  # punctuation is no word, by Unicode category
    assert parse.words_tree.leaves() == list(range(n_words)) and all(
        len(node) == 2 for node in parse.words_tree.subtrees()
    )
    for member in parser.members:  # the ON-LSTMs read punctuation right to left (issue 29); a grammar reads the words
        reading = member.bundle.reading
        assert (reading.punctuation, reading.direction) == (
            (True, "backward") if member.bundle.family == "onlstm" else (False, "forward")
        )
    assert parse.model_input[-1] == tokens[0].lower() and len(parse.model_input) == len(
        tokens
    )  # as the ON-LSTMs were trained


@pytest.mark.parametrize(
    "name, language, text, n_words",
    [
        ("pcfg-wsj", "en", "The company said its profit rose 10 % in the third quarter.", 12),
        ("pcfg-negra", "de", "Die Firma sagte, ihr Gewinn sei im dritten Quartal gestiegen.", 10),
    ],
)
def test_the_lone_grammars_parse_by_name_with_their_span_marginals_as_confidence(name, language, text, n_words):
    parser = Parser.load(name)
    (member,) = parser.members
    assert parser.language == language
    assert (
        member.bundle.family == "pcfg"
        and member.layer == "spans"
        and member.bundle.card["config"]["distill"]["teacher"]
    )  # a student
    parse = parser.parse(text)
    record = parse.to_dict(punct=False)
    assert len(parse.word_positions) == n_words and all(len(node) == 2 for node in parse.words_tree.subtrees())
    assert all(0 < confidence <= 1 for confidence in record["confidence"]) and min(record["confidence"]) < 1
