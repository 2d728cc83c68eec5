"""The ``onparse`` command: a thin click layer over the library.

Heavy modules (torch, the model) are imported inside commands, so ``--help``
and ``--version`` answer at once.
"""

from __future__ import annotations

from typing import NoReturn

import click

from onparse import __version__
from onparse.commands.common import (
    ParseByDefault,
    check_device,
    check_named,
    fail,
    import_nltk_quickly,
    library_errors,
    load_parser,
    refuse_given_options,
    run_program,
    set_threads,
)
from onparse.commands.ensemble import ensemble_options, quantize_options
from onparse.commands.evaluate import eval_options
from onparse.commands.options import Sections, family_sizes, fit_sections, right_branching_weight
from onparse.commands.parse import parse_options
from onparse.commands.training import distill_options, fit_options, fit_plan, run_fit, run_training, train_options
from onparse.config import DISTILL_OPTIONS, DistillConfig, TrainConfig, train_config
from onparse.settings import Reading


@click.group(cls=ParseByDefault, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="onparse")
def main() -> None:
    """Unsupervised constituency parsing: binary trees for raw text, learnt without a treebank.

    The default model, pcfg-wsj, is a neural PCFG (English); ON-LSTM language
    models and votes of both load by name (onparse models), and onparse fit
    trains a parser for any language from its raw text.

    \b
    Examples:
      onparse "The cat sat on the mat."
      cat sentences.txt | onparse --format mrg > trees.mrg
      onparse eval --gold treebank_3/parsed/mrg/wsj/23/
      onparse train --train wsj/00 --dev wsj/22 --out runs/wsj
      onparse fit --train corpus.txt --dev dev.txt --out runs/fit --hours 3
    """


@main.command()
@parse_options
def parse(
    sentences, input_path, output_path, fmt, no_punct, tokenized, split, shard, quiet, model, layer, **settings
) -> None:
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
      onparse --tokenized "Stocks fell 5 % -LRB- see chart -RRB- ."
      onparse --sentences -i paragraphs.txt            # a tree for each sentence of each line
      onparse --input big.txt --shard 3/8 > trees.3   # one of 8 jobs (cat trees.1 ... trees.8)
    """
    from onparse.commands.parse import parse_to_output

    parse_to_output(
        sentences, input_path, output_path, fmt, no_punct, tokenized, split, shard, quiet, model, layer, settings
    )


@main.command("models")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def models(as_json) -> None:
    """List the models that load by name here (--model NAME, onparse.load(NAME)).

    \b
    Examples:
      onparse models
      onparse --model onlstm-negra "Die Katze schläft."
    """
    from onparse.parsing.report import model_table
    from onparse.store.modeldir import available_models
    from onparse.store.shipped import DEFAULT_MODEL, install_hint, missing_models

    with library_errors():  # a damaged model: named after the table of the others
        model_table(
            available_models() + missing_models(), DEFAULT_MODEL.name, as_json=as_json, install=install_hint("<name>")
        )


@main.command("eval")
@eval_options
def evaluate(
    gold,
    pred,
    skip_unaligned,
    max_length,
    as_json,
    no_untrained,
    raw,
    word_rule,
    encoding,
    pred_encoding,
    model,
    layer,
    **settings,
) -> None:
    """Score the parser against gold trees with unlabeled F1 (ON-LSTM protocol).

    Prints every layer of the model beside left-branching, right-branching,
    balanced trees and the same builder on an untrained model of the same
    architecture, with recall per gold label.

    \b
    Examples:
      onparse eval --gold treebank_3/parsed/mrg/wsj/23/
      onparse eval --gold '../shared/data/ptb/wsj/2[2]' --max-length 10 --json
      onparse eval --gold gold.mrg --pred other_parser_trees.txt
      onparse eval --gold negra/valid.penn --encoding latin-1 --model onlstm-negra
    """
    check_named([gold, pred], [model] if not pred else [])
    import_nltk_quickly()
    from onparse.parsing.evaluate import evaluate_treebank
    from onparse.parsing.report import print_scores

    if not raw:  # gold sentences are scored whole at any length: a word limit would be silently ignored
        refuse_given_options(
            set(click.get_current_context().params) - {"max_words"},
            "--max-words limits the sentences of --raw text; gold trees are scored whole",
            "keep short ones with --max-length",
        )
    with library_errors():
        result = evaluate_treebank(
            gold,
            lambda: load_parser(model, layer, **settings),
            pred,
            word_rule,
            encoding,
            pred_encoding,
            max_length,
            skip_unaligned,
            raw,
            untrained=not no_untrained,
        )
    print_scores(result, pred, as_json=as_json)


@main.command()
@train_options
def train(
    train_paths,
    dev,
    dev_gold,
    out_dir,
    resume,
    overwrite,
    family,
    epochs,
    max_minutes,
    batch_size,
    lr,
    threads,
    messages,
    layer,
    select_by,
    punctuation,
    direction,
    **settings,
) -> None:
    """Train a member (an ON-LSTM language model, or a neural PCFG) and write a model directory.

    \b
    Examples:
      onparse train --train ../shared/data/ptb/wsj/0[0-9] --train '../shared/data/ptb/wsj/1[0-9]' \\
          --train ../shared/data/ptb/wsj/20 --dev ../shared/data/ptb/wsj/22 --out runs/wsj
      onparse train --out runs/wsj --resume --epochs 12
      onparse train --family pcfg --train corpus.txt --dev dev.txt --out runs/pcfg
    """
    check_named([*train_paths, dev, dev_gold])
    sizes = {**family_sizes(settings)[family], "vocab_size": settings.pop("vocab_size")}

    def new_config() -> TrainConfig:
        if not train_paths:
            fail("give the training corpus with --train")
        return train_config(
            family,
            sizes,
            layer,
            train=list(train_paths),
            dev=dev,
            dev_gold=dev_gold,
            select_by=select_by,
            reading=Reading(punctuation, direction),
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            **settings,
        )

    run_training(out_dir, resume, overwrite, epochs, max_minutes, threads, messages, new_config, "train")


@main.command()
@distill_options
def distill(
    train_paths,
    dev,
    dev_gold,
    select_by,
    out_dir,
    resume,
    overwrite,
    max_minutes,
    threads,
    messages,
    teacher,
    student,
    from_scratch,
    epochs,
    layer,
    direction,
    **settings,
) -> None:
    """Teach a student a teacher's trees (distillation; no gold trees).

    The teacher parses a sample of the training text. An ON-LSTM student
    learns its language model and, through a ranking loss on its distances,
    the teacher's trees; a grammar student (--student a grammar's folder)
    learns the joint likelihood of each sentence and its teacher's tree. model/ is the point whose trees agree best
    with the
    teacher's on the dev text (--select-by-gold: best dev F1 instead).

    \b
    Examples:
      onparse distill --teacher models/onlstm-wsj-gpu-r4 --student runs/wsj/model \\
          --train corpus.txt --dev dev.txt --out runs/student
      onparse distill --teacher runs/fit/ensemble-2 --student runs/wsj/model --from-scratch \\
          --passes 2 --lr 2e-3 --train corpus.txt --dev dev.txt --out runs/scratch
    """
    if direction and not from_scratch:
        fail("--direction is for a student from scratch: a fine-tuned student reads as it learnt to")
    check_named([*train_paths, dev, dev_gold], [teacher, student])
    taught = {name: settings.pop(name) for name in DISTILL_OPTIONS}

    def new_config() -> TrainConfig:
        from onparse.training.distill import distillation_config

        if not train_paths or not student:
            fail("give the training text with --train and the student with --student")
        spec = DistillConfig(teacher=teacher, start=student, from_scratch=from_scratch, **taught)
        return distillation_config(
            spec,
            train=list(train_paths),
            dev=dev,
            dev_gold=dev_gold,
            epochs=epochs or 1,
            default_layer=layer,
            select_by=select_by,
            direction=direction,
            **settings,
        )

    run_training(out_dir, resume, overwrite, epochs, max_minutes, threads, messages, new_config, "distill")


@main.command()
@ensemble_options
def ensemble(
    members,
    out_dir,
    right_branching_voter,
    right_branching_votes,
    link,
    agree_on,
    choose_on,
    layer_rule,
    keep,
    dev_gold,
    encoding,
    overwrite,
    device,
    threads,
) -> None:
    """Make an ensemble: model directories or training runs (their model/) whose trees vote.

    Every member parses with its own layer; the binary tree with the most
    span votes over the members' trees wins (tree averaging).

    \b
    Examples:
      onparse ensemble runs/seed1 runs/seed2 runs/seed3 --out models/mine
      onparse ensemble runs/seed1 runs/seed2 --out models/mine --right-branching-voter --dev-gold wsj/22
      onparse ensemble runs/seed1 runs/seed2 runs/seed3 runs/seed4 --out models/mine --right-branching-votes 2
      onparse ensemble runs/seed1 runs/seed2 runs/seed3 --out models/mine --layers-by-agreement dev.txt
      onparse ensemble runs/fit/member-* --out models/mine --choose-on dev.txt --keep 2
    """
    check_named([agree_on, choose_on, dev_gold], members)
    from onparse.commands.ensemble import build_ensemble

    votes = right_branching_weight(right_branching_voter, right_branching_votes)
    build_ensemble(
        list(members),
        out_dir,
        votes,
        link,
        agree_on,
        choose_on,
        layer_rule,
        keep,
        dev_gold,
        encoding,
        overwrite,
        device,
        threads,
    )


@main.command()
@quantize_options
def quantize(model, out_dir, precision, gold, encoding, device, threads) -> None:
    """Store a model's weight matrices as int8 rows (a scale each): a quarter of fp32, half of bf16; an ensemble
    whole, every member so, with its layers and voter.

    \b
    Examples:
      onparse quantize runs/wsj/model --out models/wsj-int8
      onparse quantize runs/fit/model --out models/fit-int8 --gold ../shared/data/ptb/wsj/22
      onparse quantize runs/fit/zh/model --out models/onlstm-ctb --precision int4-words --gold ctb/30
    """
    check_named([gold], [model])
    import_nltk_quickly()
    from onparse.store.quantize import quantized_copy

    if out_dir.exists():
        fail(f"{out_dir} exists: choose another --out")
    set_threads(threads)
    with library_errors():
        if gold:
            check_device(device)
        change = quantized_copy(model, out_dir, gold, device, encoding, precision)
    click.echo(
        f"{precision} model in {out_dir}"
        + (
            f"; sentence F1 {change['before']:.2f} -> {change['after']:.2f} "
            f"({change['after'] - change['before']:+.2f}) on {gold}"
            if change
            else ""
        )
    )


@main.command(cls=Sections, sections=fit_sections())
@fit_options
def fit(
    train_paths,
    dev,
    dev_gold,
    out_dir,
    resume,
    hours,
    right_branching_voter,
    right_branching_votes,
    threads,
    messages,
    **settings,
) -> None:
    """Train a full parser on raw text, no gold trees: reading probes, members of both families, their vote, students.

    Each stage is recorded in OUT/fit.json as it ends; an interrupted or
    time-limited fit continues with --resume. The parser is OUT/model.

    \b
    Examples:
      onparse fit --train corpus.txt --dev dev.txt --language de --out runs/fit --hours 3
      onparse fit --out runs/fit --resume
      onparse fit --train corpus.txt --dev dev.txt --out runs/mixed --members 6 \\
          --hidden-size 600 --hidden-size 1150 --embedding-size 200 --embedding-size 400 --chunk-size 5 \\
          --chunk-size 10 --chunk-size 20
      onparse fit --train '../shared/data/ptb/wsj/[01]?' --train ../shared/data/ptb/wsj/20 \\
          --dev ../shared/data/ptb/wsj/22 --dev-gold ../shared/data/ptb/wsj/22 --out runs/fit-wsj
      onparse fit --train corpus.txt --dev dev.txt --out runs/both --members 4 --family onlstm --family pcfg --rounds 0
      onparse fit --train corpus.txt --dev dev.txt --out runs/climb --members 4 --family onlstm --family pcfg \\
          --grammar-students 2 --generations 3
      onparse --model runs/fit/model "The cat sat on the mat."
    """
    check_named([*train_paths, dev, dev_gold])
    import_nltk_quickly()
    plan = None
    if resume:  # the fit goes on with its own plan (fit.json): given now, a setting other than where it is, how long
        # this call runs, its threads and messages would be silently ignored
        refuse_given_options(
            {"out_dir", "resume", "hours", "threads", "messages"},
            "--resume continues the fit with the settings in its fit.json",
            "start another fit in another --out",
        )
    else:
        if not train_paths or not dev:
            fail("give the training text with --train and dev text with --dev")
        plan = fit_plan(
            {
                "train": list(train_paths),
                "dev": dev,
                "dev_gold": dev_gold,
                "right_branching_voter": right_branching_weight(right_branching_voter, right_branching_votes),
                **{name: list(value) if isinstance(value, tuple) else value for name, value in settings.items()},
            },
        )
    run_fit(plan, out_dir, hours, threads, messages)


def entry_point() -> NoReturn:
    """The ``onparse`` program (``setup.cfg``'s console script)."""
    run_program(main)


if __name__ == "__main__":
    entry_point()
