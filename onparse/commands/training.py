"""What the training commands (train, distill, fit) share between their options and the library: one run's
folder and last line, and what a stop early says (one line, the way to continue, an exit code)."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import click

from onparse.commands.common import (
    check_device,
    fail,
    import_nltk_quickly,
    library_errors,
    refuse_given_options,
    set_threads,
    show_messages,
    typed_command,
)
from onparse.commands.options import (
    MESSAGES,
    THREADS_HELP,
    LayerType,
    Positive,
    PositiveNumber,
    Threads,
    declared,
    family_sizes,
    options_of,
    right_branching_options,
    run_options,
    size_options,
)
from onparse.config import DISTILL_OPTIONS, DistillConfig, TrainConfig
from onparse.families import REGISTRY, OnlstmConfig
from onparse.families.base import section_options
from onparse.plan import FitPlan
from onparse.settings import BACKWARD, FORWARD, Reading, default


@contextmanager
def training_errors(command: str, out_dir: Path) -> Iterator[None]:
    """What every training command says when it stops early: one line, the way to continue, an exit code."""
    from onparse.fit import TimeUp
    from onparse.training import runfolder

    resume = f"onparse {command} --out {out_dir} --resume"
    try:
        with library_errors(runfolder.RunFolderError), signals_interrupt():
            yield
    except TimeUp as stop:
        fail(
            f"--hours reached in stage {stop} (checkpointed){best_so_far(out_dir)}; continue with {resume}",
            3,
            kind="stopped",
        )
    except runfolder.Interrupted as stop:
        fail(f"interrupted by {stop}{best_so_far(out_dir)}; {how_to_continue(out_dir, resume)}", 130)
    except KeyboardInterrupt:  # Ctrl-C outside a training loop (a teacher's parse, a stage's set-up)
        fail(f"interrupted by SIGINT{best_so_far(out_dir)}; {how_to_continue(out_dir, resume)}", 130)


def how_to_continue(out_dir: Path, resume: str) -> str:
    """The resume command where the run folder holds a run to continue; otherwise that nothing was kept."""
    if any((out_dir / name).is_file() for name in ("config.json", "fit.json")):
        return f"continue with: {resume}"
    return "it had written nothing: run the command again"


def best_so_far(out_dir: Path) -> str:
    """Where a stopped run's or fit's best model so far is (``OUT/model``, a fit's naming the stage it is), if any."""
    from onparse.fit.anytime import ANYTIME

    model = out_dir / "model"
    if not (model / "config.json").is_file():
        return ""
    try:  # a message on the way out: a card that does not read names no stage
        stage = json.loads((model / "card.json").read_text()).get(ANYTIME, {}).get("stage")
    except (OSError, ValueError, AttributeError):
        stage = None
    return f"; the best model so far{f' ({stage})' if stage else ''} is in {model}"


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``runfolder.Interrupted`` in the main thread, as Ctrl-C raises KeyboardInterrupt,
    so that a training command stopped outside its loop says how to continue (a loop defers them itself)."""
    from onparse.training.runfolder import Interrupted

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(number, frame) -> None:
        raise Interrupted(f"{signal.Signals(number).name} outside a training loop (the last checkpoint stands)")

    previous = {number: signal.signal(number, interrupt) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_training(
    out_dir: Path,
    resume: bool,
    overwrite: bool,
    epochs: int | None,
    max_minutes: float | None,
    threads: int | None,
    messages: str | None,
    new_config,
    command: str,
) -> None:
    """What ``train`` and ``distill`` share: the run folder (lock, resume, overwrite), errors, the last line."""
    import_nltk_quickly()
    from onparse.training import distributed, runfolder
    from onparse.training.train import selection_rule

    if resume:  # given now, a setting other than how long and how far this call runs would be silently ignored
        refuse_given_options(
            {"out_dir", "resume", "epochs", "max_minutes", "threads", "messages"},
            "--resume continues the run with the settings in its config.json",
            "start another run in another --out",
        )
    set_threads(threads)
    ranks = distributed.from_environment()  # the launch's processes, decided here once and passed down
    with (
        training_errors(command, out_dir),
        runfolder.opened(out_dir, resume, overwrite, new_config, epochs, ranks) as config,
    ):
        check_device(config.device)
        run = runfolder.train(
            config,
            out_dir,
            resume=resume,
            max_minutes=max_minutes,
            console=show_messages(messages),
            command=typed_command(),
            ranks=ranks,
        )
        distributed.leave()  # on an error, the process's exit ends the launch: torchrun stops the other ranks
    if not ranks.main:
        return
    done = f"trained {run.epoch} epochs, {run.tokens_seen:,} tokens, {run.train_seconds / 60:.1f} min"
    if run.stopped_early:
        done += f" (stopped early: no better dev figure for {config.patience:g} passes)"
    if run.history:
        click.echo(f"{done}; best model ({selection_rule(config)}) in {out_dir / 'model'}")
    else:
        click.echo(
            f"{done}; stopped before the first evaluation, so no model yet: "
            f"continue with onparse {command} --out {out_dir} --resume"
        )


def run_fit(plan, out_dir: Path, hours: float | None, threads: int | None, messages: str | None) -> None:
    """``fit``: a new ``plan`` checked before its folder is made (a refused plan leaves nothing behind), or (None)
    the fit in ``out_dir`` resumed; its stages run to the model, or to ``hours``."""
    from onparse.fit import fit, opened_fit
    from onparse.training import distributed

    set_threads(threads)
    if plan is not None:
        try:  # a plan the options make that cannot run is a problem with the command: exit 2, as a bad option's
            plan.check()
        except ValueError as err:
            fail(str(err))
    ranks = distributed.from_environment()  # the launch's processes, decided here once and passed down
    with training_errors("fit", out_dir), opened_fit(out_dir, plan, ranks) as device:
        check_device(device)
        fit(
            plan,
            out_dir,
            resume=plan is None,
            hours=hours,
            console=show_messages(messages),
            command=typed_command(),
            ranks=ranks,
        )
    if ranks.main:
        click.echo(f"fit done: the parser is {out_dir / 'model'} (its card.md lists every stage)")


def by_family(name: str, students: bool = False) -> str:
    """Each registered family's default of a run's setting ``name`` (its ``training``, or its ``student_training``
    for a student), for an option's help: "onlstm 64 streams, pcfg 600 words, ..."."""
    found = []
    for family in REGISTRY.values():
        value = (family.student_training if students else family.training).get(name, default(TrainConfig, name))
        unit = f" {family.batch_unit[students]}" if name == "batch_size" else ""
        found.append(f"{family.name} {value:g}{unit}")
    return ", ".join(found)


train_options = declared(  # onparse train
    run_options,
    options_of(TrainConfig, "family"),
    click.option(
        "--epochs",
        type=Positive,
        help=f"Epochs in the schedule  [default: {by_family('epochs')}; with --resume, the run's own].",
    ),
    options_of(TrainConfig, "evals_per_epoch", "patience"),
    options_of(OnlstmConfig, "vocab_size"),
    size_options(),
    click.option(
        "--batch-size",
        type=Positive,
        help=f"An update's size  [default: {by_family('batch_size')}].",
    ),
    options_of(TrainConfig, "bptt"),
    click.option(
        "--lr",
        type=PositiveNumber,
        help=f"Learning rate  [default: {by_family('lr')}].",
    ),
    click.option(
        "--layer",
        type=LayerType(),
        help="The layer its model directories parse with  [default: 2, the paper's, "
        "or the top of a smaller model; a grammar: spans].",
    ),
    options_of(TrainConfig, "language"),
    options_of(Reading, "punctuation", "direction"),
)


distill_options = declared(  # onparse distill
    run_options,
    click.option(
        "--teacher",
        metavar="PATH",
        help="Model or ensemble whose trees of the training text are learnt  [default: the shipped model].",
    ),
    click.option(
        "--student",
        metavar="PATH",
        required=False,
        help="Model directory to fine-tune (with --from-scratch: whose shape and vocabulary to use).",
    ),
    click.option(
        "--from-scratch", is_flag=True, help="Start from fresh weights (drawn with --seed) instead of the student's."
    ),
    click.option(
        "--passes",
        "epochs",
        type=Positive,
        help="Passes over the teacher's trees  [default: 1; with --resume, the run's own].",
    ),
    click.option(
        "--evals-per-pass",
        "evals_per_epoch",
        type=Positive,
        default=default(FitPlan, "evals_per_epoch"),
        show_default=True,
        help="Dev evaluations (perplexity, agreement with the teacher, a saved model) per pass.",
    ),
    options_of(TrainConfig, "patience"),
    options_of(DistillConfig, *DISTILL_OPTIONS[:3]),
    click.option(
        "--batch-size",
        type=Positive,
        help=f"An update's size  [default: a student of {by_family('batch_size', students=True)}].",
    ),
    click.option(
        "--lr",
        type=PositiveNumber,
        help=f"[default: a student of {by_family('lr', students=True)}].",
    ),
    options_of(DistillConfig, *DISTILL_OPTIONS[3:]),
    click.option(
        "--layer",
        type=LayerType(),
        help="The student's layer that learns the trees and parses  [default: the student's own].",
    ),
    click.option(
        "--direction",
        type=click.Choice([FORWARD, BACKWARD]),
        help="With --from-scratch: read each sentence this way  [default: as the student does].",
    ),
)


fit_options = declared(  # onparse fit
    click.option(
        "--train", "train_paths", multiple=True, help="Training text (.mrg, or one sentence a line); repeatable."
    ),
    click.option("--dev", help="Dev text: perplexity and agreement with each teacher choose every checkpoint."),
    click.option(
        "--dev-gold",
        help="Gold trees: scored at every stage for the record; they choose nothing unless --select-by-gold.",
    ),
    click.option(
        "--out",
        "out_dir",
        type=click.Path(file_okay=False, path_type=Path),
        required=True,
        help="Fit folder: a run folder or ensemble per stage, fit.json, and model/ (the parser).",
    ),
    click.option("--resume", is_flag=True, help="Continue the fit in --out where it stopped, with its own settings."),
    click.option(
        "--hours",
        type=PositiveNumber,
        help="Size the fit to end within this much wall time on this machine (its throughput timed first), and stop "
        "(recorded, resumable) if it runs over.",
    ),
    options_of(FitPlan, "members", "more_members", "rounds", "member_epochs"),
    options_of(OnlstmConfig, "vocab_size"),
    size_options(fit=True),
    options_of(FitPlan, "sentences", "scratch_passes"),
    *(  # each family's section of the plan, as ``--PREFIX-SETTING``
        options_of(family.section, *section_options(family.section), prefix=family.option_prefix)
        for family in REGISTRY.values()
    ),
    options_of(FitPlan, "generations", "stop_agreement", "evals_per_epoch", "patience"),
    right_branching_options("in every ensemble"),
    options_of(
        FitPlan,
        "teacher_prior",
        "layer_rule",
        "layer",
        "vote_layer",
        "keep_evaluations",
        "select_by_gold",
        "language",
        "encoding",
        "tokenized",
        "families",
    ),
    options_of(FitPlan, "seed", "dtype", "device"),
    click.option("--threads", type=Threads, help=THREADS_HELP),
    MESSAGES,
)


def fit_plan(values: dict) -> FitPlan:
    """A plan from the command line's values: each family's section from its ``--PREFIX-SETTING`` values, its members'
    sizes (a varied size given several times: member k takes the k-th, cycling) and its students' where they differ
    (None: the members'); the rest are the plan's own settings."""
    vocab_size = values.pop("vocab_size")
    sizes = family_sizes(values, fit=True)
    sections = {}
    for family in REGISTRY.values():
        section = family.section(
            **{name: values.pop(f"{family.option_prefix}_{name}") for name in section_options(family.section)}
        )
        given = sizes[family.name]
        student = given.pop("student", {})
        section.model = family.settings(
            vocab_size=vocab_size,
            **{name: value[0] if name in family.varied_sizes else value for name, value in given.items()},
        )
        if family.varied_sizes:
            section.variants = {name: list(given[name]) for name in family.varied_sizes if len(given[name]) > 1}
        if student:
            taught = replace(section.model, **{name: value for name, value in student.items() if value is not None})
            section.student_model = taught if taught != section.model else None
        sections[family.name] = section
    return FitPlan(sections=sections, **values)
