"""The ``onparse`` command: a thin click layer over the library.

Heavy modules (torch, the model) are imported inside commands, so ``--help``
and ``--version`` answer at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from onparse import __version__


class ParseByDefault(click.Group):
    """``onparse "a sentence"`` means ``onparse parse "a sentence"``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["parse", *args]
        return super().parse_args(ctx, args)


@click.group(cls=ParseByDefault, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="onparse")
def main() -> None:
    """Unsupervised constituency parsing with an ON-LSTM language model.

    \b
    Examples:
      onparse "The cat sat on the mat."
      cat sentences.txt | onparse --format mrg > trees.mrg
      onparse eval --gold treebank_3/parsed/mrg/wsj/23/
      onparse train --train wsj/00 --dev wsj/22 --out runs/wsj
    """


@main.command()
@click.option("--train", "train_paths", multiple=True, required=True, help=".mrg file, folder or glob, or a text file (one sentence a line); repeatable.")
@click.option("--dev", help="Dev corpus for perplexity (model selection).")
@click.option("--dev-gold", help="Gold trees for dev F1 per layer after each epoch.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True, help="Run folder: checkpoint, per-epoch models, model/ (best).")
@click.option("--resume", is_flag=True, help="Continue the run in --out from its checkpoint.")
@click.option("--epochs", type=int, default=7, show_default=True)
@click.option("--max-minutes", type=float, help="Stop (with a checkpoint) after this much wall time.")
@click.option("--embedding-size", type=int, default=400, show_default=True)
@click.option("--hidden-size", type=int, default=1150, show_default=True)
@click.option("--layers", "n_layers", type=int, default=3, show_default=True)
@click.option("--chunk-size", type=int, default=10, show_default=True)
@click.option("--batch-size", type=int, default=64, show_default=True)
@click.option("--bptt", type=int, default=70, show_default=True)
@click.option("--lr", type=float, default=2e-3, show_default=True)
@click.option("--vocab-size", type=int, default=10000, show_default=True)
@click.option("--seed", type=int, default=1111, show_default=True)
@click.option("--dtype", type=click.Choice(["bf16", "fp32"]), default="bf16", show_default=True)
def train(train_paths, out_dir, resume, max_minutes, **options) -> None:
    """Train an ON-LSTM language model and write a model directory.

    \b
    Examples:
      onparse train --train ../shared/data/ptb/wsj/0[0-9] --train '../shared/data/ptb/wsj/1[0-9]' \\
          --train ../shared/data/ptb/wsj/20 --dev ../shared/data/ptb/wsj/22 --out runs/wsj
      onparse train --out runs/wsj --train unused --resume
    """
    from onparse.train import TrainConfig, train as run_training

    config = TrainConfig(train=list(train_paths), **options)
    run = run_training(config, out_dir, resume=resume, max_minutes=max_minutes)
    click.echo(f"trained {run.epoch} epochs, {run.tokens_seen:,} tokens, {run.train_seconds / 60:.1f} min; best model in {out_dir / 'model'}")


if __name__ == "__main__":
    sys.exit(main())
