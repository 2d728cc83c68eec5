"""onparse fit: the whole recipe at tiny sizes, end to end, resumed at every stage boundary and mid-stage."""

import json
import os
import re
import time
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from onparse.cli import main
from onparse.families import MEAN, OnlstmConfig
from onparse.fit import TimeUp, fit
from onparse.fit.stages import stages
from onparse.parsing.formats import bracket
from onparse.parsing.parse import Parser
from onparse.plan import FitPlan
from onparse.store import modeldir
from onparse.training.runfolder import RunFolderError

pytestmark = pytest.mark.slow  # fits, subprocesses, wheels and docs builds: make test, not test-fast

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FIXTURES = Path(__file__).parent / "fixtures"
STAGES = ["member-1", "member-2", "ensemble-1", "round-1-1", "round-1-2", "ensemble-2", "scratch", "model"]
DEV = [line for line in (EXAMPLES / "dev.txt").read_text().splitlines() if line.strip()]


TINY_ONLSTM = OnlstmConfig(vocab_size=60, embedding_size=16, hidden_size=24, n_layers=3, chunk_size=4)


@pytest.fixture(autouse=True)
def tiny_models_vote_whatever_their_shape(monkeypatch):
    """The tiny models these fits train in seconds parse the toy text in one shape (most of them right-branching),
    which the shape check would leave out of every vote: it stands aside here (as the model's check against its
    teacher does in every test: ``conftest``), and has tests of its own (``test_scoring``,
    ``test_a_models_collapsed_shape_is_read_once_and_kept_in_its_card``, and the student test below that sets it)."""
    from onparse.fit import runners

    monkeypatch.setattr(runners, "collapsed", lambda member, sentences, settings: None)


def tiny_plan(onlstm: dict | None = None, pcfg: dict | None = None, **changes) -> FitPlan:
    """A plan of two tiny ON-LSTMs, with ``changes`` and each family's section changed as given."""
    settings = dict(
        train=[str(EXAMPLES / "corpus.txt")],
        dev=str(EXAMPLES / "dev.txt"),
        members=2,
        rounds=1,
        member_epochs=1,
        sentences=200,
        evals_per_epoch=2,
        dtype="fp32",
        families=["onlstm"],
    )
    read = {"directions": ["forward"], "punctuation": False}  # unless a test has the reading rule choose
    plan = FitPlan(**{**settings, **changes}).with_section("onlstm", **{"model": TINY_ONLSTM, **read, **(onlstm or {})})
    return plan.with_section("pcfg", **pcfg) if pcfg else plan


def trees(model: Path) -> list[str]:
    return [bracket(parse) for parse in Parser.load(model).parse_sents(DEV)]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> tuple[Path, dict]:
    from onparse.fit import runners

    out = tmp_path_factory.mktemp("fit") / "tiny"
    with pytest.MonkeyPatch.context() as patch:  # as ``tiny_models_vote_whatever_their_shape``, for the module
        patch.setattr(runners, "collapsed", lambda member, sentences, settings: None)
        patch.setattr(runners, "SHAPE_DRIFT", float("inf"))
        return out, fit(tiny_plan(), out)


def test_a_tiny_fit_runs_every_stage_and_leaves_a_parser_that_stands_alone(fitted):
    out, record = fitted
    assert [entry["name"] for entry in record["stages"]] == STAGES
    parser = Parser.load(out / "model")
    final = record["stages"][-1]
    assert (
        len(parser.members) == 3 and list(parser.builder.layers) == final["layers"] and not parser.right_branching_voter
    )
    assert (
        final["layers"] == [MEAN] * 3 and "layer_agreement" not in final
    )  # by default every tree from the mean of layers
    config = json.loads((out / "model" / "config.json").read_text())["ensemble"]
    assert config["members"] == ["members/scratch", "members/round-1-1", "members/round-1-2"]  # copied: no link out
    card = (out / "model" / "card.md").read_text()
    assert all(f"| {name} |" in card for name in STAGES) and "no gold trees" in card
    from onparse.fit.card import folder_bytes

    disk = json.loads((out / "model" / "card.json").read_text())["disk_bytes"]
    assert (
        0 < folder_bytes(out / "model") < disk <= folder_bytes(out) and f"Disk: {disk / 1e6:,.1f} MB in tiny/" in card
    )
    rules = [entry["model_selection"] for entry in record["stages"] if "model_selection" in entry]
    assert rules[:2] == [rules[0]] * 2 and "lowest dev perplexity" in rules[0]
    assert all("agree best with the teacher" in rule for rule in rules[2:]) and all("no gold trees" in r for r in rules)
    assert len(trees(out / "model")) == len(DEV)


def test_a_fit_interrupted_after_every_stage_resumes_to_the_same_parser(fitted, tmp_path):
    class Stop(Exception):
        pass

    def stop(name: str) -> None:
        raise Stop(name)

    out, calls = tmp_path / "stopped", 0
    plan: FitPlan | None = tiny_plan()
    while True:
        calls += 1
        try:
            fit(plan, out, resume=plan is None, stage_done=stop)
            break
        except Stop as stopped:
            assert json.loads((out / "fit.json").read_text())["stages"][-1]["name"] == str(stopped)
            plan = None
    assert calls == len(STAGES) + 1  # stopped after each stage, and a last call with nothing left but the card
    assert trees(out / "model") == trees(fitted[0] / "model")


def test_a_fit_stopped_by_its_time_limit_mid_stage_resumes_from_the_checkpoint(fitted, tmp_path, monkeypatch):
    from onparse.fit import loop, runners, sizing

    class Clock:  # each reading of the fit's clock a minute later: a stage's minutes are the readings it spans
        now = 0.0

        def monotonic(self) -> float:
            self.now += 60
            return self.now

        time = staticmethod(time.time)  # the wall clock that files' times are on

    clock = Clock()
    for module in (loop, runners, sizing):  # one clock for the whole fit
        monkeypatch.setattr(module, "time", clock)
    out = tmp_path / "timed"
    with pytest.raises(TimeUp, match="member-2"):  # the first member, the fit's first parser, trained to its end
        fit(tiny_plan(), out, hours=1e-9)
    record = json.loads((out / "fit.json").read_text())
    first = record["stages"][0]
    assert first["name"] == "member-1" and first["past_the_hours_minutes"] > 0 and "in_flight" not in record
    assert Parser.load(out / "model").parse("the cat sat") and (out / "member-2" / "checkpoint.pt").is_file()
    assert record["unfinished"] == {
        "member-2": 2.0
    }  # from the stage's start, past its reading of the time left, to its stop
    # a second call, killed (kill -9) 6 minutes after it started the stage and 2 minutes after the stage's last write
    started = time.time() - 600
    record["in_flight"] = {"stage": "member-2", "since": started, "earlier": record.pop("unfinished")["member-2"]}
    (out / "fit.json").write_text(json.dumps(record))
    for path in [out / "member-2", *(out / "member-2").rglob("*")]:
        os.utime(path, (started + 240, started + 240))
    record = fit(None, out, resume=True)  # its hours spent: resumed to its end
    planned = FitPlan.from_dict(record["plan"])  # sized to the hours: the same plan run without a clock
    assert planned.sentences < tiny_plan().sentences and record["budget"]["hours"] == 1e-9
    assert trees(out / "model") == trees(
        Path(fit(planned, tmp_path / "unclocked") and tmp_path / "unclocked" / "model")
    )
    # the stopped call's, the killed call's up to its last write, and this one's (no time limit: its hours were spent)
    assert record["stages"][1]["wall_minutes"] == pytest.approx(2.0 + 4.0 + 1.0) and not record["unfinished"]
    assert "in_flight" not in record


def test_gold_trees_choose_nothing_unless_asked_and_then_the_plan_says_so(tmp_path):
    gold = str(FIXTURES / "ldc_style.mrg")
    free = [s.config for s in stages(tiny_plan(dev_gold=gold), tmp_path) if s.config]
    assert {c.selection for c in free} == {"dev_ppl", "teacher_agreement"} and all(c.dev_gold == gold for c in free)
    chosen = [s.config for s in stages(tiny_plan(dev_gold=gold, select_by_gold=True), tmp_path) if s.config]
    assert {c.selection for c in chosen} == {"dev_f1"}
    with pytest.raises(ValueError, match="--dev-gold"):
        tiny_plan(select_by_gold=True).check()


def test_the_command_fits_and_resumes_with_one_line_errors(tmp_path):
    out = tmp_path / "cli"
    tiny = [
        "--members",
        "1",
        "--member-epochs",
        "1",
        "--rounds",
        "0",
        "--embedding-size",
        "16",
        "--hidden-size",
        "24",
        "--chunk-size",
        "4",
        "--vocab-size",
        "60",
        "--sentences",
        "100",
        "--evals-per-epoch",
        "1",
        "--scratch-passes",
        "1",
        "--dtype",
        "fp32",
    ]
    missing = CliRunner().invoke(main, ["fit", "--train", str(EXAMPLES / "corpus.txt"), "--out", str(out)])
    assert missing.exit_code == 2 and "--dev" in missing.stderr and len(missing.stderr.splitlines()) == 1
    nothing = CliRunner().invoke(main, ["fit", "--out", str(tmp_path / "none"), "--resume"])
    assert nothing.exit_code == 2 and "no fit.json" in nothing.stderr
    twice = CliRunner().invoke(
        main,
        [
            "fit",
            "--train",
            str(EXAMPLES / "corpus.txt"),
            "--dev",
            str(EXAMPLES / "dev.txt"),
            "--out",
            str(out),
            "--student-direction",
            "forward",
            "--student-direction",
            "forward",
        ],
    )
    assert (
        twice.exit_code == 2 and "each once" in twice.stderr
    )  # a plan the options make that cannot run: exit 2 and len(twice.stderr.splitlines()) == 1
    assert not out.exists()  # refused before the folder was made
    base = [
        "fit",
        "--train",
        str(EXAMPLES / "corpus.txt"),
        "--dev",
        str(EXAMPLES / "dev.txt"),
        "--out",
        str(out),
        *tiny,
        "--right-branching-votes",
        "0.5",
    ]
    stopped = CliRunner().invoke(main, [*base, "--hours", "0.0000001"])  # stopped in its first probe
    assert stopped.exit_code == 3 and f"onparse fit --out {out} --resume" in stopped.stderr
    assert (
        stopped.stderr.splitlines()[-1].startswith("onparse: stopped: --hours reached")
        and "error" not in stopped.stderr
    )
    opening = stopped.stderr.splitlines()[:3]  # the forecast and what to do, at once, before the first stage
    assert opening[0].startswith(f"fitting a parser to {out / 'model'}: 9 stages, from 400 sentences (a small text")
    assert "more than --hours 1e-07: it stops at them" in opening[1] and "does it in one call" in opening[1]
    assert opening[2] == f"too long? Ctrl-C keeps the best parser so far; `onparse fit --out {out} --resume` goes on"
    again = CliRunner().invoke(main, base)
    assert again.exit_code == 2 and "already holds a fit" in again.stderr
    done = CliRunner().invoke(
        main, ["fit", "--out", str(out), "--resume", "--hours", "1"]
    )  # another budget for this call
    assert done.exit_code == 0, done.output
    record = json.loads((out / "fit.json").read_text())
    first = record["stages"][0]["name"]
    for damage, said in (
        (lambda stages: stages[0].pop("wall_minutes"), f"stage {first} has no wall_minutes"),
        (lambda stages: stages.append(dict(stages[0])), f"stage {first} is listed twice"),
    ):
        damaged = json.loads(json.dumps(record))
        damage(damaged["stages"])
        (out / "fit.json").write_text(json.dumps(damaged))
        refused = CliRunner().invoke(main, ["fit", "--out", str(out), "--resume"])
        assert refused.exit_code == 2 and said in refused.stderr and len(refused.stderr.splitlines()) == 1
    (out / "fit.json").write_text(json.dumps(record))
    parser = Parser.load(out / "model")
    assert (
        len(parser.members) == 2 and parser.right_branching_voter == 0.5
    )  # the scratch student and the member; the prior's votes
    assert "right-branching voter is on, with 0.5 votes (asked for" in (out / "model" / "card.md").read_text()


def test_gold_trees_are_scored_at_every_stage_and_choose_only_when_asked(tmp_path):
    gold = str(FIXTURES / "ldc_style.mrg")
    small = dict(members=2, rounds=0, scratch_passes=1, evals_per_epoch=1, dev_gold=gold)
    scored = fit(tiny_plan(**small), tmp_path / "scored")
    assert all(isinstance(entry["dev_f1"], float) for entry in scored["stages"])
    assert not any(entry.get("voter_chosen_on_gold") for entry in scored["stages"])
    assert "gold dev trees scored for the record only" in (tmp_path / "scored" / "model" / "card.md").read_text()
    chosen = fit(tiny_plan(**small, select_by_gold=True), tmp_path / "chosen")
    ensembles = [entry for entry in chosen["stages"] if "voter_chosen_on_gold" in entry]
    assert [e["name"] for e in ensembles] == ["ensemble-1", "model"] and all(
        e["voter_chosen_on_gold"] for e in ensembles
    )
    for entry in ensembles:
        wins = entry["dev_gold"]["with_voter"] > entry["dev_gold"]["without_voter"]
        assert entry["right_branching_voter"] == wins
        assert entry["dev_f1"] == max(entry["dev_gold"]["with_voter"], entry["dev_gold"]["without_voter"])
    assert all("not unsupervised" in e["model_selection"] for e in chosen["stages"] if "model_selection" in e)
    for entry in ensembles:  # each member's layer: its best on gold at the point it kept
        assert entry["layers_chosen_on_gold"] and len(entry["layers"]) == len(entry["dev_gold"]["members"])
    first = json.loads((tmp_path / "chosen" / "member-1" / "model" / "card.json").read_text())["selected"][
        "dev_f1_per_layer"
    ]
    assert str(ensembles[0]["layers"][0]) == max(first, key=first.get)
    assert "not unsupervised" in (tmp_path / "chosen" / "model" / "card.md").read_text()


def test_the_fixed_layer_rule_builds_every_tree_from_the_plans_layer(tmp_path):
    record = fit(
        tiny_plan(members=2, rounds=0, scratch_passes=1, evals_per_epoch=1, layer_rule="fixed", layer=2), tmp_path / "f"
    )
    assert [entry["layers"] for entry in record["stages"] if "layers" in entry] == [[2, 2], [2, 2, 2]]
    assert Parser.load(tmp_path / "f" / "model").builder.layers == (2, 2, 2)
    assert "trees from layer 2 (a fixed rule)" in (tmp_path / "f" / "model" / "card.md").read_text()


def test_the_agreement_layer_rule_gives_each_member_its_layer_most_agreeing_with_the_others_vote(tmp_path):
    record = fit(
        tiny_plan(members=2, rounds=0, scratch_passes=1, evals_per_epoch=1, layer_rule="agreement"), tmp_path / "f"
    )
    for entry in (entry for entry in record["stages"] if "layers" in entry):
        for layer, agreement in zip(entry["layers"], entry["layer_agreement"]):
            assert agreement[str(layer)] == max(agreement.values())


def test_students_can_vote_at_another_layer_than_the_one_they_learn(tmp_path):
    plan = tiny_plan(
        members=2, rounds=1, scratch_passes=1, evals_per_epoch=1, layer_rule="fixed", layer=MEAN, vote_layer=3
    )
    record = fit(plan, tmp_path / "f")
    assert [entry["layers"] for entry in record["stages"] if "layers" in entry] == [[3, 3], [3, 3], [3, 3, 3]]
    students = [
        json.loads((tmp_path / "f" / name / "model" / "card.json").read_text())["config"]
        for name in ("round-1-1", "scratch")
    ]
    assert [config["default_layer"] for config in students] == [MEAN, MEAN]
    card = (tmp_path / "f" / "model" / "card.md").read_text()
    assert "trees from layer 3 (a fixed rule); students learn their teachers' trees at layer 'mean'" in card


def test_a_plan_with_a_layer_the_members_lack_is_refused():
    with pytest.raises(ValueError, match="layer 4 does not exist: the model has layers 1 to 3"):
        tiny_plan(vote_layer=4).check()


def test_students_of_one_teacher_share_its_trees(fitted):
    out, _ = fitted
    kept = sorted(p.name for p in (out / "teachers").iterdir())
    assert kept == ["ensemble-1.jsonl", "ensemble-2.jsonl"]  # round 1's two students, and the scratch student
    assert not any((out / name / "teacher.jsonl").exists() for name in ("round-1-1", "round-1-2", "scratch"))
    header = json.loads((out / "teachers" / "ensemble-1.jsonl").read_text().splitlines()[0])
    assert header["seed"] == 1111 and header["sentences"] == 200


def test_members_of_a_small_corpus_read_it_more_often_and_of_a_large_one_a_sample(monkeypatch, tmp_path):
    from onparse.families import onlstm
    from onparse.fit.sizing import settled_plan
    from onparse.settings import Reading
    from onparse.text.corpus import read_corpus

    plan = tiny_plan(member_epochs=None)
    tokens = sum(len(words) + 1 for words in read_corpus(plan.train, reading=Reading(punctuation=True)))
    monkeypatch.setattr(onlstm, "MEMBER_TOKENS", 3 * tokens)
    settled, sizing, _ = settled_plan(plan, tmp_path)
    assert (settled.sections["onlstm"].epochs, settled.sections["onlstm"].sample, sizing) == (3, None, None)
    monkeypatch.setattr(onlstm, "MEMBER_TOKENS", tokens // 10)
    settled = settled_plan(plan, tmp_path)[0]
    assert (settled.sections["onlstm"].epochs, settled.sections["onlstm"].sample) == (1, tokens // 10)  # a tenth, once
    stage = next(stage for stage in stages(settled, tmp_path) if stage.name == "member-1")
    assert stage.config.sample_tokens == tokens // 10
    assert settled_plan(tiny_plan(member_epochs=2), tmp_path)[0].sections["onlstm"].epochs == 2  # as asked


def test_grammars_epochs_are_counted_in_the_words_a_grammar_reads_not_the_punctuation_it_leaves_out(
    monkeypatch, tmp_path
):
    from onparse.families import pcfg
    from onparse.families.base import MAX_TRAINING_WORDS
    from onparse.fit import sizing
    from onparse.text.corpus import read_corpus

    plan = tiny_plan(member_epochs=None, families=["onlstm", "pcfg"])
    words = sum(len(s) for s in read_corpus(plan.train) if 2 <= len(s) <= MAX_TRAINING_WORDS)  # the words alone
    monkeypatch.setattr(pcfg, "PCFG_TOKENS", 10 * words)
    assert sizing.settled_plan(plan, tmp_path)[0].sections["pcfg"].epochs == 10  # counted with punctuation: 9


def test_members_can_vary_their_sizes_and_students_keep_their_starts_shape(tmp_path):
    plan = tiny_plan(
        members=2,
        rounds=1,
        scratch_passes=1,
        evals_per_epoch=1,
        onlstm={"variants": {"chunk_size": [4, 8], "hidden_size": [24, 32, 40]}},
    )
    shapes = [(s.config.model.chunk_size, s.config.model.hidden_size) for s in stages(plan, tmp_path) if s.config]
    assert shapes == [(4, 24), (8, 32), (4, 24), (8, 32), (4, 24)]  # members, students, then the student from scratch
    fit(plan, tmp_path / "f")
    model = Parser.load(tmp_path / "f" / "model")
    assert sorted(m.model.config.hidden_size for m in model.members) == [
        24,
        24,
        32,
    ]  # scratch (member-1's shape) and two students
    with pytest.raises(ValueError, match="chunk"):
        tiny_plan(
            onlstm={"variants": {"chunk_size": [4, 7]}}
        ).check()  # 7 divides neither the embedding (16) nor the hidden size (24)
    with pytest.raises(ValueError, match="n_layers"):
        tiny_plan(onlstm={"variants": {"n_layers": [2, 3]}}).check()


def test_every_member_draws_its_own_seed_and_reads_in_its_turns_direction():
    plan = tiny_plan(members=4, onlstm={"directions": ["forward", "backward"], "punctuation": True})
    members = [stage.config for stage in stages(plan, Path("out")) if stage.name.startswith("member-")]
    assert len({config.seed for config in members}) == 4
    assert [config.reading.direction for config in members] == ["forward", "backward"] * 2
    assert all(config.reading.punctuation for config in members)
    students = [stage.config for stage in stages(plan, Path("out")) if stage.config and stage.config.distill]
    assert [config.reading for config in students] == [config.reading for config in members] + [members[0].reading]


def test_the_ensembles_agreement_text_is_read_in_the_fits_language(tmp_path, monkeypatch):
    from conftest import tiny_model

    from onparse.fit import runners
    from onparse.fit.stages import Stage
    from onparse.parsing import ensemble
    from onparse.store import modeldir

    for name in ("member-1", "member-2"):
        model, vocab = tiny_model(1)
        modeldir.save(tmp_path / name, model, vocab, default_layer=2, language="de")
    dev = tmp_path / "dev.txt"
    dev.write_text("Die Mäuse „laufen“ schnell.\n", encoding="utf-8")
    seen = []

    def agreeing(models, rule, sentences, settings, keep, fixed_layer):
        seen.extend(sentences)
        return {"members": list(range(len(models))), "layers": [MEAN] * len(models)}

    monkeypatch.setattr(ensemble, "choose", agreeing)
    plan = tiny_plan(dev=str(dev), language="de", layer_rule="agreement")  # the fixed rule reads no text
    runners.ensemble_stage(Stage("ensemble-1", members=["member-1", "member-2"]), plan, tmp_path)
    assert [seen[0].tokens[i] for i in seen[0].words] == ["Die", "Mäuse", "laufen", "schnell"]


def test_probes_choose_the_punctuation_and_two_members_reading_each_way_the_direction_of_the_others(tmp_path):
    from onparse.fit.stages import DIRECTIONS, READINGS, chosen_reading
    from onparse.settings import Reading
    from onparse.text.corpus import read_corpus

    plan = tiny_plan(
        members=3,
        rounds=0,
        families=["onlstm", "pcfg"],
        scratch_passes=1,
        onlstm={"directions": ["auto"], "punctuation": None, "probe_tokens": 100_000},
        pcfg={"epochs": 1},
    )
    names = [stage.name for stage in stages(plan, tmp_path)]
    probes = ["probe-forward-punctuation", "probe-forward-words"]
    # the grammar that referees the probes first (a parser at once), then the probes; the trial's two ON-LSTMs, then
    # its rule
    assert names[:7] == ["member-2", *probes, READINGS, "member-1", "member-3", DIRECTIONS]
    assert [stage.config.sample_tokens for stage in stages(plan, tmp_path)[1:3]] == [100_000] * 2
    record = fit(plan, tmp_path / "fit")
    done = {entry["name"]: entry for entry in record["stages"]}
    rule, trial = done[READINGS], done[DIRECTIONS]
    best = max(rule["agreement"], key=rule["agreement"].get)
    assert (
        set(rule["agreement"]) == set(probes)
        and rule["referee"] == "the vote of the other probes and the grammar members"
    )
    punctuation = best == "probe-forward-punctuation"
    assert [done[name]["reads"] for name in ("member-1", "member-3")] == [
        "forward" + (" with punctuation" if punctuation else ", words alone"),
        "backward" + (" with punctuation" if punctuation else ", words alone"),
    ]
    # the trial: each member's own kept perplexity, the lower one's direction, the other out of every vote
    assert trial["perplexity"] == {
        name: round(done[name]["selected"]["dev_ppl"], 2) for name in ("member-1", "member-3")
    }
    winner = min(trial["perplexity"], key=trial["perplexity"].get)
    loser = "member-3" if winner == "member-1" else "member-1"
    assert trial["chosen"] == {"direction": "forward" if winner == "member-1" else "backward"}
    assert trial["out_of_the_vote"] == loser
    voting = json.loads((tmp_path / "fit" / "model" / "config.json").read_text())["ensemble"]["members"]
    assert f"members/{winner}" in voting and f"members/{loser}" not in voting
    assert chosen_reading(record) == Reading(punctuation, trial["chosen"]["direction"])
    settled = {stage.name: stage for stage in stages(plan, tmp_path / "fit", record)}
    assert settled["ensemble-1"].members == sorted({"member-1", "member-2", "member-3"} - {loser})  # probes never vote
    assert settled["scratch"].config.reading == chosen_reading(record)  # the student reads as the winner
    for run in [
        *probes,
        loser,
    ]:  # the rules have chosen: a run keeps its settings and history, its figures in the record
        assert sorted(path.name for path in (tmp_path / "fit" / run).iterdir() if path.name != ".lock") == [
            "config.json",
            "history.jsonl",
        ]
    assert (tmp_path / "fit" / winner / "model" / "weights.pt").is_file()
    settled_plan = json.loads((tmp_path / "fit" / "fit.json").read_text())["plan"]["sections"]["onlstm"]
    tokens = sum(len(words) + 1 for words in read_corpus(plan.train, reading=Reading(punctuation=True)))
    assert (settled_plan["probe_epochs"], settled_plan["probe_tokens"]) == (
        1,
        tokens,
    )  # no more than a member reads: one epoch
    card = (tmp_path / "fit" / "model" / "card.md").read_text()
    assert "Reading: the ON-LSTMs read" in card and f"{loser} does not vote" in card
    older = json.loads((tmp_path / "fit" / "fit.json").read_text())
    del older["direction_trial"]  # a fit begun before the trial: its probes chose the direction, its stages differ
    (tmp_path / "fit" / "fit.json").write_text(json.dumps(older))
    with pytest.raises(RunFolderError, match="probes chose the direction"):
        fit(None, tmp_path / "fit", resume=True)


def test_every_onlstm_past_the_trial_reads_as_the_trial_chose_and_a_grammar_reads_the_words(tmp_path):
    from onparse.fit.stages import DIRECTIONS, READINGS
    from onparse.settings import Reading

    plan = tiny_plan(
        members=5, rounds=0, families=["onlstm", "pcfg"], onlstm={"directions": ["auto"], "punctuation": None}
    )
    assert (
        plan.direction_trial == [1, 3]
        and not tiny_plan(members=2, families=["onlstm", "pcfg"], onlstm={"directions": ["auto"]}).direction_trial
    )
    for punctuation, direction, loser in ((False, "backward", "member-1"), (True, "forward", "member-3")):
        record = {
            "stages": [
                {"name": READINGS, "chosen": {"punctuation": punctuation, "direction": "forward"}},
                {"name": DIRECTIONS, "chosen": {"direction": direction}, "out_of_the_vote": loser},
            ]
        }
        settled = {stage.name: stage for stage in stages(plan, tmp_path, record)}
        assert settled["member-1"].config.reading == Reading(punctuation, "forward")  # the trial reads each way
        assert settled["member-3"].config.reading == Reading(punctuation, "backward")
        assert settled["member-5"].config.reading == Reading(punctuation, direction)
        assert settled["member-2"].config.reading == settled["member-4"].config.reading == Reading()
        assert settled["ensemble-1"].members == [f"member-{k}" for k in range(1, 6) if f"member-{k}" != loser]
        # the pair differs in its direction alone; every other member draws its own seed
        assert [settled[f"member-{k}"].config.seed for k in range(1, 6)] == [1111, 1112, 1111, 1114, 1115]
    given = tiny_plan(members=3, families=["onlstm", "pcfg"], onlstm={"directions": ["auto"], "punctuation": True})
    assert not given.chooses_reading and [stage.name for stage in stages(given, tmp_path)][:3] == [
        "member-1",
        "member-3",
        DIRECTIONS,
    ]


def test_the_reading_rule_needs_a_referee_where_it_weighs_two_probes():
    with pytest.raises(ValueError, match="add --family pcfg"):  # two probes: with and without punctuation
        tiny_plan(onlstm={"directions": ["auto"], "punctuation": None}).check()
    with pytest.raises(ValueError, match="add --family pcfg"):  # one ON-LSTM: two probes, one each way
        tiny_plan(members=1, onlstm={"directions": ["auto"], "punctuation": True}).check()
    # two ON-LSTMs try the directions: no probe to referee
    tiny_plan(onlstm={"directions": ["auto"], "punctuation": True}).check()
    assert not tiny_plan(onlstm={"directions": ["forward"], "punctuation": True}).chooses_reading
    # two grammar students by default where there are grammars to take their shape from; none asked of a fit without
    assert tiny_plan(families=["onlstm", "pcfg"]).student_counts() == {"onlstm": 1, "pcfg": 2}
    assert tiny_plan().student_counts() == {"onlstm": 1}
    tiny_plan().check()
    assert [
        r.punctuation for r in tiny_plan(families=["onlstm", "pcfg"], onlstm={"punctuation": None}).candidate_readings()
    ] == [
        True,
        False,
    ]


def test_a_fit_mixing_families_votes_grammars_beside_onlstms_and_resumes_to_the_same_parser(tmp_path):
    from onparse.families import SPANS, PcfgConfig

    plan = tiny_plan(
        members=3,
        families=["onlstm", "pcfg"],
        rounds=1,
        scratch_passes=1,
        pcfg={
            "epochs": 2,
            "batch_size": 50,
            "students": 0,
            "model": PcfgConfig(vocab_size=60, nonterminals=3, preterminals=4, symbol_size=8),
        },
    )
    settled = {stage.name: stage for stage in stages(plan, tmp_path)}
    assert [settled[f"member-{k}"].config.family for k in (1, 2, 3)] == ["onlstm", "pcfg", "onlstm"]
    grammar = settled["member-2"].config
    assert grammar.default_layer == SPANS and grammar.epochs == 2 and grammar.reading.punctuation is False
    assert grammar.batch_size == 50 and settled["member-1"].config.batch_size == plan.sections["onlstm"].batch_size
    for wrong in (0, 2.5):
        with pytest.raises(ValueError, match="batch_size"):
            tiny_plan(families=["onlstm", "pcfg"], pcfg={"batch_size": wrong}).check()
    # a grammar is no student: it votes as it is in every round, and the student from scratch starts from an ON-LSTM
    assert settled["ensemble-2"].members == ["round-1-1", "member-2", "round-1-3"]
    assert settled["scratch"].config.distill.start.endswith("member-1/model")

    class Stop(Exception):
        pass

    def stop_after_the_grammar(name: str) -> None:
        if name == "member-2":
            raise Stop(name)

    with pytest.raises(Stop):
        fit(plan, tmp_path / "mixed", stage_done=stop_after_the_grammar)
    record = fit(None, tmp_path / "mixed", resume=True)
    final = record["stages"][-1]
    assert final["name"] == "model" and final["layers"][2] == SPANS
    parser = Parser.load(tmp_path / "mixed" / "model")
    assert [member.bundle.family for member in parser.members] == ["onlstm", "onlstm", "pcfg", "onlstm"]
    assert "a grammar over the words" in (tmp_path / "mixed" / "model" / "card.md").read_text()
    uninterrupted = fit(plan, tmp_path / "whole")
    assert trees(tmp_path / "whole" / "model") == trees(tmp_path / "mixed" / "model")
    assert [e["name"] for e in uninterrupted["stages"]] == [e["name"] for e in record["stages"]]


def test_students_from_scratch_in_both_directions_learn_one_teacher_and_all_vote(tmp_path):
    plan = tiny_plan(
        members=2, rounds=0, scratch_passes=1, evals_per_epoch=1, onlstm={"student_directions": ["forward", "backward"]}
    )
    settled = {stage.name: stage for stage in stages(plan, tmp_path)}
    one, two = settled["scratch"].config, settled["scratch-2"].config
    assert (one.reading.direction, two.reading.direction) == ("forward", "backward")
    assert replace(one, reading=two.reading) == two  # the same teacher trees and seed: only the direction differs
    assert settled["model"].members == ["scratch", "scratch-2", "member-1", "member-2"]
    assert [s.name for s in stages(tiny_plan(rounds=0), tmp_path)][-2:] == [
        "scratch",
        "model",
    ]  # one student unless asked
    for wrong in (["sideways"], "backward", ["backward", "backward"]):
        with pytest.raises(ValueError, match="students read"):
            tiny_plan(onlstm={"student_directions": wrong}).check()
    with pytest.raises(ValueError, match="ON-LSTM students take .* add --family onlstm"):
        tiny_plan(families=["pcfg"], rounds=0, onlstm={"student_directions": ["backward"]}).check()
    fit(plan, tmp_path / "fit")
    model = Parser.load(tmp_path / "fit" / "model")
    assert sorted(m.reading.direction for m in model.members) == ["backward", "forward", "forward", "forward"]
    assert sorted(p.name for p in (tmp_path / "fit" / "teachers").iterdir()) == ["ensemble-1.jsonl"]  # parsed once


def test_grammar_students_learn_the_last_ensembles_trees_beside_the_onlstm_student_and_vote(tmp_path):
    from dataclasses import asdict

    from onparse.families import SPANS, PcfgConfig
    from onparse.families.pcfg import STUDENT_FOCUS

    grammar = PcfgConfig(vocab_size=60, nonterminals=3, preterminals=4, symbol_size=8)
    plan = tiny_plan(
        members=2,
        families=["onlstm", "pcfg"],
        rounds=0,
        scratch_passes=1,
        evals_per_epoch=1,
        pcfg={"epochs": 1, "batch_size": 50, "model": grammar, "students": 2},
    )
    settled = {stage.name: stage for stage in stages(plan, tmp_path)}
    assert settled["model"].members == ["scratch", "grammar-student-1", "grammar-student-2", "member-1", "member-2"]
    first, second = settled["grammar-student-1"].config, settled["grammar-student-2"].config
    assert first.family == "pcfg" and first.default_layer == SPANS and first.distill.start.endswith("member-2/model")
    assert first.distill.trees == settled["scratch"].config.distill.trees and first.distill.from_scratch
    assert (first.seed, second.seed) == (plan.seed, plan.seed + 1) and replace(first, seed=second.seed) == second
    assert first.lr == 1e-3 and first.batch_size == 600 and first.epochs == plan.scratch_passes
    assert first.distill.focus == STUDENT_FOCUS > 0 and first.selection == "dev_ppl"  # focused, kept by perplexity
    plain = {stage.name: stage for stage in stages(plan.with_section("pcfg", focus=0.0), tmp_path)}
    assert plain["grammar-student-1"].config.distill.focus == 0 and plain["grammar-student-1"].config.selection == (
        "teacher_agreement"
    )  # the voted tree, kept by agreement with it
    assert settled["scratch"].config.distill.focus == 0  # the ON-LSTM student learns the trees
    recorded = asdict(plan)
    del recorded["sections"]["pcfg"]["focus"]  # a fit planned before grammar students were focused
    assert FitPlan.from_dict(recorded).sections["pcfg"].focus == 0
    assert [s.name for s in stages(tiny_plan(rounds=0), tmp_path)][-2:] == ["scratch", "model"]  # none unless asked
    with pytest.raises(ValueError, match="grammar students take"):
        tiny_plan(pcfg={"students": 1}).check()
    with pytest.raises(ValueError, match="students must be a whole number of at least 0"):
        tiny_plan(families=["onlstm", "pcfg"], pcfg={"students": -1}).check()
    record = fit(plan.with_section("pcfg", students=1), tmp_path / "fit")
    assert [stage["name"] for stage in record["stages"]][-2:] == ["grammar-student-1", "model"]
    student = json.loads((tmp_path / "fit" / "grammar-student-1" / "model" / "card.json").read_text())
    assert student["config"]["family"] == "pcfg" and "teacher_agreement" in student["selected"]
    model = Parser.load(tmp_path / "fit" / "model")
    assert [member.bundle.family for member in model.members] == ["onlstm", "pcfg", "onlstm", "pcfg"]


def test_each_student_learns_the_vote_just_before_it(tmp_path):
    """Round r's students learn ensemble-r; the students from scratch learn the last ensemble, not the first."""
    planned = {s.name: s for s in stages(tiny_plan(rounds=2, pcfg={"students": 0}), tmp_path)}
    teachers = {
        name: Path(s.config.distill.teacher).name for name, s in planned.items() if s.config and s.config.distill
    }
    assert teachers == {
        "round-1-1": "ensemble-1",
        "round-1-2": "ensemble-1",
        "round-2-1": "ensemble-2",
        "round-2-2": "ensemble-2",
        "scratch": "ensemble-3",
    }
    assert all(Path(planned[name].config.distill.trees).stem == teacher for name, teacher in teachers.items())


TINY_GRAMMAR = {"epochs": 1, "batch_size": 50, "students": 1}


def climbing_plan(pcfg: dict | None = None, **changes) -> FitPlan:
    from onparse.families import PcfgConfig

    grammar = PcfgConfig(vocab_size=60, nonterminals=3, preterminals=4, symbol_size=8)
    return tiny_plan(
        pcfg={**TINY_GRAMMAR, "model": grammar, **(pcfg or {})},
        **{
            "members": 2,
            "families": ["onlstm", "pcfg"],
            "rounds": 0,
            "scratch_passes": 1,
            "evals_per_epoch": 1,
            "generations": 2,
            **changes,
        },
    )


def test_each_generation_learns_the_vote_before_it_with_seeds_of_its_own(tmp_path):
    planned = stages(climbing_plan(), tmp_path)
    names = [stage.name for stage in planned]
    assert names[names.index("generation-0") :] == [
        "generation-0",
        "generation-1-scratch",
        "generation-1-grammar-student-1",
        "generation-1",
        "generation-2-scratch",
        "generation-2-grammar-student-1",
        "generation-2",
        "model",
    ]
    by_name = {stage.name: stage for stage in planned}
    assert by_name["generation-0"].members == ["scratch", "grammar-student-1", "member-1", "member-2"]
    for g in (1, 2):
        students = [f"generation-{g}-scratch", f"generation-{g}-grammar-student-1"]
        assert (
            by_name[f"generation-{g}"].members == students
            and by_name[f"generation-{g}"].teacher == f"generation-{g - 1}"
        )
        for name in students:
            distill = by_name[name].config.distill
            assert (
                Path(distill.teacher).name == Path(distill.trees).stem == f"generation-{g - 1}" and distill.from_scratch
            )
    assert by_name["model"].members == ["generation-2-scratch", "generation-2-grammar-student-1"]
    seeds = [by_name[name].config.seed for name in ("scratch", "generation-1-scratch", "generation-2-scratch")]
    assert len(set(seeds)) == 3
    larger = climbing_plan(pcfg={"student_model": replace(climbing_plan().sections["pcfg"].model, nonterminals=6)})
    assert {s.config.model.nonterminals for s in stages(larger, tmp_path) if "grammar-student" in s.name} == {6}
    assert [s.name for s in stages(climbing_plan(generations=0), tmp_path)][-1:] == ["model"]
    assert "generation-0" not in [s.name for s in stages(climbing_plan(generations=0), tmp_path)]
    with pytest.raises(ValueError, match="generations at least 0"):
        climbing_plan(generations=-1).check()
    with pytest.raises(ValueError, match="shape the grammar students: ask for some too"):
        climbing_plan(pcfg={"students": 0, "student_model": larger.sections["pcfg"].student_model}).check()


def test_the_climb_stops_after_a_generation_that_barely_moved_its_teachers_trees(tmp_path):
    plan = climbing_plan(generations=3, stop_agreement=90.0)
    record = {
        "stages": [
            {"name": "generation-0"},
            {"name": "generation-1", "teacher_agreement": 80.0},
            {"name": "generation-2", "teacher_agreement": 91.0},
        ]
    }
    names = [stage.name for stage in stages(plan, tmp_path, record)]
    assert names[-2:] == ["generation-2", "model"] and "generation-3" not in names
    model = next(stage for stage in stages(plan, tmp_path, record) if stage.name == "model")
    assert model.members == ["generation-2-scratch", "generation-2-grammar-student-1"]
    record["stages"][-1]["teacher_agreement"] = 89.0  # still moving: the climb goes on
    assert "generation-3" in [stage.name for stage in stages(plan, tmp_path, record)]


def test_a_generation_learns_its_teachers_trees_records_how_far_it_moved_and_resumes_exactly(tmp_path):
    class Stop(Exception):
        pass

    def stop_after_generation_0(name: str) -> None:
        if name == "generation-0":
            raise Stop(name)

    # the students' untrained starts kept, to compare with; layers by agreement, as the tiny members' votes at the
    # mean of layers are already as near an untrained grammar's trees (77 F1) as a student comes
    plan = climbing_plan(generations=1, keep_evaluations=True, layer_rule="agreement")
    whole = fit(plan, tmp_path / "whole")
    with pytest.raises(Stop):
        fit(plan, tmp_path / "stopped", stage_done=stop_after_generation_0)
    fit(None, tmp_path / "stopped", resume=True)
    assert trees(tmp_path / "stopped" / "model") == trees(tmp_path / "whole" / "model")
    done = {entry["name"]: entry for entry in whole["stages"]}
    assert 0 <= done["generation-1"]["teacher_agreement"] <= 100 and "teacher_agreement" not in done["generation-0"]
    from onparse.parsing.ensemble import model_trees, pairwise_agreement
    from onparse.text.language import Sentence

    sentences = [Sentence.of_tokens(line.split()) for line in DEV]
    teacher = model_trees(tmp_path / "whole" / "generation-0", sentences, {})
    for student in ("generation-1-scratch", "generation-1-grammar-student-1"):  # from chance toward the teacher's trees
        untrained, learnt = (
            pairwise_agreement([model_trees(tmp_path / "whole" / student / at, sentences, {}), teacher], sentences)
            for at in ("epoch-00.00", "model")
        )
        untrained, learnt = untrained[0][1], learnt[0][1]
        assert learnt > untrained + 5, (student, untrained, learnt)
    header = json.loads((tmp_path / "whole" / "teachers" / "generation-0.jsonl").read_text().splitlines()[0])
    assert Path(header["teacher"]).name == "generation-0"
    assert len(Parser.load(tmp_path / "whole" / "model").members) == 2
    card = (tmp_path / "whole" / "model" / "card.md").read_text()
    assert (
        "Generations: 1 of 1" in card
        and f"agrees {done['generation-1']['teacher_agreement']:.2f} with its teacher" in card
    )


def as_written_before_onlstm_section(record: dict) -> dict:
    """A record as onparse wrote it while the ON-LSTMs' reading, probe and round-student settings sat at the top of
    the plan and the probes' given tokens at the top of the budget's given readings: ``plan.ONLSTM_FIELDS`` read
    backwards."""
    from onparse.plan import ONLSTM_FIELDS

    sections = {name: dict(section) for name, section in record["plan"]["sections"].items()}
    plan = {**record["plan"], **{name: sections["onlstm"].pop(name) for name in ONLSTM_FIELDS}, "sections": sections}
    old = {**record, "plan": plan}
    if "budget" in record:
        given = record["budget"]["given"]
        held = {name: dict(section) for name, section in given["sections"].items()}
        old["budget"] = {
            **record["budget"],
            "given": {**given, "probe_tokens": held["onlstm"].pop("probe_tokens"), "sections": held},
        }
    return old


def as_written_before_sections(record: dict) -> dict:
    """A record as onparse wrote it before the plan had a section per family (its family settings flat in the plan,
    rates and text sizes keyed by kind): ``plan.OLD_SECTION_FIELDS`` read backwards."""
    from onparse.plan import OLD_SECTION_FIELDS

    record = as_written_before_onlstm_section(record)
    plan = dict(record["plan"])
    sections = plan.pop("sections")
    for old, (family, name) in OLD_SECTION_FIELDS.items():
        plan[old] = sections.get(family, {}).get(name)
    plan["member_epochs"] = sections["onlstm"]["epochs"]
    plan["member_grammar"] = plan["member_grammar"] or {}
    old = {**record, "plan": plan}
    if "budget" in record:
        sizing = dict(record["budget"])
        sizing["rates"] = {"lm_tokens_per_second": sizing["rates"].get("onlstm"), "grammar_words_per_second": None}
        sizing["corpus"] = {**{k: v for k, v in sizing["corpus"].items() if k != "units"}, "grammar_words": 0}
        given = sizing["given"]
        sizing["given"] = {
            **{key: given[key] for key in ("member_epochs", "probe_tokens", "sentences")},
            "member_sample": None,
            "grammar_epochs": None,
            "grammar_sample": None,
        }
        old["budget"] = sizing
    return old


@pytest.mark.parametrize("written_before", [as_written_before_sections, as_written_before_onlstm_section])
def test_a_fit_recorded_by_an_older_onparse_resumes_as_it_was_planned(tmp_path, written_before):
    from onparse.fit.records import read_record
    from onparse.plan import ONLSTM_FIELDS

    out = tmp_path / "fit"
    plan = tiny_plan(rounds=0, member_epochs=None, onlstm={"variants": {"hidden_size": [24, 32]}})
    with pytest.raises(TimeUp):
        fit(plan, out, hours=0.0001)  # sized, timed, then stopped before the first member ends
    record = json.loads((out / "fit.json").read_text())
    (out / "fit.json").write_text(json.dumps(written_before(record)))
    translated = read_record(out)
    assert FitPlan.from_dict(translated["plan"]) == FitPlan.from_dict(record["plan"])
    assert translated["budget"]["rates"] == record["budget"]["rates"]
    assert translated["budget"]["given"] == record["budget"]["given"]
    assert translated["budget"]["corpus"]["units"] == {"onlstm": record["budget"]["corpus"]["tokens"]}
    resumed = fit(None, out, resume=True)
    assert resumed["stages"][-1]["name"] == "model"
    assert not {"member_model", *ONLSTM_FIELDS} & set(json.loads((out / "fit.json").read_text())["plan"])
    assert sorted(m.model.config.hidden_size for m in Parser.load(out / "model").members) == [24, 24, 32]


def test_a_finished_fit_asked_for_more_students_makes_its_model_again_and_resume_takes_no_new_settings(tmp_path):
    out = tmp_path / "fit"
    fit(tiny_plan(rounds=0), out)
    record = json.loads((out / "fit.json").read_text())
    record["plan"]["sections"]["onlstm"]["student_directions"] = ["forward", "backward"]  # more, asked after the end
    (out / "fit.json").write_text(json.dumps(record))
    again = fit(None, out, resume=True)
    assert [entry["name"] for entry in again["stages"]][-2:] == ["scratch-2", "model"]
    assert len(Parser.load(out / "model").members) == 4  # the new student votes
    changed = CliRunner().invoke(main, ["fit", "--out", str(out), "--resume", "--family", "pcfg", "--threads", "1"])
    assert changed.exit_code == 2 and "leave out --family" in changed.stderr
    record = json.loads((out / "fit.json").read_text())
    for edit, said in (
        (("families", ["onlstm", "pcfg"]), "member-2 of family pcfg (trained with onlstm)"),
        (
            (
                "sections",
                {
                    **record["plan"]["sections"],
                    "onlstm": {**record["plan"]["sections"]["onlstm"], "variants": {"hidden_size": [32]}},
                },
            ),
            "member-1 of hidden_size 32 (trained with 24)",
        ),
    ):
        (out / "fit.json").write_text(json.dumps({**record, "plan": {**record["plan"], edit[0]: edit[1]}}))
        with pytest.raises(RunFolderError, match=re.escape(said)):
            fit(None, out, resume=True)


def test_a_finished_fit_asked_for_another_member_makes_every_stage_made_of_the_members_again(tmp_path):
    """A stage done before one of its inputs was made again is stale (``stages.stale_stages``): the new member votes
    in the ensemble, the student learns that vote, and the model is made of them."""
    out = tmp_path / "fit"
    first = fit(tiny_plan(rounds=0), out)
    before = [entry["name"] for entry in first["stages"]]
    record = json.loads((out / "fit.json").read_text())
    record["plan"]["members"] = 3
    (out / "fit.json").write_text(json.dumps(record))
    again = fit(None, out, resume=True)
    names = [entry["name"] for entry in again["stages"]]
    assert names[: before.index("member-2") + 1] == before[: before.index("member-2") + 1]  # the members stand
    redone = names[names.index("member-3") + 1 :]
    assert redone == [name for name in before if name not in ("member-1", "member-2")]  # every stage after them
    assert json.loads((out / "ensemble-1" / "card.json").read_text())["members"][-1]["name"] == "member-3"
    assert len(again["stages"]) == len(before) + 1 and sum(e["wall_minutes"] for e in again["stages"]) > sum(
        e["wall_minutes"] for e in first["stages"]
    )  # the minutes of the stages made twice still count


def test_a_fit_in_a_language_that_cannot_be_tokenized_here_is_refused_before_its_folder_is_made(tmp_path):
    import importlib.util

    if importlib.util.find_spec("pythainlp"):
        pytest.skip("PyThaiNLP is installed here")
    refused = CliRunner().invoke(
        main,
        [
            "fit",
            "--train",
            str(EXAMPLES / "corpus.txt"),
            "--dev",
            str(EXAMPLES / "dev.txt"),
            "--out",
            str(tmp_path / "thai"),
            "--language",
            "th",
        ],
    )
    assert refused.exit_code == 2 and "PyThaiNLP" in refused.stderr and not (tmp_path / "thai").exists()


def test_text_given_as_tokens_needs_no_tokenizer_for_its_language(tmp_path):
    """--tokenized text is split at spaces: a language whose tokenizer is not installed trains on it all the same,
    and without --tokenized is refused in one line naming what is missing."""
    import importlib.util

    if importlib.util.find_spec("pythainlp"):
        pytest.skip("PyThaiNLP is installed here")
    (tmp_path / "th.txt").write_text("แมว นั่ง บน เสื่อ\nหมา วิ่ง เร็ว\n" * 40, encoding="utf-8")
    tiny = [
        "--train",
        str(tmp_path / "th.txt"),
        "--dev",
        str(tmp_path / "th.txt"),
        "--language",
        "th",
        "--epochs",
        "1",
        "--embedding-size",
        "8",
        "--hidden-size",
        "12",
        "--chunk-size",
        "4",
        "--batch-size",
        "4",
        "--bptt",
        "8",
        "--threads",
        "1",
        "--quiet",
        "--dtype",
        "fp32",
    ]
    done = CliRunner().invoke(main, ["train", *tiny, "--tokenized", "--out", str(tmp_path / "run")])
    assert done.exit_code == 0, done.output
    refused = CliRunner().invoke(main, ["train", *tiny, "--out", str(tmp_path / "other")])
    assert refused.exit_code == 2 and "PyThaiNLP" in refused.stderr and not (tmp_path / "other").exists()
    unknown = CliRunner().invoke(
        main, ["train", *tiny[:4], "--language", "qq", "--tokenized", "--out", str(tmp_path / "q")]
    )
    assert unknown.exit_code == 2 and "not a language code" in unknown.stderr


def test_a_fit_on_small_text_stops_its_runs_once_they_stop_learning(tmp_path):
    from onparse.fit import sizing
    from onparse.fit.sizing import settled_plan

    planned, _, corpus = settled_plan(tiny_plan(member_epochs=None, evals_per_epoch=4), tmp_path)  # the default's
    assert planned.sections["onlstm"].epochs > 1 and corpus["tokens"] < sizing.SMALL_TEXT_TOKENS
    # its runs stop once they stop learning and are evaluated once a pass, unless asked otherwise
    assert (planned.patience, planned.evals_per_epoch) == (sizing.FIT_PATIENCE, 1)
    asked = settled_plan(tiny_plan(member_epochs=None, patience=5.0, evals_per_epoch=3), tmp_path)[0]
    assert (asked.patience, asked.evals_per_epoch) == (5.0, 3)
    assert [s.config.evals_per_epoch for s in stages(planned, tmp_path) if s.name.startswith("probe-")] in ([], [1, 1])
    large = {"tokens": sizing.SMALL_TEXT_TOKENS, "sentences": 4_000}  # a larger text's runs stop early too
    assert (sizing.stopping_early(tiny_plan(), large).patience, tiny_plan().evals_per_epoch) == (sizing.FIT_PATIENCE, 2)
    assert sizing.stopping_early(tiny_plan(), large).evals_per_epoch == 2


def test_a_finished_stage_keeps_its_model_settings_and_history_alone_unless_evaluations_are_kept(fitted, tmp_path):
    out, _ = fitted
    assert sorted(e.name for e in (out / "member-1").iterdir() if e.name != ".lock") == [
        "config.json",
        "history.jsonl",
        "model",
    ]
    kept = fit(tiny_plan(rounds=0, members=1, keep_evaluations=True), tmp_path / "kept")
    assert kept and (tmp_path / "kept" / "member-1" / "checkpoint.pt").is_file()
    assert (tmp_path / "kept" / "member-1" / "epoch-00.00").is_dir()


def test_a_fit_on_text_without_a_sentence_is_refused_in_one_line_before_its_folder_is_made(tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n")
    result = CliRunner().invoke(
        main,
        [
            "fit",
            "--train",
            str(tmp_path / "empty.txt"),
            "--dev",
            str(EXAMPLES / "dev.txt"),
            "--out",
            str(tmp_path / "fit"),
        ],
    )
    assert result.exit_code != 0 and "holds no sentence" in result.stderr and not (tmp_path / "fit").exists()


def test_a_head_initial_languages_teachers_give_the_right_branching_tree_half_their_votes_and_the_model_none(fitted):
    out, record = fitted  # English: ensemble-1 teaches round 1, ensemble-2 the student from scratch
    votes = {
        entry["name"]: entry["right_branching_voter"] for entry in record["stages"] if "right_branching_voter" in entry
    }
    assert votes == {"ensemble-1": 1.0, "ensemble-2": 1.0, "model": 0.0}  # half of two members' votes; the model none
    assert json.loads((out / "ensemble-1" / "config.json").read_text())["ensemble"]["right_branching_voter"] == 1.0
    assert (
        "Teacher prior: the right-branching tree cast 0.5 of the votes of ensemble-1, ensemble-2"
        in (out / "model" / "card.md").read_text()
    )
    assert "chosen on WSJ section 22's gold trees" in (out / "model" / "card.md").read_text()
    assert tiny_plan(language="de").teacher_right_branching == tiny_plan(language="zh").teacher_right_branching == 0
    assert tiny_plan(language="de", teacher_prior=0.25).teacher_right_branching == 0.25
    assert tiny_plan(teacher_prior=0.0).teacher_right_branching == 0


@pytest.mark.parametrize("command", ["fit", "train", "distill"])
def test_an_empty_gold_set_is_refused_in_one_line_before_any_work(tmp_path, command, tiny_model_dir):
    """One check (``treebank.check_gold``) before any training, where scoring the first stage once crashed."""
    (tmp_path / "empty.txt").write_text("")
    extra = ["--teacher", str(tiny_model_dir), "--student", str(tiny_model_dir)] if command == "distill" else []
    result = CliRunner().invoke(
        main,
        [
            command,
            "--train",
            str(EXAMPLES / "corpus.txt"),
            "--dev",
            str(EXAMPLES / "dev.txt"),
            "--dev-gold",
            str(tmp_path / "empty.txt"),
            "--out",
            str(tmp_path / "run"),
            *extra,
        ],
    )
    assert result.exit_code == 1 and "no gold trees to score" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


def test_the_climb_stops_at_its_agreement_or_more_and_not_below():
    """``stop_agreement`` is "or more": a generation whose vote agrees with its teacher exactly that much ends the
    climb."""
    from onparse.fit.stages import climb_ended

    plan = tiny_plan(generations=3, stop_agreement=90.0)
    record = lambda agreement: {"stages": [{"name": "generation-1", "teacher_agreement": agreement}]}  # noqa: E731
    assert climb_ended(record(90.0), plan, 1) and climb_ended(record(95.0), plan, 1)
    assert not climb_ended(record(89.99), plan, 1) and not climb_ended(record(90.0), plan, 2)
    assert not climb_ended(None, plan, 1)


def test_a_resume_keeps_what_is_left_of_the_fits_hours(tmp_path, caplog):
    """A fit stopped with minutes of its budget left (Ctrl-C) resumes within them; --hours gives the call another;
    under a minute left is none (a resume runs to its end instead of stopping after an update)."""
    from onparse.fit import fit, sizing

    out = tmp_path / "fit"
    calls = []

    def stop(name: str) -> None:
        calls.append(name)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit(tiny_plan(rounds=0), out, hours=1, stage_done=stop)
    with caplog.at_level("INFO", logger="onparse"), pytest.raises(KeyboardInterrupt):
        fit(None, out, resume=True, stage_done=stop)
    assert "resuming with" in caplog.text and "of the fit's 1 hours' minutes left" in caplog.text
    record = json.loads((out / "fit.json").read_text())  # a call stopped at its hours: seconds of them uncounted
    record["budget"]["hours"] = (sizing.spent_minutes(record) + 0.5) / 60
    (out / "fit.json").write_text(json.dumps(record))
    caplog.clear()
    with caplog.at_level("INFO", logger="onparse"), pytest.raises(KeyboardInterrupt):
        fit(None, out, resume=True, stage_done=stop)
    assert "hours are spent: resuming to its end" in caplog.text and "resuming with" not in caplog.text


def test_the_card_says_when_the_direction_trial_compared_members_that_read_unlike_amounts():
    from dataclasses import asdict

    from onparse.fit.card import reading_summary
    from onparse.fit.stages import DIRECTIONS

    def card(second_read: int) -> str:
        trial = {"name": DIRECTIONS, "perplexity": {"member-1": 80.0, "member-3": 90.0}, "out_of_the_vote": "member-3"}
        trial["chosen"] = {"direction": "forward"}
        members = [{"name": "member-1", "tokens_seen": 545_600}, {"name": "member-3", "tokens_seen": second_read}]
        plan = tiny_plan(members=3, families=["onlstm", "pcfg"], onlstm={"directions": ["auto"], "punctuation": True})
        return reading_summary({"plan": asdict(plan), "stages": [*members, trial]})

    assert "not like with like: member-1 read 545,600 tokens, member-3 read 162,688 tokens" in card(162_688)
    assert "like with like" not in card(545_600) and "member-3 does not vote" in card(545_600)


@pytest.mark.parametrize("edit", [("pcfg", "focus", 9.0), ("pcfg", "epochs", 7)])
def test_a_finished_fit_whose_plan_was_edited_for_a_stage_that_is_done_is_refused_not_called_done(tmp_path, edit):
    from onparse.families import PcfgConfig

    out = tmp_path / "fit"
    grammar = PcfgConfig(vocab_size=60, nonterminals=3, preterminals=4, symbol_size=8)
    fit(tiny_plan(rounds=0, families=["onlstm", "pcfg"], pcfg={"epochs": 1, "batch_size": 50, "model": grammar}), out)
    card = (out / "model" / "card.json").read_text()
    record = json.loads((out / "fit.json").read_text())
    family, name, value = edit
    assert record["plan"]["sections"][family][name] != value
    record["plan"]["sections"][family][name] = value
    (out / "fit.json").write_text(json.dumps(record))
    with pytest.raises(RunFolderError, match=re.escape(f"sections.{family}.{name}")):
        fit(None, out, resume=True)
    assert (out / "model" / "card.json").read_text() == card  # the card names no setting the model never had


@pytest.mark.parametrize("lower", ["member-1", "member-3"])
def test_the_direction_trial_chooses_the_lower_dev_perplexity_and_leaves_the_other_out_of_the_vote(tmp_path, lower):
    """The rule itself, on two members' cards (a fit that runs it takes minutes: ``test_probes_choose_...``)."""
    from onparse.fit.runners import direction_stage
    from onparse.fit.stages import Stage

    readings = {"member-1": "forward", "member-3": "backward"}
    for name, direction in readings.items():
        (tmp_path / name / "model").mkdir(parents=True)
        perplexity = 100.0 if name == lower else 100.5
        (tmp_path / name / "model" / "card.json").write_text(json.dumps({"selected": {"dev_ppl": perplexity}}))
        (tmp_path / name / "model" / "config.json").write_text(json.dumps({"reading": {"direction": direction}}))
    chosen = direction_stage(Stage("directions", members=list(readings), trial=True), tmp_path)
    assert chosen["chosen"] == {"direction": readings[lower]} and "no gold trees" in chosen["rule"]
    assert chosen["out_of_the_vote"] == next(name for name in readings if name != lower)


def test_a_student_collapsed_into_right_branching_trees_is_trained_again_and_one_that_stays_so_does_not_vote(
    tmp_path, monkeypatch
):
    """``collapsed`` stands in for the shape check (its own test: ``test_scoring``): grammar-student-1 collapses
    while focused, and the ON-LSTM student ``scratch`` parses right-branching whatever it learns."""
    from onparse.families import PcfgConfig
    from onparse.fit import runners
    from onparse.training.runfolder import saved_config

    def collapsed(member, sentences, settings):
        run = saved_config(member)
        focused = run.distill is not None and run.distill.focus > 0
        return (
            "right-branching" if member.name == "scratch" or (member.name == "grammar-student-1" and focused) else None
        )

    monkeypatch.setattr(runners, "collapsed", collapsed)
    grammar = PcfgConfig(vocab_size=60, nonterminals=3, preterminals=4, symbol_size=8)
    out = tmp_path / "fit"
    record = fit(
        tiny_plan(rounds=0, families=["onlstm", "pcfg"], pcfg={"epochs": 1, "batch_size": 50, "model": grammar}), out
    )
    entries = {entry["name"]: entry for entry in record["stages"]}
    assert entries["grammar-student-1"]["collapsed_when_focused"] == "right-branching"
    assert (
        saved_config(out / "grammar-student-1").distill.focus == 0
        and "collapsed_when_focused" not in entries["grammar-student-2"]
    )
    assert entries["model"]["left_out"] == {"scratch": "right-branching"}
    voters = [member.name for member in modeldir.read_ensemble(out / "model").members]
    assert "scratch" not in voters and "grammar-student-1" in voters and len(voters) == 4


def anytime_member(out: Path, name: str, seed: int) -> Path:
    """A finished member's run folder: its model, its history."""
    from conftest import tiny_model

    model, vocab = tiny_model(seed)
    modeldir.save(out / name / "model", model, vocab, default_layer=2)
    (out / name / "history.jsonl").write_text("")
    return out / name


def test_out_model_is_the_best_so_far_replaced_only_where_the_rule_says_better_and_never_half_written(
    tmp_path, monkeypatch
):
    from dataclasses import replace

    from onparse.fit.anytime import publish, published
    from onparse.fit.stages import Stage
    from onparse.parsing import ensemble as ensembles

    config = stages(tiny_plan(), tmp_path)[0].config
    members = [Stage(f"member-{k}", config) for k in (1, 2, 3)]
    grammar = Stage("member-4", replace(config, family="pcfg"))
    vote = Stage("ensemble-1", members=["member-1", "member-2", "member-3", "member-4"])
    settled = [*members, grammar, vote, Stage("model", members=["ensemble-1"])]
    for k in (1, 2, 3, 4):
        anytime_member(tmp_path, f"member-{k}", k)

    def entry(ppl: float) -> dict:
        return {"reads": "words, forward", "selected": {"dev_ppl": ppl}}

    done: set[str] = set()
    steps = [(members[0], entry(200.0)), (members[1], entry(250.0)), (grammar, entry(10.0)), (members[2], entry(150.0))]
    for stage, found in steps:
        done.add(stage.name)
        publish(tmp_path, stage, found, settled, done, 0.0)
        if stage.name == "member-1":
            assert published(tmp_path)["stage"] == "member-1" and Parser.load(tmp_path / "model").parse("the cat sat")
            assert "ensemble-1" in published(tmp_path)["still_to_come"]
    assert published(tmp_path)["stage"] == "member-3"  # lower perplexity, like with like; the grammar is not like
    modeldir.save_ensemble(tmp_path / "ensemble-1", [tmp_path / "member-1" / "model", tmp_path / "member-2" / "model"])
    copies = []

    def failing_copy(source, target):  # the machine stops halfway through the new copy
        copies.append(target)
        if len(copies) == 2:
            raise KeyboardInterrupt
        return modeldir.copy_model(source, target)

    monkeypatch.setattr(ensembles.modeldir, "copy_model", failing_copy)
    with pytest.raises(KeyboardInterrupt):
        publish(tmp_path, vote, {}, settled, done | {"ensemble-1"}, 0.0)
    assert published(tmp_path)["stage"] == "member-3" and Parser.load(tmp_path / "model").parse("the cat sat")
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".model")]  # no part left beside it
    monkeypatch.undo()
    publish(tmp_path, vote, {}, settled, done | {"ensemble-1"}, 0.0)
    assert published(tmp_path)["stage"] == "ensemble-1" and len(modeldir.read_ensemble(tmp_path / "model").members) == 2


def test_a_fit_stopped_after_its_first_member_leaves_that_member_as_its_parser_and_says_where(tmp_path):
    out = tmp_path / "fit"

    def stop(name: str) -> None:
        if name == "member-1":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit(tiny_plan(), out, stage_done=stop)
    card = json.loads((out / "model" / "card.json").read_text())
    assert card["anytime"]["stage"] == "member-1" and "member-2" in card["anytime"]["still_to_come"]
    assert Parser.load(out / "model").parse("the cat sat on the mat").tokens
    from onparse.commands.training import best_so_far

    assert best_so_far(out) == f"; the best model so far (member-1) is in {out / 'model'}"


def test_a_models_collapsed_shape_is_read_once_and_kept_in_its_card(tmp_path, monkeypatch):
    from onparse.fit import runners
    from onparse.text.corpus import read_sentences

    monkeypatch.undo()  # the check itself, not the stand-in the other tests use
    collapsed = runners.collapsed
    member = anytime_member(tmp_path, "member-1", 0)
    sentences = read_sentences([str(EXAMPLES / "dev.txt")], "en")
    shape = collapsed(member, sentences, {"device": "cpu", "dtype": "fp32"})
    card = json.loads((member / "model" / "card.json").read_text())
    assert card["dev_shape"] == shape and shape in (None, "right-branching", "left-branching", "one tree a length")
    monkeypatch.setattr(runners, "model_trees", None)  # read from the card, not parsed again
    assert collapsed(member, sentences, {"device": "cpu", "dtype": "fp32"}) == shape


def test_the_model_is_the_vote_that_taught_its_students_where_theirs_moved_toward_a_fixed_shape(
    fitted, tmp_path, monkeypatch
):
    import shutil

    from onparse.fit import runners
    from onparse.fit.card import write_card
    from onparse.structures.trees import baseline_spans

    out, record = fitted
    plan = FitPlan.from_dict(record["plan"])
    measured = runners.model_trees
    from onparse.structures.scoring import SHAPE_DRIFT

    monkeypatch.setattr(runners, "SHAPE_DRIFT", SHAPE_DRIFT)  # (the tiny fits' own check stands aside)

    def final_stage(students_trees: str) -> tuple[Path, dict]:
        """The fit's last stage run again on a copy, the students' vote parsing as its teacher or left-branching."""
        copy = tmp_path / students_trees
        shutil.copytree(out, copy)

        def parsed(model: Path, sentences: list, settings: dict) -> list[set]:
            if Path(model).name != "model":
                return measured(model, sentences, settings)
            if students_trees == "as-taught":
                return measured(copy / "ensemble-2", sentences, settings)
            return [set(baseline_spans("left_branching", len(sentence.word_tokens))) for sentence in sentences]

        monkeypatch.setattr(runners, "model_trees", parsed)
        final = stages(plan, copy, record)[-1]
        assert final.name == "model" and final.teacher == "ensemble-2"
        entry = {"name": "model", "wall_minutes": 0.1, **runners.ensemble_stage(final, plan, copy)}
        write_card(copy / "model", {**record, "stages": [*record["stages"][:-1], entry]})
        return copy, entry

    kept, entry = final_stage("as-taught")
    assert entry["parser"] == {
        "kind": "students' vote",
        "shape_drift": 0.0,
        "why": f"within {SHAPE_DRIFT:g} points of the shape of the vote that taught its students",
    }
    assert len(modeldir.read_ensemble(kept / "model").members) == 3  # the scratch student beside its teachers
    assert "Parser: the students' vote" in (kept / "model" / "card.md").read_text()
    moved, entry = final_stage("leftward")  # the students' vote, half collapsed
    assert entry["parser"]["kind"] == "teacher" and entry["parser"]["shape_drift"] > SHAPE_DRIFT
    voters = modeldir.read_ensemble(moved / "model")
    assert sorted(member.name for member in voters.members) == ["round-1-1", "round-1-2"]  # ensemble-2's, copied
    assert voters.right_branching_voter == 0  # a parser: without the prior the teacher gave its students
    assert (
        "Parser: the vote that taught the students (ensemble-2's members)" in (moved / "model" / "card.md").read_text()
    )
