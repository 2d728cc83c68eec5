"""Ensemble directories: members' trees vote, confidence per span, eval rows."""

import json

from click.testing import CliRunner
from conftest import FIXTURES, tiny_model

from onparse.cli import main
from onparse.parsing.parse import Parser
from onparse.store import modeldir
from onparse.structures.trees import right_branching, spans
from onparse.structures.voting import average

SENTENCES = ["the cat sat on the mat .", "a dog sat on a cat", "the mat , a cat and a dog sat"]


def test_ensemble_directory_names_its_members_relative_to_itself(tiny_ensemble_dir):
    ensemble = modeldir.read_ensemble(tiny_ensemble_dir)
    assert [p.name for p in ensemble.members] == ["seed-0", "seed-1", "seed-2"]
    config = json.loads((tiny_ensemble_dir / "config.json").read_text())
    assert config["ensemble"]["members"] == ["seed-0", "seed-1", "seed-2"]
    assert modeldir.read_ensemble(tiny_ensemble_dir / "seed-0") is None


def test_the_ensemble_tree_is_the_average_of_the_members_trees(tiny_ensemble_dir):
    ensemble = Parser.load(tiny_ensemble_dir)
    assert ensemble.is_ensemble and ensemble.builder.layers == (2, 2, 2) and len(ensemble.members) == 3
    members = [Parser.load(tiny_ensemble_dir / f"seed-{seed}") for seed in range(3)]
    for k, parse in enumerate(ensemble.parse_sents(SENTENCES)):
        member_trees = [member.parse(SENTENCES[k]).words_tree for member in members]
        n = len(parse.word_positions)
        expected, shares = average([spans(t) for t in member_trees], n)
        assert parse.words_tree == expected
        assert parse.tree.leaves() == list(range(len(parse.tokens)))
        assert (shares == parse.votes).all()
        assert parse.built.member_trees == member_trees  # every member's own tree, as the vote saw it


def test_identical_members_give_the_members_tree(tmp_path):
    model, vocab = tiny_model(5)
    modeldir.save(tmp_path / "one", model, vocab, default_layer=3)
    modeldir.save_ensemble(tmp_path / "same", [tmp_path / "one"] * 3)
    single = Parser.load(tmp_path / "one").parse_sents(SENTENCES)
    voted = Parser.load(tmp_path / "same").parse_sents(SENTENCES)
    assert [p.words_tree for p in voted] == [p.words_tree for p in single]
    assert all(c == 1.0 for p in voted for c in p.to_dict()["confidence"])


def test_a_linked_member_replaced_under_its_name_is_refused_not_voted(tmp_path):
    for seed in (0, 1):
        model, vocab = tiny_model(seed)
        modeldir.save(tmp_path / f"seed-{seed}", model, vocab, default_layer=2)
    model, vocab = tiny_model(2)
    modeldir.save(tmp_path / "vote" / "members" / "own", model, vocab, default_layer=2)  # held by it: not linked
    modeldir.save_ensemble(
        tmp_path / "vote", [tmp_path / "vote" / "members" / "own", tmp_path / "seed-0", tmp_path / "seed-1"]
    )
    prints = modeldir.read_ensemble(tmp_path / "vote").fingerprints
    assert prints[0] is None and prints[1] and prints[2] and prints[1] != prints[2]
    Parser.load(tmp_path / "vote").parse(SENTENCES[0])  # as made: it loads
    (tmp_path / "seed-1").rename(tmp_path / "old")  # another model takes a linked member's name
    (tmp_path / "seed-0").rename(tmp_path / "seed-1")
    (tmp_path / "old").rename(tmp_path / "seed-0")
    result = CliRunner().invoke(main, ["--model", str(tmp_path / "vote"), SENTENCES[0]])
    assert result.exit_code != 0 and "is not the model this ensemble was made with" in result.output
    assert "Traceback" not in result.output and str(tmp_path / "vote" / "config.json") in result.output


def test_right_branching_voter_and_layer_override(tiny_ensemble_dir, tmp_path):
    modeldir.save_ensemble(
        tmp_path / "rb", modeldir.read_ensemble(tiny_ensemble_dir).members, right_branching_voter=True
    )
    parser = Parser.load(tmp_path / "rb", layer=3)
    assert parser.right_branching_voter and [m.layer for m in parser.members] == [3, 3, 3]
    parse = parser.parse(SENTENCES[0])
    voters = [
        spans(Parser.load(tiny_ensemble_dir / f"seed-{s}", layer=3).parse(SENTENCES[0]).words_tree) for s in range(3)
    ] + [spans(right_branching(6))]
    assert parse.words_tree == average(voters, 6)[0]


def test_json_gives_each_span_its_share_of_votes(tiny_ensemble_dir):
    parse = Parser.load(tiny_ensemble_dir).parse(SENTENCES[2])
    record = parse.to_dict()
    assert len(record["confidence"]) == len(record["spans"])
    assert tuple(record["spans"][0]) == (0, len(parse.tokens)) and record["confidence"][0] == 1.0
    assert all(round(3 * c) in (1, 2, 3) and abs(3 * c - round(3 * c)) < 1e-3 for c in record["confidence"])  # thirds
    assert len(record["distances"]) == 3  # one row per member: the layer it parses with
    assert record["layers"] == [2, 2, 2] and [len(rows) for rows in record["layer_distances"]] == [3, 3, 3]


def test_cli_parses_and_evaluates_an_ensemble(tiny_ensemble_dir):
    parsed = CliRunner().invoke(main, ["--model", str(tiny_ensemble_dir), "--format", "pretty", "the cat sat"])
    assert parsed.exit_code == 0 and "the vote of 3 members' trees" in parsed.stdout
    result = CliRunner().invoke(
        main, ["eval", "--gold", str(FIXTURES / "one_per_line.txt"), "--model", str(tiny_ensemble_dir), "--json"]
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert set(figures["members"]) == {"1", "2", "3"} and figures["chosen"] == "ensemble"
    assert figures["sentence_f1"] == figures["ensemble"]["sentence_f1"]
    assert "untrained_layer_2" in figures["baselines"]
    table = CliRunner().invoke(
        main, ["eval", "--gold", str(FIXTURES / "one_per_line.txt"), "--model", str(tiny_ensemble_dir)]
    )
    assert "member 3 (layer 2)" in table.stdout and "ensemble (tree averaging) (chosen)" in table.stdout


def test_an_ensemble_without_members_is_refused(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text('{"ensemble": {"members": []}}')
    result = CliRunner().invoke(main, ["--model", str(tmp_path / "bad"), "the cat"])
    assert result.exit_code == 2 and "members must be a non-empty list" in result.stderr


def test_the_consistency_rule_takes_the_layer_whose_trees_the_members_share():
    from onparse.parsing.ensemble import most_consistent
    from onparse.structures.trees import balanced, left_branching, right_branching, spans
    from onparse.text.language import Sentence

    sentences = [Sentence.of_tokens(["w"] * n) for n in (5, 6, 7, 8)]
    shared = [spans(right_branching(len(s.words))) for s in sentences]
    trees = [
        {
            1: [spans(left_branching(len(s.words))) if m % 2 else spans(balanced(len(s.words))) for s in sentences],
            2: shared,
            "mean": shared if m else [spans(left_branching(len(s.words))) for s in sentences],
        }
        for m in range(3)
    ]  # layers 1 and mean differ between some members, layer 2 is the same in all
    layer, consistency = most_consistent(trees, sentences)
    assert layer == 2 and consistency["2"] == 100.0 > max(consistency["1"], consistency["mean"])


def test_the_members_kept_are_those_whose_trees_the_others_share():
    from onparse.parsing.ensemble import most_central, pairwise_agreement
    from onparse.structures.trees import balanced, left_branching, right_branching, spans
    from onparse.text.language import Sentence

    sentences = [Sentence.of_tokens(["w"] * n) for n in (5, 6, 7, 8)]
    right = [spans(right_branching(len(s.words))) for s in sentences]
    left = [spans(left_branching(len(s.words))) for s in sentences]
    near_right = [
        spans(balanced(len(s.words))) if k == 0 else found for k, (s, found) in enumerate(zip(sentences, right))
    ]
    trees = [left, right, near_right, right, right]  # the left-branching seed stands apart, near_right a little
    table = pairwise_agreement(trees, sentences)
    assert all(table[a][b] == table[b][a] for a in range(5) for b in range(5)) and table[1][3] == 100.0 > table[1][2]
    kept, centrality = most_central(trees, sentences, 3)
    assert kept == [1, 3, 4] and centrality[0] == min(centrality) and centrality[1] == centrality[4] > centrality[2]
    assert most_central(trees, sentences, 4)[0] == [1, 2, 3, 4]


def test_the_agreement_rule_scores_each_member_against_the_others_alone():
    """With two members the others' vote is the other member's tree: each candidate's agreement is its F1 against that
    tree (a vote that counted the member itself would pull the reference toward its own trees)."""
    import numpy as np

    from onparse.parsing.ensemble import agreeing_layers
    from onparse.structures.builder import TreeBuilder
    from onparse.structures.scoring import score
    from onparse.text.language import Sentence
    from onparse.text.treebank import GoldSentence

    rng = np.random.default_rng(7)
    sentences = [Sentence(tuple(f"w{i}" for i in range(n)), tuple(range(n))) for n in rng.integers(6, 14, 40)]
    distances = [[rng.normal(size=(3, len(s.words))) for s in sentences] for _ in range(2)]
    candidates = [[1, 2, 3, "mean"]] * 2
    own = [
        {layer: [spans(TreeBuilder((layer,)).build([d]).tree) for d in found] for layer in candidates[0]}
        for found in distances
    ]
    layers, agreement = agreeing_layers(distances, candidates, own, sentences, sweeps=1)
    reference = [
        GoldSentence(tuple(s.tokens), frozenset(tree), (), "member 1") for s, tree in zip(sentences, own[0][layers[0]])
    ]
    assert agreement[1] == {
        str(layer): round(score(own[1][layer], reference)["sentence_f1"], 2) for layer in candidates[1]
    }
    assert layers[1] == max(candidates[1], key=lambda layer: agreement[1][str(layer)])


def test_every_layer_rule_is_one_dispatch_and_the_fixed_rule_leaves_a_grammar_its_readout(tmp_path):
    import pytest
    import torch

    from onparse.config import LAYER_RULES
    from onparse.families import SPANS, PcfgConfig
    from onparse.families.pcfg.model import NeuralPCFG
    from onparse.parsing.ensemble import build, choose

    model, vocab = tiny_model(3)
    modeldir.save(tmp_path / "lm", model, vocab, default_layer=1)
    torch.manual_seed(0)
    grammar = NeuralPCFG(PcfgConfig(vocab_size=len(vocab), nonterminals=2, preterminals=3, symbol_size=8))
    modeldir.save(tmp_path / "grammar", grammar, vocab, default_layer=SPANS)
    models = [tmp_path / "lm", tmp_path / "grammar"]
    assert choose(models, "own")["layers"] == [1, SPANS]
    assert choose(models, "fixed", fixed_layer="mean")["layers"] == ["mean", SPANS]
    for rule in ("agreement", "consistency"):
        with pytest.raises(ValueError, match="unlabelled text"):
            choose(models, rule)
    with pytest.raises(ValueError, match="layer rule is one of"):
        choose(models, "best")
    assert set(LAYER_RULES) == {"own", "agreement", "consistency", "fixed"}
    chosen = build(tmp_path / "e", models, "fixed", fixed_layer=2)
    assert (
        json.loads((tmp_path / "e" / "config.json").read_text())["ensemble"]["layers"] == chosen["layers"] == [2, SPANS]
    )


def test_the_reading_rule_scores_each_probe_against_the_vote_of_every_other_model():
    """Constructed: two probes that are copies of one model and a third alone, with a referee that is that model too:
    each copy meets a vote its twins carry (100), the third meets theirs; with no referee, two probes meet each
    other's trees, the same F1 both ways (a vote that counted the probe itself would pull it toward its own)."""
    import shutil
    import tempfile
    from pathlib import Path

    from onparse.parsing.ensemble import reference_agreement
    from onparse.text.language import Sentence

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for seed in range(2):
            model, vocab = tiny_model(seed)
            modeldir.save(root / f"m{seed}", model, vocab, default_layer=2)
        shutil.copytree(root / "m0", root / "twin")
        shutil.copytree(root / "m0", root / "referee")
        sentences = [Sentence.of_tokens(s.split()) for s in SENTENCES * 4]
        found = reference_agreement([root / "m0", root / "m1", root / "twin"], [root / "referee"], sentences, {})
        assert found[0] == found[2] == 100.0 and found[1] < 100.0
        alone = reference_agreement([root / "m0", root / "m1"], [], sentences, {})
        assert alone[0] == alone[1] < 100.0  # two probes, no referee: each meets the other's trees


def test_a_linked_members_vocabulary_replaced_is_refused_by_parsing_quantizing_and_packaging(tmp_path):
    from onparse.store.packaging import build_package

    for seed in (0, 1):
        model, vocab = tiny_model(seed)
        modeldir.save(tmp_path / f"seed-{seed}", model, vocab, default_layer=2)
    modeldir.save_ensemble(tmp_path / "vote", [tmp_path / "seed-0", tmp_path / "seed-1"])
    assert all(p.startswith("files:") for p in modeldir.read_ensemble(tmp_path / "vote").fingerprints)
    vocab = tmp_path / "seed-1" / "vocab.txt"
    words = vocab.read_text().splitlines()
    vocab.write_text("\n".join([words[1], words[0], *words[2:]]) + "\n")  # two words swapped: the weights alone agree
    said = "is not the model this ensemble was made with"
    parsed = CliRunner().invoke(main, ["--model", str(tmp_path / "vote"), SENTENCES[0]])
    quantized = CliRunner().invoke(main, ["quantize", str(tmp_path / "vote"), "--out", str(tmp_path / "int8")])
    for result in (parsed, quantized):
        assert result.exit_code != 0 and said in result.output and "Traceback" not in result.output
    assert not (tmp_path / "int8").exists()
    try:
        build_package(tmp_path / "vote", tmp_path / "wheels", "my-vote")
        raise AssertionError("a replaced member was packaged")
    except modeldir.ModelDirError as err:
        assert said in str(err)


def test_an_ensemble_fingerprinted_before_by_its_weights_alone_still_loads_and_still_checks_them(tmp_path):
    model, vocab = tiny_model(0)
    modeldir.save(tmp_path / "seed-0", model, vocab, default_layer=2)
    modeldir.save_ensemble(tmp_path / "vote", [tmp_path / "seed-0"])
    config = json.loads((tmp_path / "vote" / "config.json").read_text())
    weights_alone = modeldir.model_fingerprint(tmp_path / "seed-0", like="0123456789abcdef")
    assert not weights_alone.startswith("files:") and len(weights_alone) == 16
    config["ensemble"]["fingerprints"] = [weights_alone]
    (tmp_path / "vote" / "config.json").write_text(json.dumps(config))
    Parser.load(tmp_path / "vote").parse(SENTENCES[0])
    model, vocab = tiny_model(1)
    modeldir.save(tmp_path / "seed-1", model, vocab, default_layer=2)
    (tmp_path / "seed-0" / "weights.pt").write_bytes((tmp_path / "seed-1" / "weights.pt").read_bytes())
    result = CliRunner().invoke(main, ["--model", str(tmp_path / "vote"), SENTENCES[0]])
    assert result.exit_code != 0 and "is not the model this ensemble was made with" in result.output
