"""Lines in bounded memory, and a file's parts for parsing on many machines (--shard K/N)."""

import io

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from onparse.cli import main
from onparse.text.lines import TooLong, read_lines, shard_of

LIMIT = 12


def lines_of(stream) -> list:
    return [str(line) if isinstance(line, TooLong) else line for line in read_lines(stream, LIMIT)]


@given(
    st.lists(st.sampled_from([b"a", b"bc d", b"", b"\r", b"x" * 30, "é".encode()]), max_size=12).map(b"\n".join),
    st.integers(min_value=1, max_value=9),
    st.booleans(),
)
def test_the_parts_concatenated_are_the_whole(content, parts, final_newline):
    content += b"\n" if final_newline else b""
    whole = lines_of(io.BytesIO(content))
    pieces = [line for part in range(1, parts + 1) for line in lines_of(shard_of(io.BytesIO(content), part, parts))]
    assert pieces == whole


def test_a_part_reads_only_its_own_range():
    content = b"one\ntwo\nthree\nfour\n"  # 19 bytes: parts of 9 and 10 bytes
    assert list(read_lines(shard_of(io.BytesIO(content), 1, 2), LIMIT)) == [
        b"one",
        b"two",
        b"three",
    ]  # "three" starts at byte 8
    assert list(read_lines(shard_of(io.BytesIO(content), 2, 2), LIMIT)) == [b"four"]


def test_the_cli_parts_concatenate_to_the_whole_output(tiny_model_dir, tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"the cat sat\n\n" + b"cat " * 30_000 + b"\na dog sat on the mat\nthe mat\n")
    run = lambda *args: CliRunner().invoke(main, ["--model", str(tiny_model_dir), "-i", str(path), *args])  # noqa: E731
    whole = run()
    parts = [run("--shard", f"{k}/5") for k in range(1, 6)]
    assert whole.exit_code == 1 and all(part.exit_code in (0, 1) for part in parts)  # the over-long line is reported
    assert "".join(part.stdout for part in parts) == whole.stdout
    assert len(whole.stdout.splitlines()) == 5 and any(
        part.stdout == "" and part.exit_code == 0 for part in parts
    )  # an empty part
    assert sum("part" in part.stderr and "longer than" in part.stderr for part in parts) == 1


def test_shard_refuses_what_it_cannot_split(tiny_model_dir):
    for args in (
        ["--shard", "1/2", "the cat"],
        ["--shard", "0/2", "-i", "x"],
        ["--shard", "3/2", "-i", "x"],
        ["--shard", "a", "-i", "x"],
    ):
        result = CliRunner().invoke(main, ["--model", str(tiny_model_dir), *args])
        assert result.exit_code == 2 and "Traceback" not in result.output


def test_a_files_lines_are_counted_for_the_progress_bar_and_a_pipe_has_no_count(tmp_path):
    from onparse.text.lines import count_lines

    for text, lines in ((b"", 0), (b"a\n", 1), (b"a\nb", 2), (b"a\r\nb\r\n\n", 3)):
        (tmp_path / "f.txt").write_bytes(text)
        assert count_lines(str(tmp_path / "f.txt")) == lines
    assert count_lines("/dev/stdin") is None


def test_utf16_input_is_refused_in_one_line_and_utf8_with_its_bom_reads(tmp_path):
    import pytest

    from onparse.text.lines import input_lines

    (tmp_path / "u16.txt").write_text("The cat sat.\nA dog ran.\n", encoding="utf-16")
    with pytest.raises(OSError, match="the text is UTF-16"):
        input_lines([], str(tmp_path / "u16.txt"), None, 1000)
    (tmp_path / "u8.txt").write_text("The cat sat.\n", encoding="utf-8-sig")
    assert list(input_lines([], str(tmp_path / "u8.txt"), None, 1000)) == [b"The cat sat."]


def test_a_binary_file_is_refused_in_one_line_before_anything_is_parsed(tmp_path, tiny_model_dir):
    from click.testing import CliRunner

    from onparse.cli import main

    binary = tmp_path / "program"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40 + b"\nthe cat sat\n")
    for arguments, stdin in ((["-i", str(binary)], None), ([], binary.read_bytes())):
        result = CliRunner().invoke(main, ["--model", str(tiny_model_dir), *arguments], input=stdin)
        assert result.exit_code == 2 and result.stdout == "", result.output
        assert result.stderr.count("\n") == 1 and "not a text file" in result.stderr
