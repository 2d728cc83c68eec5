"""What every ``onparse`` command shares: the group that parses by default, one-line failures, parameter types,
the command as typed (for cards), and the startup that keeps ``--help`` fast. ``onparse.cli`` holds the commands.
"""

from __future__ import annotations

import difflib
import io
import json
import logging
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import click

from onparse.hardware import one_line

# Words a user types for a command that has another name; a lone one is that command meant, not a one-word sentence.
COMMAND_WORDS = {
    "version": "onparse --version",
    "help": "onparse --help",
    "evaluate": "onparse eval",
    "score": "onparse eval",
    "list": "onparse models",
}


class ParseByDefault(click.Group):
    """``onparse "a sentence"`` means ``onparse parse "a sentence"``; every command shares the same last resorts."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            word = self._first_word(args)
            if (
                word is not None and args[word] == "parse"
            ):  # `onparse --threads 1 parse "..."`: the command after options
                args = args[:word] + args[word + 1 :]
            elif word is not None and (
                len([a for a in args if not a.startswith("-")]) == 1 or self._foreign_option(args)
            ):
                near = COMMAND_WORDS.get(args[word].lower()) or next(
                    iter(
                        f"onparse {name}"
                        for name in difflib.get_close_matches(args[word], self.commands, n=1, cutoff=0.75)
                    ),
                    None,
                )
                if near:  # `onparse tarin`, `onparse version`, `onparse evl --gold x`: a command meant, not a sentence
                    fail(
                        f"{args[word]!r} is no command: did you mean {near}? (to parse it as a sentence: "
                        f"onparse parse {args[word]})"
                    )
            args = ["parse", *args]
        return super().parse_args(ctx, args)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The group's options and commands, then the options of parsing, the command a bare ``onparse`` runs (the
        ones its messages name: --model, --max-words, --sentences)."""
        super().format_options(ctx, formatter)
        parse = self.commands["parse"]
        sub = click.Context(parse, info_name="parse", parent=ctx)
        rows = [
            row
            for param in parse.get_params(sub)
            if isinstance(param, click.Option)
            and param is not parse.get_help_option(sub)
            and (row := param.get_help_record(sub))
        ]
        with formatter.section("Parse options (onparse [OPTIONS] SENTENCE..., as onparse parse)"):
            formatter.write_dl(rows)

    def _foreign_option(self, args: list[str]) -> bool:
        """Whether an option is given that parse does not have (``--gold``): another command was meant."""
        known = {name for param in self.commands["parse"].params for name in [*param.opts, *param.secondary_opts]}
        return any(arg.startswith("-") and arg != "-" and arg.split("=")[0] not in known for arg in args if arg != "--")

    def _first_word(self, args: list[str]) -> int | None:
        """Where the first argument stands that is no option of parse's, nor an option's value."""
        valued = {
            name
            for param in self.commands["parse"].params
            if isinstance(param, click.Option) and not param.is_flag
            for name in param.opts
        }
        k = 0
        while k < len(args):
            if args[k] == "--":
                return k + 1 if k + 1 < len(args) else None
            if not args[k].startswith("-") or args[k] == "-":
                return k
            k += 2 if args[k] in valued else 1
        return None

    def main(self, *args, **kwargs):
        """Usage errors too are one line on stderr (click's own run to four), with click's exit code 2."""
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.ClickException as err:  # the help of the command it concerns (onparse fit --help)
            context = getattr(err, "ctx", None)
            path = (
                f"onparse {context.command.name}"
                if context and context.parent and context.command.name != "parse"
                else "onparse"
            )
            fail(f"{err.format_message()} (see {path} --help)", err.exit_code)
        except click.exceptions.Abort:  # Ctrl-C outside a command's own handling
            fail("interrupted", 130)
        except OSError as err:  # standard output on a full disk or a device that refuses (help, tables, JSON)
            sys.stdout = open(os.devnull, "w")  # nothing more can be written there, not even at exit
            fail(f"cannot write {err.filename or 'standard output'}: {err.strerror or one_line(err)}", 1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context):
        if sys.stderr is None:  # started with stderr closed: messages go nowhere, exit codes still tell
            sys.stderr = open(os.devnull, "w")
        if sys.stdout is None and ctx.invoked_subcommand != "parse":  # parse may write to --output instead
            require_stdout()
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # the reader left (`| head`): stop quietly, as other filters do
            sys.stdout = open(os.devnull, "w")  # nothing more can be written there, not even at exit
            sys.exit(0)


def import_nltk_quickly() -> None:
    """Import nltk without the scipy.stats it loads for collocation statistics onparse never uses.

    Where scipy is installed, ``import nltk`` takes about a second longer. The
    CLI is a process of its own, so it hides scipy for that one import only;
    library users import nltk as usual.
    """
    if "nltk" in sys.modules:
        return
    had_scipy = "scipy" in sys.modules
    saved = sys.modules.get("scipy")
    sys.modules["scipy"] = None  # type: ignore[assignment]
    try:
        import nltk  # noqa: F401
    finally:
        if had_scipy:
            sys.modules["scipy"] = saved  # type: ignore[assignment]
        else:
            del sys.modules["scipy"]


def fail(message: str, code: int = 2, kind: str = "error") -> NoReturn:
    """One line on stderr and a non-zero exit: never a traceback. ``kind`` says what the line is (an error, or a stop
    the user asked for)."""
    click.echo(f"onparse: {kind}: {message}", err=True)
    sys.exit(code)


def check_device(device: str) -> None:
    """Refuse a device that cannot hold data and give it back (a missing GPU, ``meta``) before any work."""
    from onparse import hardware

    try:
        hardware.check_device(device)
    except ValueError as err:
        fail(str(err))


def set_threads(threads: int | None) -> None:
    """Use ``threads`` CPU threads for torch (``hardware.use_threads``)."""
    from onparse.hardware import use_threads

    use_threads(threads)


def require_stdout() -> None:
    """Refuse to run when standard output is closed (``>&-``) and the result would have nowhere to go."""
    if sys.stdout is None:
        fail("standard output is closed: redirect it to a file, or use --output FILE")


def refuse_given_options(allowed: set[str], why: str, instead: str) -> None:
    """Refuse, naming them, the running command's options typed on its command line other than ``allowed`` (names),
    where they would be silently ignored (``why``); ``instead`` says what to do."""
    ctx = click.get_current_context()
    given = [
        param.opts[0]
        for param in ctx.command.params
        if param.name not in allowed and ctx.get_parameter_source(param.name) == click.core.ParameterSource.COMMANDLINE
    ]
    if given:
        fail(f"{why}: leave out {', '.join(given)} (or {instead})")


def typed_command() -> str:
    """The running command as a user would type it to run it again: its arguments and every option not at its
    default."""
    ctx = click.get_current_context()
    words = ["onparse", ctx.info_name]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value in (None, (), []) or value == param.get_default(ctx):
            continue
        if isinstance(param, click.Argument):
            words += [str(v) for v in value] if isinstance(value, tuple) else [str(value)]
        elif getattr(param, "is_flag", False):
            words.append(param.opts[0] if value else param.secondary_opts[0])
        else:
            words += [word for v in (value if param.multiple else [value]) for word in (param.opts[0], str(v))]
    return shlex.join(words)


def check_named(paths: tuple | list = (), models: tuple | list = ()) -> None:
    """Before torch loads (seconds): a path a user gave (text, trees, a glob) that names nothing, or a model found
    nowhere, refused in one line with exit 2; what the files hold is read later."""
    from onparse.store.shipped import ModelDirError, locate
    from onparse.text.treebank import MissingPath, tree_files

    for path in paths:
        if path and path != "-":
            try:
                tree_files(path)
            except MissingPath as err:
                fail(str(err))
            except ValueError:  # a folder of text, say: read, and judged, later
                pass
    for model in models:
        try:
            found = locate(model) if model is not None else None
        except ModelDirError as err:
            fail(str(err))
        if found is not None and not found.exists():
            fail(f"{found}: no such model directory")


def load_parser(model: str | None, layer: int | None, threads: int | None = None, tokenizes: bool = False, **settings):
    """The parser a command runs, its device checked; a model that cannot load, or (``tokenizes``: it will tokenize
    text) a language whose tokenizer this machine lacks, refused in one line before any text is read."""
    from onparse.parsing.parse import InputError, Parser
    from onparse.store.modeldir import ModelDirError
    from onparse.text.language import LanguageError, tokenizer

    set_threads(threads)
    check_device(settings["device"])
    try:
        parser = Parser.load(model, layer, **settings)
        if tokenizes:
            tokenizer(parser.language)
        return parser
    except InputError as err:
        fail(f"{err} (--{err.setting.replace('_', '-')})" if err.setting else str(err))
    except (ModelDirError, LanguageError) as err:
        fail(str(err))


def show_messages(messages: str | None):
    """What the library logs (``logging.getLogger("onparse")``) goes to stderr, a line each: for people, or with
    ``messages`` "json" each a JSON object (a run's records whole, ``JsonLines``); with "quiet" only warnings.
    Returns the console for progress bars (a silent one unless a person reads the lines)."""

    from rich.console import Console

    handler = CurrentStderr()
    handler.setFormatter(JsonLines() if messages == "json" else logging.Formatter("%(message)s"))
    logger = logging.getLogger("onparse")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.WARNING if messages == "quiet" else logging.INFO)
    return Console(stderr=True, quiet=messages is not None)


class CurrentStderr(logging.StreamHandler):
    """A log line on whatever ``sys.stderr`` is as it is written: while a progress bar is live, rich stands in for it
    and prints the line above the bar, where a stream fixed at the start would write it after the bar, on its line."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # logging sets it once; the stream is always the current one
        pass


class JsonLines(logging.Formatter):
    """A log line as JSON: the record a run or fit logged with it (``extra={"record": ...}``: an evaluation, a
    stage), or its level and message."""

    def format(self, record: logging.LogRecord) -> str:
        found = getattr(record, "record", None)
        shown = found if found is not None else {"level": record.levelname.lower(), "message": record.getMessage()}
        return json.dumps(shown, default=str)


@contextmanager
def library_errors(*refused_folders: type[Exception]) -> Iterator[None]:
    """A library's error as one line and an exit code: a folder that is not what it should be (a model's, or one of
    ``refused_folders``), a path that names nothing or a language no tokenizer here has 2, like a bad option; text,
    trees or files that cannot be read or written 1."""
    from onparse.store.atomic import OutputTaken
    from onparse.store.modeldir import ModelDirError
    from onparse.text.language import LanguageError
    from onparse.text.treebank import MissingPath, TreebankError

    try:
        yield
    except (ModelDirError, OutputTaken, LanguageError, MissingPath, *refused_folders) as err:
        fail(str(err))
    except (TreebankError, ValueError, OSError) as err:
        fail(str(err), 1)


def print_gold_scores(model: Path, gold: str, device: str, encoding: str) -> None:
    """A model's figures on gold trees, each voter's beside the vote's (no untrained control): what a command that
    made a model prints with --dev-gold."""
    from onparse.parsing.evaluate import evaluate_treebank
    from onparse.parsing.report import print_scores

    print_scores(
        evaluate_treebank(
            gold, lambda: load_parser(str(model), None, device=device), encoding=encoding, untrained=False
        ),
        None,
    )


def run_program(main: click.Group) -> NoReturn:
    """The ``onparse`` program: run the command, flush, and leave without tearing the interpreter down.

    Unloading torch's modules at exit takes about 0.3 s, a fifth of a
    one-sentence run; every output file is closed by then and standard
    streams are flushed here. (Tests call ``main`` itself, which returns.)
    """
    for stream in (
        sys.stdout,
        sys.stderr,
    ):  # a stream that cannot encode a token (PYTHONIOENCODING=ascii) shows it escaped
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")
    try:
        main()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
        if isinstance(done.code, str):
            click.echo(done.code, err=True)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader gone away, a stream already closed: nothing left to save
            pass
    os._exit(code)
