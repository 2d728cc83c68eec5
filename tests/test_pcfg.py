"""The neural PCFG's inside algorithm, span marginals and MBR trees against brute force over every binary tree."""

import itertools
import math

import numpy as np
import pytest
import torch

from onparse.families import PcfgConfig
from onparse.families.grammar import Rules, focus_span_scores, inside, share_span_scores, tree_span_scores
from onparse.families.pcfg import PRODUCTIONS
from onparse.families.pcfg.model import NeuralPCFG
from onparse.structures.trees import left_branching, spans
from onparse.structures.voting import best_tree


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
    model = NeuralPCFG(
        PcfgConfig(vocab_size=7, nonterminals=3, preterminals=4, symbol_size=8, productions=request.param)
    )
    with torch.no_grad():  # sharper rules than a fresh network gives, so trees differ in probability
        for parameter in model.parameters():
            parameter.mul_(3)
    return model


def check_against_every_tree(grammar, words: torch.Tensor, tables: list[np.ndarray]) -> tuple[list, np.ndarray]:
    """Assert that ``grammar``'s inside pass is the sum over every binary tree and labelling of one sentence
    (``words``: 1 x n) under its rule ``tables`` (root, A -> B C, emissions), and its span marginals each span's
    share of that sum; returns the trees and their probabilities."""
    n = words.size(1)
    trees = list(binary_trees(0, n))
    assert len(trees) == math.comb(2 * (n - 1), n - 1) // n  # Catalan: every binary tree once
    probabilities = np.array([tree_probability(tree, words[0].tolist(), *tables) for tree in trees])
    total = probabilities.sum()
    assert grammar.log_likelihood(words).item() == pytest.approx(math.log(total), abs=1e-4)
    marginals = grammar.span_marginals(words)[0].numpy()
    for start, end in itertools.combinations(range(n + 1), 2):
        if end - start >= 2:
            expected = sum(p for p, tree in zip(probabilities, trees) if (start, end) in tree_spans(tree)) / total
            assert marginals[start, end] == pytest.approx(expected, abs=1e-4)
    return trees, probabilities


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_inside_equals_the_sum_over_every_binary_tree_and_marginals_its_span_shares(tiny_grammar, n):
    words = torch.tensor([[(3 * k + n) % 7 for k in range(n)]])
    rules = tiny_grammar.rules()
    root, emission = (tensor.detach().double().exp().numpy() for tensor in (rules.root, rules.emission))
    check_against_every_tree(tiny_grammar, words, [root, rule_table(rules), emission])


@pytest.mark.parametrize("n", [2, 4, 6])
def test_scores_that_keep_one_tree_give_the_joint_likelihood_of_the_sentence_and_that_tree(tiny_grammar, n):
    words = torch.tensor([[(5 * k + n) % 7 for k in range(n)]] * 2)
    rules = tiny_grammar.rules()
    tables = [tensor.detach().double().exp().numpy() for tensor in (rules.root, rules.emission)]
    trees = list(binary_trees(0, n))[:2] if n > 2 else list(binary_trees(0, n)) * 2
    found = tiny_grammar.log_likelihood(words, tree_span_scores([tree_spans(tree) for tree in trees], n))
    for row, tree in enumerate(trees):
        assert found[row].item() == pytest.approx(
            math.log(tree_probability(tree, words[row].tolist(), tables[0], rule_table(rules), tables[1])), abs=1e-4
        )


@pytest.mark.parametrize("n", [3, 4, 5])
def test_span_shares_weigh_every_tree_by_the_product_of_its_spans_shares(tiny_grammar, n):
    """Soft targets: log sum_t p(x, t) prod_{s in t} share(s), spans no voter holds ruled out."""
    words = torch.tensor([[(2 * k + n) % 7 for k in range(n)]])
    rules = tiny_grammar.rules()
    root, emission = (tensor.detach().double().exp().numpy() for tensor in (rules.root, rules.emission))
    trees = list(binary_trees(0, n))
    shares = {
        (start, end): 0.2 + 0.6 * ((start * 7 + end * 3) % 5) / 4  # spans of 2 to n - 1 words, one left out
        for start, end in itertools.combinations(range(n + 1), 2)
        if 2 <= end - start < n
    }
    del shares[(0, 2)]
    expected = 0.0
    for tree in trees:
        inner = tree_spans(tree) - {(0, n)}
        if all(span in shares for span in inner):
            expected += tree_probability(tree, words[0].tolist(), root, rule_table(rules), emission) * math.prod(
                shares[span] for span in inner
            )
    found = tiny_grammar.log_likelihood(words, share_span_scores([[(a, b, v) for (a, b), v in shares.items()]], n))
    assert found.item() == pytest.approx(math.log(expected), abs=1e-4)


def example_shares(n: int) -> list[tuple[int, int, float]]:
    """Shares of some spans of 2 to n - 1 words, as a vote's: uneven, one span left out."""
    return [
        (start, end, 0.2 + 0.6 * ((start * 7 + end * 3) % 5) / 4)
        for start, end in itertools.combinations(range(n + 1), 2)
        if 2 <= end - start < n and (start, end) != (0, 2)
    ]


@pytest.mark.parametrize("n", [3, 4, 5])
def test_a_focus_weighs_every_tree_by_exp_focus_times_its_spans_shares_and_its_gradient_is_the_sum_over_trees(
    tiny_grammar, n
):
    """Parse-focusing: log sum_t p(x, t) exp(focus * sum_{s in t} share(s)), no tree ruled out; its gradient is
    the gradient of that sum written tree by tree (each tree's joint likelihood from scores that keep it alone)."""
    words = torch.tensor([[(2 * k + n) % 7 for k in range(n)]])
    shares, focus = example_shares(n), 2.5
    weight = {(start, end): share for start, end, share in shares}
    trees = [tree_spans(tree) for tree in binary_trees(0, n)]
    each = torch.stack([tiny_grammar.log_likelihood(words, tree_span_scores([tree], n))[0] for tree in trees])
    bonus = torch.tensor([focus * sum(weight.get(span, 0.0) for span in tree) for tree in trees])
    enumerated = torch.logsumexp(each + bonus, 0)
    expected = torch.autograd.grad(enumerated, list(tiny_grammar.parameters()))
    focused = tiny_grammar.log_likelihood(words, focus_span_scores([shares], n, focus))[0]
    found = torch.autograd.grad(focused, list(tiny_grammar.parameters()))
    assert focused.item() == pytest.approx(enumerated.item(), abs=1e-4)
    for mine, theirs in zip(found, expected):
        assert torch.allclose(mine, theirs, atol=1e-4, rtol=1e-3)
    plain = tiny_grammar.log_likelihood(words)[0]
    assert focused.item() > plain.item() + 0.1  # the shares do weigh in


@pytest.mark.parametrize("n", [2, 4, 6])
def test_a_focus_on_spans_that_all_weigh_the_same_is_the_plain_likelihood(tiny_grammar, n):
    """Equal shares weigh every tree alike: the plain likelihood times exp(focus * share * (n - 2)), since every
    binary tree holds n - 2 spans of 2 to n - 1 words; a focus of 0 is the plain likelihood itself."""
    words = torch.tensor([[(3 * k + 1) % 7 for k in range(n)], [(5 * k + 2) % 7 for k in range(n)]])
    plain = tiny_grammar.log_likelihood(words)
    even = [[(start, end, 0.4) for start, end in itertools.combinations(range(n + 1), 2) if 2 <= end - start < n]] * 2
    focused = tiny_grammar.log_likelihood(words, focus_span_scores(even, n, 3.0))
    assert focused.tolist() == pytest.approx((plain + 3.0 * 0.4 * (n - 2)).tolist(), abs=1e-4)
    unfocused = tiny_grammar.log_likelihood(words, focus_span_scores([example_shares(n)] * 2, n, 0.0))
    assert unfocused.tolist() == pytest.approx(plain.tolist(), abs=1e-5)


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
    rules = Rules(
        log(torch.randn(n_nt)), log(torch.randn(n_nt, n_nt + n_pt)), log(right), log(torch.randn(n_pt, vocab))
    )
    words = torch.tensor([[0, 3, 1, 4, 2, 2, 0]])
    scores = torch.zeros(1, 8, 8, requires_grad=True)
    (marginals,) = torch.autograd.grad(inside(rules, words, scores).sum(), scores)
    assert spans(best_tree(marginals[0].numpy().astype("float64"))) == spans(left_branching(7))


def test_the_inside_algorithm_refuses_a_single_word():
    with pytest.raises(ValueError, match="two or more words"):
        NeuralPCFG(PcfgConfig(vocab_size=5, nonterminals=2, preterminals=2, symbol_size=4)).log_likelihood(
            torch.tensor([[1]])
        )


def test_the_outside_pass_gives_the_gradient_of_log_z_on_long_sentences(tiny_grammar):
    words = torch.randint(0, 7, (2, 23))
    gradient = inside_marginals(tiny_grammar.rules(), words)
    assert torch.allclose(tiny_grammar.span_marginals(words), gradient, atol=1e-4)


def one_sentence_rules(rules: Rules, k: int) -> Rules:
    """Sentence ``k``'s rules out of a compound grammar's batch of rules."""
    return Rules(rules.root[k], rules.left[k], rules.right[k], rules.emission)


def test_a_compound_grammar_gives_each_sentence_its_own_rules_in_one_batch():
    """Inside scores and marginals of a batch under per-sentence rules equal each sentence's under its own alone."""
    torch.manual_seed(5)
    model = NeuralPCFG(PcfgConfig(vocab_size=7, nonterminals=3, preterminals=4, symbol_size=8, latent_size=5))
    words = torch.randint(0, 7, (3, 6))
    rules = model.rules(3 * torch.randn(3, 5))
    assert not torch.allclose(rules.left[0], rules.left[1])  # the vectors make the sentences' rules differ
    alone = [one_sentence_rules(rules, k) for k in range(3)]
    assert torch.allclose(inside(rules, words), torch.cat([inside(alone[k], words[k : k + 1]) for k in range(3)]))
    marginals = model.span_marginals(words)
    mean = model.posterior(words)[0]
    by_mean = model.rules(mean)
    for k in range(3):
        single = inside_marginals(one_sentence_rules(by_mean, k), words[k : k + 1])
        assert torch.allclose(marginals[k], single[0], atol=1e-5)
    assert marginals.sum((1, 2)).tolist() == pytest.approx([5.0] * 3, abs=1e-3)


def inside_marginals(rules: Rules, words: torch.Tensor) -> torch.Tensor:
    """Span marginals as the gradient of log Z with respect to every span's score: the definition, not the outside
    pass."""
    rules = Rules(*(None if tensor is None else tensor.detach() for tensor in vars(rules).values()))
    scores = torch.zeros(words.size(0), words.size(1) + 1, words.size(1) + 1, requires_grad=True)
    return torch.autograd.grad(inside(rules, words, scores).sum(), scores)[0]


def test_a_compound_grammar_trains_on_its_evidence_lower_bound():
    """At q's mean (eval mode) the bound is log p(x | mean) less the KL divergence; in train mode z is drawn."""
    torch.manual_seed(2)
    model = NeuralPCFG(PcfgConfig(vocab_size=7, nonterminals=3, preterminals=4, symbol_size=8, latent_size=4))
    words = torch.randint(0, 7, (2, 5))
    mean, log_variance = model.posterior(words)
    divergence = 0.5 * (mean**2 + log_variance.exp() - 1 - log_variance).sum(-1)
    assert (divergence > 0).all()
    expected = inside(model.rules(mean), words) - divergence
    assert torch.allclose(model.eval().log_likelihood(words), expected)
    drawn = model.train().log_likelihood(words)
    assert not torch.allclose(drawn, expected)
    drawn.sum().backward()  # the encoder learns through the drawn vector and the divergence
    assert model.encoder_embedding.weight.grad.abs().sum() > 0


def test_a_plain_grammar_keeps_its_parameters_and_a_compound_one_refuses_joint_productions():
    plain = NeuralPCFG(PcfgConfig(vocab_size=7, nonterminals=3, preterminals=4, symbol_size=8))
    assert not any(name.startswith(("encoder", "posterior")) for name in plain.state_dict())
    assert plain.root_network[0].in_features == 8  # shipped grammars' weights load as they were saved
    with pytest.raises(ValueError, match="independent productions"):
        PcfgConfig(latent_size=4, productions="joint").check()
    with pytest.raises(ValueError, match="latent_size"):
        PcfgConfig(latent_size=-1).check()
