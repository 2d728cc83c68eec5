"""The Parser: normalized model input, and batches that change nothing."""

import pytest

from onparse.modeldir import load
from onparse.parse import InputError, Parser
from onparse.trees import spans


def test_model_input_is_normalized_with_unknowns(tiny_model_dir):
    parser = Parser.load(tiny_model_dir)
    parse = parser.parse(["The Cat sat on 3 zebras!"])[0]
    assert parse.tokens == ["The", "Cat", "sat", "on", "3", "zebras", "!"]
    assert parse.model_input == ["the", "cat", "sat", "on", "N", "<unk>"]
    assert parse.distances.shape == (3, 6)
    assert parse.tree.leaves() == list(range(7))


@pytest.mark.parametrize("batch_size", [4, 64])  # 64: several groups of 16 padded to different lengths
def test_batched_trees_equal_one_at_a_time(tiny_model_dir, batch_size):
    sentences = ["the cat sat", "a dog sat on the mat .", "the mat", "cat", "on the cat a dog sat on a mat"] * 8
    batched = Parser.load(tiny_model_dir, batch_size=batch_size).parse(sentences)
    single = Parser.load(tiny_model_dir, batch_size=1).parse(sentences)
    for a, b in zip(batched, single):
        assert a.tree == b.tree
        assert abs(a.distances - b.distances).max() < 1e-5


def test_every_layer_can_build_the_tree(tiny_model_dir):
    bundle = load(tiny_model_dir)
    trees = {k: Parser(bundle, layer=k).parse(["the cat sat on the mat"])[0].words_tree() for k in (1, 2, 3)}
    assert all(spans(t) for t in trees.values())
    with pytest.raises(InputError):
        Parser(bundle, layer=4)


def test_limits(tiny_model_dir):
    parser = Parser.load(tiny_model_dir, max_words=5)
    with pytest.raises(InputError, match="over the limit"):
        parser.parse(["the cat sat on the mat"])
    with pytest.raises(InputError, match="empty"):
        parser.parse([""])
