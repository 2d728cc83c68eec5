"""The neural PCFG's inside algorithm, span marginals and MBR trees against brute force over every binary tree."""

import itertools
import math

import numpy as np
import pytest
import torch

from onparse.config import PRODUCTIONS, GrammarConfig
from onparse.pcfg import NeuralPCFG, Rules, inside, mbr_tree
from onparse.trees import left_branching, spans


def binary_trees(start: int, end: int):
    """Every binary tree over words start .. end-1, as nested (start, end, left, right) tuples (leaves: (i, i+1))."""
    if end - start == 1:
        yield (start, end, None, None)
        return
    for middle in range(start + 1, end):
        for left in binary_trees(start, middle):
            for right in binary_trees(middle, end):
                yield (start, end, left, right)


def tree_spans(tree) -> set:
    start, end, left, right = tree
    return set() if left is None else {(start, end)} | tree_spans(left) | tree_spans(right)


def rule_table(rules: Rules) -> np.ndarray:
    """p(A -> B C) for every A, B, C: the joint table, or the product of the independent left and right choices."""
    if rules.binary is not None:
        return rules.binary.detach().double().exp().numpy()
    left, right = (table.detach().double().exp().numpy() for table in (rules.left, rules.right))
    return left[:, :, None] * right[:, None, :]


def tree_probability(tree, words, root, rule, emission) -> float:
    """p(words, tree) summed over the symbols at its nodes, with the full rule table ``rule`` (A x B x C)."""
    n_nt = root.shape[0]

    def beta(node):  # over N + P: a node's inside score for each symbol
        start, end, left, right = node
        found = np.zeros(rule.shape[1])
        if left is None:
            found[n_nt:] = emission[:, words[start]]
            return found
        found[:n_nt] = np.einsum("abc,b,c->a", rule, beta(left), beta(right))
        return found

    return float(root @ beta(tree)[:n_nt])


@pytest.fixture(params=PRODUCTIONS)
def tiny_grammar(request):
    torch.manual_seed(3)
    model = NeuralPCFG(GrammarConfig(vocab_size=7, nonterminals=3, preterminals=4, symbol_size=8,
                                     productions=request.param))
    with torch.no_grad():  # sharper rules than a fresh network gives, so trees differ in probability
        for parameter in model.parameters():
            parameter.mul_(3)
    return model


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_inside_equals_the_sum_over_every_binary_tree_and_marginals_its_span_shares(tiny_grammar, n):
    words = torch.tensor([[(3 * k + n) % 7 for k in range(n)]])
    rules = tiny_grammar.rules()
    root, emission = (tensor.detach().double().exp().numpy() for tensor in (rules.root, rules.emission))
    tables = [root, rule_table(rules), emission]
    trees = list(binary_trees(0, n))
    assert len(trees) == math.comb(2 * (n - 1), n - 1) // n  # Catalan: every binary tree once
    probabilities = np.array([tree_probability(tree, words[0].tolist(), *tables) for tree in trees])
    total = probabilities.sum()
    assert tiny_grammar.log_likelihood(words).item() == pytest.approx(math.log(total), abs=1e-4)

    marginals = tiny_grammar.span_marginals(words)[0].numpy()
    for start, end in itertools.combinations(range(n + 1), 2):
        if end - start >= 2:
            expected = sum(p for p, tree in zip(probabilities, trees) if (start, end) in tree_spans(tree)) / total
            assert marginals[start, end] == pytest.approx(expected, abs=1e-4)


def test_span_marginals_of_a_tree_distribution_sum_to_its_constituents(tiny_grammar):
    words = torch.randint(0, 7, (4, 9))
    marginals = tiny_grammar.span_marginals(words)
    # a binary tree of n words holds n - 1 spans of two or more words, the whole sentence among them
    assert marginals.sum((1, 2)).tolist() == pytest.approx([8.0] * 4, abs=1e-3)
    assert marginals[:, 0, 9].tolist() == pytest.approx([1.0] * 4, abs=1e-5)


def test_mbr_returns_the_tree_a_grammar_makes_certain():
    """Right children are always preterminals: every tree is left-branching, whatever the words."""
    n_nt, n_pt, vocab = 2, 3, 5
    torch.manual_seed(0)
    log = lambda x: torch.log_softmax(x, -1)  # noqa: E731
    right = torch.full((n_nt, n_nt + n_pt), -1e9)
    right[:, n_nt:] = 0.0
    rules = Rules(log(torch.randn(n_nt)), log(torch.randn(n_nt, n_nt + n_pt)), log(right), log(torch.randn(n_pt, vocab)))
    words = torch.tensor([[0, 3, 1, 4, 2, 2, 0]])
    scores = torch.zeros(1, 8, 8, requires_grad=True)
    (marginals,) = torch.autograd.grad(inside(rules, words, scores).sum(), scores)
    assert spans(mbr_tree(marginals[0].numpy())) == spans(left_branching(7))


def test_the_inside_algorithm_refuses_a_single_word():
    with pytest.raises(ValueError, match="two or more words"):
        NeuralPCFG(GrammarConfig(vocab_size=5, nonterminals=2, preterminals=2, symbol_size=4)).log_likelihood(torch.tensor([[1]]))


def test_the_outside_pass_gives_the_gradient_of_log_z_on_long_sentences(tiny_grammar):
    words = torch.randint(0, 7, (2, 23))
    rules = tiny_grammar.rules()
    rules = Rules(*(None if tensor is None else tensor.detach() for tensor in vars(rules).values()))
    scores = torch.zeros(2, 24, 24, requires_grad=True)
    (gradient,) = torch.autograd.grad(inside(rules, words, scores).sum(), scores)
    assert torch.allclose(tiny_grammar.span_marginals(words), gradient, atol=1e-4)
