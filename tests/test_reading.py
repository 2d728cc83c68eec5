"""What a model reads of a sentence (punctuation, direction) and how its steps become one distance per word."""

import json

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from nltk import Tree

from onparse.families import OnlstmConfig
from onparse.families.onlstm.model import OnlstmModel
from onparse.parsing.evaluate import model_spans
from onparse.parsing.parse import Parser
from onparse.settings import BACKWARD, FORWARD, Reading
from onparse.store import modeldir
from onparse.structures.trees import build_tree, spans
from onparse.text.language import Sentence
from onparse.text.reading import model_tokens, pool, read_positions, word_ranges, word_span_marginals
from onparse.text.tokenize import normalize_punctuation
from onparse.text.treebank import gold_sentence
from onparse.text.vocabulary import Vocabulary

PUNCTUATED = Sentence(("The", "cat", ",", "sat", "on", "the", "mat", "."), (0, 1, 3, 4, 5, 6))


def reading_model(tmp_path, reading: Reading, seed: int = 0):
    torch.manual_seed(seed)
    vocab = Vocabulary(["<eos>", "<unk>", "the", "cat", "sat", "on", "mat", ",", "."])
    model = OnlstmModel(
        OnlstmConfig(vocab_size=len(vocab), embedding_size=8, hidden_size=12, n_layers=3, chunk_size=4)
    ).eval()
    path = tmp_path / f"{reading.direction}-{reading.punctuation}"
    modeldir.save(path, model, vocab, default_layer=2, reading=reading)
    return path, modeldir.load(path).model, vocab  # the weights as stored (bf16), as the parser reads them


def raw_steps(model, vocab, tokens):
    """The model's distances (layers x tokens) at each token it reads, after an <eos>, in the order given."""
    ids = torch.tensor([vocab.eos_id] + vocab.ids(tokens))[:, None]
    return model.distances(ids)[:, 1:, 0]


def test_words_read_left_to_right_keep_their_own_distances():
    steps = torch.arange(12.0).view(2, 6)
    sentence = Sentence.of_tokens("the cat sat on the mat".split())
    assert torch.equal(pool(steps, word_ranges(Reading(), sentence)), steps)


def test_reading_right_to_left_gives_each_word_the_gap_before_it(tmp_path):
    path, model, vocab = reading_model(tmp_path, Reading(direction=BACKWARD))
    words = "the cat sat on the mat".split()
    parse = Parser.load(path).parse(" ".join(words))
    assert parse.model_input == words[::-1]
    raw = raw_steps(model, vocab, words[::-1])  # step s read word n-1-s, after word n-s: the gap before word n-s
    n = len(words)
    for k in range(1, n):
        assert torch.allclose(torch.from_numpy(parse.distances[0][:, k]), raw[:, n - k], atol=1e-5)
    assert torch.allclose(
        torch.from_numpy(parse.distances[0][:, 0]), raw.min(1).values, atol=1e-5
    )  # nothing read before word 0


def test_punctuation_reaches_the_model_but_never_the_trees_words(tmp_path):
    path, model, vocab = reading_model(tmp_path, Reading(punctuation=True))
    parse = Parser.load(path).parse("The cat, sat on the mat.")
    assert parse.tokens == list(PUNCTUATED.tokens)
    assert parse.model_input == ["the", "cat", ",", "sat", "on", "the", "mat", "."]
    assert parse.distances[0].shape == (3, 6) and sorted(parse.words_tree.leaves()) == list(range(6))
    assert sorted(parse.tree.leaves()) == list(range(8))  # the comma and the period attached, as for any model
    raw = raw_steps(model, vocab, parse.model_input)
    expected = torch.stack([raw[:, 0], raw[:, 1], raw[:, 2:4].amax(1), raw[:, 4], raw[:, 5], raw[:, 6]], 1)
    assert torch.allclose(torch.from_numpy(parse.distances[0]), expected, atol=1e-5)


def test_punctuation_read_right_to_left_marks_the_gap_it_stands_in(tmp_path):
    reading = Reading(punctuation=True, direction=BACKWARD)
    assert read_positions(reading, PUNCTUATED) == [7, 6, 5, 4, 3, 2, 1, 0]
    # read steps: 0 ".", 1 mat, 2 the, 3 on, 4 sat, 5 ",", 6 cat, 7 The; each measures the gap after its token
    assert word_ranges(reading, PUNCTUATED) == [(0, 0), (7, 8), (5, 7), (4, 5), (3, 4), (2, 3)]


def test_the_scorer_sees_the_treebanks_words_alone(tmp_path):
    path, _, _ = reading_model(tmp_path, Reading(punctuation=True))
    gold = gold_sentence(
        Tree.fromstring("(S (NP (DT The) (NN cat)) (, ,) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))")
    )
    assert gold.words == ("The", "cat", "sat", "on", "the", "mat") and gold.sentence == PUNCTUATED
    (found,) = model_spans(Parser.load(path), [gold])
    assert max(end for _, end in found["mean"]) == 6 and (0, 6) in found["mean"]


def test_treebank_and_typed_punctuation_read_alike():
    assert {normalize_punctuation(p) for p in ["``", "''", '"', "\u201c", "\u201d", "\u201e"]} == {'"'}
    assert {normalize_punctuation(p) for p in ["-LRB-", "(", "\uff08"]} == {"("}
    assert normalize_punctuation("\uff0c") == "," and normalize_punctuation("\u3002") == "\u3002"
    assert model_tokens(Reading(punctuation=True), Sentence(("``", "Hi", "''"), (1,))) == ['"', "hi", '"']


@given(st.lists(st.booleans(), min_size=1, max_size=12), st.sampled_from([FORWARD, BACKWARD]), st.booleans())
def test_every_gap_reads_each_step_between_its_words_once(is_word, direction, punctuation):
    words = tuple(k for k, word in enumerate(is_word) if word)
    if not words:
        return
    sentence = Sentence(tuple("w" if word else "," for word in is_word), words)
    reading = Reading(punctuation, direction)
    ranges = word_ranges(reading, sentence)
    order = read_positions(reading, sentence)
    assert len(ranges) == len(words)
    used = [step for start, end in ranges for step in range(start, end)]
    assert len(used) == len(set(used)) and all(0 <= step < len(order) for step in used)
    for k in range(1, len(words)):  # the gap before word k: the steps of the tokens between words k-1 and k, in order
        tokens = [order[step] for step in range(*ranges[k])]
        between = range(words[k - 1] + 1, words[k] + 1) if direction == FORWARD else range(words[k - 1], words[k])
        assert sorted(tokens) == [t for t in between if punctuation or t in words]


def test_distillation_learns_through_the_pooled_distances():
    steps = torch.randn(3, 5, requires_grad=True)
    pool(steps, [(0, 1), (1, 3), (3, 5)]).sum().backward()
    assert (steps.grad.sum(1) == 3).all()  # one step of each range carries each word's gradient


def test_a_model_directory_records_its_reading_and_refuses_a_wrong_one(tmp_path):
    path, _, _ = reading_model(tmp_path, Reading(punctuation=True, direction=BACKWARD))
    assert modeldir.load(path).reading == Reading(True, BACKWARD)
    config = json.loads((path / "config.json").read_text())
    config["reading"] = {"punctuation": "yes", "direction": BACKWARD}
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(modeldir.ModelDirError, match="punctuation must be true or false"):
        modeldir.load(path)
    config["reading"] = {"direction": "sideways"}
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(modeldir.ModelDirError, match="direction must be"):
        modeldir.load(path)


@given(st.lists(st.tuples(st.booleans(), st.floats(0, 1)), min_size=2, max_size=12))
def test_a_grammars_certain_tree_over_tokens_gives_its_words_tree_over_the_words(tokens):
    """Marginals that make one tree over the tokens certain become those of the tree the words keep: a constituent
    of the words for every token span that holds two or more of them, and nothing else."""
    at = [k for k, (is_word, _) in enumerate(tokens) if is_word]
    if len(at) < 2:
        return
    token_tree = build_tree([distance for _, distance in tokens])
    marginals = np.zeros((len(tokens) + 1, len(tokens) + 1))
    for start, end in spans(token_tree):
        marginals[start, end] = 1
    sentence = Sentence(tuple(str(k) for k in range(len(tokens))), tuple(at))
    projected = word_span_marginals(Reading(punctuation=True), sentence, marginals)
    kept = set()
    for start, end in spans(token_tree):
        inside = [k for k, position in enumerate(at) if start <= position < end]
        if len(inside) >= 2:
            kept.add((inside[0], inside[-1] + 1))
    found = {(i, j) for i in range(len(at) + 1) for j in range(i + 2, len(at) + 1) if projected[i, j] == 1}
    assert found == kept
    assert set(np.unique(projected[np.triu_indices(len(at) + 1, 2)])) <= {0.0, 1.0}


def test_a_grammar_reading_the_words_alone_keeps_its_marginals():
    marginals = np.random.default_rng(0).random((4, 4))
    assert word_span_marginals(Reading(), Sentence(("a", "b", "c"), (0, 1, 2)), marginals) is marginals
