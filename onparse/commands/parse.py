"""What ``onparse`` (the parse command) does between its options and the library: the lines to read, the output to
write, a progress bar where a person waits, and every failure as one line and an exit code."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import click

from onparse.commands.common import check_named, fail, import_nltk_quickly, load_parser, require_stdout
from onparse.commands.options import (
    FORMAT_NAMES,
    ShardType,
    declared,
    model_options,
)
from onparse.settings import LINE_BYTES_PER_WORD


def parse_to_output(
    sentences: tuple[str, ...],
    input_path: str | None,
    output_path: str | None,
    fmt: str,
    no_punct: bool,
    tokenized: bool,
    split: bool,
    shard: tuple[int, int] | None,
    quiet: bool,
    model: str | None,
    layer,
    settings: dict,
) -> None:
    """Parse the arguments, or the lines of a file or stdin (one output line an input line), into the output; exits 1
    where a line could not be parsed."""
    from onparse.text.lines import count_lines, line_place

    from_arguments = bool(sentences) and sentences != ("-",)
    to_file = output_path not in (None, "-")
    lines = opened_lines(
        sentences if from_arguments else (),
        input_path,
        output_path if to_file else None,
        shard,
        LINE_BYTES_PER_WORD * settings["max_words"],
    )
    where = line_place(from_arguments, input_path, shard)
    check_named(models=[model])  # before torch loads
    import_nltk_quickly()
    from onparse.parsing.formats import OnePicture, parse_lines_to

    parser = load_parser(model, layer, tokenizes=not tokenized, **settings)
    if split:
        from onparse.text.language import tokenizer
        from onparse.text.sentences import split_lines

        lines = split_lines(lines, str.split if tokenized else tokenizer(parser.language))
    interactive = not from_arguments and input_path in (None, "-") and sys.stdin.isatty()
    # a progress bar where a person waits on a terminal while lines go to a file or a pipe
    watched = (
        not (interactive or from_arguments or quiet) and sys.stderr.isatty() and (to_file or not sys.stdout.isatty())
    )
    try:
        errors = parse_lines_to(
            output_path if to_file else None,
            parser,
            lines,
            fmt,
            not no_punct,
            tokenized,
            blank_lines=not from_arguments,
            report=lambda position, reason: click.echo(f"onparse: {where}{position + 1}: {reason}", err=True),
            interactive=interactive,
            progress=watched,
            total=(
                count_lines(input_path) if watched and input_path not in (None, "-") and not (shard or split) else None
            ),
            # an empty file is said to be one once, by its first part (the parts' messages add up to the whole's)
            allow_empty=bool(shard) and (shard[0] > 1 or os.path.getsize(input_path) > 0),
        )
    except EOFError:  # nothing was read: the output file, if any, is left as it was
        fail("no input: give a sentence, --input FILE, or lines on stdin", 1)
    except OnePicture as err:  # the file is left as it was
        fail(str(err))
    except OSError as err:  # a full disk, a device that refuses: the target keeps what it held before
        if isinstance(err, BrokenPipeError):
            raise
        if not to_file:
            sys.stdout = open(os.devnull, "w")  # nothing more can be written there, not even at exit
        fail(f"cannot write {output_path or 'standard output'}: {err.strerror or err}", 1)
    sys.exit(1 if errors else 0)


def opened_lines(
    arguments: tuple[str, ...],
    input_path: str | None,
    output_path: str | None,
    shard: tuple[int, int] | None,
    limit: int,
) -> Iterator:
    """The lines to parse (``lines.input_lines``), once the output file (None: stdout) is known to be writable
    without harm to the input or a model; each mistake a one-line failure, before any model loads."""
    from onparse.store.folders import check_output_file
    from onparse.store.shipped import ModelDirError
    from onparse.text.lines import input_lines

    if arguments and input_path:
        fail("give sentences as arguments or with --input, not both")
    if shard and input_path in (None, "-"):
        fail("--shard splits a file: give it with --input FILE (stdin and arguments cannot be split)")
    if output_path is None:
        require_stdout()
    try:
        lines = input_lines(arguments, input_path, shard, limit)
        if output_path is not None:
            check_output_file(output_path, input_path, reads_stdin=input_path in (None, "-") and not arguments)
    except ModelDirError as err:
        fail(str(err))
    except PermissionError as err:  # the machine refuses, as it would a shell's >: exit 1, as any failed write
        fail(f"{err.filename}: {err.strerror}", 1)
    except OSError as err:  # no such input file, no such folder for the output: a mistyped path
        fail(f"{err.filename}: {err.strerror}")
    return lines


parse_options = declared(  # onparse parse
    click.argument("sentences", nargs=-1),
    click.option(
        "--input", "-i", "input_path", metavar="FILE", help="Read sentences from FILE, one per line ('-': stdin)."
    ),
    click.option("--output", "-o", "output_path", metavar="FILE", help="Write trees to FILE instead of stdout."),
    click.option(
        "--format",
        "-f",
        "fmt",
        type=click.Choice(FORMAT_NAMES),
        default="bracket",
        show_default=True,
        help="bracket: one line; mrg: one line with preterminals (EVALB, nltk); json: one object a line; pretty: "
        "drawn; svg: a picture (one SVG a line; -o tree.svg holds one sentence, -o trees.html a page of them).",
    ),
    click.option("--no-punct", is_flag=True, help="Leave punctuation out of the printed tree."),
    click.option(
        "--sentences",
        "split",
        is_flag=True,
        help="Split each line into its sentences (. ! ? before a capitalized word, and 。！？), one tree a "
        "sentence, each line's trees on as many lines (messages then count sentences). Without it a line is one "
        "sentence, and a line that looks like several is said once.",
    ),
    click.option(
        "--tokenized",
        is_flag=True,
        help="Each line (or argument) is already tokens, split at whitespace and taken as given (PTB escapes such as "
        "-LRB- are brackets).",
    ),
    click.option(
        "--shard",
        type=ShardType(),
        help="Parse only the K-th of N equal parts of --input FILE (whole lines); "
        "the N outputs, concatenated in order, are the whole file's.",
    ),
    click.option(
        "--quiet",
        "-q",
        is_flag=True,
        help="No progress bar (one shows, on a terminal, while lines are parsed to a file or pipe).",
    ),
    model_options,
)
