"""Rendering parses: one-line brackets, EVALB-ready MRG, JSON lines, a drawn tree.

Every format shows the user's own tokens; brackets inside tokens are escaped as
-LRB-/-RRB- so that every output reads back as a tree.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from pathlib import Path
from typing import TextIO

import numpy as np
from nltk import Tree

from onparse.parsing.parse import Parser
from onparse.parsing.parsed import Parse
from onparse.parsing.report import line_counter
from onparse.store.atomic import replacing_file
from onparse.structures.trees import LABEL, bracketed, escape

BAR_WIDTH = 20


def bracket(parse: Parse, punct: bool = True) -> str:
    """One line: ``(X (X The cat) (X sat (X on (X the mat))))``."""
    return parse.bracket(punct)


def mrg(parse: Parse, punct: bool = True) -> str:
    """One line with a preterminal per token, as EVALB and nltk's treebank readers expect."""
    return bracketed(parse.tagged_tree(punct, escape))


def json_line(parse: Parse, punct: bool = True) -> str:
    return json.dumps(parse.to_dict(punct), ensure_ascii=False)


def no_parse(fmt: str, reason: object = None) -> str:
    """What a format writes for an input line that gave no parse (blank, or refused for ``reason``): nothing, except in
    JSON lines, where every line is an object that says so."""
    if fmt != "json":
        return ""
    return json.dumps(
        {"tokens": [], "empty": True} if reason is None else {"tokens": None, "refused": str(reason)},
        ensure_ascii=False,
    )


def pretty(parse: Parse, punct: bool = True) -> str:
    """The tree drawn with guide lines; each word shows its distance as a bar (an ensemble: the mean of its members'
    rows; grammars have none, and a lone grammar's words have no bars).

    Bars run from the sentence's smallest distance (one block) to its largest,
    since the split order depends only on how distances compare. Tokens are
    plain text to rich, never markup: ``[bold]`` prints as typed.
    """
    from rich.cells import cell_len  # display width: a Chinese character takes two columns
    from rich.console import Console  # only this format draws; the others start faster without rich
    from rich.text import Text
    from rich.tree import Tree as RichTree

    rows = (
        parse.tree_distances[~np.isnan(parse.tree_distances).all(axis=1)]
        if parse.tree_distances.size
        else parse.tree_distances
    )
    distance = {pos: float(d) for pos, d in zip(parse.word_positions, rows.mean(axis=0))} if len(rows) else {}
    low, high = min(distance.values(), default=0.0), max(distance.values(), default=1.0)

    def label(node: Tree | int) -> Text:
        if isinstance(node, Tree):
            return Text(LABEL, style="dim")
        token = parse.tokens[node]
        if node not in distance:  # punctuation (dim), or a word of a grammar's tree
            return Text(token, style="" if node in parse.word_positions else "dim")
        d = distance[node]
        bar = "█" * (1 + round((d - low) / (high - low or 1.0) * (BAR_WIDTH - 1)))
        return Text.assemble(token + " " * max(1, 15 - cell_len(token)), (f"{bar:<{BAR_WIDTH}}", "cyan"), f" {d:.3f}")

    source = parse.builder.describe()
    root = RichTree(Text.assemble((LABEL, "bold"), (f"  ({source})", "dim")))
    pending, depth = [(root, parse.printed_tree(punct), 1)], 1
    while pending:  # no recursion: trees are as deep as sentences are long
        branch, node, level = pending.pop()
        depth = max(depth, level)
        for child in node:
            added = branch.add(label(child), highlight=False)
            if isinstance(child, Tree):
                pending.append((added, child, level + 1))
    longest = max(map(len, parse.tokens), default=0)
    width = max(100, 4 * (depth + 1) + max(longest, 14) + BAR_WIDTH + 8)  # deep trees widen rather than lose tokens
    buffer = io.StringIO()
    Console(file=buffer, width=width, force_terminal=False, color_system=None).print(root)
    return buffer.getvalue().rstrip("\n")


# Characters that move a terminal's cursor, change its colours or reorder text (C0 and C1 controls,
# DEL, bidirectional overrides): printed to a terminal, each is shown as an escape instead.
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` with terminal control characters shown as ``\\x1b``-style escapes (line breaks and tabs kept)."""
    return _TERMINAL_CONTROLS.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def svg(parse: Parse, punct: bool = True) -> str:
    """The tree as an SVG picture on one line (nltk's ``TreePrettyPrinter``; a preterminal over each token keeps the
    tokens in order), for a paper or a browser: ``onparse -f svg "..." > tree.svg``."""
    return parse.svg(punct)


FORMATS = {"bracket": bracket, "mrg": mrg, "json": json_line, "pretty": pretty, "svg": svg}


class OnePicture(ValueError):
    """Several sentences drawn into one .svg file, which holds one picture."""


PAGE_SUFFIXES, PICTURE_SUFFIXES = (".html", ".htm"), (".svg",)


def write_parses(
    parses: Iterable[Parse | None],
    out: TextIO,
    fmt: str,
    punct: bool = True,
    refused: dict[int, object] | None = None,
    flush_each: bool = False,
    advance: Callable[[int], None] = lambda done: None,
    container: str = "",
) -> None:
    """Each parse in ``fmt`` on ``out``, one output line (a drawing, for pretty) per input line, in order: a line
    that gave no parse writes ``no_parse`` with the reason ``refused`` holds for its position. Terminal control
    characters are shown escaped where ``out`` is a terminal; ``flush_each`` for a person typing line by line.
    Pictures (svg) written to a file named as a page (``.html``) make one page, a figure a sentence; to a file named
    as a picture (``.svg``), one sentence alone (OnePicture for a second)."""
    render, separator = FORMATS[fmt], "\n\n" if fmt == "pretty" else "\n"
    safe = terminal_safe if out.isatty() else (lambda text: text)
    refused = {} if refused is None else refused
    page, picture = (
        fmt == "svg" and container.lower().endswith(PAGE_SUFFIXES),
        fmt == "svg" and container.lower().endswith(PICTURE_SUFFIXES),
    )
    if page:
        out.write('<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>onparse</title></head><body>\n')
    for position, parsed in enumerate(parses):
        if picture and position:
            raise OnePicture(
                f"{container} is one picture and the input holds several sentences: write them to a page "
                "(--output trees.html), or one SVG a line to another file or standard output"
            )
        shown = render(parsed, punct) if parsed else no_parse(fmt, refused.pop(position, None))
        out.write(f"<figure>{shown}</figure>\n" if page else safe(shown) + separator)
        advance(1)
        if flush_each:
            out.flush()
    if page:
        out.write("</body></html>\n")
    out.flush()


def parse_lines_to(
    output_path: str | None,
    parser: Parser,
    lines: Iterable[bytes],
    fmt: str = "bracket",
    punct: bool = True,
    tokenized: bool = False,
    blank_lines: bool = True,
    report: Callable[[int, object], None] = lambda position, reason: None,
    interactive: bool = False,
    progress: bool = False,
    total: int | None = None,
    allow_empty: bool = False,
) -> int:
    """Parse ``lines`` into ``output_path`` (None: standard output), one output line per input line: a line that cannot
    be parsed is told to ``report`` (its position from 0, why) and gives ``no_parse``'s line. The file is replaced only
    once complete; EOFError, leaving it as it was, where no line came in (unless ``allow_empty``). Returns the lines
    refused. ``interactive``: a person types line by line (each parsed and written at once)."""
    refused, errors = {}, []
    came_in = False

    def refuse(position: int, reason: object) -> None:
        report(position, reason)
        refused[position] = reason
        errors.append(position)

    def counted() -> Iterable[bytes]:  # whether anything came in, without holding the lines
        nonlocal came_in
        for line in lines:
            came_in = True
            yield line

    with (
        replacing_file(Path(output_path)) if output_path else nullcontext(sys.stdout) as out,
        line_counter("parsing", progress, total) as advance,
    ):  # the bar counts the lines the model has answered (a batch at a time), not those written in order
        parses = parser.parse_lines(
            counted(), tokenized, blank_lines, refuse, window=1 if interactive else None, progress=advance
        )
        write_parses(parses, out, fmt, punct, refused, interactive, container=output_path or "")
        if not came_in and not allow_empty:
            raise EOFError("no input")
    return len(errors)
