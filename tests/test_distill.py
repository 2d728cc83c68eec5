"""Distillation targets, the ranking loss, and that training moves a model toward a teacher's trees."""

import numpy as np
import pytest
import torch
from conftest import tiny_model
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk import Tree

from onparse.families.onlstm.model import OnlstmModel
from onparse.families.onlstm.training import DistillationObjective, Example, examples, ranking_loss, split_spans
from onparse.structures.trees import build_tree, right_branching, spans
from onparse.text.language import Sentence


def rebuilt(tree_spans: set, n: int) -> Tree:
    lo, hi = split_spans(tree_spans, n)
    return build_tree(hi - lo)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30))
def test_every_tree_the_builder_makes_is_rebuilt_exactly(distances):
    tree = build_tree(distances)
    assert rebuilt(spans(tree), len(distances)) == tree


def test_right_branching_targets_fall_word_by_word():
    lo, hi = split_spans(spans(right_branching(4)), 4)
    assert (hi - lo).tolist() == [4, 3, 2, 1]


def test_a_tree_out_of_the_builders_reach_becomes_the_nearest_it_can_build():
    # ((a b) ((c d) e)): the right child's left child has two words, which the builder cannot make
    target = Tree.fromstring("(X (X 0 1) (X (X 2 3) 4))", read_leaf=int)
    tree = rebuilt(spans(target), 5)
    assert tree == Tree.fromstring("(X (X 0 1) (X 2 (X 3 4)))", read_leaf=int)
    assert rebuilt(spans(tree), 5) == tree  # and that one is kept as it is


def test_ranking_loss_is_zero_when_every_split_wins_by_the_margin_and_positive_otherwise():
    lo, hi = (torch.from_numpy(a)[None] for a in split_spans(spans(right_branching(4)), 4))
    lengths = torch.tensor([4])
    falling = torch.tensor([[0.9, 0.6, 0.3, 0.0]])
    assert ranking_loss(falling, lo, hi, lengths, margin=0.1).item() == 0.0
    assert ranking_loss(falling.flip(1), lo, hi, lengths, margin=0.1).item() > 0.5


def test_ranking_loss_ignores_padding():
    lo, hi = (torch.from_numpy(np.pad(a, (0, 2)))[None] for a in split_spans(spans(right_branching(3)), 3))
    distances = torch.tensor([[0.9, 0.5, 0.1, 5.0, 7.0]])  # the last two are padding
    assert ranking_loss(distances, lo, hi, torch.tensor([3]), margin=0.1).item() == 0.0


def test_the_objective_pulls_a_model_toward_the_teachers_trees():
    model, vocab = tiny_model(3)
    sentences = [
        ["the", "cat", "sat", "on", "the", "mat"],
        ["a", "dog", "sat"],
        ["the", "dog", "sat", "on", "a", "mat"],
    ]
    teacher = [spans(right_branching(len(s))) for s in sentences]
    data = examples([Sentence.of_tokens(s) for s in sentences], teacher, vocab)
    assert isinstance(data[0], Example) and data[0].ids[:2] == vocab.ids(["the", "cat"])
    objective = DistillationObjective(data, vocab, 2, batch_size=2, rank_weight=20.0, margin=0.05, seed=0)
    assert objective.batches_per_epoch == 2 and sorted(i for b in objective.batches(0) for i in b) == [0, 1, 2]
    assert objective.batches(1) == DistillationObjective(data, vocab, 2, 2, 20.0, 0.05, seed=0).batches(1)  # resumable

    def rank_loss() -> float:
        with torch.no_grad():
            return float(np.mean([objective.loss(model, 0, b, torch.float32)[2]["rank"] for b in range(2)]))

    before = rank_loss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for epoch in range(30):
        for batch in range(objective.batches_per_epoch):
            loss, tokens, parts = objective.loss(model, epoch, batch, torch.float32)
            assert tokens > 0 and loss.item() == pytest.approx(parts["lm"] + 20.0 * parts["rank"], rel=1e-4)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert rank_loss() < 0.5 * before


def test_packed_training_gradients_equal_one_sentence_at_a_time():
    model, vocab = tiny_model(4)
    model.train()
    model.config.dropout = model.config.dropouth = model.config.dropouti = model.config.dropoute = 0.0
    for layer in model.layers:
        layer.wdrop = 0.0
    sentences = [torch.tensor([0, 2, 3, 4, 5]), torch.tensor([0, 7, 8])]

    def grad_of(batches: list[list[torch.Tensor]]) -> torch.Tensor:
        model.zero_grad()
        for batch in batches:
            packed = torch.nn.utils.rnn.pack_sequence(batch)
            output, _, distances = model(packed.data, None, torch.float32, packed.batch_sizes.tolist())
            (output.pow(2).sum() + distances.sum()).backward()
        return model.layers[1].recurrent_proj.weight.grad.clone()

    assert isinstance(model, OnlstmModel)
    assert torch.allclose(grad_of([sentences]), grad_of([[s] for s in sentences]), atol=1e-5)
