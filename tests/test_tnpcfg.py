"""The tensor grammar family: its inside pass and span marginals in rank space against brute force over every binary
tree and labelling in symbol space, its gradient, a save and load, and a fit with it through the command line."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from test_pcfg import check_against_every_tree, tree_probability, tree_spans

from onparse.cli import main
from onparse.families import named
from onparse.families.grammar import tree_span_scores
from onparse.families.tnpcfg import TnpcfgConfig
from onparse.families.tnpcfg.model import TensorPCFG
from onparse.parsing.parse import Parser
from onparse.settings import Reading
from onparse.store import modeldir
from onparse.text.language import Sentence
from onparse.text.vocabulary import Vocabulary

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TINY = TnpcfgConfig(vocab_size=7, nonterminals=3, preterminals=4, rank=5, symbol_size=8)


@pytest.fixture
def tiny_grammar():
    torch.manual_seed(5)
    model = TensorPCFG(TINY)
    with torch.no_grad():  # sharper rules than a fresh network gives, so trees differ in probability
        for parameter in model.parameters():
            parameter.mul_(3)
    return model


def symbol_tables(model: TensorPCFG) -> list[np.ndarray]:
    """The root, the full rule tensor p(A -> B C) = sum_r p(r | A) p(B ↙ r) p(C ↘ r), and the emissions."""
    root, parent, left, right, emission = (t.detach().double().exp().numpy() for t in model.factors())
    return [root, np.einsum("ar,br,cr->abc", parent, left, right), emission]


def test_the_rule_tensor_is_a_distribution_for_every_nonterminal(tiny_grammar):
    _, rule, _ = symbol_tables(tiny_grammar)
    assert rule.sum((1, 2)) == pytest.approx(np.ones(TINY.nonterminals))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_inside_in_rank_space_is_the_sum_over_every_tree_and_labelling_and_marginals_its_span_shares(tiny_grammar, n):
    words = torch.tensor([[(3 * k + n) % 7 for k in range(n)]])
    tables = symbol_tables(tiny_grammar)
    trees, _ = check_against_every_tree(tiny_grammar, words, tables)
    one = trees[len(trees) // 2]  # and a tree's own joint likelihood, as a student learns it
    joint = tiny_grammar.log_likelihood(words, tree_span_scores([tree_spans(one)], n)).item()
    assert joint == pytest.approx(math.log(tree_probability(one, words[0].tolist(), *tables)), abs=1e-4)


def test_the_likelihoods_gradient_matches_finite_differences():
    torch.manual_seed(2)
    model = TensorPCFG(TINY).double()
    words = torch.tensor([[1, 4, 2, 6], [0, 3, 3, 5]])
    assert torch.autograd.gradcheck(
        lambda embedding: model.log_likelihood.__func__(_with(model, embedding), words),
        (model.nonterminal_embedding.detach().clone().requires_grad_(),),
        eps=1e-6,
        atol=1e-5,
    )


def _with(model: TensorPCFG, embedding: torch.Tensor) -> TensorPCFG:
    """The model with its nonterminal embedding replaced by ``embedding`` (a leaf gradcheck perturbs)."""
    del model.nonterminal_embedding
    model.nonterminal_embedding = embedding
    return model


def test_a_tensor_grammar_saved_and_loaded_parses_alike(tiny_grammar, tmp_path):
    """Saved in bfloat16 (the default precision of a model folder): weights already that precision come back alike."""
    with torch.no_grad():
        for parameter in tiny_grammar.parameters():
            parameter.copy_(parameter.bfloat16().float())
    vocab = Vocabulary(["<unk>", "<eos>", "the", "cat", "sat", "on", "mat"])
    modeldir.save(tmp_path / "tn", tiny_grammar, vocab, "spans", reading=Reading())
    loaded = modeldir.load(tmp_path / "tn")
    assert loaded.model.config == TINY and named("tnpcfg").settings is TnpcfgConfig
    sentence = Sentence.of_tokens("the cat sat on the mat".split())
    here = Parser(modeldir.ModelBundle(tiny_grammar, vocab, "spans", path=None)).distances([sentence])
    there = Parser(loaded).distances([sentence])
    assert np.allclose(next(iter(here))[0], next(iter(there))[0], atol=1e-4)


def test_a_fit_with_members_of_three_families_votes_them_all(tmp_path, monkeypatch):
    """The family through ``onparse fit``: its sizes and section as options generated from its declaration."""
    from onparse.fit import runners

    monkeypatch.setattr(runners, "collapsed", lambda member, sentences, settings: None)  # toy models' trees collapse
    sizes = {"--embedding-size": 16, "--hidden-size": 24, "--chunk-size": 4, "--vocab-size": 60}
    sizes |= {"--nonterminals": 3, "--preterminals": 4, "--symbol-size": 8, "--grammar-batch-size": 50}
    sizes |= {"--tnpcfg-nonterminals": 3, "--tnpcfg-preterminals": 4, "--tnpcfg-rank": 5, "--tnpcfg-symbol-size": 8}
    sizes |= {"--tnpcfg-batch-size": 50, "--members": 3, "--member-epochs": 1, "--rounds": 0, "--sentences": 100}
    sizes |= {"--grammar-students": 0, "--evals-per-epoch": 1, "--scratch-passes": 1, "--dtype": "fp32"}
    args = ["fit", "--train", str(EXAMPLES / "corpus.txt"), "--dev", str(EXAMPLES / "dev.txt"), "--out", str(tmp_path)]
    args += ["--family", "onlstm", "--family", "pcfg", "--family", "tnpcfg", "--direction", "forward"]
    args += ["--no-punctuation", "--threads", "1", *(str(part) for pair in sizes.items() for part in pair)]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    record = json.loads((tmp_path / "fit.json").read_text())
    assert record["plan"]["sections"]["tnpcfg"]["model"]["rank"] == 5
    parser = Parser.load(tmp_path / "model")
    assert "tnpcfg" in [member.bundle.family for member in parser.members]
    assert parser.parse("the cat sat on the mat").tree.leaves()


def test_the_family_is_named_nowhere_outside_its_folder_but_the_registry():
    """Adding a family is its folder and one line of the registry: no other module of the package names it."""
    package = Path(__file__).resolve().parents[1] / "onparse"
    naming = [
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if "tnpcfg" in path.read_text().lower() and "tnpcfg" not in path.relative_to(package).parts
    ]
    assert naming == ["families/__init__.py"]
