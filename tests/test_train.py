"""Training on a tiny corpus: the loss falls, perplexity is what it should be, a resumed run is the same run."""

import importlib.util
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from onparse.config import TrainConfig
from onparse.families import OnlstmConfig
from onparse.families.onlstm.model import OnlstmModel
from onparse.families.onlstm.training import batchify, n_segments, perplexity, segment
from onparse.text.vocabulary import Vocabulary
from onparse.training.runfolder import trainer as make_trainer
from onparse.training.train import Evaluation, Step, learning_rate

ROOT = Path(__file__).resolve().parents[1]

TINY = OnlstmConfig(embedding_size=8, hidden_size=12, chunk_size=4, n_layers=2)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("The cat sat on the mat.\nA dog sat on the cat.\nThe mat sat on a dog!\n" * 20)
    return path


def tiny_config(corpus, **changes) -> TrainConfig:
    return TrainConfig(
        **{
            "train": [str(corpus)],
            "model": TINY,
            "batch_size": 4,
            "bptt": 8,
            "epochs": 2,
            "lr": 1e-2,
            "warmup_updates": 5,
            **changes,
        }
    )


def test_the_loss_falls(corpus):
    trainer = make_trainer(tiny_config(corpus, epochs=6, lr=3e-2))
    losses = [event.loss for event in trainer.steps() if isinstance(event, Step)]
    assert len(losses) == 6 * trainer.batches_per_epoch
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10 - 0.3  # about 2.05 -> 1.35; with no learning it stays at 2.06


def test_evaluations_are_spread_over_each_epoch(corpus):
    trainer = make_trainer(tiny_config(corpus, dev=str(corpus), evals_per_epoch=4, bptt=13))
    assert trainer.batches_per_epoch == 8  # 105 steps of 4 streams, 104 targets in segments of 13
    events = [e for e in trainer.steps() if isinstance(e, Evaluation)]
    assert [e.record["epoch"] for e in events] == [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0]
    assert [e.epoch_end for e in events] == [False, False, False, True] * 2
    assert all(e.record["dev_ppl"] > 1 for e in events)


def test_perplexity_equals_a_hand_computation_over_the_whole_stream():
    torch.manual_seed(0)
    model = OnlstmModel(OnlstmConfig(vocab_size=9, embedding_size=8, hidden_size=12, chunk_size=4)).eval()
    data = batchify(torch.randint(0, 9, (50,)), 2)  # 25 steps x 2 streams
    with torch.no_grad():
        output, _, _ = model(data[:-1])
        log_probs = torch.log_softmax(model.logits(output), dim=-1)
        nll = -log_probs.gather(-1, data[1:].unsqueeze(-1)).mean().item()
    found, _ = perplexity(model, data, bptt=7, dtype=torch.float32)  # segments of 7, 7, 7, 3 carry the state
    assert found == pytest.approx(math.exp(nll), rel=1e-5)


def test_segments_cover_the_stream_once():
    data = torch.arange(23).view(-1, 1)
    pieces = [segment(data, 5, k) for k in range(n_segments(data, 5))]
    assert torch.equal(torch.cat([inputs for inputs, _ in pieces]).flatten(), torch.arange(22))
    assert torch.equal(torch.cat([targets for _, targets in pieces]).flatten(), torch.arange(1, 23))


def test_learning_rate_warms_up_then_decays_to_its_floor():
    config = TrainConfig(lr=1.0, warmup_updates=4, min_lr_ratio=0.1)
    assert [learning_rate(config, u, 104) for u in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert learning_rate(config, 54, 104) == pytest.approx(0.55)  # half way: (1 + 0.1) / 2
    assert learning_rate(config, 104, 104) == pytest.approx(0.1)


def test_a_short_run_warms_up_over_a_tenth_of_its_updates_and_reaches_its_rate():
    config = TrainConfig(lr=1.0, warmup_updates=100, min_lr_ratio=0.1)  # 20 updates: two of warm-up, not a hundred
    assert [learning_rate(config, u, 20) for u in range(4)] == [
        0.5,
        1.0,
        1.0,
        pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 18))),
    ]
    assert learning_rate(config, 0, 9) == 1.0  # under ten updates: no warm-up at all


def test_an_interrupted_and_resumed_run_ends_with_the_same_weights(corpus, tmp_path):
    config = tiny_config(corpus, dev=str(corpus), evals_per_epoch=2)
    uninterrupted = make_trainer(config)
    for _ in uninterrupted.steps():
        pass
    first = make_trainer(config)
    steps = first.steps()
    for _ in range(27):  # into the second epoch, between evaluations
        next(steps)
    torch.save(first.checkpoint(), tmp_path / "checkpoint.pt")
    second = make_trainer(config, torch.load(tmp_path / "checkpoint.pt", weights_only=True))
    assert second.run.update == first.run.update and second.run.epoch == 1
    for _ in second.steps():
        pass
    for name, weight in uninterrupted.model.state_dict().items():
        assert torch.equal(weight, second.model.state_dict()[name]), name
    assert second.run.history[-1]["dev_ppl"] == uninterrupted.run.history[-1]["dev_ppl"]


def test_a_corpus_too_small_for_one_batch_is_an_error(tmp_path):
    path = tmp_path / "small.txt"
    path.write_text("the cat\n")
    with pytest.raises(ValueError, match="too small"):
        make_trainer(TrainConfig(train=[str(path)], model=TINY, batch_size=64))


def test_vocabulary_build_ranks_by_count_then_alphabetically():
    vocab = Vocabulary.build([["b", "a", "c"], ["c", "a", "d"], ["c", "<unk>"]], size=5)
    assert vocab.words == ["<eos>", "<unk>", "c", "a", "b"]
    assert vocab.ids(["c", "d", "b"]) == [2, vocab.unk_id, 4]


NO_DROPOUT = OnlstmConfig(
    embedding_size=8, hidden_size=12, chunk_size=4, n_layers=2, dropout=0, dropouth=0, dropouti=0, dropoute=0, wdrop=0
)


def test_the_hidden_state_carried_between_segments_reaches_the_next_loss(corpus):
    trainer = make_trainer(tiny_config(corpus, model=NO_DROPOUT, dtype="fp32"))
    steps = trainer.steps()
    next(steps)
    carried = [(h.clone(), c.clone()) for h, c in trainer.objective.hidden]
    inputs, targets = segment(trainer.objective.data, trainer.config.bptt, 1)
    with torch.no_grad():
        with_state = trainer.model.loss(trainer.model(inputs, carried)[0], targets).item()
        fresh = trainer.model.loss(trainer.model(inputs, None)[0], targets).item()
    second = next(steps)
    assert second.loss == pytest.approx(with_state, rel=1e-5) and abs(with_state - fresh) > 1e-4


def test_every_update_is_taken_from_gradients_clipped_to_the_configured_norm(corpus):
    trainer = make_trainer(tiny_config(corpus, clip=1e-3, lr=1e-3))
    next(trainer.steps())
    norm = torch.linalg.vector_norm(
        torch.stack([p.grad.norm() for p in trainer.model.parameters() if p.grad is not None])
    )
    assert norm <= 1e-3 * 1.0001


def test_the_optimizer_averages_gradients_with_the_configured_decay(corpus):
    steps = {}
    for beta1 in (0.9, 0.0):
        trainer = make_trainer(tiny_config(corpus, beta1=beta1, weight_decay=0.0))
        events = trainer.steps()
        next(events), next(events)  # Adam's first update is the same for any decay; the second is not
        steps[beta1] = trainer.model.embedding.weight.detach().clone()
    assert trainer.optimizer.param_groups[0]["betas"] == (0.0, 0.999)
    assert not torch.allclose(steps[0.9], steps[0.0])


def test_the_kept_model_is_the_point_of_lowest_dev_perplexity(corpus, tmp_path):
    import json

    from onparse.training.runfolder import train

    config = tiny_config(corpus, dev=str(corpus), evals_per_epoch=2, epochs=3, lr=5e-2)
    train(config, tmp_path / "run")
    history = [json.loads(line) for line in (tmp_path / "run" / "history.jsonl").read_text().splitlines()]
    kept = json.loads((tmp_path / "run" / "model" / "card.json").read_text())["selected"]
    assert kept["dev_ppl"] == min(point["dev_ppl"] for point in history)
    assert len({point["dev_ppl"] for point in history}) > 1  # the rule had a choice to make


def test_a_run_keeps_the_untrained_the_best_and_the_last_evaluation_unless_asked_to_keep_all(corpus, tmp_path):
    from onparse.training import runfolder

    stray = tmp_path / "pruned" / "epoch-99.99"  # named like an evaluation but no model: never the run's to delete
    stray.mkdir(parents=True)
    (stray / "notes.txt").write_text("mine")
    kept = {}
    for name, keep in (("pruned", False), ("all", True)):
        config = tiny_config(corpus, dev=str(corpus), evals_per_epoch=3, epochs=2, keep_evaluations=keep)
        runfolder.train(config, tmp_path / name)
        kept[name] = sorted(p.name for p in (tmp_path / name).iterdir() if p.name.startswith("epoch-"))
    history = [json.loads(line) for line in (tmp_path / "all" / "history.jsonl").read_text().splitlines()]
    assert kept["all"] == ["epoch-00.00", *(point["model_dir"] for point in history)] and len(history) == 6
    best = json.loads((tmp_path / "pruned" / "model" / "card.json").read_text())["selected"]["model_dir"]
    assert kept["pruned"] == sorted({"epoch-00.00", best, history[-1]["model_dir"], "epoch-99.99"})
    assert (stray / "notes.txt").read_text() == "mine"


def test_a_run_of_few_updates_says_so_before_it_starts(corpus, tmp_path, caplog):
    from onparse.training import runfolder

    with caplog.at_level("WARNING", logger="onparse"):
        runfolder.train(tiny_config(corpus, epochs=1), tmp_path / "short")
    assert any("too few to learn much" in record.message for record in caplog.records)
    caplog.clear()
    with caplog.at_level("WARNING", logger="onparse"):
        runfolder.train(tiny_config(corpus, epochs=1, batch_size=1, bptt=2), tmp_path / "long")
    assert not any("too few" in record.message for record in caplog.records)


def test_a_text_file_of_bracketed_trees_is_refused_naming_the_suffix_that_reads_them(tmp_path):
    from onparse.text.corpus import read_sentences

    trees = tmp_path / "trees.txt"
    trees.write_text("(S (NP (DT The) (NN cat)) (VP (VBD sat)))\n(S (NP (NNS Dogs)) (VP (VBP bark)))\n")
    with pytest.raises(ValueError, match="holds bracketed trees, one a line: name it .mrg"):
        read_sentences([str(trees)])
    renamed = tmp_path / "trees.mrg"
    trees.rename(renamed)
    assert [s.word_tokens for s in read_sentences([str(renamed)])] == [["The", "cat", "sat"], ["Dogs", "bark"]]
    text = tmp_path / "text.txt"
    text.write_text("(Reuters) Stocks fell (sharply).\nThe cat sat.\n")
    assert len(read_sentences([str(text)])) == 2


@pytest.mark.parametrize("patience", [0.4, 1.0, None])
def test_a_run_whose_dev_figure_stops_bettering_stops_after_its_patience_in_passes(corpus, patience):
    config = tiny_config(corpus, dev=str(corpus), evals_per_epoch=2, epochs=6, patience=patience)
    trainer = make_trainer(config)
    figures = iter([100.0, 90.0] + [95.0 + k for k in range(20)])  # best at the end of the first pass, then worse
    trainer.dev = lambda model, dtype: {"dev_ppl": next(figures)}
    points = [event.record["epoch"] for event in trainer.steps() if isinstance(event, Evaluation)]
    assert trainer.run.done(config) and trainer.run.stopped_early == (patience is not None)
    if patience is None:
        assert points[-1] == 6.0  # the whole schedule
    else:  # the first evaluation a patience past the best
        assert points[-1] - 1.0 >= patience > points[-2] - 1.0 and points[-1] < 6.0
        # the early-stopping benchmark replays a whole run's curve with the loop's rule: it stops where the loop did
        whole = make_trainer(replace(config, patience=None))
        figures = iter([100.0, 90.0] + [95.0 + k for k in range(20)])
        whole.dev = lambda model, dtype: {"dev_ppl": next(figures)}
        assert len([event for event in whole.steps() if isinstance(event, Evaluation)]) == 12
        spec = importlib.util.spec_from_file_location("early_stopping", ROOT / "benchmarks" / "early_stopping.py")
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
        replayed = bench.replay({"history": whole.run.history, "key": ("dev_ppl", False)}, patience)
        stopped = next(point for point in whole.run.history if point["epoch"] == points[-1])
        assert replayed == {"minutes": stopped["train_minutes"], "kept": whole.run.history[1]}
    resumed = make_trainer(config)
    resumed.restore(trainer.checkpoint())  # a stopped run resumed is done: nothing more to train
    assert not list(resumed.steps())
