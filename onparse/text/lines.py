"""Reading one sentence a line from a byte stream in bounded memory.

A line is read up to a byte limit; a longer one (``/dev/zero``, a binary
file, a paste gone wrong) is reported and skipped to its end in fixed-size
pieces, so no input can make memory climb.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator, Sequence
from typing import BinaryIO

BOM = b"\xef\xbb\xbf"
_SKIP = 1 << 16  # bytes read at a time while skipping the rest of an over-long line


class TooLong:
    """Stands for a line of more than ``limit`` bytes, which was skipped."""

    def __init__(self, limit: int):
        self.limit = limit

    def __str__(self) -> str:
        return f"longer than {self.limit:,} bytes"


def input_lines(
    arguments: Sequence[str], path: str | None, shard: tuple[int, int] | None, limit: int
) -> Iterator[bytes | TooLong]:
    """The lines a command reads: its arguments (each one line), else ``path`` (``-`` or None: stdin), the
    ``shard`` (K, N) of it where given; each as ``read_lines`` gives it. OSError for what cannot be opened."""
    if arguments:
        return iter(
            [
                line if len(line) <= limit else TooLong(limit)
                for line in (argument.encode("utf-8", "surrogateescape") for argument in arguments)
            ]
        )
    if path in (None, "-"):
        if sys.stdin is None:
            raise OSError(0, "standard input is closed: give sentences as arguments or with --input FILE", "stdin")
        stdin = sys.stdin.buffer if hasattr(sys.stdin.buffer, "peek") else io.BufferedReader(sys.stdin.buffer)
        refuse_wide_text(stdin.peek(START)[:START], "stdin")  # its bytes stay to be read
        return read_lines(stdin, limit)
    stream = open(path, "rb")
    if shard and (not os.path.isfile(path) or (os.path.getsize(path) == 0 and stream.read(1))):
        raise OSError(
            0, "--shard splits a file of known size, not a pipe, a device or a file that says it is empty", path
        )
    refuse_wide_text(stream.peek(START)[:START] if hasattr(stream, "peek") else b"", path)  # a pipe's stay to be read
    return read_lines(shard_of(stream, *shard) if shard else stream, limit)


def line_place(arguments: bool, path: str | None, shard: tuple[int, int] | None) -> str:
    """How a message names where a line stands, before its number from 1: an argument, a line of stdin, of a file or
    of a file's part."""
    if arguments:
        return "argument "
    if path in (None, "-"):
        return "line "
    return f"{path} part {shard[0]}/{shard[1]} line " if shard else f"{path}:"


def count_lines(path: str) -> int | None:
    """The lines of a regular file (one that does not end in a line break counts its last too), for a progress bar's
    total; None for a pipe or a device, whose lines are known only once read."""
    if not os.path.isfile(path):
        return None
    count, last = 0, b"\n"
    with open(path, "rb") as stream:
        while piece := stream.read(_SKIP):
            count += piece.count(b"\n")
            last = piece[-1:]
    return count + (last != b"\n")


# Byte-order marks of text in UTF-16 or UTF-32, whose lines are not byte lines (a line break is two or four bytes)
WIDE_BOMS = {b"\xff\xfe\x00\x00": "UTF-32", b"\x00\x00\xfe\xff": "UTF-32", b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}


def refuse_wide_text(start: bytes, name: str) -> None:
    """OSError for input that starts as UTF-16 or UTF-32 text does (one sentence a line is read as bytes), or as no
    text does: a NUL byte in its first block (as git and grep tell a binary file), which would otherwise give a
    line of errors for every stretch of bytes that is not text and parse the stretches that decode."""
    found = next((kind for bom, kind in WIDE_BOMS.items() if start.startswith(bom)), None)
    if found:
        raise OSError(
            0,
            f"the text is {found} (its byte-order mark says so): convert it to UTF-8 "
            f"(iconv -f {found} -t UTF-8) or another encoding of one byte a line break",
            name,
        )
    if looks_binary(start):
        raise OSError(0, "not a text file (a binary file?): give text, one sentence a line", name)


START = 8192  # the bytes of an input's start that tell its kind (``refuse_wide_text``)
BINARY_SHARE = 0.1  # of NUL bytes and bytes that are no UTF-8 in an input's start, past which it is no text


def looks_binary(start: bytes) -> bool:
    """Whether an input's first block is no text: a tenth of it NUL bytes or bytes that are no UTF-8 (a program, an
    image, a compressed file). A stray NUL or a line in another encoding is text with a flaw, parsed around (each
    such line said and left empty in its place); a start too short to tell is text."""
    if len(start) < 1024:
        return False
    undecodable = start.decode("utf-8", "replace").count("\ufffd")
    return start.count(0) + undecodable >= BINARY_SHARE * len(start)


def read_lines(stream: BinaryIO, limit: int) -> Iterator[bytes | TooLong]:
    """Each line of ``stream`` without its line break (``\\n`` or ``\\r\\n``), or TooLong for one over ``limit`` bytes.

    A UTF-8 byte-order mark at the very start of the file is dropped; one
    at the start of a later line (files concatenated, or a ``--shard`` part
    that starts mid-file) is text, kept as the whole file's reading keeps it.
    """
    first = _at_file_start(stream)
    while line := stream.readline(limit + 2):  # the line, and room for its \r\n
        if first and line.startswith(BOM):
            line = line[len(BOM) :]
        first = False
        if line.endswith(b"\n"):
            line = line[:-1]
        elif len(line) > limit:  # no line break within the limit: skip to the end of this line
            while (rest := stream.readline(_SKIP)) and not rest.endswith(b"\n"):
                pass
            yield TooLong(limit)
            continue
        line = line.removesuffix(b"\r")
        yield line if len(line) <= limit else TooLong(limit)


def _at_file_start(stream: BinaryIO) -> bool:
    """Whether the stream is at byte 0 of its file (a pipe, which cannot say, is at its start)."""
    try:
        return stream.tell() == 0
    except (OSError, AttributeError, ValueError):
        return True


class _LinesBefore:
    """A binary stream ending at the first line that starts at or after byte ``end``."""

    def __init__(self, stream: BinaryIO, end: int):
        self.stream, self.end, self.at_line_start = stream, end, True

    def tell(self) -> int:
        return self.stream.tell()

    def readline(self, size: int = -1) -> bytes:
        if self.at_line_start and self.stream.tell() >= self.end:
            return b""
        line = self.stream.readline(size)
        self.at_line_start = line.endswith(b"\n")
        return line


def shard_of(stream: BinaryIO, part: int, parts: int) -> BinaryIO:
    """The lines of a seekable ``stream`` that start in the ``part``-th (from 1) of ``parts`` equal byte ranges.

    Every line starts in exactly one range, so the parts' lines, concatenated
    in order, are the stream's; each part seeks to its range and reads only
    its own lines (and the rest of the line it lands in), however large the file.
    """
    size = stream.seek(0, os.SEEK_END)
    start, end = size * (part - 1) // parts, size * part // parts
    stream.seek(max(start - 1, 0))
    if start:  # from the byte before the range: a line starting exactly at ``start`` is this part's
        while (rest := stream.readline(_SKIP)) and not rest.endswith(b"\n"):
            pass
    return _LinesBefore(stream, end)  # type: ignore[return-value]
