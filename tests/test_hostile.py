"""Input chosen to break the tool: every case ends in a one-line message and a non-zero exit, and loses nothing."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SLACK

from onparse.cli import main

CORPUS = "The cat sat on the mat.\nA dog sat on the cat.\nThe mat sat on a dog!\n"
TINY = ["--embedding-size", "8", "--hidden-size", "12", "--chunk-size", "4", "--batch-size", "4", "--bptt", "8"]


def no_traceback(result) -> None:
    assert "Traceback" not in (result.stdout or "") + (result.stderr or "")


def test_output_that_is_the_input_is_refused_before_anything_is_written(tiny_model_dir, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("the cat sat\n")
    (tmp_path / "link.txt").symlink_to(source)
    for target in (source, tmp_path / "link.txt", tmp_path / "." / "in.txt"):
        result = CliRunner().invoke(main, ["--model", str(tiny_model_dir), "-i", str(source), "-o", str(target)])
        assert result.exit_code == 2 and "is the input file" in result.stderr
        no_traceback(result)
    assert source.read_text() == "the cat sat\n"


@pytest.mark.slow
def test_output_that_is_the_file_stdin_reads_is_refused_and_the_sentences_survive(tiny_model_dir, tmp_path):
    import subprocess
    import sys

    source = tmp_path / "s.txt"
    source.write_text("the cat sat\n")
    with source.open() as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "onparse", "--model", str(tiny_model_dir), "-o", str(source)],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=SLACK * 24,
        )
    assert done.returncode == 2 and "is the file standard input reads" in done.stderr and "Traceback" not in done.stderr
    assert source.read_text() == "the cat sat\n"


def test_output_into_a_model_directory_or_a_shipped_model_is_refused(tiny_model_dir, tmp_path):
    from onparse.store.shipped import MODELS

    before = (tiny_model_dir / "vocab.txt").read_bytes()
    for target in (tiny_model_dir / "vocab.txt", tiny_model_dir / "trees.txt", MODELS / "pcfg-wsj" / "vocab.txt"):
        result = CliRunner().invoke(main, ["--model", str(tiny_model_dir), "-o", str(target), "the cat sat"])
        assert result.exit_code == 2 and ("model directory" in result.stderr or "shipped model" in result.stderr), (
            target
        )
        no_traceback(result)
    assert (tiny_model_dir / "vocab.txt").read_bytes() == before and not (tiny_model_dir / "trees.txt").exists()
    written = CliRunner().invoke(
        main, ["--model", str(tiny_model_dir), "-o", str(tmp_path / "trees.txt"), "the cat sat"]
    )
    assert written.exit_code == 0 and (tmp_path / "trees.txt").read_text().startswith("(X")


def test_an_unwritable_output_is_a_message_and_the_old_file_survives(tiny_model_dir, tmp_path):
    result = CliRunner().invoke(main, ["--model", str(tiny_model_dir), "-o", "/dev/full", "the cat"])
    assert result.exit_code == 1 and "cannot write /dev/full" in result.stderr
    no_traceback(result)
    missing = CliRunner().invoke(
        main, ["--model", str(tiny_model_dir), "-o", str(tmp_path / "no" / "out.txt"), "the cat"]
    )
    assert missing.exit_code == 2 and "no such folder" in missing.stderr


def test_an_interrupted_parse_leaves_the_previous_output_in_place(tiny_model_dir, tmp_path, monkeypatch):
    target = tmp_path / "trees.txt"
    target.write_text("the good old trees\n")
    import onparse.parsing.formats

    def explode(parse, punct=True):
        raise KeyboardInterrupt

    monkeypatch.setitem(onparse.parsing.formats.FORMATS, "bracket", explode)
    CliRunner().invoke(main, ["--model", str(tiny_model_dir), "-o", str(target), "the cat"])
    assert target.read_text() == "the good old trees\n"
    assert [p.name for p in tmp_path.iterdir()] == ["trees.txt"]  # no temporary file left behind


def test_training_into_an_existing_run_needs_resume_or_overwrite(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 10)
    args = ["train", "--train", str(corpus), "--out", str(tmp_path / "run"), "--epochs", "1", *TINY]
    assert CliRunner().invoke(main, args).exit_code == 0
    history = (tmp_path / "run" / "history.jsonl").read_text()
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 2 and "--resume" in again.stderr and "--overwrite" in again.stderr
    assert (tmp_path / "run" / "history.jsonl").read_text() == history
    fresh = CliRunner().invoke(main, [*args, "--overwrite"])
    assert fresh.exit_code == 0 and (tmp_path / "run" / "history.jsonl").read_text().count("\n") == 1


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.slow
def test_an_interrupted_training_run_leaves_a_checkpoint_to_resume(tmp_path, number):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 400)
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "onparse",
        "train",
        "--train",
        str(corpus),
        "--out",
        str(out),
        "--epochs",
        "50",
        *TINY,
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / "epoch-00.00").is_dir() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    process.send_signal(number)
    _, stderr = process.communicate(timeout=SLACK * 12)
    assert process.returncode == 130, stderr
    assert "checkpoint saved" in stderr and "--resume" in stderr and "Traceback" not in stderr
    assert f"{signal.Signals(number).name} received: stopping after this update" in stderr
    assert (out / "checkpoint.pt").is_file()
    resumed = CliRunner().invoke(
        main, ["train", "--out", str(out), "--resume", "--epochs", "1", "--max-minutes", "0.05"]
    )
    assert resumed.exit_code == 0, resumed.output
    assert "resumed from" in resumed.stderr


def test_numeric_options_are_range_checked(tiny_model_dir, tmp_path):
    for option, value in [("--batch-size", "0"), ("--batch-size", "-5"), ("--max-words", "0"), ("--layer", "0")]:
        result = CliRunner().invoke(main, ["--model", str(tiny_model_dir), option, value, "the cat"])
        assert result.exit_code == 2 and option in result.stderr, (option, value)
        no_traceback(result)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    for option in ("--batch-size", "--bptt", "--chunk-size", "--layers", "--epochs", "--hidden-size"):
        result = CliRunner().invoke(main, ["train", "--train", str(corpus), "--out", str(tmp_path / "r"), option, "0"])
        assert result.exit_code == 2 and option in result.stderr, option
    small = CliRunner().invoke(
        main, ["train", "--train", str(corpus), "--out", str(tmp_path / "r"), *TINY[:6], "--batch-size", "500"]
    )
    assert small.exit_code == 1 and "too small" in small.stderr
    no_traceback(small)


def copy_model(source, target):
    target.mkdir()
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    return target


def test_damaged_model_directories_are_refused_with_a_message(tiny_model_dir, tmp_path):
    weights = (tiny_model_dir / "weights.pt").read_bytes()
    cases = {
        "truncated": lambda d: (d / "weights.pt").write_bytes(weights[: len(weights) // 2]),
        "random": lambda d: (d / "weights.pt").write_bytes(os.urandom(len(weights))),
        "json": lambda d: (d / "config.json").write_text("{not json"),
        "absurd": lambda d: (d / "config.json").write_text(
            (d / "config.json").read_text().replace('"hidden_size": 12', '"hidden_size": 12000')
        ),
        "chunk": lambda d: (d / "config.json").write_text(
            (d / "config.json").read_text().replace('"chunk_size": 4', '"chunk_size": 5')
        ),
        "vocab": lambda d: (d / "vocab.txt").write_text("<eos>\n<unk>\n"),
    }
    for name, damage in cases.items():
        broken = copy_model(tiny_model_dir, tmp_path / name)
        damage(broken)
        started = time.monotonic()
        result = CliRunner().invoke(main, ["--model", str(broken), "the cat"])
        assert result.exit_code == 2 and str(broken) in result.stderr, (name, result.output)
        assert len(result.stderr.strip().splitlines()) == 1 and "weights_only=False" not in result.stderr
        assert time.monotonic() - started < 5, name  # refused before a model of that size is built
        no_traceback(result)


class Payload:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


def test_weights_carrying_a_pickled_payload_are_refused_and_never_run(tiny_model_dir, tmp_path, monkeypatch):
    import torch

    broken = copy_model(tiny_model_dir, tmp_path / "payload")
    torch.save({"embedding.weight": Payload()}, broken / "weights.pt")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--model", str(broken), "the cat"])
    assert result.exit_code == 2 and "not a plain file of tensors" in result.stderr
    assert not (tmp_path / "PWNED").exists()


def test_a_one_layer_model_parses_with_its_own_layer(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 10)
    trained = CliRunner().invoke(
        main, ["train", "--train", str(corpus), "--out", str(tmp_path / "run"), "--epochs", "1", "--layers", "1", *TINY]
    )
    assert trained.exit_code == 0, trained.output
    parsed = CliRunner().invoke(main, ["--model", str(tmp_path / "run" / "model"), "the cat sat"])
    assert parsed.exit_code == 0, parsed.output


def test_junk_lines_keep_their_places(tiny_model_dir):
    lines = [
        b"the cat\x00sat",
        b"\xff\xfe\xfd",
        "emoji 🐈 and 中文 text".encode(),
        b"crlf line\r",
        b"x" * 100_000,
        b"   ",
        b"(((",
        b"the mat",
    ]
    result = CliRunner().invoke(main, ["--model", str(tiny_model_dir)], input=b"\n".join(lines) + b"\n")
    out = result.stdout.split("\n")[:-1]
    assert len(out) == len(lines) and result.exit_code == 1  # line 2 is not UTF-8
    assert out[1] == "" and out[5] == "" and "line 2: not UTF-8 text" in result.stderr
    assert out[3] == "(X crlf line)" and out[6] == "(X -LRB- -LRB- -LRB-)" and out[7] == "(X the mat)"
    assert out[4] == "" and "line 5: longer than 40,000 bytes, more than a sentence of --max-words 400" in result.stderr
    no_traceback(result)


@pytest.mark.slow
def test_a_40000_line_stream_stays_aligned_in_flat_memory(tiny_model_dir, tmp_path):
    """A stream twenty times longer than another parses in the other's memory, give or take 100 MB."""

    def peak_mb(count: int) -> tuple[float, list[str]]:
        source = tmp_path / f"{count}.txt"
        source.write_text("".join("the cat sat\n" if k % 7 else "\n" for k in range(count)))
        code = (
            "import resource, sys; from onparse.cli import main\n"
            "try: main()\nexcept SystemExit: pass\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"
        )
        with source.open("rb") as stdin:
            done = subprocess.run(
                [sys.executable, "-c", code, "--model", str(tiny_model_dir)],
                stdin=stdin,
                capture_output=True,
                text=True,
                check=True,
            )
        return int(done.stderr.strip().splitlines()[-1]) / 1024, done.stdout.split("\n")[:-1]

    small, _ = peak_mb(2_000)
    large, out = peak_mb(40_000)
    assert len(out) == 40_000
    assert all((line == "") == (k % 7 == 0) for k, line in enumerate(out))
    assert large < small + 100  # MB: the stream is never held whole


def test_bad_prediction_and_gold_files(tmp_path):
    from conftest import FIXTURES

    gold = str(FIXTURES / "one_per_line.txt")
    cases = {"longer.txt": "(X a b)\n" * 4, "malformed.txt": "(X a b\n(X c)\n(X d)\n", "binary.txt": None}
    for name, text in cases.items():
        path = tmp_path / name
        path.write_bytes(os.urandom(300) if text is None else text.encode())
        result = CliRunner().invoke(main, ["eval", "--gold", gold, "--pred", str(path)])
        assert result.exit_code == 1 and name in result.stderr, name
        no_traceback(result)
    binary_gold = tmp_path / "gold.mrg"
    binary_gold.write_bytes(b"\x00\xff" * 100)
    result = CliRunner().invoke(main, ["eval", "--gold", str(binary_gold)])
    assert result.exit_code == 1 and "gold.mrg" in result.stderr
    no_traceback(result)


def test_sizes_beyond_the_free_memory_are_refused_before_allocation_and_leave_no_folder(tmp_path, monkeypatch):
    from onparse.families import OnlstmConfig, PcfgConfig
    from onparse.families.tnpcfg import TnpcfgConfig
    from onparse.store import modeldir

    assert modeldir.training_bytes(PcfgConfig(nonterminals=4096, preterminals=8192, productions="joint")) > 2**40
    assert modeldir.training_bytes(OnlstmConfig()) < 2**30
    # a tensor grammar's rules are counted in rank space: thousands of symbols at rank 4,096 need gigabytes, not
    # the terabytes of the same symbols' full rule tables
    wide = TnpcfgConfig(nonterminals=4096, preterminals=8192, rank=4096)
    assert 2**32 < modeldir.training_bytes(wide) < 2**34 and modeldir.training_bytes(TnpcfgConfig()) < 2**27
    monkeypatch.setattr(modeldir, "free_memory", lambda: 2**30)  # 1 GiB left
    examples = Path(__file__).resolve().parents[1] / "examples"
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--family",
            "pcfg",
            "--train",
            str(examples / "corpus.txt"),
            "--out",
            str(tmp_path / "big"),
            "--nonterminals",
            "4096",
            "--preterminals",
            "8192",
        ],
    )
    assert result.exit_code == 1 and "needs about" in result.stderr and "choose smaller sizes" in result.stderr
    no_traceback(result)
    assert not (tmp_path / "big").exists()  # refused before anything was written: no folder, no lock
