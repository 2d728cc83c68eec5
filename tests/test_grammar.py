"""A grammar member end to end: trained on raw text by the one loop, saved, parsed alone and beside ON-LSTMs."""

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from onparse.cli import main
from onparse.config import TrainConfig
from onparse.families import SPANS, PcfgConfig, named
from onparse.families.base import MAX_TRAINING_WORDS
from onparse.families.grammar import focus_span_scores, share_span_scores, tree_span_scores
from onparse.families.grammar_training import GrammarObjective, length_batches
from onparse.families.pcfg import PCFG_TRAINING
from onparse.families.pcfg.model import NeuralPCFG
from onparse.parsing.parse import Parser
from onparse.settings import Reading
from onparse.store import modeldir
from onparse.structures.builder import TreeBuilder
from onparse.text.language import Sentence
from onparse.text.reading import word_span_marginals
from onparse.training import distill
from onparse.training.runfolder import saved_config
from onparse.training.runfolder import trainer as make_trainer
from onparse.training.train import Evaluation, Step

SENTENCES = "The cat sat on the mat.\nA dog sat on the cat.\nThe mat sat on a dog!\nThe dog sat.\n"
TINY = PcfgConfig(nonterminals=3, preterminals=4, symbol_size=8)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(SENTENCES * 15)
    return path


def pcfg_config(corpus, **changes) -> TrainConfig:
    return TrainConfig(
        **{
            "train": [str(corpus)],
            "dev": str(corpus),
            "family": "pcfg",
            "model": TINY,
            **PCFG_TRAINING,
            "batch_size": 40,
            "epochs": 3,
            "warmup_updates": 2,
            "lr": 2e-2,
            **changes,
        }
    )


def test_batches_hold_sentences_of_one_length_and_about_the_words_asked_for():
    lengths = [2, 5, 5, 3, 5, 2, 5, 5, 3]
    batches = length_batches(lengths, words=10)
    assert sorted(k for batch in batches for k in batch) == list(range(len(lengths)))
    assert all(len({lengths[k] for k in batch}) == 1 for batch in batches)
    assert all(len(batch) * lengths[batch[0]] <= 10 for batch in batches)


def test_the_likelihood_rises_and_the_kept_model_is_the_point_of_lowest_dev_perplexity(corpus):
    trainer = make_trainer(pcfg_config(corpus, epochs=6))
    events = list(trainer.steps())
    losses = [event.loss for event in events if isinstance(event, Step)]
    assert sum(losses[-3:]) < sum(losses[:3])
    perplexities = [event.record["dev_ppl"] for event in events if isinstance(event, Evaluation)]
    assert perplexities[-1] < perplexities[0]
    best = [event.best for event in events if isinstance(event, Evaluation)]
    assert best[perplexities.index(min(perplexities))]


def test_a_dev_perplexity_is_the_exponent_of_the_mean_negative_log_likelihood_per_word(corpus):
    trainer = make_trainer(pcfg_config(corpus))
    record = trainer._evaluate(epoch_end=False).record
    words = torch.tensor([trainer.vocab.ids(["the", "dog", "sat"])])
    # the corpus holds 15 copies of 4 sentences; their log-likelihoods, per word
    per_sentence = {}
    for text in SENTENCES.splitlines():
        tokens = [w.lower() for w in text.rstrip(".!").split()]
        per_sentence[text] = trainer.model.log_likelihood(torch.tensor([trainer.vocab.ids(tokens)])).item()
    expected = math.exp(-sum(per_sentence.values()) / sum(len(t.split()) for t in SENTENCES.splitlines()))
    assert record["dev_ppl"] == pytest.approx(expected, rel=1e-4)
    assert trainer.model.log_likelihood(words).item() == pytest.approx(per_sentence["The dog sat."], abs=1e-4)


def test_only_sentences_of_two_to_forty_words_train(corpus, tmp_path):
    long_one = tmp_path / "long.txt"
    long_one.write_text(" ".join(["the"] * (MAX_TRAINING_WORDS + 1)) + "\nword\n" + SENTENCES)
    trainer = make_trainer(pcfg_config(long_one))
    assert sorted(map(len, trainer.objective.sentences)) == [3, 6, 6, 6]


def test_the_command_trains_a_grammar_that_parses_alone_and_beside_an_onlstm(corpus, tmp_path, tiny_model_dir):
    runner = CliRunner()
    out = tmp_path / "run"
    result = runner.invoke(
        main,
        [
            "train",
            "--family",
            "pcfg",
            "--train",
            str(corpus),
            "--dev",
            str(corpus),
            "--nonterminals",
            "3",
            "--preterminals",
            "4",
            "--symbol-size",
            "8",
            "--epochs",
            "2",
            "--out",
            str(out),
            "--threads",
            "1",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    config = json.loads((out / "model" / "config.json").read_text())
    assert config["family"] == "pcfg" and config["default_layer"] == SPANS
    card = json.loads((out / "model" / "card.json").read_text())
    assert card["config"]["lr"] == PCFG_TRAINING["lr"] and card["config"]["family"] == "pcfg"
    assert card["command"].startswith("onparse train --train") and "--family pcfg" in card["command"]  # for the card

    alone = Parser.load(out / "model")
    parse = alone.parse("The cat sat on the mat.")
    marginals = parse.distances[0]
    assert marginals.shape == (7, 7) and parse.tree_distances.shape == (1, 6) and np.isnan(parse.tree_distances).all()
    record = parse.to_dict(punct=False)
    # a lone grammar's confidence in each span is that span's marginal probability
    words = parse.word_positions
    for (start, end), confidence in zip(record["spans"], record["confidence"]):
        first, last = words.index(start), words.index(end - 1) + 1
        expected = 1.0 if last - first in (1, len(words)) else marginals[first, last]
        assert confidence == pytest.approx(expected, abs=1e-4)
    assert record["layers"] == [SPANS] and record["distances"] == [None] and record["layer_distances"] == [None]
    assert len([c for c in record["confidence"] if c < 0.9999]) > 0  # a grammar is unsure somewhere

    mixed = Parser([modeldir.load(out / "model"), modeldir.load(tiny_model_dir)])
    both = mixed.parse("The cat sat on the mat.")
    assert mixed.builder == TreeBuilder((SPANS, 2))
    assert both.built.member_trees[0] == parse.words_tree
    assert json.loads(json.dumps(both.to_dict()))["layers"] == [SPANS, 2]
    result = runner.invoke(main, ["--model", str(out / "model"), "--format", "pretty", "The cat sat."])
    assert result.exit_code == 0 and "span marginals" in result.output

    resumed = runner.invoke(
        main, ["train", "--out", str(out), "--resume", "--epochs", "3", "--quiet", "--threads", "1"]
    )
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((out / "history.jsonl").read_text().splitlines()[-1])["epoch"] == 3


def test_a_grammar_of_joint_productions_trains_is_saved_as_one_and_parses(corpus, tmp_path):
    out = tmp_path / "joint"
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--family",
            "pcfg",
            "--productions",
            "joint",
            "--train",
            str(corpus),
            "--nonterminals",
            "3",
            "--preterminals",
            "4",
            "--symbol-size",
            "8",
            "--epochs",
            "1",
            "--out",
            str(out),
            "--threads",
            "1",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "model" / "card.json").read_text())["config"]["model"]["productions"] == "joint"
    member = Parser.load(out / "model").members[0]
    rules = member.model.rules()
    assert rules.left is None and rules.binary.shape == (3, 7, 7)
    assert torch.allclose(rules.binary.exp().sum((1, 2)), torch.ones(3))
    assert len(Parser.load(out / "model").parse("The cat sat on the mat.").words_tree.leaves()) == 6


def test_a_grammar_reading_punctuation_trains_on_every_token_and_parses_over_the_words(corpus, tmp_path):
    out = tmp_path / "punctuated"
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "train",
            "--family",
            "pcfg",
            "--punctuation",
            "--train",
            str(corpus),
            "--nonterminals",
            "3",
            "--preterminals",
            "4",
            "--symbol-size",
            "8",
            "--epochs",
            "1",
            "--out",
            str(out),
            "--threads",
            "1",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    member = Parser.load(out / "model").members[0]
    assert member.reading == Reading(punctuation=True) and "." in member.bundle.vocab and "!" in member.bundle.vocab
    parse = Parser.load(out / "model").parse("The cat , sat on the mat .")
    read = torch.tensor([member.bundle.vocab.ids(["the", "cat", ",", "sat", "on", "the", "mat", "."])])
    over_tokens = member.model.span_marginals(read)[0].numpy()
    expected = word_span_marginals(
        member.reading, Sentence(tuple(parse.tokens), tuple(parse.word_positions)), over_tokens
    )
    assert parse.distances[0].shape == (7, 7) and np.allclose(parse.distances[0], expected)
    assert parse.words_tree.leaves() == list(range(6))
    backward = runner.invoke(
        main,
        [
            "train",
            "--family",
            "pcfg",
            "--direction",
            "backward",
            "--train",
            str(corpus),
            "--out",
            str(tmp_path / "backward"),
            "--quiet",
        ],
    )
    assert backward.exit_code != 0 and "a grammar reads left to right" in backward.output
    assert len(backward.output.strip().splitlines()) == 1


def test_a_grammar_has_one_readout_and_refuses_layers(corpus, tmp_path):
    trainer = make_trainer(pcfg_config(corpus, epochs=1))
    modeldir.save(tmp_path / "g", trainer.model, trainer.vocab, SPANS)
    with pytest.raises(ValueError, match="no layer of a grammar"):
        modeldir.save(tmp_path / "h", trainer.model, trainer.vocab, 2)


@pytest.mark.parametrize("rule", ["own", "agreement", "consistency"])
def test_ensemble_choices_on_text_keep_a_grammar_at_its_span_marginals(corpus, tmp_path, tiny_model_dir, rule):
    trainer = make_trainer(pcfg_config(corpus, epochs=1))
    modeldir.save(tmp_path / "grammar", trainer.model, trainer.vocab, SPANS)
    result = CliRunner().invoke(
        main,
        [
            "ensemble",
            str(tiny_model_dir),
            str(tmp_path / "grammar"),
            str(tiny_model_dir),
            "--out",
            str(tmp_path / "e"),
            "--choose-on",
            str(corpus),
            "--layer-rule",
            rule,
            "--keep",
            "3",
            "--threads",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    layers = json.loads((tmp_path / "e" / "config.json").read_text())["ensemble"]["layers"]
    assert layers[1] == SPANS and SPANS not in (layers[0], layers[2])
    card = json.loads((tmp_path / "e" / "card.json").read_text())
    assert [member["family"] for member in card["members"]] == ["onlstm", "pcfg", "onlstm"]
    text = "The cat sat on the mat."
    assert (
        Parser.load(tmp_path / "e").parse(text).built.member_trees[1]
        == Parser.load(tmp_path / "grammar").parse(text).words_tree
    )


@pytest.mark.slow
def test_a_grammar_teaches_an_onlstm_and_learns_an_onlstms_trees(corpus, tmp_path, tiny_model_dir):
    trainer = make_trainer(pcfg_config(corpus, epochs=1))
    modeldir.save(tmp_path / "grammar", trainer.model, trainer.vocab, SPANS)
    common = ["--train", str(corpus), "--dev", str(corpus), "--sentences", "20", "--threads", "1", "--quiet"]
    taught = CliRunner().invoke(
        main,
        [
            "distill",
            "--teacher",
            str(tmp_path / "grammar"),
            "--student",
            str(tiny_model_dir),
            "--out",
            str(tmp_path / "s2"),
            "--passes",
            "1",
            *common,
        ],
    )
    assert taught.exit_code == 0, taught.output
    assert json.loads((tmp_path / "s2" / "model" / "card.json").read_text())["config"]["distill"]["teacher"].endswith(
        "grammar"
    )

    learnt = CliRunner().invoke(
        main,
        [
            "distill",
            "--teacher",
            str(tiny_model_dir),
            "--student",
            str(tmp_path / "grammar"),
            "--from-scratch",
            "--lr",
            "0.05",
            "--batch-size",
            "12",
            "--passes",
            "8",
            "--out",
            str(tmp_path / "g"),
            *common,
        ],
    )
    assert learnt.exit_code == 0, learnt.output
    config = json.loads((tmp_path / "g" / "model" / "card.json").read_text())["config"]
    assert config["family"] == "pcfg" and config["clip"] == PCFG_TRAINING["clip"]
    history = [json.loads(line) for line in (tmp_path / "g" / "history.jsonl").read_text().splitlines()]
    agreement = [point["teacher_agreement"] for point in history]
    assert agreement[-1] > agreement[0] and max(agreement) > 80  # the grammar parses as its teacher does
    refused = CliRunner().invoke(
        main,
        [
            "distill",
            "--teacher",
            str(tiny_model_dir),
            "--student",
            str(tmp_path / "grammar"),
            "--from-scratch",
            "--direction",
            "backward",
            "--out",
            str(tmp_path / "b"),
            *common,
        ],
    )
    assert refused.exit_code != 0 and "a grammar reads left to right" in refused.output


def test_a_students_loss_is_its_targets_joint_likelihood_per_word():
    """Trees: -log p(x, t) per word; span shares (soft targets): -log sum_t p(x, t) prod_{s in t} share(s) per word."""
    torch.manual_seed(0)
    grammar = NeuralPCFG(PcfgConfig(vocab_size=9, nonterminals=3, preterminals=4, symbol_size=8))
    words, tree = [[1, 2, 3, 4]], [[(0, 4), (0, 2), (2, 4)]]
    shares = [[(0, 2, 0.5), (2, 4, 0.5), (1, 3, 0.5)]]
    hard = GrammarObjective(words, 100, 1, trees=tree).loss(grammar, 0, 0, torch.float32)[0]
    soft = GrammarObjective(words, 100, 1, trees=tree, shares=shares).loss(grammar, 0, 0, torch.float32)[0]
    ids = torch.tensor(words)
    assert hard.item() == pytest.approx(-grammar(ids, tree_span_scores(tree, 4)).item() / 4, abs=1e-5)
    assert soft.item() == pytest.approx(-grammar(ids, share_span_scores(shares, 4)).item() / 4, abs=1e-5)
    assert soft.item() != pytest.approx(hard.item(), abs=1e-3)


def test_a_focused_students_loss_is_its_focused_likelihood_on_a_schedule_that_ends_on_the_plain_one():
    """Parse-focusing: -log sum_t p(x, t) exp(focus * shares) per word, the focus falling linearly over the updates
    (here from 4 to 0 over two passes), so that the last updates learn the text's plain likelihood."""
    torch.manual_seed(0)
    grammar = NeuralPCFG(PcfgConfig(vocab_size=9, nonterminals=3, preterminals=4, symbol_size=8))
    words, shares = [[1, 2, 3, 4]] * 4, [[(0, 2, 0.5), (2, 4, 1.0), (1, 3, 0.25)]] * 4
    objective = GrammarObjective(words, 4, 1, shares=shares, focus=(4.0, 0.0, 2))
    assert objective.batches_per_epoch == 4  # one sentence of 4 words an update
    assert [objective.focus_at(epoch, batch) for epoch, batch in ((0, 0), (1, 0), (1, 3))] == [4.0, 2.0, 0.5]
    ids = torch.tensor(words[:1])
    middle = objective.loss(grammar, 1, 0, torch.float32)[0]
    assert middle.item() == pytest.approx(-grammar(ids, focus_span_scores(shares[:1], 4, 2.0)).item() / 4, abs=1e-5)
    plain = GrammarObjective(words, 4, 1, shares=shares, focus=(4.0, 0.0, 1)).loss(grammar, 1, 0, torch.float32)[0]
    assert plain.item() == pytest.approx(-grammar(ids).item() / 4, abs=1e-5)  # past its schedule: focus 0


@pytest.mark.slow
def test_a_focused_student_parses_toward_its_teachers_spans(corpus, tmp_path, tiny_model_dir):
    """Two students from the same start and seed, one focused on its teacher's spans and one all but unfocused:
    the focused one's trees agree more with the teacher's; an ON-LSTM student is refused a focus in one line."""
    trainer = make_trainer(pcfg_config(corpus, epochs=1))
    modeldir.save(tmp_path / "grammar", trainer.model, trainer.vocab, SPANS)
    teacher = tmp_path / "teacher"  # the right-branching trees: a teacher a fresh grammar does not follow by itself
    from onparse.parsing.ensemble import make_ensemble

    make_ensemble(teacher, [tmp_path / "grammar"], right_branching_voter=5.0)
    common = [
        "--train",
        str(corpus),
        "--dev",
        str(corpus),
        "--sentences",
        "20",
        "--threads",
        "1",
        "--quiet",
        "--teacher",
        str(teacher),
        "--student",
        str(tmp_path / "grammar"),
        "--from-scratch",
        "--lr",
        "0.05",
        "--seed",
        "7",
        "--batch-size",
        "12",
        "--passes",
        "4",
        "--select-by-perplexity",
    ]
    agreement = {}
    for focus in ("8", "0.001"):
        run = CliRunner().invoke(main, ["distill", *common, "--focus", focus, "--out", str(tmp_path / focus)])
        assert run.exit_code == 0, run.output
        history = [json.loads(line) for line in (tmp_path / focus / "history.jsonl").read_text().splitlines()]
        agreement[focus] = history[-1]["teacher_agreement"]
        assert saved_config(tmp_path / focus).selection == "dev_ppl"
    assert agreement["8"] > agreement["0.001"] + 5, agreement
    refused = CliRunner().invoke(
        main, ["distill", *common[:-10], "--student", str(tiny_model_dir), "--focus", "3", "--out", str(tmp_path / "o")]
    )
    assert refused.exit_code == 1 and "focus" in refused.stderr and "grammar student" in refused.stderr


@pytest.mark.slow
def test_a_grammar_student_learns_its_teachers_span_shares_where_asked(corpus, tmp_path, tiny_model_dir, monkeypatch):
    """Soft targets (here a grammar's posterior): the teacher's file keeps each sentence's span shares, and a student
    from scratch learns toward them; an ON-LSTM student, which learns trees, is refused before anything is written."""
    trainer = make_trainer(pcfg_config(corpus, epochs=1))
    modeldir.save(tmp_path / "grammar", trainer.model, trainer.vocab, SPANS)
    common = [
        "--train",
        str(corpus),
        "--dev",
        str(corpus),
        "--sentences",
        "20",
        "--threads",
        "1",
        "--quiet",
        "--teacher",
        str(tmp_path / "grammar"),
        "--soft-targets",
    ]
    learnt = CliRunner().invoke(
        main,
        [
            "distill",
            "--student",
            str(tmp_path / "grammar"),
            "--from-scratch",
            "--lr",
            "0.05",
            "--seed",
            "7",
            "--sample-seed",
            "5",
            "--batch-size",
            "12",
            "--passes",
            "8",
            "--out",
            str(tmp_path / "g"),
            *common,
        ],
    )
    assert learnt.exit_code == 0, learnt.output
    lines = (tmp_path / "g" / "teacher.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["targets"] == "span shares" and json.loads(lines[0])["seed"] == 5  # the sample's seed
    taught = [json.loads(line) for line in lines[1:]]
    assert any(len(sentence["shares"]) > len(sentence["spans"]) - 1 for sentence in taught)  # its posterior: more spans
    for sentence in taught:
        n = len(sentence["words"])
        assert all(2 <= end - start < n and 0 < share <= 1 for start, end, share in sentence["shares"])
    history = [json.loads(line) for line in (tmp_path / "g" / "history.jsonl").read_text().splitlines()]
    agreement = [point["teacher_agreement"] for point in history]
    assert agreement[-1] > agreement[0] and max(agreement) > 70
    config = saved_config(tmp_path / "g")
    hard = replace(
        config, distill=replace(config.distill, soft_targets=False, trees=str(tmp_path / "g" / "teacher.jsonl"))
    )
    monkeypatch.setattr(distill, "teacher_parses", None)  # a student of trees reads the shares' file, parsing nothing
    sentences, found, shares = distill.teacher_trees(hard, None)
    assert shares is None and [list(map(list, spans)) for spans in found] == [sentence["spans"] for sentence in taught]
    refused = CliRunner().invoke(
        main, ["distill", "--student", str(tiny_model_dir), "--out", str(tmp_path / "o"), *common]
    )
    assert (
        refused.exit_code == 1 and "soft targets" in refused.stderr and not (tmp_path / "o" / "teacher.jsonl").exists()
    )


@pytest.mark.slow
def test_a_compound_grammar_trains_on_drawn_vectors_resumes_exactly_and_parses(corpus, tmp_path):
    config = pcfg_config(
        corpus, model=PcfgConfig(nonterminals=3, preterminals=4, symbol_size=8, latent_size=4), evals_per_epoch=2
    )
    uninterrupted = make_trainer(config)
    events = list(uninterrupted.steps())
    assert uninterrupted.model.training  # so each update draws its sentences' vectors from q(z | x)
    first = make_trainer(config)
    steps = first.steps()
    for _ in range(len(events) // 2):
        next(steps)
    torch.save(first.checkpoint(), tmp_path / "checkpoint.pt")
    second = make_trainer(config, torch.load(tmp_path / "checkpoint.pt", weights_only=True))
    for _ in second.steps():
        pass
    for name, weight in uninterrupted.model.state_dict().items():  # the vectors drawn after the checkpoint are the same
        assert torch.equal(weight, second.model.state_dict()[name]), name
    out = tmp_path / "compound"
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--family",
            "pcfg",
            "--latent-size",
            "4",
            "--train",
            str(corpus),
            "--nonterminals",
            "3",
            "--preterminals",
            "4",
            "--symbol-size",
            "8",
            "--epochs",
            "1",
            "--out",
            str(out),
            "--threads",
            "1",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "model" / "card.json").read_text())["config"]["model"]["latent_size"] == 4
    parsed = Parser.load(out / "model").parse("The cat sat on the mat.")
    assert len(parsed.words_tree.leaves()) == 6


def test_a_student_from_scratch_takes_the_runs_shape_and_its_starts_vocabulary(corpus, tmp_path, tiny_model_dir):
    """A larger grammar than the folder it starts from: the run's shape, the start's vocabulary and family."""
    from dataclasses import replace

    from onparse.config import DistillConfig
    from onparse.training.distill import distillation_config

    start = make_trainer(pcfg_config(corpus, epochs=1))
    modeldir.save(tmp_path / "grammar", start.model, start.vocab, SPANS)
    spec = DistillConfig(teacher=str(tiny_model_dir), start=str(tmp_path / "grammar"), from_scratch=True, sentences=20)
    config = distillation_config(spec, train=[str(corpus)], epochs=1)
    assert config.model == start.model.config  # the start's shape unless the run says otherwise
    wider = replace(config.model, nonterminals=2 * config.model.nonterminals, vocab_size=10**6)
    student = make_trainer(replace(config, model=wider), work_dir=tmp_path / "run")
    assert student.model.config == replace(wider, vocab_size=start.model.config.vocab_size)
    assert student.vocab.words == start.vocab.words


def test_a_layer_asked_of_a_lone_grammar_is_refused_and_an_ensembles_onlstms_take_it(corpus, tmp_path, tiny_model_dir):
    from onparse.parsing.parse import InputError

    trainer = make_trainer(pcfg_config(corpus, epochs=1))
    modeldir.save(tmp_path / "grammar", trainer.model, trainer.vocab, SPANS)
    with pytest.raises(InputError, match="no layers to choose from"):
        Parser.load(tmp_path / "grammar", layer=2)
    assert Parser.load(tmp_path / "grammar", layer=SPANS).builder.layers == (SPANS,)
    both = Parser([modeldir.load(tiny_model_dir), modeldir.load(tmp_path / "grammar")], layer=1)
    assert both.builder.layers == (1, SPANS)


def test_a_parser_with_a_grammar_takes_sentences_no_longer_than_a_grammar_parses_in_about_a_minute(
    corpus, tmp_path, tiny_model_dir
):
    from onparse.parsing.parse import InputError

    trainer = make_trainer(pcfg_config(corpus, epochs=1))
    modeldir.save(tmp_path / "grammar", trainer.model, trainer.vocab, SPANS)
    grammar, onlstm = modeldir.load(tmp_path / "grammar"), modeldir.load(tiny_model_dir)
    limit, longest = named("pcfg").longest_sentence, named("onlstm").longest_sentence
    assert limit < longest
    assert Parser(onlstm, max_words=longest).settings.max_words == longest
    assert Parser([onlstm, grammar], max_words=limit).settings.max_words == limit
    with pytest.raises(InputError, match=f"over the {limit} words") as refused:
        Parser([onlstm, grammar], max_words=limit + 1)
    assert refused.value.setting == "max_words"
