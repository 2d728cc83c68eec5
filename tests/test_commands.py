"""onparse ensemble, distill and quantize on tiny models: what they write, and their one-line refusals."""

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from conftest import FIXTURES, tiny_model

from onparse.cli import main
from onparse.families.pcfg import PcfgConfig
from onparse.families.pcfg.model import NeuralPCFG
from onparse.parsing.parse import Parser
from onparse.store import modeldir, shipped

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(*arguments: str):
    return CliRunner().invoke(main, [str(a) for a in arguments])


def tiny_members(tmp_path: Path) -> list[Path]:
    paths = []
    for seed in range(2):
        model, vocab = tiny_model(seed)
        paths.append(tmp_path / f"m{seed}")
        modeldir.save(paths[-1], model, vocab, default_layer=3, card={"command": f"made with seed {seed}"})
    return paths


def test_ensemble_copies_its_members_so_it_stands_alone(tmp_path):
    members = tiny_members(tmp_path)
    made = run("ensemble", *members, "--out", tmp_path / "e", "--right-branching-voter")
    assert made.exit_code == 0, made.output
    ensemble = modeldir.read_ensemble(tmp_path / "e")
    assert [p.name for p in ensemble.members] == ["m0", "m1"] and ensemble.right_branching_voter == 1
    assert all((tmp_path / "e" / "members" / name / "weights.pt").is_file() for name in ("m0", "m1"))
    card = json.loads((tmp_path / "e" / "card.json").read_text())
    assert [m["command"] for m in card["members"]] == ["made with seed 0", "made with seed 1"]
    modeldir.save(members[0], *tiny_model(9), default_layer=1)  # rewriting a source leaves the ensemble as it was
    assert Parser.load(tmp_path / "e").builder.layers == (3, 3)


def test_the_right_branching_voter_casts_the_votes_asked_for_and_nothing_else_reads(tmp_path):
    members = tiny_members(tmp_path)
    made = run("ensemble", *members, "--out", tmp_path / "e", "--right-branching-votes", "1.5")
    assert made.exit_code == 0 and "right-branching voter (1.5 votes)" in made.stderr
    assert Parser.load(tmp_path / "e").builder.right_branching_voter == 1.5
    assert "--right-branching-votes 1.5" in json.loads((tmp_path / "e" / "card.json").read_text())["command"]
    assert run("ensemble", *members, "--out", tmp_path / "f", "--right-branching-votes", "0").exit_code == 2
    config = tmp_path / "e" / "config.json"
    for bad in ('"many"', "-1"):
        config.write_text(config.read_text().replace("1.5", bad))
        refused = run("--model", tmp_path / "e", "the cat")
        assert refused.exit_code == 2 and "a number of votes (0 or more)" in refused.stderr
        config.write_text(config.read_text().replace(bad, "1.5"))


def test_ensemble_links_members_in_place_when_asked_and_refuses_what_it_cannot_use(tmp_path):
    members = tiny_members(tmp_path)
    assert run("ensemble", *members, "--out", tmp_path / "e", "--link").exit_code == 0
    assert json.loads((tmp_path / "e" / "config.json").read_text())["ensemble"]["members"] == ["../m0", "../m1"]
    again = run("ensemble", *members, "--out", tmp_path / "e")
    assert again.exit_code == 2 and "exists" in again.stderr
    nested = run("ensemble", tmp_path / "e", members[0], "--out", tmp_path / "f")
    assert nested.exit_code == 2 and "is an ensemble" in nested.stderr and not (tmp_path / "f").exists()
    missing = run("ensemble", tmp_path / "nope", "--out", tmp_path / "g")
    assert missing.exit_code == 2 and "no such model directory" in missing.stderr


def test_ensemble_reports_gold_figures_when_given_them(tmp_path):
    made = run("ensemble", *tiny_members(tmp_path), "--out", tmp_path / "e", "--dev-gold", FIXTURES / "ldc_style.mrg")
    assert made.exit_code == 0 and "ensemble + right-branching voter" in made.stdout and "member 2" in made.stdout


def test_an_ensemble_with_a_grammar_reports_gold_figures_at_the_length_a_grammar_parses(tmp_path):
    vocab = tiny_model()[1]
    grammar = NeuralPCFG(PcfgConfig(vocab_size=len(vocab), nonterminals=2, preterminals=3, symbol_size=8))
    modeldir.save(tmp_path / "g", grammar, vocab, default_layer="spans", card={"command": "a tiny grammar"})
    made = run(
        "ensemble",
        tiny_members(tmp_path)[0],
        tmp_path / "g",
        "--out",
        tmp_path / "e",
        "--dev-gold",
        FIXTURES / "ldc_style.mrg",
    )
    assert made.exit_code == 0, made.output
    assert "member 2" in made.stdout


def test_quantize_writes_int8_rows_and_the_f1_change(tmp_path):
    source = tiny_members(tmp_path)[0]
    done = run("quantize", source, "--out", tmp_path / "q", "--gold", FIXTURES / "ldc_style.mrg")
    assert done.exit_code == 0, done.output
    assert json.loads((tmp_path / "q" / "config.json").read_text())["weights"] == "int8"
    change = json.loads((tmp_path / "q" / "card.json").read_text())["int8_change"]
    assert (
        set(change) == {"gold", "before", "after"} and f"{change['before']:.2f} -> {change['after']:.2f}" in done.stdout
    )
    weights = torch.load(tmp_path / "q" / "weights.pt", weights_only=True)
    assert any(t.dtype == torch.int8 for t in weights.values())
    refused = run("quantize", source, "--out", tmp_path / "q")
    assert refused.exit_code == 2 and "exists" in refused.stderr


def test_quantize_holds_its_out_against_a_second_writer_and_its_copy_appears_only_whole(tmp_path, monkeypatch):
    """One way to claim an output folder (``atomic.replacing_folder(new=True)``): a second writer is refused while the
    first writes, and a copy interrupted while its figure is measured leaves nothing behind; an empty gold set is
    refused before any work."""
    from onparse.store import atomic, quantize

    source = tiny_members(tmp_path)[0]
    seen = {}

    def second_writer(*args, **kwargs):  # while the first copy is being written, another process starts its own
        seen["second"] = run("quantize", source, "--out", tmp_path / "q")
        raise KeyboardInterrupt

    monkeypatch.setattr(quantize, "evaluate_parser", lambda *a, **k: {"sentence_f1": 50.0})
    monkeypatch.setattr(quantize, "write_copy", second_writer)
    monkeypatch.setattr(atomic, "_running", lambda pid: True)  # the first's unfinished copy belongs to a live process
    with pytest.raises(KeyboardInterrupt):
        quantize.quantized_copy(source, tmp_path / "q", gold=str(FIXTURES / "ldc_style.mrg"))
    said = seen["second"].stderr
    assert seen["second"].exit_code == 2 and "another onparse process is writing it" in said and "Errno" not in said
    assert not (tmp_path / "q").exists() and not list(tmp_path.glob(".q.*"))  # neither a copy nor a part of one
    monkeypatch.undo()
    (tmp_path / "empty.txt").write_text("")
    empty = run("quantize", source, "--out", tmp_path / "q", "--gold", tmp_path / "empty.txt")
    assert empty.exit_code == 1 and "no gold trees" in empty.stderr and not (tmp_path / "q").exists()


def test_a_folder_claimed_new_is_refused_where_it_appeared_meanwhile(tmp_path):
    from onparse.store.atomic import OutputTaken, replacing_folder

    with pytest.raises(OutputTaken, match="meanwhile"):
        with replacing_folder(tmp_path / "out", new=True) as folder:
            (folder / "mine.txt").write_text("mine")
            (tmp_path / "out").mkdir()
            (tmp_path / "out" / "theirs.txt").write_text("theirs")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["theirs.txt"] and not list(tmp_path.glob(".out.*"))


def test_quantize_stores_every_member_of_an_ensemble_at_its_precision_with_its_layers_and_voter(tmp_path):
    members = tiny_members(tmp_path)
    assert run("ensemble", *members, "--out", tmp_path / "e", "--right-branching-voter").exit_code == 0
    config = json.loads((tmp_path / "e" / "config.json").read_text())
    config["ensemble"]["layers"] = [1, "mean"]
    (tmp_path / "e" / "config.json").write_text(json.dumps(config))
    (tmp_path / "e" / "card.md").write_text("# how it was made\n")
    latin = tmp_path / "latin1.mrg"
    latin.write_bytes("( (S (NP (DT Die) (NN Straße)) (VP (VBD lag) (ADVP (RB dort)))) )\n".encode("latin-1"))
    done = run("quantize", tmp_path / "e", "--out", tmp_path / "q", "--gold", latin, "--encoding", "latin-1")
    assert done.exit_code == 0, done.output
    quantized = modeldir.read_ensemble(tmp_path / "q")
    assert quantized.layers == [1, "mean"] and quantized.right_branching_voter
    assert [json.loads((m / "config.json").read_text())["weights"] for m in quantized.members] == ["int8", "int8"]
    assert all(m.resolve().is_relative_to((tmp_path / "q").resolve()) for m in quantized.members)  # it stands alone
    card = json.loads((tmp_path / "q" / "card.json").read_text())
    assert card["weights"] == "int8" and set(card["int8_change"]) == {"gold", "before", "after"}
    assert not (tmp_path / "q" / "card.md").exists()  # the source's prose and figures are of other weights
    card["rescored"] = {"gold": str(latin), "sentence_f1": 99.0}  # a figure of q's int8 weights, not of a copy
    (tmp_path / "q" / "card.json").write_text(json.dumps(card))
    fours = run("quantize", tmp_path / "q", "--out", tmp_path / "q4", "--precision", "int4-words")
    assert fours.exit_code == 0 and fours.stdout.startswith("int4-words model in"), fours.output
    assert modeldir.card_figure(json.loads((tmp_path / "q4" / "card.json").read_text())) is None  # none measured on it
    assert [
        json.loads((m / "config.json").read_text())["weights"] for m in modeldir.read_ensemble(tmp_path / "q4").members
    ] == ["int4-words"] * 2


def test_distill_teaches_a_student_and_keeps_its_best_agreement(tmp_path, tiny_ensemble_dir, tiny_model_dir):
    base = [
        "distill",
        "--teacher",
        tiny_ensemble_dir,
        "--student",
        tiny_model_dir,
        "--train",
        EXAMPLES / "corpus.txt",
        "--dev",
        EXAMPLES / "dev.txt",
        "--out",
        tmp_path / "s",
        "--sentences",
        "50",
        "--evals-per-pass",
        "2",
        "--dtype",
        "fp32",
    ]
    done = run(*base, "--max-minutes", "0.00001")
    assert done.exit_code == 0 and "stopped before the first evaluation" in done.stdout
    resumed = run("distill", "--out", tmp_path / "s", "--resume")
    assert resumed.exit_code == 0, resumed.output
    history = [json.loads(line) for line in (tmp_path / "s" / "history.jsonl").read_text().splitlines()]
    assert len(history) == 2 and all(0 <= h["teacher_agreement"] <= 100 for h in history)
    card = json.loads((tmp_path / "s" / "model" / "card.json").read_text())
    assert "agree best with the teacher" in card["model_selection"]
    assert card["selected"]["teacher_agreement"] == max(h["teacher_agreement"] for h in history)
    teacher = (tmp_path / "s" / "teacher.jsonl").read_text().splitlines()
    assert len(teacher) == 51 and json.loads(teacher[0])["sentences"] == 50  # the settings, then one tree a line
    no_student = run("distill", "--train", EXAMPLES / "corpus.txt", "--out", tmp_path / "t")
    assert no_student.exit_code == 2 and "--student" in no_student.stderr
    turned = run(*base[:-6], "--out", tmp_path / "b", "--direction", "backward", "--max-minutes", "0.00001")
    assert turned.exit_code == 2 and "a student from scratch" in turned.stderr and not (tmp_path / "b").exists()
    fresh = run(
        *base[:-6], "--out", tmp_path / "b", "--direction", "backward", "--from-scratch", "--max-minutes", "0.00001"
    )
    assert fresh.exit_code == 0, fresh.output
    config = json.loads((tmp_path / "b" / "config.json").read_text())
    assert config["reading"]["direction"] == "backward" and config["distill"]["from_scratch"]


def test_nothing_rewrites_a_model_that_a_shipped_ensemble_points_at(tmp_path):
    models = tmp_path / "models"
    members = tiny_members(models / "holder")
    modeldir.save_ensemble(models / "ensemble", members)
    assert modeldir.pointing_at(members[0], models) == models / "ensemble"
    assert modeldir.pointing_at(models / "holder", models) == models / "ensemble"  # a folder holding a member
    assert modeldir.pointing_at(tmp_path / "elsewhere", models) is None
    for target in (members[0], models / "holder", models / "ensemble"):
        with pytest.raises(modeldir.ModelDirError, match="shipped model|holds a member of"):
            modeldir.refuse_to_replace(target, modeldir.is_model_folder, "a model", models)
    modeldir.refuse_to_replace(
        tmp_path / "new-model", modeldir.is_model_folder, "a model", models
    )  # a new folder is fine
    held = shipped.MODELS / "onlstm-wsj-distilled-r2"  # other shipped ensembles hold its members
    refused = run("ensemble", members[0], "--out", held, "--overwrite")
    assert refused.exit_code == 2 and "shipped model" in refused.stderr and (held / "config.json").is_file()


def test_layers_by_agreement_keeps_what_identical_members_agree_on_and_ensembles_record_layers(tmp_path):
    from onparse.parsing.ensemble import agreeing_layers, candidate_trees, make_ensemble
    from onparse.text.language import Sentence

    model, vocab = tiny_model(4)
    modeldir.save(tmp_path / "same", model, vocab, default_layer=1)
    sentences = [Sentence.of_tokens(line.split()) for line in (EXAMPLES / "dev.txt").read_text().splitlines()[:10]]
    layers, agreement = agreeing_layers(*candidate_trees([tmp_path / "same"] * 3, sentences, {}), sentences)
    assert layers == ["mean"] * 3 and all(a["mean"] == 100.0 for a in agreement)
    assert all(max(a.values()) == a["mean"] for a in agreement)
    card = make_ensemble(tmp_path / "e", [tmp_path / "same"] * 2, layers=[3, "mean"])
    assert Parser.load(tmp_path / "e").builder.layers == (3, "mean") and [m["layer"] for m in card["members"]] == [
        3,
        "mean",
    ]
    (tmp_path / "e" / "config.json").write_text(json.dumps({"ensemble": {"members": ["members/same"], "layers": [9]}}))
    refused = run("--model", tmp_path / "e", "the cat")
    assert refused.exit_code == 2 and "layer 9" in refused.stderr


def test_ensemble_keeps_the_members_that_agree_most_at_the_most_consistent_layer(tmp_path):
    members = [*tiny_members(tmp_path), tmp_path / "same"]
    model, vocab = tiny_model(4)
    modeldir.save(members[2], model, vocab, default_layer=1)
    text = EXAMPLES / "dev.txt"
    made = run(
        "ensemble",
        *members,
        members[2],
        "--out",
        tmp_path / "e",
        "--choose-on",
        text,
        "--layer-rule",
        "consistency",
        "--keep",
        2,
    )
    assert made.exit_code == 0, made.output
    config = json.loads((tmp_path / "e" / "config.json").read_text())["ensemble"]
    assert len(config["members"]) == 2 and len(set(config["layers"])) == 1
    assert made.stderr.rstrip().endswith(f"kept {members[2]}, {members[2]}")  # two copies of one model agree fully
    chosen = json.loads((tmp_path / "e" / "card.json").read_text())["chosen_on"]
    assert chosen["layer_rule"] == "consistency" and chosen["figures"]["member_agreement"][2] == chosen["figures"][
        "member_agreement"
    ][3] == max(chosen["figures"]["member_agreement"])
    own = run("ensemble", *members, members[2], "--out", tmp_path / "o", "--choose-on", text, "--keep", 3)
    assert own.exit_code == 0, own.output
    assert json.loads((tmp_path / "o" / "config.json").read_text())["ensemble"]["layers"] == [3, 1, 1]  # each its own
    assert run("ensemble", *members, "--out", tmp_path / "f", "--keep", 2).exit_code == 2
    assert run("ensemble", *members, "--out", tmp_path / "f", "--choose-on", text, "--keep", 9).exit_code == 1


def test_ensemble_chooses_layers_by_agreement_on_text(tmp_path):
    made = run(
        "ensemble", *tiny_members(tmp_path), "--out", tmp_path / "e", "--layers-by-agreement", EXAMPLES / "dev.txt"
    )
    assert made.exit_code == 0, made.output
    config = json.loads((tmp_path / "e" / "config.json").read_text())["ensemble"]
    assert len(config["layers"]) == 2 and f"layers {config['layers'][0]}" in made.stderr


@pytest.mark.parametrize("signal_name, code", [("SIGTERM", 130), ("SIGINT", 130)])
def test_a_signal_outside_the_training_loop_says_how_to_continue(
    tmp_path, tiny_ensemble_dir, tiny_model_dir, monkeypatch, signal_name, code, request
):
    """Stopped while the teacher parses (a stage's set-up, before any update): one line, the way to continue."""
    import os
    import signal

    from onparse.training import distill

    # Ctrl-C as a terminal's process gets it: a job started in the background by a script inherits SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))

    def stopped(*args, **kwargs):
        os.kill(os.getpid(), getattr(signal, signal_name))
        raise AssertionError("the signal stops the command before this")

    monkeypatch.setattr(distill, "teacher_parses", stopped)
    done = run(
        "distill",
        "--teacher",
        tiny_ensemble_dir,
        "--student",
        tiny_model_dir,
        "--train",
        EXAMPLES / "corpus.txt",
        "--dev",
        EXAMPLES / "dev.txt",
        "--out",
        tmp_path / "s",
        "--sentences",
        "20",
    )
    assert done.exit_code == code and "it had written nothing: run the command again" in done.stderr
    assert (
        len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.output and not (tmp_path / "s").exists()
    )
    monkeypatch.undo()
    begun = run(
        "distill",
        "--teacher",
        tiny_ensemble_dir,
        "--student",
        tiny_model_dir,
        "--train",
        EXAMPLES / "corpus.txt",
        "--dev",
        EXAMPLES / "dev.txt",
        "--out",
        tmp_path / "s",
        "--sentences",
        "20",
        "--max-minutes",
        "0.00001",
    )
    assert begun.exit_code == 0 and (tmp_path / "s" / "config.json").is_file()
    monkeypatch.setattr(distill, "teacher_parses", stopped)
    (tmp_path / "s" / "teacher.jsonl").unlink()  # so that the resumed run parses again, and is stopped there
    resumed = run("distill", "--out", tmp_path / "s", "--resume")
    assert (
        resumed.exit_code == code
        and f"continue with: onparse distill --out {tmp_path / 's'} --resume" in resumed.stderr
    )
