"""``onparse eval``'s options (its work is ``evaluate.evaluate_treebank``'s)."""

from __future__ import annotations

import click

from onparse.commands.options import (
    Encoding,
    Positive,
    declared,
    model_options,
)

eval_options = declared(  # onparse eval
    click.option(
        "--gold",
        required=True,
        metavar="PATH",
        help=".mrg file, folder of them (recursive), glob, or one-tree-per-line file.",
    ),
    click.option(
        "--pred",
        metavar="FILE",
        help="Score these trees (one per gold sentence, any parser) instead of running the model.",
    ),
    click.option(
        "--skip-unaligned",
        is_flag=True,
        help="With --pred: leave a prediction whose leaves are not its gold "
        "sentence's words out of the score and report it (by default it is an error).",
    ),
    click.option("--max-length", type=Positive, help="Keep sentences of at most this many words (10 gives WSJ10)."),
    click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON."),
    click.option("--no-untrained", is_flag=True, help="Skip the untrained-model control (halves the time)."),
    click.option(
        "--raw",
        is_flag=True,
        help="Score the raw-text path: each gold sentence typed back as text, tokenized and parsed as user input.",
    ),
    click.option(
        "--words",
        "word_rule",
        metavar="RULE",
        help="Which gold leaves are words: ptb, ctb, negra, unicode, or tags:TAG,TAG (the punctuation tags; tags:$,;$. "
        "where a tag holds a comma)  "
        "[default: recognised from the treebank's tags, and named under the table].",
    ),
    click.option(
        "--encoding",
        type=Encoding(),
        default="UTF-8",
        show_default=True,
        help="The encoding of the gold files (NEGRA: latin-1).",
    ),
    click.option(
        "--pred-encoding",
        type=Encoding(),
        default="UTF-8",
        show_default=True,
        help="The encoding of the --pred file (onparse writes UTF-8, whatever the gold's).",
    ),
    model_options,
)
