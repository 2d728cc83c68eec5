"""Every reader bounded, every size and settings file checked before use: one line and an exit code, never a
traceback."""

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SLACK, tiny_model

from onparse.cli import main
from onparse.store import modeldir
from onparse.text.lines import read_lines, shard_of
from onparse.text.treebank import TreebankError, read_gold, text_lines
from onparse.training.train import read_sentences

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TINY = [
    "--epochs",
    "1",
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


def run(*arguments):
    return CliRunner().invoke(main, [str(a) for a in arguments])


def one_line(result, code: int, *words: str) -> None:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onparse: error:") and all(w in lines[0] for w in words), (
        result.stderr
    )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_file_without_line_breaks_is_refused_as_it_is_read():
    with pytest.raises(TreebankError, match="a line of more than"):
        list(text_lines(Path("/dev/zero")))
    with pytest.raises(TreebankError, match="a line of more than"):
        list(read_gold("/dev/zero"))
    with pytest.raises(TreebankError, match="a line of more than"):
        read_sentences(["/dev/zero"])
    one_line(run("eval", "--gold", "/dev/zero", "--pred", EXAMPLES / "other_parser.txt"), 1, "a line of more than")


def test_ids_are_left_out_only_where_they_are_ids(tmp_path):
    corpora = {
        "tatoeba.txt": "{i}\teng\tThe cat number {i} sat .\n",
        "leipzig.txt": "{i}\tThe cat number {i} sat .\n",
        "negra.sent": "   {i}:\tThe cat number {i} sat .\n",
        "tabs.txt": "The\tcat\tnumber\t{i}\tsat\t.\n",
    }
    for name, line in corpora.items():
        (tmp_path / name).write_text("".join(line.format(i=i) for i in range(120)))
        assert read_sentences([str(tmp_path / name)])[0] == ["The", "cat", "number", "0", "sat"], name


def test_shards_of_a_file_of_concatenated_bom_files_concatenate_to_the_whole(tmp_path):
    path = tmp_path / "catbom.txt"
    path.write_bytes(("\ufeffThe cat sat on the mat.\n" * 4).encode())
    whole = list(read_lines(open(path, "rb"), 1000))
    assert whole[0] == b"The cat sat on the mat." and whole[1].startswith(
        "\ufeff".encode()
    )  # only the file's own mark goes
    for parts in (2, 3, 7, 113):
        assert [
            line for k in range(1, parts + 1) for line in read_lines(shard_of(open(path, "rb"), k, parts), 1000)
        ] == whole


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_shard_of_what_has_no_size_is_refused(tmp_path, tiny_model_dir):
    one_line(run("--model", tiny_model_dir, "-i", "/dev/zero", "--shard", "1/1"), 2, "--shard splits a file")
    one_line(run("--model", tiny_model_dir, "-i", EXAMPLES / "sentences.txt", "--shard", "²/³"), 2, "K/N")
    one_line(run("--model", tiny_model_dir, "--layer", "²", "the cat"), 2, "neither a layer number")
    one_line(run("--model", tiny_model_dir, "--threads", "1000000", "the cat"), 2, "--threads")


def run_folder(tmp_path) -> Path:
    assert (
        run(
            "train",
            "--train",
            EXAMPLES / "corpus.txt",
            "--dev",
            EXAMPLES / "dev.txt",
            "--out",
            tmp_path / "run",
            *TINY,
            "--max-minutes",
            "0.001",
        ).exit_code
        == 0
    )
    return tmp_path / "run"


@pytest.mark.parametrize(
    "change, words",
    [
        ({"epochs": "7"}, "epochs must be a whole number"),
        ({"lr": "fast"}, "lr must be"),
        ({"bptt": 0}, "bptt must be"),
        ({"train": "data/train.txt"}, "train must be a list"),
        ({"encoding": "nonsense-enc"}, "not an encoding"),
        ({"beta1": 1.0}, "beta1 must be"),
    ],
)
def test_a_hand_edited_run_config_is_refused_in_one_line(tmp_path, change, words):
    run_dir = run_folder(tmp_path)
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, **change}))
    one_line(run("train", "--out", run_dir, "--resume"), 2, words)


@pytest.mark.parametrize(
    "record, words",
    [
        ({}, "not a fit's record"),
        ({"plan": {}, "stages": "abc"}, "not a fit's record"),
        ("members", "members must be a whole number"),
        ("dev", "plan does not hold"),
        ("unfinished", "unfinished stages must map each name to minutes"),
        ("in_flight", "stage in flight must be a name, a start time and minutes"),
    ],
)
def test_a_hand_edited_fit_record_is_refused_in_one_line(tmp_path, record, words):
    from dataclasses import asdict

    from test_fit import tiny_plan

    plan = asdict(tiny_plan())
    if record == "members":
        record = {"plan": {**plan, "members": "two"}, "stages": []}
    elif record == "dev":
        record = {"plan": {k: v for k, v in plan.items() if k != "dev"}, "stages": []}
    elif record == "unfinished":
        record = {"plan": plan, "stages": [], "unfinished": {"member-1": "ten"}}
    elif record == "in_flight":
        record = {"plan": plan, "stages": [], "in_flight": {"stage": "member-1", "since": "noon", "earlier": 0}}
    (tmp_path / "fit").mkdir()
    (tmp_path / "fit" / "fit.json").write_text(json.dumps(record))
    one_line(run("fit", "--out", tmp_path / "fit", "--resume"), 2, words)


def test_an_unknown_encoding_is_a_usage_error():
    one_line(
        run("train", "--train", EXAMPLES / "corpus.txt", "--out", "x", "--encoding", "nonsense-enc"),
        2,
        "not an encoding",
    )


def test_impossible_model_sizes_and_repeated_words_are_refused_before_use(tmp_path):
    model, vocab = tiny_model()
    modeldir.save(tmp_path / "m", model, vocab, default_layer=2)
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    for n_layers in (10**9, 10**7):
        (tmp_path / "m" / "config.json").write_text(
            json.dumps({**config, "model": {**config["model"], "n_layers": n_layers}})
        )
        with pytest.raises(modeldir.ModelDirError, match="n_layers must be from 1 to 64"):
            modeldir.load(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    words = (tmp_path / "m" / "vocab.txt").read_text().splitlines()
    (tmp_path / "m" / "vocab.txt").write_text("\n".join(words[:-1] + [words[2]]) + "\n")
    with pytest.raises(modeldir.ModelDirError, match="listed twice"):
        modeldir.load(tmp_path / "m")


def test_an_ensemble_of_more_members_than_any_helps_is_refused(tmp_path, tiny_model_dir):
    (tmp_path / "e").mkdir()
    member = os.path.relpath(tiny_model_dir, tmp_path / "e")
    (tmp_path / "e" / "config.json").write_text(json.dumps({"ensemble": {"members": [member] * 400}}))
    one_line(run("--model", tmp_path / "e", "the cat"), 2, "more than the 64")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.slow
def test_standard_output_on_a_full_device_is_one_line(tmp_path):
    import subprocess
    import sys

    from conftest import FIXTURES

    gold = str(FIXTURES / "ldc_style.mrg")
    for arguments in (["--help"], ["eval", "--gold", gold, "--pred", gold, "--json"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "onparse", *arguments],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                timeout=SLACK * 24,
            )
        assert done.returncode == 1 and done.stderr.strip().splitlines() == [done.stderr.strip()], done.stderr
        assert "cannot write" in done.stderr and "Traceback" not in done.stderr


def test_a_command_with_its_standard_output_closed_says_so():
    import subprocess
    import sys

    from conftest import FIXTURES

    gold = str(FIXTURES / "ldc_style.mrg")
    done = subprocess.run(
        [sys.executable, "-m", "onparse", "eval", "--gold", gold, "--pred", gold],
        preexec_fn=lambda: os.close(1),
        stderr=subprocess.PIPE,
        text=True,
        timeout=SLACK * 24,
    )
    assert done.returncode == 2 and "standard output is closed" in done.stderr


def test_an_empty_file_is_said_to_be_one_once_by_its_first_part_as_by_the_whole(tmp_path, tiny_model_dir):
    from click.testing import CliRunner

    from onparse.cli import main

    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for shard, code in (([], 1), (["--shard", "1/1"], 1), (["--shard", "1/3"], 1), (["--shard", "2/3"], 0)):
        result = CliRunner().invoke(main, ["--model", str(tiny_model_dir), "--input", str(empty), *shard])
        assert result.exit_code == code and ("no input" in result.stderr) == (code == 1) and result.stdout == "", shard
