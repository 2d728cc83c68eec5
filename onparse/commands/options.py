"""The command line's options, declared once: option types, options generated from the settings' own declarations
(``options_of``), the groups of options several commands share, and how fit --help is sectioned."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields
from pathlib import Path

import click

from onparse.config import ParseConfig, TrainConfig
from onparse.families import REGISTRY, Family, checked_layer, layer_from_key
from onparse.families.base import section_options
from onparse.settings import check_encoding

# Words a user types for a command that has another name; a lone one is that command meant, not a one-word sentence.


class Sections(click.Command):
    """A command whose --help lists its options in sections, the ones a user needs first (``sections``: a title and
    the parameter names under it); an option no section names is listed last, under "Other options"."""

    def __init__(self, *args, sections: dict[str, tuple[str, ...]], **kwargs):
        super().__init__(*args, **kwargs)
        self.sections = sections

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows: dict[str, list] = {}  # a parameter's options, each its row (--quiet and --json-log set one)
        help_option = self.get_help_option(ctx)
        for param in self.get_params(ctx):
            if row := param.get_help_record(ctx):  # the help option by identity: click names its storage per release
                rows.setdefault("help" if param is help_option else param.name, []).append(row)
        placed = {name for names in self.sections.values() for name in names}
        for title, names in [*self.sections.items(), ("Other options", tuple(n for n in rows if n not in placed))]:
            found = [row for name in names for row in rows.get(name, [])]
            if found:
                with formatter.section(title):
                    formatter.write_dl(found)


def size_key(family: Family, name: str, student: bool = False) -> str:
    """The value name of one of a family's size options (``Family.size_options``): ``NAME``, ``PREFIX_NAME`` with its
    ``size_prefix``, ``student_NAME`` (after the prefix) for its students' sizes."""
    return "_".join(part for part in (family.size_prefix, "student" if student else "", name) if part)


def fit_sections() -> dict[str, tuple[str, ...]]:
    """fit --help's sections: what every fit names first, the members, each family's own part (its sizes, its
    section of the plan and its students' sizes), then the rest by stage."""
    families = {
        family.help_title: (
            *(size_key(family, name) for name in family.size_options),
            *(f"{family.option_prefix}_{name}" for name in section_options(family.section)),
            *(size_key(family, name, student=True) for name in family.student_sizes),
        )
        for family in REGISTRY.values()
    }
    return {
        "What to fit": ("train_paths", "dev", "out_dir", "language", "hours", "resume", "dev_gold"),
        "The text": ("encoding", "tokenized"),
        "Members": (
            "families",
            "members",
            "more_members",
            "rounds",
            "member_epochs",
            "vocab_size",
            "evals_per_epoch",
            "patience",
            "seed",
        ),
        **families,
        "The vote": (
            "right_branching_voter",
            "right_branching_votes",
            "teacher_prior",
            "layer_rule",
            "layer",
            "vote_layer",
        ),
        "Students": ("sentences", "scratch_passes", "generations", "stop_agreement"),
        "Checkpoints": ("keep_evaluations", "select_by_gold"),
        "This machine": ("dtype", "device", "threads", "messages", "help"),
    }


Positive = click.IntRange(min=1)


class Number(click.FloatRange):
    """A number in a range, and a number at all: nan and inf are refused (nan compares false with every bound, so
    a range alone lets it through)."""

    def convert(self, value, param, ctx):
        found = super().convert(value, param, ctx)
        if not math.isfinite(found):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return found


PositiveNumber = Number(min=0, min_open=True)


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


def _language(code: str) -> None:
    from onparse.text.language import check_language

    check_language(code, tokenized=True)  # LanguageError, a ValueError, where no language here has the code


class LanguageCode(CheckedText):
    """A language code (en, de, zh, xx, ...): refused as a bad option otherwise. Whether its tokenizer is installed
    is checked where text is to be tokenized (``TrainConfig.check``, ``FitPlan.check``): --tokenized text needs none."""

    name = "CODE"
    check = staticmethod(_language)


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


VARY = " Repeat to vary the members: member k takes the k-th, cycling (students keep their start's sizes)."


class LiveChoice(click.Choice):
    """A choice among the names a registry holds when the command line is read, so that a family registered at run
    time is one (``families.REGISTRY``)."""

    def __init__(self, registry: Mapping[str, object]):
        super().__init__(())
        self.registry = registry

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self.registry)

    @choices.setter
    def choices(self, value: object) -> None:  # click's own __init__ sets it: the registry stands instead
        pass


def options_of(
    settings: type,
    *names: str,
    defaults: object = None,
    prefix: str = "",
    repeated: tuple[str, ...] | None = None,
    unset: str = "",
) -> Callable[[Callable], Callable]:
    """The command-line options of fields of a settings dataclass, generated from each field (``config.setting``):
    ``--name`` from its name (or its ``option``), its default and its help, and its type from what the field
    says: ``choices`` (repeated where the default is a list), a flag for a bool (``negatable``: with its --no- form),
    a layer, a language, an encoding, or a number from its ``minimum`` (1 unless said) to its ``maximum``; so that a
    setting is declared once. With ``defaults`` (an instance: a fit's members' sizes) each default is that
    instance's value, and the options ``repeated`` names (all of them where None) repeat. With ``prefix`` (a
    family's section of a fit, its students' sizes) each option is ``--PREFIX-NAME`` (unless the field names its
    option) and its value ``PREFIX_NAME``. With ``unset`` each option's value is None unless given, its help saying
    what stands for it (a student's size: its members')."""
    declared = {f.name: f for f in fields(settings)}

    def decorate(command: Callable) -> Callable:
        for name in reversed(names):
            found = declared[name]
            meta = found.metadata
            value = found.default_factory() if found.default is MISSING else found.default
            value = value if defaults is None else getattr(defaults, name)
            value_name = f"{prefix}_{name}" if prefix else name
            flag = "--" + value_name.replace("_", "-")
            declared_as = [meta.get("option", flag), value_name]
            extra: dict = {}
            kind = meta.get("kind", type(value))
            if isinstance(value, bool) or kind is bool:
                declared_as = [
                    f"{declared_as[0]}/--no-{declared_as[0][2:]}" if meta.get("negatable") else declared_as[0],
                    value_name,
                ]
                extra.update({} if meta.get("negatable") else {"is_flag": True})
            elif "choices" in meta:
                choices = meta["choices"]
                live = isinstance(choices, Mapping)  # a registry: what it holds when the command line is read
                extra.update(
                    type=LiveChoice(choices) if live else click.Choice(choices), multiple=isinstance(value, list)
                )
            elif kind in OPTION_TYPES:
                extra["type"] = OPTION_TYPES[kind]()
            elif kind is float:
                extra["type"] = Number(meta.get("minimum", 1), meta.get("maximum"))
            elif kind is int:
                bounds = (meta.get("minimum", 1), meta.get("maximum"))
                extra["type"] = int if bounds == (None, None) else click.IntRange(*bounds)
            if unset:
                value = None
            repeats = defaults is not None and (repeated is None or name in repeated)
            if repeats:
                extra.update(multiple=True)
                value = [value]
            command = click.option(
                *declared_as,
                default=value,
                show_default=value is not None,
                help=meta["help"] + (VARY if repeats else "") + (f"  [default: {unset}]" if unset else ""),
                **extra,
            )(command)
        return command

    return decorate


THREADS_HELP = (
    "CPU threads for torch (default: one per core, or the cores other running work leaves free: "
    "beside another torch job, spinning threads slow both 5-10x; docs/speed.md)."
)


def right_branching_options(where: str):
    """--right-branching-voter and --right-branching-votes, for the commands that make ensembles."""

    def add(command):
        command = click.option(
            "--right-branching-votes",
            "right_branching_votes",
            type=PositiveNumber,
            help="The right-branching tree's votes (the voter's strength; the flag alone gives one, as a "
            "member has), e.g. half the members.",
        )(command)
        return click.option(
            "--right-branching-voter",
            is_flag=True,
            help=f"A right-branching tree votes {where}: a prior for right-branching languages (English), not learnt.",
        )(command)

    return add


def right_branching_weight(voter: bool, votes: float | None) -> float:
    """The right-branching tree's votes from the two options: as many as asked, one for the flag alone, else none."""
    return votes if votes is not None else float(voter)


def model_options(command):
    """Options shared by the commands that run the model; defaults are onparse.config.ParseConfig's."""
    for option in reversed(
        [
            click.option(
                "--model",
                "model",
                metavar="PATH",
                help="Model or ensemble directory, or a shipped model's name (default: models/pcfg-wsj).",
            ),
            click.option(
                "--layer",
                type=LayerType(),
                help="Layer whose distances build the tree, or 'mean' of all layers (default: the model's own).",
            ),
            options_of(ParseConfig, "device", "dtype", "batch_size", "max_words"),
            click.option("--threads", type=Threads, help=THREADS_HELP),
        ]
    ):
        command = option(command)
    return command


def MESSAGES(command):
    """--quiet and --json-log, for the commands that train: what goes to stderr (param ``messages``)."""
    command = click.option(
        "--json-log",
        "messages",
        flag_value="json",
        help="Each evaluation and stage as its JSON record on stderr, a line each (every other message as "
        '{"level", "message"}), no progress bar: for tools that read the log.',
    )(command)
    return click.option(
        "--quiet",
        "-q",
        "messages",
        flag_value="quiet",
        help="Warnings and errors alone: no progress bar, no line per evaluation or stage.",
    )(command)


def run_options(command):
    """Options of the commands that train into a run folder (train, distill)."""
    for option in reversed(
        [
            click.option(
                "--train",
                "train_paths",
                multiple=True,
                help=".mrg file, folder or glob, or a text file (one sentence a line); repeatable.",
            ),
            click.option(
                "--dev",
                help="Dev text (.mrg or one sentence a line): perplexity at each evaluation, and what model/ is "
                "chosen on.",
            ),
            click.option(
                "--dev-gold",
                help="Gold trees: dev F1 per layer at each evaluation, for the record (chooses nothing unless "
                "--select-by-gold).",
            ),
            click.option(
                "--select-by-gold",
                "select_by",
                flag_value="dev_f1",
                default=None,
                help="Keep as model/ the point of best dev F1 on --dev-gold (the original ON-LSTM protocol: not "
                "unsupervised).",
            ),
            click.option(
                "--select-by-perplexity",
                "select_by",
                flag_value="dev_ppl",
                help="Keep as model/ the point of lowest dev perplexity (a student's default: best agreement with "
                "its teacher).",
            ),
            click.option(
                "--out",
                "out_dir",
                type=click.Path(file_okay=False, path_type=Path),
                required=True,
                help="Run folder: config, history, checkpoint, a model per evaluation, model/ (the best point; its "
                "card says by what).",
            ),
            click.option(
                "--resume", is_flag=True, help="Continue the run in --out from its checkpoint, with its own settings."
            ),
            click.option(
                "--overwrite", is_flag=True, help="Start afresh in an --out that already holds a run, deleting it."
            ),
            click.option(
                "--max-minutes", type=PositiveNumber, help="Stop (with a checkpoint) after this much wall time."
            ),
            options_of(TrainConfig, "keep_evaluations"),
            options_of(TrainConfig, "encoding", "tokenized", "seed", "dtype", "device"),
            click.option("--threads", type=Threads, help=THREADS_HELP),
            MESSAGES,
        ]
    ):
        command = option(command)
    return command


FORMAT_NAMES = ("bracket", "mrg", "json", "pretty", "svg")  # parse --format (formats.FORMATS, without torch)


def size_options(fit: bool = False) -> Callable[[Callable], Callable]:
    """Every family's size options (``Family.size_options``); in ``fit``, a fit's members' defaults (each family's
    section's model), its varied sizes repeated, and its students' sizes."""

    def add(command: Callable) -> Callable:
        for family in reversed(REGISTRY.values()):
            if fit and family.student_sizes:
                command = options_of(
                    family.settings, *family.student_sizes, prefix=size_key(family, "student"), unset="the members'"
                )(command)
            members = family.section().model if fit else None
            command = options_of(
                family.settings,
                *family.size_options,
                defaults=members,
                prefix=family.size_prefix,
                repeated=family.varied_sizes,
            )(command)
        return command

    return add


def family_sizes(values: dict, fit: bool = False) -> dict[str, dict]:
    """Each family's sizes, by family name, taken out of a command's ``values`` (``size_options``); in ``fit``, its
    students' sizes too, under ``"student"``."""
    found = {}
    for family in REGISTRY.values():
        found[family.name] = {name: values.pop(size_key(family, name)) for name in family.size_options}
        if fit and family.student_sizes:
            found[family.name]["student"] = {
                name: values.pop(size_key(family, name, student=True)) for name in family.student_sizes
            }
    return found


def declared(*options: Callable) -> Callable[[Callable], Callable]:
    """A command's options in one declaration, in the order its --help lists them."""

    def apply(command: Callable) -> Callable:
        for option in reversed(options):
            command = option(command)
        return command

    return apply
