"""The command line through click's CliRunner: formats, streams, errors, exit codes."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, SLACK
from nltk import Tree

from onparse import __version__
from onparse.cli import main


@pytest.fixture
def run(tiny_model_dir):
    def invoke(*args, input=None):
        runner = CliRunner()
        return runner.invoke(
            main, [*args, "--model", str(tiny_model_dir)] if "--model" not in args else list(args), input=input
        )

    return invoke


def test_sentence_arguments_give_one_bracketed_tree_each(run):
    result = run("The cat sat on the mat.", "A dog sat")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    tree = Tree.fromstring(lines[0])
    assert tree.leaves() == ["The", "cat", "sat", "on", "the", "mat", "."]


def test_parse_subcommand_is_the_same(run):
    assert run("parse", "the cat").stdout == run("the cat").stdout


def test_stdin_keeps_one_output_line_per_input_line(run):
    text = "the cat sat\n\nthe mat .\n" + "cat " * 1000 + "\nlast one\n"
    result = run(input=text.encode())
    lines = result.stdout.split("\n")
    assert lines[:-1][1] == "" and lines[:-1][3] == ""
    assert len(lines) - 1 == 5
    assert Tree.fromstring(lines[4]).leaves() == ["last", "one"]
    assert result.exit_code == 1
    assert "line 4: 1000 words is over the limit" in result.stderr


def test_non_utf8_line_is_reported_and_others_parsed(run):
    result = run("-", input=b"the cat\n\xff\xfe\na dog\n")
    assert result.exit_code == 1
    assert result.stdout.split("\n")[1] == ""
    assert Tree.fromstring(result.stdout.split("\n")[2]).leaves() == ["a", "dog"]
    assert "line 2: not UTF-8 text" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_empty_input_is_an_error(run):
    result = run(input=b"")
    assert result.exit_code != 0 and "no input" in result.stderr


def test_input_and_output_files(run, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("the cat sat\na dog (barked)\n")
    target = tmp_path / "out.mrg"
    result = run("--input", str(source), "--output", str(target), "--format", "mrg")
    assert result.exit_code == 0, result.output
    trees = [Tree.fromstring(line) for line in target.read_text().splitlines()]
    assert trees[1].leaves() == ["a", "dog", "-LRB-", "barked", "-RRB-"]
    assert trees[1].pos()[2] == ("-LRB-", "-LRB-") and trees[1].pos()[0] == ("a", "X")


def test_missing_input_file(run, tmp_path):
    result = run("--input", str(tmp_path / "nope.txt"))
    assert result.exit_code == 2 and "nope.txt" in result.stderr and "Traceback" not in result.stderr


def test_json_format_holds_tokens_input_distances_and_spans(run):
    result = run("--format", "json", "The cat sat, quietly.")
    record = json.loads(result.stdout)
    assert record["tokens"] == ["The", "cat", "sat", ",", "quietly", "."]
    assert record["model_input"] == ["the", "cat", "sat", "<unk>"]
    assert len(record["layer_distances"][0]) == 3 and all(len(layer) == 4 for layer in record["layer_distances"][0])
    assert record["distances"] == [record["layer_distances"][0][record["layers"][0] - 1]]
    assert [0, 6] in record["spans"]


def test_no_punct_and_pretty(run):
    assert Tree.fromstring(run("--no-punct", "The cat, sadly, sat.").stdout).leaves() == ["The", "cat", "sadly", "sat"]
    pretty = run("--format", "pretty", "the cat sat").stdout
    assert "cat" in pretty and "█" in pretty


def test_layer_choice_and_bad_layer(run):
    assert run("--layer", "3", "the cat sat on the mat").exit_code == 0
    result = run("--layer", "7", "the cat")
    assert result.exit_code == 2 and "--layer" in result.stderr


def test_broken_model_directory(tmp_path, tiny_model_dir):
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "vocab.txt"):
        (broken / name).write_bytes((tiny_model_dir / name).read_bytes())
    result = CliRunner().invoke(main, ["--model", str(broken), "the cat"])
    assert result.exit_code == 2 and "lacks weights.pt" in result.stderr
    (broken / "weights.pt").write_bytes(b"not a torch file")
    result = CliRunner().invoke(main, ["--model", str(broken), "the cat"])
    assert result.exit_code == 2 and "weights.pt is not a plain file of tensors" in result.stderr


def test_help_and_version_do_not_import_torch():
    code = (
        "import sys; from onparse.cli import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "Examples" in out and out.strip().endswith("False")
    assert CliRunner().invoke(main, ["--version"]).stdout.strip().endswith(__version__)
    for command in ("parse", "eval", "train"):
        assert "Examples" in CliRunner().invoke(main, [command, "--help"]).stdout


@pytest.mark.slow  # a subprocess each, to see torch's import
@pytest.mark.parametrize(
    "arguments",
    [
        ["-i", "missing.txt"],
        ["--model", "missing-folder/", "a b"],
        ["--model", "no-such-model", "a b"],
        ["-o", "missing/x.txt", "a b"],
        ["eval", "--gold", "missing.mrg"],
        ["train", "--train", "missing.txt", "--out", "run"],
        ["fit", "--train", "missing.txt", "--dev", "missing.txt", "--out", "run"],
        ["distill", "--teacher", "missing-folder/", "--train", "missing.txt", "--out", "run"],
        ["ensemble", "missing-folder/", "--out", "vote"],
        ["quantize", "missing-folder/", "--out", "q"],
    ],
)
def test_a_path_or_model_that_names_nothing_is_refused_before_torch_loads(arguments, tmp_path):
    code = (
        "import sys\nfrom onparse.cli import main\ntry: main(sys.argv[1:])\n"
        "except SystemExit as e: print(e.code, 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *arguments], cwd=tmp_path, capture_output=True, text=True, timeout=SLACK * 60
    )
    assert done.stdout.split() == ["2", "False"] and done.stderr.count("\n") == 1, (done.stdout, done.stderr)
    assert not any(tmp_path.iterdir())  # nothing made


def test_fit_help_names_what_every_fit_needs_first_and_the_rest_by_family_and_stage():
    from onparse.commands.options import fit_sections

    text = CliRunner().invoke(main, ["fit", "--help"]).stdout
    titles = [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert titles == list(fit_sections())  # each section in its place, and no option left to "Other options"
    first = text.split("What to fit:", 1)[1].split("\n\n", 1)[0]
    assert [option for option in ("--train", "--dev", "--out", "--language", "--hours") if option in first] == [
        "--train",
        "--dev",
        "--out",
        "--language",
        "--hours",
    ] and first.index("--language") < first.index("--hours")
    machine = text.split("This machine:", 1)[1]
    assert "--quiet" in machine and "--json-log" in machine  # two options of one parameter, both shown
    grammar = text.split("Grammar members:", 1)[1].split("\n\n", 1)[0]
    assert "--nonterminals" in grammar and "--hidden-size" not in grammar


def test_eval_scores_the_model_and_baselines(run):
    result = run("eval", "--gold", str(FIXTURES / "one_per_line.txt"), "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["sentences"] == 3 and 0 <= figures["sentence_f1"] <= 100 and "corpus_f1" in figures
    assert set(figures["baselines"]) == {"left_branching", "right_branching", "balanced", "untrained_layer_2"}
    assert figures["baselines"]["right_branching"]["label_recall"]["VP"] == 100.0
    assert "Protocol" in figures["protocol"]
    table = run("eval", "--gold", str(FIXTURES / "ldc_style.mrg"), "--max-length", "6")
    assert "1 sentences" in table.stdout and "right branching" in table.stdout and "Protocol" in table.stdout


def test_eval_of_another_parsers_trees(tmp_path):
    pred = tmp_path / "pred.txt"
    pred.write_text("(X The (X cat (X sat (X on (X the mat)))) .)\n(X She ran !)\n(X Hello)\n")
    result = CliRunner().invoke(
        main, ["eval", "--gold", str(FIXTURES / "one_per_line.txt"), "--pred", str(pred), "--json"]
    )
    figures = json.loads(result.stdout)
    # sentence 1: pred {(1,6),(2,6),(3,6),(4,6)} vs gold {(0,2),(2,6),(3,6),(4,6)}: F1 0.75; others score 1
    assert figures["sentence_f1"] == pytest.approx(100 * (0.75 + 1 + 1) / 3)


def test_eval_errors(tmp_path):
    result = CliRunner().invoke(main, ["eval", "--gold", str(FIXTURES / "malformed.mrg")])
    assert result.exit_code == 1 and "malformed.mrg:2" in result.stderr
    short = tmp_path / "short.txt"
    short.write_text("(X The cat)\n")
    result = CliRunner().invoke(main, ["eval", "--gold", str(FIXTURES / "one_per_line.txt"), "--pred", str(short)])
    assert result.exit_code == 1 and "1 trees for 3 gold sentences" in result.stderr
    ignored = CliRunner().invoke(main, ["eval", "--gold", str(FIXTURES / "one_per_line.txt"), "--max-words", "5"])
    assert ignored.exit_code == 2 and "leave out --max-words" in ignored.stderr and "--max-length" in ignored.stderr


def test_train_writes_a_loadable_model_and_resumes(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat.\nA dog sat on the cat.\nThe mat sat on a dog!\n" * 20)
    args = [
        "train",
        "--train",
        str(corpus),
        "--dev",
        str(corpus),
        "--out",
        str(tmp_path / "run"),
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
        "--dev-gold",
        str(FIXTURES / "one_per_line.txt"),
        "--device",
        "cpu",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    model = tmp_path / "run" / "model"
    assert (model / "card.json").is_file()
    history = json.loads((model / "card.json").read_text())["history"]
    assert (
        history[0]["epoch"] == 1
        and history[0]["dev_ppl"] > 1
        and set(history[0]["dev_f1_per_layer"]) == {"1", "2", "3", "mean"}
    )
    parsed = CliRunner().invoke(main, ["--model", str(model), "the cat sat"])
    assert parsed.exit_code == 0 and Tree.fromstring(parsed.stdout).leaves() == ["the", "cat", "sat"]
    changed = CliRunner().invoke(
        main, ["train", "--train", str(corpus), "--out", str(tmp_path / "run"), "--resume", "--epochs", "2"]
    )
    assert changed.exit_code == 2 and "leave out --train" in changed.stderr  # it would be ignored: the run's own text
    resumed = CliRunner().invoke(main, ["train", "--out", str(tmp_path / "run"), "--resume", "--epochs", "2"])
    assert resumed.exit_code == 0, resumed.output
    assert "trained 2 epochs" in resumed.stdout
    settings = json.loads((tmp_path / "run" / "config.json").read_text())
    assert settings["epochs"] == 2 and settings["device"] == "cpu" and settings["model"]["hidden_size"] == 12


def test_layer_mean_and_bad_layer_names(run):
    assert run("--layer", "mean", "the cat sat").exit_code == 0
    pretty = run("--layer", "mean", "--format", "pretty", "the cat sat").stdout
    assert "mean of the layers' distances" in pretty
    bad = run("--layer", "top", "the cat")
    assert bad.exit_code == 2 and "neither a layer number" in bad.stderr


def test_tokenized_lines_are_taken_as_given(run):
    result = run("--tokenized", "--format", "json", "Stocks fell 5 % -LRB- at S&L -RRB- ''")
    record = json.loads(result.stdout)
    assert record["tokens"] == ["Stocks", "fell", "5", "%", "-LRB-", "at", "S&L", "-RRB-", "''"]
    assert record["model_input"] == ["<unk>", "<unk>", "N", "<unk>", "<unk>", "<unk>"]
    assert Tree.fromstring(record["tree"]).leaves() == record["tokens"]


def test_eval_raw_scores_the_raw_text_path(run):
    raw = json.loads(run("eval", "--gold", str(FIXTURES / "ldc_style.mrg"), "--raw", "--json").stdout)
    model = json.loads(run("eval", "--gold", str(FIXTURES / "ldc_style.mrg"), "--no-untrained", "--json").stdout)
    assert raw["same_tokens"] == 2 and raw["sentences"] == 2
    assert raw["sentence_f1"] == pytest.approx(model["sentence_f1"])  # same tokens, same words, same trees


def test_a_number_option_refuses_nan_and_infinity():
    """nan passes every range check (it compares false with any bound): refused as no number, before any work."""
    for option, value in (("--hours", "nan"), ("--hours", "inf"), ("--lr", "nan"), ("--focus", "-inf")):
        command = ["fit", "--train", "x.txt", "--dev", "y.txt", "--out", "o"] if option == "--hours" else ["distill"]
        result = CliRunner().invoke(main, [*command, option, value])
        assert result.exit_code == 2 and (
            "is not a finite number" in result.stderr or "not in the range" in result.stderr
        ), result.stderr


def test_a_path_that_names_nothing_exits_2_in_every_command(tmp_path):
    """One exit code per kind of error (docs/guide.md): a missing input is a problem with the command, exit 2, whether
    it is a sentence file, gold trees or training text."""
    missing = str(tmp_path / "missing.txt")
    for command in (
        ["-i", missing],
        ["eval", "--gold", missing],
        ["train", "--train", missing, "--out", str(tmp_path / "r")],
    ):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2 and "missing.txt" in result.stderr and len(result.stderr.splitlines()) == 1, (
            command
        )


def test_a_refused_fit_setting_is_named_by_its_option_not_by_a_field(tmp_path):
    result = CliRunner().invoke(
        main,
        ["fit", "--train", str(FIXTURES / "one_per_line.txt"), "--dev", str(FIXTURES / "one_per_line.txt")]
        + ["--language", "en", "--out", str(tmp_path / "fit")]
        + ["--grammar-students", "0", "--student-nonterminals", "20"],
    )
    assert result.exit_code == 2 and "--student-nonterminals" in result.stderr and "student_model" not in result.output
    assert not (tmp_path / "fit").exists()


def test_a_line_of_several_sentences_is_said_once_and_split_where_asked(run, caplog):
    paragraph = "The cat sat on the mat. A dog sat on the cat. The mat sat!\nThe cat sat. The dog sat.\n"
    with caplog.at_level("WARNING", logger="onparse"):
        whole = run(input=paragraph)
    said = [record.getMessage() for record in caplog.records if "several sentences" in record.getMessage()]
    assert whole.exit_code == 0 and len(whole.stdout.splitlines()) == 2 and len(said) == 1 and "--sentences" in said[0]
    assert " mat . " in whole.stdout  # the period a token of its own, not glued to "mat"
    split = run("--sentences", input=paragraph)
    trees = split.stdout.splitlines()
    assert split.exit_code == 0 and len(trees) == 5 and trees[0].endswith(" .)") and trees[2].endswith(" !)")


def test_text_in_a_script_without_spaces_is_said_to_an_english_model(run, caplog):
    with caplog.at_level("WARNING", logger="onparse"):
        result = run("ภาษาไทยเป็นภาษา")
    assert result.exit_code == 0 and any("--language th" in record.getMessage() for record in caplog.records)


def test_onparse_help_lists_the_options_of_parsing_that_its_messages_name():
    text = CliRunner().invoke(main, ["--help"]).stdout
    parsing = text.split("Parse options", 1)[1]
    assert all(option in parsing for option in ("--model", "--max-words", "--sentences", "--format"))
    assert "SENTENCES" not in parsing and "--help" not in parsing


def test_lines_split_into_sentences_where_asked_say_nothing_of_several_sentences(run, caplog):
    with caplog.at_level("WARNING", logger="onparse"):
        result = run("--sentences", input="The cat sat. The dog sat.\n")
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 2
    assert not [record for record in caplog.records if "several sentences" in record.getMessage()]
