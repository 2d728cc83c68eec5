"""What ``onparse ensemble`` does between its options and the library: the choice it is asked for checked, the vote
built (``onparse.ensemble.build``), its figures on gold trees where asked, and one line of what was made."""

from __future__ import annotations

from pathlib import Path

import click

from onparse.commandline import (
    check_device,
    fail,
    import_nltk_quickly,
    library_errors,
    print_gold_scores,
    set_threads,
    typed_command,
)


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
    from onparse.ensemble import build, choice_text

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
