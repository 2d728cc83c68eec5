"""The ``onparse`` command: a thin click layer over the library.

Heavy modules (torch, the model) are imported inside commands, so ``--help``
and ``--version`` answer at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import click

from onparse import __version__
from onparse.commandline import (
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
from onparse.commands.training import run_fit, run_training
from onparse.config import DISTILL_OPTIONS, LAYER_RULES, DistillConfig, ParseConfig, TrainConfig, train_config
from onparse.families import GrammarConfig, OnlstmConfig
from onparse.families.pcfg import GRAMMAR_TRAINING
from onparse.options import (
    FIT_SECTIONS,
    MESSAGES,
    THREADS_HELP,
    Encoding,
    LayerType,
    Positive,
    PositiveNumber,
    Sections,
    ShardType,
    Threads,
    model_options,
    options_of,
    right_branching_options,
    right_branching_weight,
    run_options,
)
from onparse.plan import MEMBER_MODEL, VARIED_SIZES, FitPlan, fit_plan
from onparse.settings import BACKWARD, FORWARD, Reading, default


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


FORMAT_NAMES = ("bracket", "mrg", "json", "pretty", "svg")
MODEL_SIZES = ("embedding_size", "hidden_size", "n_layers", "chunk_size")  # an ON-LSTM's options
GRAMMAR_SIZES = ("nonterminals", "preterminals", "symbol_size", "productions", "latent_size")  # a grammar's options


@main.command()
@click.argument("sentences", nargs=-1)
@click.option(
    "--input", "-i", "input_path", metavar="FILE", help="Read sentences from FILE, one per line ('-': stdin)."
)
@click.option("--output", "-o", "output_path", metavar="FILE", help="Write trees to FILE instead of stdout.")
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(FORMAT_NAMES),
    default="bracket",
    show_default=True,
    help="bracket: one line; mrg: one line with preterminals (EVALB, nltk); json: one object a line; pretty: drawn; "
    "svg: a picture (one SVG a line; -o tree.svg holds one sentence, -o trees.html a page of them).",
)
@click.option("--no-punct", is_flag=True, help="Leave punctuation out of the printed tree.")
@click.option(
    "--tokenized",
    is_flag=True,
    help="Each line (or argument) is already tokens, split at whitespace and taken as given (PTB escapes such as "
    "-LRB- are brackets).",
)
@click.option(
    "--shard",
    type=ShardType(),
    help="Parse only the K-th of N equal parts of --input FILE (whole lines); "
    "the N outputs, concatenated in order, are the whole file's.",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="No progress bar (one shows, on a terminal, while lines are parsed to a file or pipe).",
)
@model_options
def parse(sentences, input_path, output_path, fmt, no_punct, tokenized, shard, quiet, model, layer, **settings) -> None:
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
      onparse --input big.txt --shard 3/8 > trees.3   # one of 8 jobs (cat trees.1 ... trees.8)
    """
    from onparse.commands.parse import parse_to_output

    parse_to_output(sentences, input_path, output_path, fmt, no_punct, tokenized, shard, quiet, model, layer, settings)


@main.command("models")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def models(as_json) -> None:
    """List the models that load by name here (--model NAME, onparse.load(NAME)).

    \b
    Examples:
      onparse models
      onparse --model onlstm-negra "Die Katze schläft."
    """
    from onparse.modeldir import available_models
    from onparse.report import model_table
    from onparse.shipped import DEFAULT_MODEL, missing_models

    with library_errors():  # a damaged model: named after the table of the others
        model_table(available_models() + missing_models(), DEFAULT_MODEL.name, as_json=as_json)


@main.command("eval")
@click.option(
    "--gold",
    required=True,
    metavar="PATH",
    help=".mrg file, folder of them (recursive), glob, or one-tree-per-line file.",
)
@click.option(
    "--pred", metavar="FILE", help="Score these trees (one per gold sentence, any parser) instead of running the model."
)
@click.option(
    "--skip-unaligned",
    is_flag=True,
    help="With --pred: leave a prediction whose leaves are not its gold "
    "sentence's words out of the score and report it (by default it is an error).",
)
@click.option("--max-length", type=Positive, help="Keep sentences of at most this many words (10 gives WSJ10).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--no-untrained", is_flag=True, help="Skip the untrained-model control (halves the time).")
@click.option(
    "--raw",
    is_flag=True,
    help="Score the raw-text path: each gold sentence typed back as text, tokenized and parsed as user input.",
)
@click.option(
    "--words",
    "word_rule",
    metavar="RULE",
    help="Which gold leaves are words: ptb, ctb, negra, unicode, or tags:TAG,TAG (the punctuation tags; tags:$,;$. "
    "where a tag holds a comma)  "
    "[default: recognised from the treebank's tags, and named under the table].",
)
@click.option(
    "--encoding",
    type=Encoding(),
    default="UTF-8",
    show_default=True,
    help="The encoding of the gold files (NEGRA: latin-1).",
)
@click.option(
    "--pred-encoding",
    type=Encoding(),
    default="UTF-8",
    show_default=True,
    help="The encoding of the --pred file (onparse writes UTF-8, whatever the gold's).",
)
@model_options
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
    from onparse.evaluate import evaluate_treebank
    from onparse.report import print_scores

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
@run_options
@options_of(TrainConfig, "family")
@click.option(
    "--epochs",
    type=Positive,
    help=f"Epochs in the schedule  [default: {TrainConfig.epochs}, a grammar "
    f"{GRAMMAR_TRAINING['epochs']}; with --resume, the run's own].",
)
@options_of(TrainConfig, "evals_per_epoch")
@options_of(OnlstmConfig, *MODEL_SIZES, "vocab_size")
@options_of(GrammarConfig, *GRAMMAR_SIZES)
@click.option(
    "--batch-size",
    type=Positive,
    help=f"Streams of an update  [default: {TrainConfig.batch_size}; a grammar: "
    f"words of an update, {GRAMMAR_TRAINING['batch_size']}].",
)
@options_of(TrainConfig, "bptt")
@click.option(
    "--lr",
    type=PositiveNumber,
    help=f"Learning rate  [default: {TrainConfig.lr:g}; a grammar {GRAMMAR_TRAINING['lr']:g}].",
)
@click.option(
    "--layer",
    type=LayerType(),
    help="The layer its model directories parse with  [default: 2, the paper's, "
    "or the top of a smaller model; a grammar: spans].",
)
@options_of(TrainConfig, "language")
@options_of(Reading, "punctuation", "direction")
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
    sizes = {name: settings.pop(name) for name in (*MODEL_SIZES, *GRAMMAR_SIZES, "vocab_size")}

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
@run_options
@click.option(
    "--teacher",
    metavar="PATH",
    help="Model or ensemble whose trees of the training text are learnt  [default: the shipped model].",
)
@click.option(
    "--student",
    metavar="PATH",
    required=False,
    help="Model directory to fine-tune (with --from-scratch: whose shape and vocabulary to use).",
)
@click.option(
    "--from-scratch", is_flag=True, help="Start from fresh weights (drawn with --seed) instead of the student's."
)
@click.option(
    "--passes",
    "epochs",
    type=Positive,
    help="Passes over the teacher's trees  [default: 1; with --resume, the run's own].",
)
@click.option(
    "--evals-per-pass",
    "evals_per_epoch",
    type=Positive,
    default=default(FitPlan, "evals_per_epoch"),
    show_default=True,
    help="Dev evaluations (perplexity, agreement with the teacher, a saved model) per pass.",
)
@options_of(DistillConfig, *DISTILL_OPTIONS[:3])
@click.option(
    "--batch-size",
    type=Positive,
    help=f"An update's size  [default: an ON-LSTM student {default(FitPlan, 'student_batch_size')} sentences, "
    f"a grammar {GRAMMAR_TRAINING['batch_size']} words].",
)
@click.option(
    "--lr",
    type=PositiveNumber,
    help=f"[default: an ON-LSTM student {default(FitPlan, 'finetune_lr'):g}, a grammar {GRAMMAR_TRAINING['lr']:g}].",
)
@options_of(DistillConfig, *DISTILL_OPTIONS[3:])
@click.option(
    "--layer",
    type=LayerType(),
    help="The student's layer that learns the trees and parses  [default: the student's own].",
)
@click.option(
    "--direction",
    type=click.Choice([FORWARD, BACKWARD]),
    help="With --from-scratch: read each sentence this way  [default: as the student does].",
)
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
        from onparse.distill import distillation_config

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
@click.argument("members", nargs=-1, required=True)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The ensemble directory to write.",
)
@right_branching_options("too")
@click.option(
    "--link", is_flag=True, help="Name the members where they stand instead of copying them into OUT/members."
)
@click.option(
    "--layers-by-agreement",
    "agree_on",
    metavar="TEXT",
    help="Give each member the layer (or mean) whose trees agree best with the others' vote on this text (no gold "
    "trees).",
)
@click.option(
    "--choose-on",
    "choose_on",
    metavar="TEXT",
    help="Unlabelled text (no gold trees) on which --layer-rule and --keep choose.",
)
@click.option(
    "--layer-rule",
    type=click.Choice(LAYER_RULES[:3]),
    default=LAYER_RULES[0],
    show_default=True,
    help="With --choose-on: each member's own layer; the layer agreeing best with the others' vote "
    "(as --layers-by-agreement); or the one layer whose trees agree best between the members.",
)
@click.option(
    "--keep",
    type=click.IntRange(min=1),
    metavar="K",
    help="With --choose-on: keep the K members whose trees agree best with the others' (a seed that learnt "
    "something else is left out).",
)
@click.option(
    "--dev-gold", help="Gold trees: print the ensemble's figures (with and without the voter) beside each member's."
)
@click.option(
    "--encoding",
    type=Encoding(),
    default=default(TrainConfig, "encoding"),
    show_default=True,
    help="The encoding of the text and --dev-gold files.",
)
@click.option("--overwrite", is_flag=True, help="Replace an ensemble already at --out.")
@click.option("--device", default=ParseConfig.device, show_default=True, help="torch device for --dev-gold, e.g. cuda.")
@click.option("--threads", type=Threads, help=THREADS_HELP)
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
@click.argument("model", metavar="MODEL")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The int8 model directory to write.",
)
@click.option(
    "--precision",
    type=click.Choice(["int8", "int4-words"]),
    default="int8",
    show_default=True,
    help="int4-words: the word tables (a row per word) in 4 bits.",
)
@click.option("--gold", help="Gold trees: score both precisions and record the F1 change in the card.")
@click.option(
    "--encoding", type=Encoding(), default="UTF-8", show_default=True, help="The encoding of the --gold files."
)
@click.option("--device", default=ParseConfig.device, show_default=True, help="torch device for --gold, e.g. cuda.")
@click.option("--threads", type=Threads, help=THREADS_HELP)
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
    from onparse.quantize import quantized_copy

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


@main.command(cls=Sections, sections=FIT_SECTIONS)
@click.option("--train", "train_paths", multiple=True, help="Training text (.mrg, or one sentence a line); repeatable.")
@click.option("--dev", help="Dev text: perplexity and agreement with each teacher choose every checkpoint.")
@click.option(
    "--dev-gold", help="Gold trees: scored at every stage for the record; they choose nothing unless --select-by-gold."
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Fit folder: a run folder or ensemble per stage, fit.json, and model/ (the parser).",
)
@click.option("--resume", is_flag=True, help="Continue the fit in --out where it stopped, with its own settings.")
@click.option(
    "--hours",
    type=PositiveNumber,
    help="Size the fit to end within this much wall time on this machine (its throughput timed first), and stop "
    "(recorded, resumable) if it runs over.",
)
@options_of(FitPlan, "members", "more_members", "rounds", "member_epochs")
@options_of(OnlstmConfig, *VARIED_SIZES, defaults=MEMBER_MODEL)
@options_of(OnlstmConfig, "n_layers", "vocab_size")
@options_of(FitPlan, "sentences", "scratch_passes", "student_directions", "grammar_students")
@click.option(
    "--student-nonterminals", type=Positive, help="The grammar students' nonterminals  [default: the grammar members']."
)
@click.option(
    "--student-preterminals", type=Positive, help="The grammar students' preterminals  [default: the grammar members']."
)
@options_of(FitPlan, "generations", "stop_agreement", "evals_per_epoch")
@right_branching_options("in every ensemble")
@options_of(
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
    "punctuation",
    "directions",
    "probe_tokens",
    "families",
)
@options_of(GrammarConfig, *GRAMMAR_SIZES)
@options_of(FitPlan, "grammar_epochs", "grammar_batch_size", "larger_grammars", "seed", "dtype", "device")
@click.option("--threads", type=Threads, help=THREADS_HELP)
@MESSAGES
def fit(
    train_paths,
    dev,
    dev_gold,
    out_dir,
    resume,
    hours,
    vocab_size,
    student_nonterminals,
    student_preterminals,
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
            {**{name: list(settings.pop(name)) for name in VARIED_SIZES}, "n_layers": [settings.pop("n_layers")]},
            GrammarConfig(vocab_size=vocab_size, **{name: settings.pop(name) for name in GRAMMAR_SIZES}),
            {"nonterminals": student_nonterminals, "preterminals": student_preterminals},
            train=list(train_paths),
            dev=dev,
            dev_gold=dev_gold,
            right_branching_voter=right_branching_weight(right_branching_voter, right_branching_votes),
            **{name: list(value) if isinstance(value, tuple) else value for name, value in settings.items()},
        )
    run_fit(plan, out_dir, hours, threads, messages)


def entry_point() -> NoReturn:
    """The ``onparse`` program (``setup.cfg``'s console script)."""
    run_program(main)


if __name__ == "__main__":
    entry_point()
