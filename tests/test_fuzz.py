"""Property-based fuzzing: any text, token list or bracketed string parses or fails with the documented error."""

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onparse.cli import main
from onparse.parsing.parse import InputError, Parser
from onparse.text.treebank import TreebankError, read_gold

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def parser(tiny_model_dir):
    return Parser.load(tiny_model_dir, max_words=50)


@FAST
@given(st.text(max_size=200))
def test_any_text_parses_or_is_refused_cleanly(parser, text):
    try:
        parse = parser.parse(text)
    except InputError:
        return
    assert parse.tree.leaves() == list(range(len(parse.tokens)))


@FAST
@given(st.lists(st.text(min_size=1, max_size=12).filter(lambda t: not any(c.isspace() for c in t)), max_size=30))
def test_any_token_list_parses_or_is_refused_cleanly(parser, tokens):
    try:
        (parse,) = parser.parse_tokens([tokens])
    except InputError:
        assert not tokens or len(tokens) > 50
        return
    assert parse.tokens == tokens and sorted(parse.tree.leaves()) == list(range(len(tokens)))


@FAST
@given(st.text(alphabet="()ab NP-NONE-\n ", max_size=80))
def test_any_bracketed_string_reads_or_names_its_line(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fuzz") / "gold.mrg"
    path.write_text(text)
    try:
        list(read_gold(str(path)))
    except TreebankError as err:
        assert str(err).startswith(str(path))


@FAST
@given(st.lists(st.binary(max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b), min_size=1, max_size=8))
def test_stdin_keeps_one_line_per_input_line(tiny_model_dir, lines):
    result = CliRunner().invoke(
        main, ["--model", str(tiny_model_dir), "--max-words", "20"], input=b"\n".join(lines) + b"\n"
    )
    assert "Traceback" not in result.stdout + result.stderr
    if result.exit_code == 2:  # refused whole, before any line: UTF-16 or UTF-32 by its byte-order mark, or no text
        said = result.stderr
        assert result.stdout == "" and said.count("\n") == 1 and ("byte-order mark" in said or "not a text" in said)
        return
    assert result.exit_code in (0, 1)
    assert result.stdout.count("\n") == len(lines)
