"""What every ``onparse`` command shares: the group that parses by default, one-line failures, parameter types,
the command as typed (for cards), and the startup that keeps ``--help`` fast. ``onparse.cli`` holds the commands.
"""

from __future__ import annotations

import difflib
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import NoReturn

import click

from onparse.config import check_encoding, checked_layer, layer_from_key
from onparse.hardware import one_line


# Words a user types for a command that has another name; a lone one is that command meant, not a one-word sentence.
COMMAND_WORDS = {"version": "onparse --version", "help": "onparse --help", "evaluate": "onparse eval",
                 "score": "onparse eval", "list": "onparse models"}


class ParseByDefault(click.Group):
    """``onparse "a sentence"`` means ``onparse parse "a sentence"``; every command shares the same last resorts."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            word = self._first_word(args)
            if word is not None and args[word] == "parse":  # `onparse --threads 1 parse "..."`: the command after options
                args = args[:word] + args[word + 1 :]
            elif word is not None and len([a for a in args if not a.startswith("-")]) == 1:
                near = COMMAND_WORDS.get(args[word].lower()) or next(
                    iter(f"onparse {name}" for name in difflib.get_close_matches(args[word], self.commands, n=1, cutoff=0.75)), None)
                if near:  # `onparse tarin`, `onparse version`: a command meant, not a one-word sentence
                    fail(f"{args[word]!r} is no command: did you mean {near}? (to parse it as a sentence: "
                         f"onparse parse {args[word]})")
            args = ["parse", *args]
        return super().parse_args(ctx, args)

    def _first_word(self, args: list[str]) -> int | None:
        """Where the first argument stands that is no option of parse's, nor an option's value."""
        valued = {name for param in self.commands["parse"].params if isinstance(param, click.Option) and not param.is_flag
                  for name in param.opts}
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
        except click.ClickException as err:
            fail(f"{err.format_message()} (see onparse --help)", err.exit_code)
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


Positive = click.IntRange(min=1)
Threads = click.IntRange(1, 256)  # far more than any machine's cores; a million threads crashes the OpenMP runtime


class LayerType(click.ParamType):
    """A layer number from 1, or "mean" (the distances averaged over layers); the model checks the range."""

    name = "LAYER|mean"

    def convert(self, value, param, ctx):
        try:
            return layer_from_key(value) if isinstance(value, str) else checked_layer(value)
        except ValueError as err:
            self.fail(str(err), param, ctx)


class CheckedText(click.ParamType):
    """Text its class's ``check`` accepts: the check's ValueError is the option's error (a bad option, exit 2)."""

    check: Callable[[str], object]

    def convert(self, value, param, ctx):
        try:
            type(self).check(value)
        except ValueError as err:
            self.fail(str(err), param, ctx)
        return value


class Encoding(CheckedText):
    """A text encoding Python knows (utf-8, latin-1, gb18030, ...)."""

    name = "ENCODING"
    check = staticmethod(check_encoding)


def _tokenizable(code: str) -> None:
    from onparse.language import tokenizer

    tokenizer(code)  # LanguageError, a ValueError, where no tokenizer here knows the code


class LanguageCode(CheckedText):
    """A language code this machine can tokenize text of (en, de, zh, xx, ...): refused as a bad option otherwise."""

    name = "CODE"
    check = staticmethod(_tokenizable)


OPTION_TYPES = {"layer": LayerType, "language": LanguageCode, "encoding": Encoding}  # a setting's kind: its option type


class ShardType(click.ParamType):
    """K/N: the K-th (from 1) of N parts of an input file."""

    name = "K/N"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        part, _, parts = str(value).partition("/")
        if part.isascii() and part.isdigit() and parts.isascii() and parts.isdigit() and 1 <= int(part) <= int(parts):
            return int(part), int(parts)
        self.fail(f"{value!r} is not K/N with 1 <= K <= N (for example 3/8)", param, ctx)


def options_of(settings: type, *names: str) -> Callable[[Callable], Callable]:
    """The command-line options of fields of a settings dataclass, generated from each field (``config.setting``):
    ``--name`` from its name (or its ``option``), its default and its help, and its type from what the field
    says: ``choices`` (repeated where the default is a list), a flag for a bool (``negatable``: with its --no- form),
    a layer, a language, an encoding, or a number from its ``minimum`` (1 unless said) to its ``maximum``; so that a
    setting is declared once."""
    declared = {f.name: f for f in fields(settings)}

    def decorate(command: Callable) -> Callable:
        for name in reversed(names):
            found = declared[name]
            meta = found.metadata
            value = found.default_factory() if found.default is MISSING else found.default
            flag = "--" + name.replace("_", "-")
            declared_as = [meta.get("option", flag), name]
            extra: dict = {}
            kind = meta.get("kind", type(value))
            if isinstance(value, bool):
                declared_as = [f"{declared_as[0]}/--no-{declared_as[0][2:]}" if meta.get("negatable") else declared_as[0], name]
                extra.update({} if meta.get("negatable") else {"is_flag": True})
            elif "choices" in meta:
                extra.update(type=click.Choice(meta["choices"]), multiple=isinstance(value, list))
            elif kind in OPTION_TYPES:
                extra["type"] = OPTION_TYPES[kind]()
            elif kind is float:
                extra["type"] = click.FloatRange(meta.get("minimum", 1), meta.get("maximum"))
            elif kind is int:
                bounds = (meta.get("minimum", 1), meta.get("maximum"))
                extra["type"] = int if bounds == (None, None) else click.IntRange(*bounds)
            command = click.option(*declared_as, default=value, show_default=value is not None, help=meta["help"],
                                   **extra)(command)
        return command
    return decorate


THREADS_HELP = ("CPU threads for torch (default: one per core, or the cores other running work leaves free: "
                "beside another torch job, spinning threads slow both 5-10x; docs/speed.md).")


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


def typed_command() -> str:
    """The running command as a user would type it to run it again: its arguments and every option not at its default."""
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
