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


FORMAT_NAMES = ("bracket", "mrg", "json", "pretty")
DTYPE_NAMES = ("fp32", "bf16")  # onparse.model.COMPUTE_DTYPES, named here without importing torch


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


def fail(message: str, code: int = 2) -> None:
    """One line on stderr and a non-zero exit: never a traceback."""
    click.echo(f"onparse: error: {message}", err=True)
    sys.exit(code)


def load_parser(model: str | None, layer: int | None, device: str, dtype: str, batch_size: int, max_words: int):
    import torch

    from onparse.model import COMPUTE_DTYPES
    from onparse.modeldir import ModelDirError
    from onparse.parse import InputError, Parser

    try:
        torch.zeros(1, device=device)
    except (RuntimeError, AssertionError) as err:
        fail(f"device {device!r} is not usable here ({str(err).splitlines()[0]})")
    try:
        return Parser.load(model, layer=layer, device=device, dtype=COMPUTE_DTYPES[dtype],
                           batch_size=batch_size, max_words=max_words)
    except (ModelDirError, InputError) as err:
        fail(str(err))


def model_options(command):
    """Options shared by the commands that run the model."""
    for option in reversed([
        click.option("--model", "model", metavar="PATH", help="Model directory (default: the shipped models/onlstm-wsj)."),
        click.option("--layer", type=int, help="Layer whose distances build the tree (default: the model card's best on dev)."),
        click.option("--device", default="cpu", show_default=True, help="torch device, e.g. cuda."),
        click.option("--dtype", type=click.Choice(DTYPE_NAMES), default="fp32", show_default=True, help="Matmul precision."),
        click.option("--batch-size", type=int, default=256, show_default=True, help="Sentences per batch (packed: finished sentences cost nothing)."),
        click.option("--max-words", type=int, default=400, show_default=True, help="Longest sentence accepted, in words."),
    ]):
        command = option(command)
    return command


@main.command()
@click.argument("sentences", nargs=-1)
@click.option("--input", "-i", "input_path", metavar="FILE", help="Read sentences from FILE, one per line ('-': stdin).")
@click.option("--output", "-o", "output_path", metavar="FILE", help="Write trees to FILE instead of stdout.")
@click.option("--format", "-f", "fmt", type=click.Choice(FORMAT_NAMES), default="bracket", show_default=True,
              help="bracket: one line; mrg: one line with preterminals (EVALB, nltk); json: one object a line; pretty: drawn.")
@click.option("--no-punct", is_flag=True, help="Leave punctuation out of the printed tree.")
@model_options
def parse(sentences, input_path, output_path, fmt, no_punct, model, layer, device, dtype, batch_size, max_words) -> None:
    """Parse sentences given as arguments, or one per line from a file or stdin.

    Reading lines, the output has exactly one line per input line, in order
    (an empty line gives an empty line; a line that cannot be parsed gives an
    empty line and a message on stderr, and the exit code is 1).

    \b
    Examples:
      onparse "The cat sat on the mat."
      onparse --format pretty "Stocks fell sharply on Friday."
      cat sentences.txt | onparse > trees.txt
      onparse --input sentences.txt --output trees.mrg --format mrg --layer 3
    """
    import_nltk_quickly()
    from onparse.formats import FORMATS
    from onparse.parse import InputError

    from_arguments = bool(sentences) and sentences != ("-",)
    if from_arguments and input_path:
        fail("give sentences as arguments or with --input, not both")
    try:
        if from_arguments:
            lines, where = [s.encode("utf-8", "surrogateescape") for s in sentences], "argument "
        elif input_path in (None, "-"):
            lines, where = click.get_binary_stream("stdin"), "line "
        else:
            lines, where = open(input_path, "rb"), f"{input_path}:"
        out = click.open_file(output_path or "-", "w", encoding="utf-8", lazy=False)
    except OSError as err:
        fail(f"{err.filename}: {err.strerror}")
    parser = load_parser(model, layer, device, dtype, batch_size, max_words)
    render = FORMATS[fmt]
    separator = "\n\n" if fmt == "pretty" else "\n"
    interactive = not from_arguments and lines.isatty()
    errors = seen = 0
    try:
        with out:
            for chunk in _chunks(lines, 1 if interactive else batch_size * 4):
                jobs: list[list[str] | None] = []
                for number, raw in chunk:
                    seen += 1
                    try:
                        jobs.append(_tokens_to_parse(raw, parser, empty_ok=not from_arguments))
                    except (UnicodeDecodeError, InputError) as err:
                        reason = "not UTF-8 text" if isinstance(err, UnicodeDecodeError) else str(err)
                        click.echo(f"onparse: {where}{number}: {reason}", err=True)
                        errors += 1
                        jobs.append(None)
                parses = iter(parser.parse_tokens([tokens for tokens in jobs if tokens]))
                for tokens in jobs:
                    out.write((render(next(parses), not no_punct) if tokens else "") + separator)
                out.flush()
    except BrokenPipeError:  # the reader left (`| head`): stop quietly
        sys.stderr.close()
        sys.exit(0)
    if not seen:
        fail("no input: give a sentence, --input FILE, or lines on stdin", 1)
    if errors:
        sys.exit(1)


def _tokens_to_parse(raw: bytes, parser, empty_ok: bool) -> list[str] | None:
    """The tokens of one input line, or None for an empty line where those pass through.

    Raises UnicodeDecodeError or InputError for a line that cannot be parsed.
    """
    from onparse.tokenize import tokenize

    tokens = tokenize(raw.decode("utf-8").rstrip("\r\n"))
    if not tokens and empty_ok:
        return None
    parser.check(tokens)
    return tokens


def _chunks(lines, size: int):
    """Numbered lines in lists of ``size``, read lazily so any input streams."""
    chunk = []
    for number, line in enumerate(lines, 1):
        chunk.append((number, line))
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@main.command("eval")
@click.option("--gold", required=True, metavar="PATH", help=".mrg file, folder of them (recursive), glob, or one-tree-per-line file.")
@click.option("--pred", metavar="FILE", help="Score these trees (one per gold sentence, any parser) instead of running the model.")
@click.option("--max-length", type=int, help="Keep sentences of at most this many words (10 gives WSJ10).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--no-untrained", is_flag=True, help="Skip the untrained-model control (halves the time).")
@model_options
def evaluate(gold, pred, max_length, as_json, no_untrained, model, layer, device, dtype, batch_size, max_words) -> None:
    """Score the parser against gold trees with unlabeled F1 (ON-LSTM protocol).

    Prints every layer of the model beside left-branching, right-branching,
    balanced trees and the same builder on an untrained model of the same
    architecture, with recall per gold label.

    \b
    Examples:
      onparse eval --gold treebank_3/parsed/mrg/wsj/23/
      onparse eval --gold '../shared/data/ptb/wsj/2[2]' --max-length 10 --json
      onparse eval --gold gold.mrg --pred other_parser_trees.txt
    """
    import_nltk_quickly()
    from rich.progress import Progress

    from onparse import evaluate as scoring
    from onparse.treebank import TreebankError, read_gold, read_trees, tree_files

    try:
        sentences = [s for s in read_gold(gold) if max_length is None or len(s.words) <= max_length]
        if not sentences:
            fail(f"{gold}: no gold sentences" + (f" of at most {max_length} words" if max_length else ""), 1)
        if pred:
            trees = [tree for file in tree_files(pred) for tree in read_trees(file)]
            if len(trees) != len(sentences):
                fail(f"{pred}: {len(trees)} trees for {len(sentences)} gold sentences", 1)
            predicted = [scoring.predicted_spans(tree, s.words, source) for (tree, source), s in zip(trees, sentences)]
            result = {**scoring.score(predicted, sentences), "baselines": scoring.baseline_scores(sentences),
                      "protocol": scoring.PROTOCOL}
        else:
            parser = load_parser(model, layer, device, dtype, batch_size, max_words)
            with Progress(console=_stderr_console(), transient=True) as progress:
                result = scoring.evaluate_parser(parser, sentences, None if no_untrained else 0, progress)
            result["model"] = str(parser.bundle.path)
    except (TreebankError, ValueError) as err:
        fail(str(err), 1)
    result.update(gold=gold, max_length=max_length)
    if as_json:
        click.echo(__import__("json").dumps(result, indent=2))
    else:
        _print_scores(result, pred)


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def _print_scores(result: dict, pred: str | None) -> None:
    from rich.console import Console
    from rich.table import Table

    from onparse.evaluate import REPORTED_LABELS

    title = f"{result['gold']}: {result['sentences']} sentences" + (f", at most {result['max_length']} words" if result["max_length"] else "")
    table = Table(title=title)
    for column in ("parser", "sentence F1", "corpus F1", *REPORTED_LABELS):
        table.add_column(column, justify="left" if column == "parser" else "right", no_wrap=True)
    rows = [(pred, result)] if pred else [
        ("ON-LSTM mean of layers" if k == "mean" else f"ON-LSTM layer {k}" + (" (chosen)" if k == str(result["layer"]) else ""), figures)
        for k, figures in result["layers"].items()
    ]
    rows += [(name.replace("_", " "), figures) for name, figures in result["baselines"].items()]
    for name, figures in rows:
        labels = [f"{figures['label_recall'][label]:.1f}" if label in figures["label_recall"] else "-" for label in REPORTED_LABELS]
        table.add_row(name, f"{figures['sentence_f1']:.1f}", f"{figures['corpus_f1']:.1f}", *labels)
    console = Console()
    if not console.is_terminal:  # files and pipes get the whole table, not rich's default 80 columns
        console = Console(width=160)
    console.print(table)
    if "model" in result:
        console.print(f"model: {result['model']}")
    console.print(result["protocol"], style="dim")


@main.command()
@click.option("--train", "train_paths", multiple=True, help=".mrg file, folder or glob, or a text file (one sentence a line); repeatable.")
@click.option("--dev", help="Dev corpus for perplexity (model selection).")
@click.option("--dev-gold", help="Gold trees for dev F1 per layer after each epoch.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True, help="Run folder: checkpoint, per-epoch models, model/ (best).")
@click.option("--resume", is_flag=True, help="Continue the run in --out from its checkpoint.")
@click.option("--epochs", type=int, help="Epochs in the schedule  [default: 7; with --resume, the run's own].")
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
def train(train_paths, out_dir, resume, max_minutes, epochs, **options) -> None:
    """Train an ON-LSTM language model and write a model directory.

    \b
    Examples:
      onparse train --train ../shared/data/ptb/wsj/0[0-9] --train '../shared/data/ptb/wsj/1[0-9]' \\
          --train ../shared/data/ptb/wsj/20 --dev ../shared/data/ptb/wsj/22 --out runs/wsj
      onparse train --out runs/wsj --resume --epochs 12
    """
    from onparse.train import TrainConfig, train as run_training
    from onparse.treebank import TreebankError

    if resume and not (out_dir / "checkpoint.pt").is_file():
        fail(f"{out_dir}: no checkpoint.pt to resume from")
    if not resume and not train_paths:
        fail("give the training corpus with --train")
    config = TrainConfig(train=list(train_paths), epochs=epochs or 7, **options)
    try:
        run = run_training(config, out_dir, resume=resume, max_minutes=max_minutes, epochs=epochs)
    except (TreebankError, ValueError, OSError) as err:
        fail(str(err), 1)
    click.echo(f"trained {run.epoch} epochs, {run.tokens_seen:,} tokens, {run.train_seconds / 60:.1f} min; best model in {out_dir / 'model'}")


if __name__ == "__main__":
    sys.exit(main())
