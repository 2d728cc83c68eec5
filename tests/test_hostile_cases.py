"""Issue 17's hostile probe, case by case: each ends in one line on stderr and its exit code, loses nothing, stays
flat."""

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from conftest import SLACK
from test_hostile import CORPUS, TINY, copy_model, no_traceback

from onparse.cli import main
from onparse.store import modeldir

ONPARSE = [sys.executable, "-m", "onparse"]


def one_line_error(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onparse: "), result.stderr
    assert all(fragment in lines[0] for fragment in fragments), lines[0]
    no_traceback(result)


def run(*arguments, **keywords):
    return CliRunner().invoke(main, [str(a) for a in arguments], **keywords)


# --- data loss and silent wrong results -------------------------------------------------------------------------


def test_no_input_leaves_the_output_file_as_it_was(tiny_model_dir, tmp_path):
    keep = tmp_path / "keep.txt"
    keep.write_text("KEEP\n")
    (tmp_path / "empty.txt").write_text("")
    for arguments, stdin in ((["-o", keep], ""), (["-o", keep, "--input", tmp_path / "empty.txt"], None)):
        result = run("--model", tiny_model_dir, *arguments, input=stdin)
        one_line_error(result, 1, "no input")
        assert keep.read_text() == "KEEP\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.txt", "keep.txt"]


def test_output_through_a_link_keeps_the_link_and_the_mode(tiny_model_dir, tmp_path):
    target = tmp_path / "trees.txt"
    target.write_text("old\n")
    target.chmod(0o644)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    assert run("--model", tiny_model_dir, "-o", link, "the cat").exit_code == 0
    assert link.is_symlink() and target.read_text() == "(X the cat)\n"
    assert target.stat().st_mode & 0o777 == 0o644
    fresh = tmp_path / "fresh.txt"
    assert run("--model", tiny_model_dir, "-o", fresh, "the cat").exit_code == 0
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.slow
def test_sigterm_while_writing_leaves_neither_a_part_file_nor_a_changed_target(tiny_model_dir, tmp_path):
    target = tmp_path / "trees.txt"
    target.write_text("old\n")
    process = subprocess.Popen(
        [*ONPARSE, "--model", str(tiny_model_dir), "-o", str(target)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    process.stdin.write("the cat sat\n")
    process.stdin.flush()
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".trees.txt.*.part")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(tmp_path.glob(".trees.txt.*.part"))
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=SLACK * 10)
    assert process.returncode == 143 and "Traceback" not in stderr
    assert [p.name for p in tmp_path.iterdir()] == ["trees.txt"] and target.read_text() == "old\n"


@pytest.mark.parametrize("damage", ["all", "one bias", "int8 scale"])
def test_weights_holding_nan_or_infinity_are_refused(tiny_model_dir, tmp_path, damage):
    broken = copy_model(tiny_model_dir, tmp_path / "nan")
    bundle = modeldir.load(broken)  # saved whole (``save`` refuses such weights), then damaged on disk
    modeldir.save(broken, bundle.model, bundle.vocab, 2, precision="int8" if damage == "int8 scale" else "bf16")
    stored = torch.load(broken / "weights.pt", weights_only=True)
    if damage == "all":
        stored = {k: torch.full_like(v, float("nan")) if v.is_floating_point() else v for k, v in stored.items()}
    elif damage == "one bias":
        stored["layers.1.input_proj.bias"][3] = float("inf")
    else:
        stored["embedding.weight.scale"][0] = float("nan")
    torch.save(stored, broken / "weights.pt")
    for command in (
        ["--model", broken, "the cat"],
        ["--model", broken, "-f", "json", "the cat"],
        ["eval", "--model", broken, "--gold", Path(__file__).parent / "fixtures" / "one_per_line.txt"],
    ):
        one_line_error(run(*command), 2, "NaN or infinite")


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_weights_cast_to_another_type_are_refused_as_shapes_and_nan_are(tiny_model_dir, tmp_path, precision):
    """Every tensor cast to int32 keeps its shape but reads as other numbers: refused, never another tree."""
    broken = copy_model(tiny_model_dir, tmp_path / "cast")
    bundle = modeldir.load(broken)
    modeldir.save(broken, bundle.model, bundle.vocab, 2, precision=precision)
    assert modeldir.load(broken)  # as saved, it loads
    stored = torch.load(broken / "weights.pt", weights_only=True)
    torch.save(
        {
            name: tensor.to(torch.int32) if tensor.is_floating_point() else tensor.float()
            for name, tensor in stored.items()
        },
        broken / "weights.pt",
    )
    one_line_error(run("--model", broken, "the cat"), 2, "weights.pt stores")


def test_a_second_train_into_the_same_folder_is_refused_while_the_first_runs(tmp_path):
    from onparse.training.runfolder import locked_run

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 10)
    with locked_run(tmp_path / "run"):
        result = run("train", "--train", corpus, "--out", tmp_path / "run", "--epochs", "1", *TINY)
        one_line_error(result, 2, "in use by another onparse run", f"pid {os.getpid()}")
    assert run("train", "--train", corpus, "--out", tmp_path / "run", "--epochs", "1", *TINY).exit_code == 0


@pytest.mark.slow
def test_resume_after_a_crash_between_history_and_checkpoint_repeats_no_record(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 40)
    out = tmp_path / "run"
    assert (
        run("train", "--train", corpus, "--out", out, "--epochs", "2", "--evals-per-epoch", "2", *TINY).exit_code == 0
    )
    checkpoint = torch.load(out / "checkpoint.pt", weights_only=True)
    checkpoint["run"]["history"] = checkpoint["run"]["history"][:2]  # as if killed after writing record 3's line
    checkpoint["run"].update(epoch=1, batch=0)
    torch.save(checkpoint, out / "checkpoint.pt")
    assert (out / "history.jsonl").read_text().count("\n") == 4
    assert run("train", "--out", out, "--resume").exit_code == 0
    epochs = [json.loads(line)["epoch"] for line in (out / "history.jsonl").read_text().splitlines()]
    assert epochs == sorted(set(epochs)) and len(epochs) == 4


@pytest.mark.slow
def test_many_evaluations_an_epoch_get_folders_of_their_own(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 200)
    out = tmp_path / "run"
    result = run(
        "train",
        "--train",
        corpus,
        "--out",
        out,
        "--epochs",
        "1",
        "--evals-per-epoch",
        "150",
        "--keep-evaluations",
        *TINY,
    )
    assert result.exit_code == 0, result.output
    history = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    folders = [record["model_dir"] for record in history]
    assert len(history) > 100 and len(set(folders)) == len(folders) and "epoch-00.00" not in folders
    assert all((out / folder / "weights.pt").is_file() for folder in folders)


def test_a_dev_set_too_small_for_perplexity_is_refused_before_training(tmp_path):
    corpus, dev = tmp_path / "corpus.txt", tmp_path / "dev.txt"
    corpus.write_text(CORPUS * 10)
    dev.write_text("the cat sat\n")
    result = run("train", "--train", corpus, "--dev", dev, "--out", tmp_path / "run", "--epochs", "1", *TINY)
    one_line_error(result, 1, "dev corpus", "at least 20")
    assert not (tmp_path / "run" / "epoch-00.00").exists()


def test_a_run_stopped_before_its_first_evaluation_claims_no_model(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 2000)
    result = run(
        "train", "--train", corpus, "--out", tmp_path / "run", "--epochs", "1", "--max-minutes", "0.001", *TINY
    )
    assert result.exit_code == 0 and "no model yet" in result.stdout and "best model" not in result.stdout
    assert not (tmp_path / "run" / "model").exists()


# --- tracebacks -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["bracket", "mrg", "json", "pretty"])
@pytest.mark.slow
def test_sentences_deeper_than_the_recursion_limit(tiny_model_dir, tiny_ensemble_dir, fmt):
    sentence = " ".join(["the cat sat on the mat"] * 170)  # 1,020 words: past Python's 1,000 frames
    for model in (tiny_model_dir, tiny_ensemble_dir) if fmt == "bracket" else (tiny_model_dir,):  # a vote is cubic
        result = run("--model", model, "--max-words", "2000", "-f", fmt, sentence)
        assert result.exit_code == 0, result.output
        no_traceback(result)
        assert result.stdout.count("mat") >= 170


def test_a_flat_gold_tree_of_a_thousand_words(tmp_path):
    gold = tmp_path / "flat.txt"
    gold.write_text("(S (NP " + " ".join(["(NN w)"] * 1000) + ") (VP (VB v) (NN x)))\n")
    result = run("eval", "--gold", gold, "--pred", gold, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sentence_f1"] == 100.0


@pytest.mark.slow
def test_gold_from_devices_pipes_and_links(tmp_path):
    from conftest import FIXTURES

    result = run("eval", "--gold", "/dev/null")
    one_line_error(result, 1, "no gold sentences")
    (tmp_path / "gone.mrg").symlink_to(tmp_path / "missing.mrg")
    one_line_error(run("eval", "--gold", tmp_path / "gone.mrg"), 2, "symbolic link to nothing")  # names nothing: 2
    gold = FIXTURES / "one_per_line.txt"
    done = subprocess.run(
        ["bash", "-c", f"{' '.join(ONPARSE)} eval --json --gold <(cat {gold}) --pred <(cat {gold})"],
        capture_output=True,
        text=True,
        timeout=SLACK * 24,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["sentence_f1"] == 100.0, done.stderr
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 10)
    done = subprocess.run(
        [
            "bash",
            "-c",
            f"{' '.join(ONPARSE)} train --train <(cat {corpus}) --out {tmp_path / 'run'} --epochs 1 {' '.join(TINY)}",
        ],
        capture_output=True,
        text=True,
        timeout=SLACK * 60,
    )
    assert done.returncode == 0 and (tmp_path / "run" / "model").is_dir(), done.stderr


def test_a_config_nested_a_hundred_thousand_deep(tiny_model_dir, tmp_path):
    broken = copy_model(tiny_model_dir, tmp_path / "deep")
    (broken / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    one_line_error(run("--model", broken, "the cat"), 2, "config.json", "not readable as JSON")


def _peak_rss_mb(command: list[str], seconds: float, **keywords) -> tuple[float, subprocess.Popen]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **keywords)
    peak, deadline = 0.0, time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            status = Path(f"/proc/{process.pid}/status").read_text()
            peak = max(peak, int(status.split("VmHWM:")[1].split()[0]) / 1024)
        except (OSError, IndexError):
            pass
        time.sleep(0.2)
    return peak, process


@pytest.mark.slow
def test_endless_lines_are_read_in_bounded_memory_and_endless_nul_bytes_refused_at_once(tiny_model_dir):
    endless = "import sys\nwhile True: sys.stdout.buffer.write(b'x' * 65536)"  # one line that never ends
    for command in (
        [*ONPARSE, "--model", str(tiny_model_dir), "--input", "/dev/stdin"],
        [*ONPARSE, "--model", str(tiny_model_dir)],
    ):
        source = subprocess.Popen([sys.executable, "-c", endless], stdout=subprocess.PIPE)
        peak, process = _peak_rss_mb(command, 8, stdin=source.stdout)
        alive = process.poll() is None
        for started in (process, source):
            started.kill()
            started.wait()
        assert alive and peak < 600, peak  # MB: still reading, without holding what it read
    with open("/dev/zero", "rb") as zeros:  # no text at all: refused in one line, before a line is read
        refused = subprocess.run(
            [*ONPARSE, "--model", str(tiny_model_dir)], stdin=zeros, capture_output=True, text=True
        )
    assert refused.returncode == 2 and "not a text file" in refused.stderr


def test_a_huge_line_is_refused_as_it_is_read(tiny_model_dir, tmp_path):
    huge = tmp_path / "huge.txt"
    huge.write_text("the " * 300_000 + "\nthe cat\n")
    started = time.monotonic()
    result = run("--model", tiny_model_dir, "--input", huge)
    assert result.exit_code == 1 and result.stdout == "\n(X the cat)\n" and "huge.txt:1: longer than" in result.stderr
    assert time.monotonic() - started < 20
    one_line_error(run("--model", tiny_model_dir, "--max-words", "100000000", "--input", huge), 2, "--max-words")


@pytest.mark.slow
def test_batches_stay_bounded_by_words_whatever_the_batch_size(tiny_model_dir, monkeypatch):
    from onparse.parsing.parse import BATCH_WORDS, Member, Parser

    sizes = []
    original = Member.batch_outputs

    def counting(self, batch):
        sizes.append(sum(len(sentence.tokens) for sentence in batch))
        return original(self, batch)

    monkeypatch.setattr(Member, "batch_outputs", counting)
    parser = Parser.load(tiny_model_dir, batch_size=100_000_000)
    parsed = list(parser.parse_stream(iter([["the", "cat", "sat", "on", "the", "mat"] * 50] * 400)))
    assert len(parsed) == 400 and max(sizes) <= BATCH_WORDS and len(sizes) > 1


def test_pretty_prints_markup_tokens_as_typed(tiny_model_dir):
    result = run("--model", tiny_model_dir, "--tokenized", "-f", "pretty", "the [/x] [bold] cat")
    assert result.exit_code == 0, result.output
    assert "[/x]" in result.stdout and "[bold]" in result.stdout


@pytest.mark.slow
def test_closed_streams_and_a_device_that_holds_no_data(tiny_model_dir, tmp_path):
    for redirect, fragment in (
        ("<&-", "standard input is closed"),
        ("-i - <&-", "standard input is closed"),
        ('"the cat" >&-', "standard output is closed"),
    ):
        done = subprocess.run(
            ["bash", "-c", f"{' '.join(ONPARSE)} --model {tiny_model_dir} {redirect}"],
            capture_output=True,
            text=True,
            timeout=SLACK * 24,
        )
        assert done.returncode == 2 and fragment in done.stderr and "Traceback" not in done.stderr, (
            redirect,
            done.stderr,
        )
    one_line_error(run("--model", tiny_model_dir, "--device", "meta", "the cat"), 2, "device 'meta' is not usable")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    result = run("train", "--train", corpus, "--out", tmp_path / "run", "--device", "meta", *TINY)
    one_line_error(result, 2, "device 'meta' is not usable")


@pytest.mark.parametrize(
    "case", ["ensemble card", "layer abc", "layer null", "layer list", "float sizes", "layer 99", "unknown key"]
)
def test_damaged_model_folders_name_the_file_and_the_fault(tiny_model_dir, tiny_ensemble_dir, tmp_path, case):
    if case == "ensemble card":
        folder = tmp_path / "ensemble"
        folder.mkdir()
        members = [str(tiny_ensemble_dir / f"seed-{k}") for k in range(2)]
        (folder / "config.json").write_text(json.dumps({"ensemble": {"members": members}}))
        (folder / "card.json").write_text("{not json")
        one_line_error(run("--model", folder, "the cat"), 2, "card.json", "not readable as JSON")
        return
    folder = copy_model(tiny_model_dir, tmp_path / "model")
    config = json.loads((folder / "config.json").read_text())
    value = {"layer abc": "abc", "layer null": None, "layer list": [1], "layer 99": 99}.get(case)
    if case.startswith("layer"):
        config["default_layer"] = value
    elif case == "float sizes":
        config["model"]["hidden_size"] = 12.0
    else:
        config["colour"] = "blue"
    (folder / "config.json").write_text(json.dumps(config))
    result = run("--model", folder, "the cat")
    one_line_error(result, 2, f"{folder / 'config.json'}")
    assert "--layer" not in result.stderr


@pytest.mark.parametrize(
    "case", ["truncated checkpoint", "no config", "config not json", "weights as checkpoint", "unknown key"]
)
def test_resume_of_a_damaged_run_folder(tmp_path, case):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 10)
    out = tmp_path / "run"
    assert run("train", "--train", corpus, "--out", out, "--epochs", "1", *TINY).exit_code == 0
    checkpoint = (out / "checkpoint.pt").read_bytes()
    if case == "truncated checkpoint":
        (out / "checkpoint.pt").write_bytes(checkpoint[: len(checkpoint) // 2])
    elif case == "no config":
        (out / "config.json").unlink()
    elif case == "config not json":
        (out / "config.json").write_text("{not json")
    elif case == "weights as checkpoint":
        (out / "checkpoint.pt").write_bytes((out / "model" / "weights.pt").read_bytes())
    else:
        config = json.loads((out / "config.json").read_text())
        (out / "config.json").write_text(json.dumps({**config, "colour": "blue"}))
    one_line_error(run("train", "--out", out, "--resume"), 2, str(out))


# --- smaller ----------------------------------------------------------------------------------------------------


def test_eval_into_a_closed_pipe_exits_quietly(monkeypatch):
    from conftest import FIXTURES
    from rich.console import Console

    def closed(self, *args, **kwargs):
        raise BrokenPipeError

    monkeypatch.setattr(Console, "print", closed)
    result = run("eval", "--gold", FIXTURES / "one_per_line.txt", "--pred", FIXTURES / "one_per_line.txt")
    assert result.exit_code == 0 and result.stderr == ""


def test_the_length_filter_applies_to_predictions_too():
    from conftest import FIXTURES

    gold = FIXTURES / "one_per_line.txt"
    result = run("eval", "--gold", gold, "--pred", gold, "--max-length", "2", "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["sentences"] == 2 and figures["sentence_f1"] == 100.0


def test_empty_lines_never_reach_the_model(tiny_model_dir, monkeypatch):
    from onparse.parsing.parse import Member

    calls = []
    monkeypatch.setattr(Member, "batch_outputs", lambda self, batch: calls.append(batch) or [])
    result = run("--model", tiny_model_dir, input="\n" * 10_000)
    assert result.exit_code == 0 and result.stdout == "\n" * 10_000 and calls == []


def test_a_byte_order_mark_is_not_part_of_the_first_token(tiny_model_dir, tmp_path):
    source = tmp_path / "bom.txt"
    source.write_bytes("\ufeffthe cat\n".encode())
    for arguments in (["--input", source], []):
        result = run("--model", tiny_model_dir, "-f", "json", *arguments, input=source.read_bytes())
        assert json.loads(result.stdout)["model_input"] == ["the", "cat"]


@pytest.mark.slow
def test_terminal_controls_and_invisible_marks_are_kept_and_escaped_on_a_terminal_only(tiny_model_dir, tmp_path):
    """A control character (an escape sequence) or an invisible format mark (a right-to-left override) is kept as
    given: shown escaped on a terminal, as typed in a file, with one warning that says so."""
    token = "evil\x1b[2J\u202e"
    primary, secondary = pty.openpty()
    done = subprocess.run(
        [*ONPARSE, "--model", str(tiny_model_dir), "--tokenized", f"the {token}"],
        stdout=secondary,
        stderr=subprocess.PIPE,
        timeout=SLACK * 24,
    )
    os.close(secondary)
    shown = os.read(primary, 4096).decode()
    os.close(primary)
    assert done.returncode == 0 and "\x1b" not in shown and "\\x1b[2J\\u202e" in shown
    assert "holds a control character: kept as given" in done.stderr.decode()
    piped = run("--model", tiny_model_dir, "--tokenized", f"the {token}")
    assert token in piped.stdout  # a file gets the user's own token


def test_the_library_names_its_parser_and_refuses_a_bare_token_list(tiny_model_dir):
    from onparse import Parser

    parser = Parser.load(tiny_model_dir)
    with pytest.raises(TypeError, match="list of token lists"):
        parser.parse_tokens(["Stocks", "fell"])
    with pytest.raises(TypeError, match="parse_sents takes many"):
        parser.parse(["Stocks fell."])
    assert parser.parse_tokens([["Stocks", "fell"]])[0].tokens == ["Stocks", "fell"]


def test_threads_option_sets_torchs_threads(tiny_model_dir):
    before = torch.get_num_threads()
    try:
        assert run("--model", tiny_model_dir, "--threads", "1", "the cat").exit_code == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_a_busy_machine_gets_the_cores_left_over(monkeypatch):
    from onparse import hardware

    monkeypatch.setattr(hardware.os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    monkeypatch.setattr(hardware, "running_elsewhere", lambda: 2)
    assert hardware.default_threads() == 1
    monkeypatch.setattr(hardware, "running_elsewhere", lambda: 0)
    assert hardware.default_threads() is None


def test_runnable_threads_are_read_from_the_system():
    from onparse.hardware import running_elsewhere

    assert 0 <= running_elsewhere() < 1000


@pytest.mark.slow
def test_a_stdout_that_cannot_encode_a_word_shows_it_escaped():
    done = subprocess.run(
        [*ONPARSE, "Grüße aus Köln"],
        capture_output=True,
        timeout=SLACK * 24,
        env={**os.environ, "PYTHONIOENCODING": "ascii", "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0 and done.stdout.decode("ascii").startswith("(X Gr\\xfc\\xdfe"), done.stderr[-500:]
