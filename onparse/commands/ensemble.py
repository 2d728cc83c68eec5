"""What ``onparse ensemble`` does between its options and the library: the choice it is asked for checked, the vote
built (``onparse.parsing.ensemble.build``), its figures on gold trees where asked, and one line of what was made."""

from __future__ import annotations

from pathlib import Path

import click

from onparse.commands.common import (
    check_device,
    fail,
    import_nltk_quickly,
    library_errors,
    print_gold_scores,
    set_threads,
    typed_command,
)
from onparse.commands.options import (
    THREADS_HELP,
    Encoding,
    Threads,
    declared,
    right_branching_options,
)
from onparse.config import LAYER_RULES, ParseConfig, TrainConfig
from onparse.settings import default


def build_ensemble(
    members: list[str],
    out_dir: Path,
    votes: float,
    link: bool,
    agree_on: str | None,
    choose_on: str | None,
    layer_rule: str,
    keep: int | None,
    dev_gold: str | None,
    encoding: str,
    overwrite: bool,
    device: str,
    threads: int | None,
) -> None:
    """The vote of ``members`` written to ``out_dir``: each member's layer and the members kept chosen on text where
    asked (``--choose-on``, no gold trees), scored on ``dev_gold`` where given; a line on stderr says what was made."""
    import_nltk_quickly()
    from onparse.parsing.ensemble import build, choice_text

    set_threads(threads)
    if agree_on and choose_on:
        fail("--layers-by-agreement TEXT is --choose-on TEXT --layer-rule agreement: give one of them")
    if (keep or layer_rule != "own") and not (choose_on or agree_on):
        fail("--keep and --layer-rule choose on text: give it with --choose-on")
    text, rule = agree_on or choose_on, "agreement" if agree_on else layer_rule
    card: dict = {"command": typed_command(), **({"chosen_on": {"text": text}} if text else {})}
    with library_errors():
        if text:
            check_device(device)
        sentences = choice_text(out_dir, members, text, encoding, not link, overwrite) if text else None
        chosen = build(
            out_dir,
            members,
            rule,
            sentences,
            {"device": device},
            keep,
            right_branching_voter=votes,
            copy=not link,
            overwrite=overwrite,
            card=card,
        )
        if dev_gold:
            print_gold_scores(out_dir, dev_gold, device, encoding)
    kept, layers = [members[m] for m in chosen["members"]], chosen["layers"] if text else None
    click.echo(
        f"ensemble of {len(kept)} in {out_dir}"
        + (f" with a right-branching voter ({votes:g} vote{'' if votes == 1 else 's'})" if votes else "")
        + (f"; layers {', '.join(map(str, layers))} ({rule}) chosen on {text}" if layers else "")
        + (f"; kept {', '.join(kept)}" if keep else ""),
        err=True,
    )  # a message: stdout stays for data


ensemble_options = declared(  # onparse ensemble
    click.argument("members", nargs=-1, required=True),
    click.option(
        "--out",
        "out_dir",
        type=click.Path(file_okay=False, path_type=Path),
        required=True,
        help="The ensemble directory to write.",
    ),
    right_branching_options("too"),
    click.option(
        "--link", is_flag=True, help="Name the members where they stand instead of copying them into OUT/members."
    ),
    click.option(
        "--layers-by-agreement",
        "agree_on",
        metavar="TEXT",
        help="Give each member the layer (or mean) whose trees agree best with the others' vote on this text (no gold "
        "trees).",
    ),
    click.option(
        "--choose-on",
        "choose_on",
        metavar="TEXT",
        help="Unlabelled text (no gold trees) on which --layer-rule and --keep choose.",
    ),
    click.option(
        "--layer-rule",
        type=click.Choice(LAYER_RULES[:3]),
        default=LAYER_RULES[0],
        show_default=True,
        help="With --choose-on: each member's own layer; the layer agreeing best with the others' vote "
        "(as --layers-by-agreement); or the one layer whose trees agree best between the members.",
    ),
    click.option(
        "--keep",
        type=click.IntRange(min=1),
        metavar="K",
        help="With --choose-on: keep the K members whose trees agree best with the others' (a seed that learnt "
        "something else is left out).",
    ),
    click.option(
        "--dev-gold", help="Gold trees: print the ensemble's figures (with and without the voter) beside each member's."
    ),
    click.option(
        "--encoding",
        type=Encoding(),
        default=default(TrainConfig, "encoding"),
        show_default=True,
        help="The encoding of the text and --dev-gold files.",
    ),
    click.option("--overwrite", is_flag=True, help="Replace an ensemble already at --out."),
    click.option(
        "--device", default=ParseConfig.device, show_default=True, help="torch device for --dev-gold, e.g. cuda."
    ),
    click.option("--threads", type=Threads, help=THREADS_HELP),
)


quantize_options = declared(  # onparse quantize
    click.argument("model", metavar="MODEL"),
    click.option(
        "--out",
        "out_dir",
        type=click.Path(file_okay=False, path_type=Path),
        required=True,
        help="The int8 model directory to write.",
    ),
    click.option(
        "--precision",
        type=click.Choice(["int8", "int4-words"]),
        default="int8",
        show_default=True,
        help="int4-words: the word tables (a row per word) in 4 bits.",
    ),
    click.option("--gold", help="Gold trees: score both precisions and record the F1 change in the card."),
    click.option(
        "--encoding", type=Encoding(), default="UTF-8", show_default=True, help="The encoding of the --gold files."
    ),
    click.option("--device", default=ParseConfig.device, show_default=True, help="torch device for --gold, e.g. cuda."),
    click.option("--threads", type=Threads, help=THREADS_HELP),
)
