"""What people and programs read: JSON lines with no blank lines, drawings aligned by display width, a progress bar
on a terminal while lines are parsed to a file."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import SLACK
from rich.cells import cell_len

from onparse.cli import main
from onparse.store import shipped


def run(*arguments, input=None):
    return CliRunner().invoke(main, [str(a) for a in arguments], input=input)


def test_json_lines_hold_an_object_for_every_input_line(tiny_model_dir):
    done = run("--model", tiny_model_dir, "-f", "json", input="the cat sat\n\n" + "cat " * 500 + "\nthe mat\n")
    lines = done.stdout.splitlines()
    assert len(lines) == 4 and all(line for line in lines)
    records = [json.loads(line) for line in lines]
    assert records[1] == {"tokens": [], "empty": True} and "over the limit" in records[2]["refused"]
    assert records[0]["tokens"] == ["the", "cat", "sat"] and records[3]["tokens"] == ["the", "mat"]


def test_a_drawing_aligns_its_bars_by_display_width(tiny_model_dir):
    done = run("--model", tiny_model_dir, "--tokenized", "-f", "pretty", "北京 the 大学 cat")
    rows = [line for line in done.stdout.splitlines() if "█" in line]
    labels = [row.split("── ", 1)[1] for row in rows]  # each token, then its bar
    assert len(labels) == 4 and {cell_len(label[: label.index("█")]) for label in labels} == {15}


@pytest.mark.slow
def test_parsing_a_file_shows_its_progress_on_a_terminal_and_nowhere_else(tiny_model_dir, tmp_path):
    import pty

    source = tmp_path / "lines.txt"
    source.write_text("the cat sat on the mat\n" * 300)
    command = [
        sys.executable,
        "-m",
        "onparse",
        "--model",
        str(tiny_model_dir),
        "-i",
        str(source),
        "-o",
        str(tmp_path / "out"),
    ]
    leader, follower = pty.openpty()
    done = subprocess.run(
        command, stderr=follower, stdout=subprocess.DEVNULL, timeout=SLACK * 24, env={**os.environ, "COLUMNS": "120"}
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert done.returncode == 0 and b"300/300" in shown and b"sentences/s" in shown  # the file's lines are the total
    quiet = subprocess.run(
        command[:-2] + ["-o", str(tmp_path / "out2"), "--quiet"], capture_output=True, timeout=SLACK * 24
    )
    piped = subprocess.run(command, capture_output=True, timeout=SLACK * 24)  # stderr a pipe: no bar
    assert quiet.returncode == piped.returncode == 0 and b"sentences/s" not in quiet.stderr + piped.stderr


def test_models_lists_what_loads_by_name_and_an_unknown_name_lists_them(tiny_model_dir):
    import onparse

    listed = json.loads(run("models", "--json").stdout)
    names = [model["name"] for model in listed]
    assert names == [model["name"] for model in onparse.available_models()] and shipped.DEFAULT_MODEL.name in names
    assert all(model["language"] and model["megabytes"] > 0 for model in listed)
    unknown = run("--model", "xyzzy", "the cat")
    assert (
        unknown.exit_code == 2 and all(name in unknown.stderr for name in names) and "onparse models" in unknown.stderr
    )
    close = run("--model", "onlstm-negr", "the cat")  # a short list of the closest, not every model
    assert close.exit_code == 2 and "did you mean onlstm-negra" in close.stderr and "pcfg-wsj" not in close.stderr


def test_a_shipped_model_not_installed_here_is_named_with_the_commands_that_install_it(tmp_path, monkeypatch):
    from onparse.store import modeldir

    (tmp_path / "onlstm-big" / "members").mkdir(parents=True)  # a folder without a config loads by no name
    monkeypatch.setattr(shipped, "MODELS", tmp_path)  # an installation that holds no shipped model
    monkeypatch.setattr(shipped, "packaged", dict)  # and no model package
    install = "make models && pip install dist/models/onparse_model_onlstm_ctb-"
    with pytest.raises(modeldir.ModelDirError, match="onlstm-ctb is a shipped model not installed here") as err:
        modeldir.locate("onlstm-ctb")
    assert install in str(err.value)
    assert [model["name"] for model in shipped.missing_models()] == sorted(shipped.CATALOGUE)
    listed = run("models")
    text = " ".join(listed.stdout.split())
    assert listed.exit_code == 0 and "not installed: onlstm-ctb (zh), onlstm-negra (de)," in text
    assert text.count("make models && pip install dist/models/onparse_model_<name>-") == 1  # one sentence for all
    with pytest.raises(modeldir.ModelDirError, match="no model named 'onlstm-big'"):
        modeldir.locate("onlstm-big")


def test_the_catalogue_names_every_shipped_model_but_the_default_with_its_language():
    from onparse.store import modeldir

    inside = {path.name: path for path in shipped.MODELS.iterdir() if (path / "config.json").is_file()}
    assert set(shipped.CATALOGUE) == set(inside) - {shipped.DEFAULT_MODEL.name}
    for name, language in shipped.CATALOGUE.items():
        assert modeldir.available_models()[sorted(inside).index(name)]["language"] == language


def test_a_mistyped_command_is_named_and_parse_may_follow_options(tiny_model_dir):
    mistyped = run("tarin")
    assert mistyped.exit_code == 2 and "did you mean onparse train" in mistyped.stderr
    with_options = run("evl", "--gold", "x.mrg")  # an option parse lacks: a command was meant, with its options
    assert with_options.exit_code == 2 and "did you mean onparse eval?" in with_options.stderr
    wrong = run("fit", "--generations", "1000000")  # the help of the command the option belongs to
    assert wrong.exit_code == 2 and "(see onparse fit --help)" in wrong.stderr and "0<=x<=20" in wrong.stderr
    for word, meant in (("version", "onparse --version"), ("evaluate", "onparse eval"), ("Help", "onparse --help")):
        refused = run(word)
        assert refused.exit_code == 2 and f"did you mean {meant}?" in refused.stderr and not refused.stdout
    assert run("--model", tiny_model_dir, "--threads", "1", "parse", "the cat sat").stdout.count("parse") == 0
    assert run("parse", "--model", tiny_model_dir, "parse").stdout.strip() == "(X parse)"  # the word itself, by name


def test_a_fits_stages_say_in_a_line_what_they_took_and_kept():
    from onparse.fit.console import fit_clock, stage_line

    entry = {"name": "member-2", "wall_minutes": 3.14, "selected": {"epoch": 2.0, "dev_ppl": 1347.21}, "dev_f1": 40.123}
    assert stage_line(entry) == "stage member-2 done in 3.1 min, kept epoch 2, dev ppl 1,347.2, dev F1 40.1"
    record = {"stages": [entry], "budget": {"timing_minutes": 1.0, "predicted_total_minutes": 20.0}}
    assert fit_clock(record) == "4 min so far, about 16 to go"
    record["budget"]["replanned"] = {"spent_minutes": 4.0, "predicted_total_minutes": 30.0}
    assert fit_clock(record) == "4 min so far, about 30 to go" and fit_clock({"stages": [entry]}) == "3 min so far"
    record["budget"]["replanned"]["predicted_total_minutes"] = 0.0  # a forecast passed is said to be
    assert fit_clock(record) == "4 min so far, past the 4 foreseen"


@pytest.mark.slow
def test_training_logs_a_clean_line_per_evaluation_quiet_keeps_still_and_json_log_gives_the_records(tmp_path):
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    common = [
        "train",
        "--train",
        examples / "corpus.txt",
        "--dev",
        examples / "dev.txt",
        "--epochs",
        "1",
        "--evals-per-epoch",
        "2",
        "--embedding-size",
        "8",
        "--hidden-size",
        "12",
        "--chunk-size",
        "4",
        "--vocab-size",
        "40",
        "--batch-size",
        "4",
        "--bptt",
        "10",
        "--dtype",
        "fp32",
    ]
    done = run(*common, "--out", tmp_path / "a")
    lines = [line for line in done.stderr.splitlines() if line.startswith("train epoch") and "dev ppl" in line]
    assert (
        done.exit_code == 0 and len(lines) == 2 and lines[-1].startswith("train epoch 1: dev ppl ")
    )  # a line each, for people
    assert "{" not in done.stderr and any(
        line.endswith("(kept)") for line in lines
    )  # the records stay in history.jsonl
    history = [json.loads(line) for line in (tmp_path / "a" / "history.jsonl").read_text().splitlines()]
    assert f"dev ppl {history[-1]['dev_ppl']:,.1f}" in lines[-1]
    quiet = run(*common, "--out", tmp_path / "b", "--quiet")
    assert quiet.exit_code == 0 and quiet.stderr == ""
    logged = run(*common, "--out", tmp_path / "c", "--json-log")  # for tools: every line a JSON object
    records = [json.loads(line) for line in logged.stderr.splitlines()]
    evaluations = [record for record in records if "dev_ppl" in record]
    assert logged.exit_code == 0 and len(evaluations) == 2 and evaluations[-1]["epoch"] == 1.0
    assert all(record["run"] == "train" and isinstance(record["kept"], bool) for record in evaluations)
    assert all(set(record) == {"level", "message"} for record in records if record not in evaluations)


@pytest.mark.slow
def test_a_library_user_routes_the_runs_messages_through_logging(tmp_path, caplog):
    import logging
    from pathlib import Path

    from onparse.config import TrainConfig
    from onparse.families import OnlstmConfig
    from onparse.training.runfolder import train

    examples = Path(__file__).resolve().parents[1] / "examples"
    config = TrainConfig(
        train=[str(examples / "corpus.txt")],
        dev=str(examples / "dev.txt"),
        epochs=1,
        batch_size=4,
        bptt=10,
        model=OnlstmConfig(vocab_size=40, embedding_size=8, hidden_size=12, chunk_size=4),
        dtype="fp32",
    )
    with caplog.at_level(logging.INFO, logger="onparse"):
        train(config, tmp_path / "run")
    assert any(record.name == "onparse" and "dev ppl" in record.getMessage() for record in caplog.records)


def test_the_models_table_shows_every_name_and_figure_whole_at_80_columns():
    from rich.console import Console

    from onparse.parsing.report import model_table
    from onparse.store import modeldir

    found = modeldir.available_models()
    for width, with_paths in ((80, False), (200, True)):
        console = Console(width=width, record=True, force_terminal=False)
        model_table(found, shipped.DEFAULT_MODEL.name, console)
        text = console.export_text()
        assert max(map(len, text.splitlines())) <= width and "…" not in text
        assert all(
            model["name"] in text and f"{model['dev_f1']['sentence_f1']:.1f}" in text
            for model in found
            if model["dev_f1"]
        )
        assert f"{shipped.DEFAULT_MODEL.name} *" in text and (found[0]["path"] in text) == with_paths


def test_a_shipped_models_name_is_never_shadowed_by_a_folder_here_and_a_path_is_never_a_name(
    tmp_path, monkeypatch, caplog
):
    from onparse.store import modeldir

    monkeypatch.chdir(tmp_path)
    (tmp_path / "onlstm-ctb").mkdir()
    with caplog.at_level("WARNING", logger="onparse"):
        assert modeldir.locate("onlstm-ctb") == shipped.MODELS / "onlstm-ctb"
    assert any("give ./onlstm-ctb for that" in record.message for record in caplog.records)
    assert modeldir.locate("./onlstm-ctb") == tmp_path.joinpath("onlstm-ctb").relative_to(tmp_path)
    missing = run("--model", "./onlstm-negra", "Die Katze.")
    assert missing.exit_code == 2 and "no such model directory" in missing.stderr and not missing.stdout


def test_a_mistyped_model_name_gets_the_closest_names_and_a_trailing_slash_is_named_as_the_cause(tmp_path, monkeypatch):
    import pytest

    from onparse.store import modeldir

    monkeypatch.chdir(tmp_path)
    with pytest.raises(modeldir.ModelDirError, match="did you mean pcfg-wsj\\?"):
        modeldir.locate("pcfg-wjs")
    with pytest.raises(modeldir.ModelDirError, match="the slash makes it a path.*named onlstm-ctb"):
        modeldir.locate("onlstm-ctb/")


def test_one_damaged_card_names_its_model_and_hides_none_of_the_others(tmp_path, tiny_model_dir):
    """`onparse models` reads each model's files once, where it reads them: a corrupt card.json (or a figure that is
    not a number) is named after the table of the rest, with exit code 1."""
    import pytest
    from rich.console import Console

    from onparse.parsing.report import model_table
    from onparse.store import modeldir

    for name in ("good", "corrupt", "odd"):
        modeldir.copy_model(tiny_model_dir, tmp_path / name)
    (tmp_path / "corrupt" / "card.json").write_text("{not json")
    (tmp_path / "odd" / "card.json").write_text('{"dev": {"22": {"sentence_f1": "high"}}}')
    found = modeldir.available_models(tmp_path)
    assert [model["name"] for model in found if "broken" in model] == ["corrupt"]
    assert next(model for model in found if model["name"] == "odd")["dev_f1"] is None  # not a number: no figure
    console = Console(width=200, record=True, force_terminal=False)
    with pytest.raises(ValueError, match="corrupt does not load: .*card.json: not readable as JSON"):
        model_table(found, "good", console)
    shown = console.export_text()
    assert "good" in shown and "odd" in shown and "corrupt" not in shown


def test_a_fits_opening_says_in_three_short_lines_what_it_makes_how_long_and_what_to_do_if_too_long(tmp_path):
    import logging

    from onparse.fit.console import opening

    out, small, large = tmp_path / "fit", {"sentences": 400, "tokens": 3_724}, {"sentences": 40_000, "tokens": 10**6}
    sizing = {"predicted_total_minutes": 42.0, "scale": 0.5}
    for corpus, sized, hours in ((small, None, None), (large, sizing, 1.0), (large, sizing, 0.5)):
        said = opening(out, 14, corpus, sized, hours)
        assert len(said) == 3 and all(len(line) <= 120 + len(str(out)) for _, line in said)
        assert said[0][1].startswith(f"fitting a parser to {out / 'model'}: 14 stages, from {corpus['sentences']:,}")
        assert ("a small text: more text makes a better parser" in said[0][1]) == (corpus is small)
        assert (
            said[2][1] == f"too long? Ctrl-C keeps the best parser so far; `onparse fit --out {out} --resume` goes on"
        )
    assert opening(out, 14, large, sizing, 1.0)[1] == (logging.INFO, "about 42 minutes here (sized to --hours 1)")
    level, few = opening(out, 14, large, sizing, 0.5)[1]  # 42 minutes are more than 85% of half an hour
    assert level == logging.WARNING and few.startswith("about 42 minutes here, more than --hours 0.5: it stops at")
    assert "(--hours 0.99 does it in one call)" in few
    assert opening(out, 14, small, None, None)[1][1].startswith("no --hours:")


def test_a_fits_stage_header_names_its_stage_in_words():
    from onparse.config import TrainConfig
    from onparse.fit.console import stage_words
    from onparse.fit.stages import Stage

    member = Stage("member-2", TrainConfig(train=["t"], dev="d", family="pcfg"))
    assert stage_words(member) == "one of the grammars, trained on the text (member-2)"
    assert stage_words(Stage("ensemble-1", members=["member-1", "member-2"])) == "the vote of 2 models (ensemble-1)"
    assert stage_words(Stage("model", members=["scratch"], teacher="ensemble-2")) == (
        "the fit's parser: the last vote (model)"
    )
