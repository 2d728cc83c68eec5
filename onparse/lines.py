"""Reading one sentence a line from a byte stream in bounded memory.

A line is read up to a byte limit; a longer one (``/dev/zero``, a binary
file, a paste gone wrong) is reported and skipped to its end in fixed-size
pieces, so no input can make memory climb.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

BOM = b"\xef\xbb\xbf"
_SKIP = 1 << 16  # bytes read at a time while skipping the rest of an over-long line


class TooLong:
    """Stands for a line of more than ``limit`` bytes, which was skipped."""

    def __init__(self, limit: int):
        self.limit = limit

    def __str__(self) -> str:
        return f"longer than {self.limit:,} bytes"


def read_lines(stream: BinaryIO, limit: int) -> Iterator[bytes | TooLong]:
    """Each line of ``stream`` without its line break (``\\n`` or ``\\r\\n``), or TooLong for one over ``limit`` bytes.

    A UTF-8 byte-order mark before the first line is dropped.
    """
    first = True
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


class _LinesBefore:
    """A binary stream ending at the first line that starts at or after byte ``end``."""

    def __init__(self, stream: BinaryIO, end: int):
        self.stream, self.end, self.at_line_start = stream, end, True

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
