"""onparse speed and memory benchmark (`make bench`).

Everything is measured side by side in one run, since these machines are
noisy: ratios compare figures taken minutes apart on the same machine.
Prints a table and writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, TypeVar

import torch
from rich.console import Console
from rich.table import Table

from onparse.hardware import describe
from onparse.kernels import linear
from onparse.parsing.parse import Parser
from onparse.settings import COMPUTE_DTYPES
from onparse.store.modeldir import ModelBundle
from onparse.text.language import Sentence
from onparse.text.treebank import read_gold

T = TypeVar("T")


def sentences_for_bench(ptb: Path, count: int, bundle: ModelBundle) -> tuple[list[Sentence], str]:
    """WSJ sections 21-22 when present, else random vocabulary words at WSJ-like lengths."""
    if (ptb / "22").is_dir():
        found = [s.sentence for section in ("21", "22") for s in read_gold(str(ptb / section))]
        return [s for s in found if s.words][:count], "WSJ sections 21-22"
    rng = random.Random(0)
    vocab = bundle.vocab.words[2:2000]
    return (
        [Sentence.of_tokens(rng.choices(vocab, k=max(1, int(rng.gauss(23, 11))))) for _ in range(count)],
        "synthetic, WSJ-like lengths",
    )


def flops_per_token(parser: Parser) -> float:
    """Multiply-adds of the ON-LSTM layers (the distances need no softmax decoder), times two."""
    return float(sum(2 * weight.numel() for weight in matmul_weights(parser)))


def matmul_weights(parser: Parser) -> list[torch.Tensor]:
    """The weights every token is multiplied by: each layer's input and recurrent projections."""
    return [
        w.detach()
        for layer in parser.members[0].model.layers
        for w in (layer.input_proj.weight, layer.recurrent_proj.weight)
    ]


@torch.no_grad()
def matmul_seconds_per_token(parser: Parser, batch: int) -> float:
    """Time of one token's matmuls when `batch` rows share each call, through the parser's own kernel."""
    total = 0.0
    for weight in matmul_weights(parser):
        rows = torch.randn(batch, weight.shape[1], dtype=weight.dtype, device=weight.device)
        for _ in range(3):
            linear(rows, weight)
        runs = max(5, 3000 // batch)
        synchronize(weight.device)
        start = time.perf_counter()
        for _ in range(runs):
            linear(rows, weight)
        synchronize(weight.device)
        total += (time.perf_counter() - start) / runs / batch
    return total


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work, so that timings are of work done."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_seconds(work: Callable[[], T], repeats: int) -> tuple[float, T]:
    """Median seconds of `work` over `repeats` runs (this machine is noisy), and what its last run gave."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = work()
        times.append(time.perf_counter() - start)
    return statistics.median(times), done


def timed_distances(parser: Parser, sentences: list[Sentence], repeats: int) -> tuple[float, list]:
    """Median seconds to compute the distances, and the distances."""
    return median_seconds(lambda: list(parser.distances(sentences)), repeats)


def timed_trees(parser: Parser, sentences: list[Sentence], repeats: int) -> float:
    """Median seconds to parse whole: each member's output, then the tree (the vote of an ensemble)."""
    return median_seconds(lambda: [parser.build(outputs) for outputs in parser.distances(sentences)], repeats)[0]


def wall(command: list[str], repeats: int = 3) -> float:
    """Median wall time of a command, in seconds."""
    return median_seconds(lambda: subprocess.run(command, check=True, capture_output=True), repeats)[0]


def peak_rss_mb(command: list[str], stdin_path: Path) -> tuple[float, float]:
    """Peak resident memory (MB) and wall time of a command reading a file on stdin."""
    start = time.perf_counter()
    with stdin_path.open("rb") as source:
        process = subprocess.Popen(command, stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
    if status:
        raise RuntimeError(f"{command} failed with status {status}")
    return usage.ru_maxrss / 1024, time.perf_counter() - start


ONPARSE = [sys.executable, "-m", "onparse"]
PREVIOUS_DEFAULT = "onlstm-wsj-mixed"  # the English default until issue 43: two ON-LSTMs and three grammars voting
LANGUAGE_MODELS = ("pcfg-negra", "onlstm-negra", "onlstm-ctb")  # the other shipped models, timed on the same sentences


def startup_figures(repeats: int = 5) -> dict:
    """One sentence end to end, and --help / --version, against a process that only imports torch."""
    startup = {
        "import_torch_s": wall([sys.executable, "-c", "import torch"], repeats),
        "parse_one_sentence_s": wall(ONPARSE + ["the cat sat on the mat"], repeats),
        "help_s": wall(ONPARSE + ["--help"], repeats),
        "version_s": wall(ONPARSE + ["--version"], repeats),
    }
    startup["parse_over_import_torch"] = startup["parse_one_sentence_s"] / startup["import_torch_s"]
    return startup


def scoring_figures(ptb: Path, count: int) -> dict:
    """``onparse eval --gold F --pred F`` on ``count`` one-line treebank trees (sections cycled; written to a
    temporary file)."""
    from onparse.structures.trees import bracketed
    from onparse.text.treebank import read_each

    lines = list(read_each(str(ptb / "[0-2][0-9]"), lambda tree, _: bracketed(tree)))
    with tempfile.TemporaryDirectory() as tmp:
        trees = Path(tmp) / "trees.txt"
        trees.write_text("\n".join(lines[k % len(lines)] for k in range(count)) + "\n")
        seconds = wall(ONPARSE + ["eval", "--gold", str(trees), "--pred", str(trees)], repeats=1)
    return {
        "trees": count,
        "seconds": seconds,
        "goal_s": 30,
        "import_torch_s": wall([sys.executable, "-c", "import torch"]),
    }


def side_by_side(ptb: Path, sentences: list[Sentence], device: str, repeats: int) -> dict:
    """Sentences a second of the default, of the default it replaced and of the German and Chinese models, each parsing
    whole (every member's output, then the tree: the vote of an ensemble) on section 22 (else ``sentences``; English
    words for every model, so the rates compare their work, not their trees), one after the other in one run."""
    section = [s.sentence for s in read_gold(str(ptb / "22"))] if (ptb / "22").is_dir() else sentences
    section = [s for s in section if s.words]
    side = {"sentences": len(section)}
    for name in (None, PREVIOUS_DEFAULT, *LANGUAGE_MODELS):
        side[name or "default"] = len(section) / timed_trees(Parser.load(name, device=device), section, repeats)
    side["speedup"] = side["default"] / side[PREVIOUS_DEFAULT]
    return side


LONG_SENTENCES = {
    "onlstm-wsj": [400, 2000],
    "onlstm-wsj-gpu-r4": [400, 2000],
    PREVIOUS_DEFAULT: [100, 400],
    None: [400, 800],
}


def long_sentence_figures(ptb: Path, repeats: int = 1) -> dict:
    """Seconds for one sentence of many words (section 22's words run together, else a word repeated), per model
    (None: the default) at the lengths it is meant to take: the vote is cubic in length, a grammar's passes too."""
    words = [w for s in read_gold(str(ptb / "22")) for w in s.sentence.word_tokens] if (ptb / "22").is_dir() else []
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model, lengths in LONG_SENTENCES.items():
            for length in lengths:
                text = Path(tmp) / f"{length}.txt"
                text.write_text(" ".join(itertools.islice(itertools.cycle(words or ["word"]), length)) + "\n")
                command = ONPARSE + ["--tokenized", "--max-words", str(length), "-i", str(text), "-o", os.devnull, "-q"]
                figures[f"{model or 'default'} {length} words"] = wall(
                    command + (["--model", model] if model else []), repeats
                )
    return figures


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--ptb", type=Path, default=Path("../shared/data/ptb/wsj"))
    options.add_argument("--sentences", type=int, default=3000)
    options.add_argument("--single", type=int, default=150, help="sentences parsed one at a time (spread over the set)")
    options.add_argument(
        "--device", default="cpu", help="where to parse, e.g. cuda (start-up is always measured on the CPU)"
    )
    options.add_argument("--repeats", type=int, default=3, help="timed runs per figure; the median is kept")
    options.add_argument("--lines", type=int, nargs="+", default=[1000, 100000])
    options.add_argument("--out", type=Path, default=Path("benchmarks/results.json"))
    options.add_argument(
        "--scoring-trees", type=int, default=100_000, help="one-line gold trees scored against themselves"
    )
    options.add_argument(
        "--only",
        choices=["startup", "scoring", "long", "side"],
        help="measure this part alone, print it, write nothing",
    )
    args = options.parse_args()
    if args.only:
        part = {
            "startup": startup_figures,
            "scoring": lambda: scoring_figures(args.ptb, args.scoring_trees),
            "long": lambda: long_sentence_figures(args.ptb),
            "side": lambda: side_by_side(args.ptb, [], args.device, args.repeats),
        }[args.only]()
        print(json.dumps(part, indent=2))
        return

    results: dict = {"machine": describe(args.device)}
    bundle = Parser.load(PREVIOUS_DEFAULT, device=args.device).bundle  # one ON-LSTM (its first member) for part 1
    sentences, source = sentences_for_bench(args.ptb, args.sentences, bundle)
    tokens = sum(len(s.tokens) + 1 for s in sentences)  # each sentence is read after an <eos>
    results["batch"] = {"source": source, "sentences": len(sentences), "tokens": tokens}

    # 1. Batch parsing against the FLOP floor and against one sentence at a time.
    per_token = flops_per_token(Parser(bundle))
    subset = sentences[:: max(1, len(sentences) // args.single)][
        : args.single
    ]  # spread over the set: the same mix of lengths
    subset_tokens = sum(len(s.tokens) + 1 for s in subset)
    reference = None
    for name in COMPUTE_DTYPES:
        parser = Parser(bundle, dtype=name, device=args.device)
        seconds, distances = timed_distances(parser, sentences, args.repeats)
        single_seconds, _ = timed_distances(
            Parser(bundle, dtype=name, device=args.device, batch_size=1), subset, args.repeats
        )
        floor = tokens * matmul_seconds_per_token(parser, parser.batch_size)
        entry = {
            "batch_size": parser.batch_size,
            "seconds": seconds,
            "sentences_per_s": len(sentences) / seconds,
            "tokens_per_s": tokens / seconds,
            "matmul_gflops": per_token * tokens / floor / 1e9,
            "floor_seconds": floor,
            "ratio_to_floor": seconds / floor,
            "one_at_a_time": {
                "sentences": len(subset),
                "sentences_per_s": len(subset) / single_seconds,
                "tokens_per_s": subset_tokens / single_seconds,
            },
        }
        # compared per token, so that the sample's sentence lengths cannot tilt the ratio
        entry["speedup_over_one_at_a_time"] = entry["tokens_per_s"] / entry["one_at_a_time"]["tokens_per_s"]
        if reference is None:
            reference = distances
        else:
            differ = sum(parser.build(a).tree != parser.build(b).tree for a, b in zip(reference, distances))
            entry["trees_differing_from_fp32"] = differ
            entry["trees_differing_share"] = differ / len(sentences)
        results["batch"][name] = entry
    results["batch"]["speedup_bf16_batched_over_fp32_one_at_a_time"] = (
        results["batch"]["bf16"]["tokens_per_s"] / results["batch"]["fp32"]["one_at_a_time"]["tokens_per_s"]
    )

    # 1b. The default beside the default it replaced, whole (members, vote, tree), on section 22.
    results["side_by_side"] = side_by_side(args.ptb, sentences, args.device, args.repeats)

    # 2. Start-up, and scoring a large file of gold trees.
    results["startup"] = startup_figures()
    if args.ptb.is_dir():
        results["scoring"] = scoring_figures(args.ptb, args.scoring_trees)
    onparse = ONPARSE

    # 3. Memory while streaming files of many lines.
    memory = {}
    rng = random.Random(1)
    words = bundle.vocab.words[2:3000]
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.lines:
            path = Path(tmp) / f"{count}.txt"
            with path.open("w") as file:
                for _ in range(count):
                    file.write(" ".join(rng.choices(words, k=rng.randint(4, 12))) + "\n")
            rss, seconds = peak_rss_mb(onparse + ["--dtype", "bf16", "--device", args.device], path)
            memory[str(count)] = {"peak_rss_mb": rss, "seconds": seconds, "lines_per_s": count / seconds}
    results["memory"] = memory

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    report(results)


def report(results: dict) -> None:
    batch, startup, memory = results["batch"], results["startup"], results["memory"]
    table = Table(title=f"onparse benchmark — {results['machine']}")
    for column in ("target", "figure", "ratio", "goal"):
        table.add_column(column)
    for name in COMPUTE_DTYPES:
        entry = batch[name]
        table.add_row(
            f"batch parse {name} ({batch['sentences']} {batch['source']}, batches of {entry['batch_size']})",
            f"{entry['sentences_per_s']:.0f} sent/s, {entry['tokens_per_s']:.0f} tok/s; matmuls "
            f"{entry['matmul_gflops']:.0f} GFLOP/s",
            f"{entry['ratio_to_floor']:.2f}x FLOP floor",
            "<= 3x",
        )
    for name in COMPUTE_DTYPES:
        entry = batch[name]
        single = entry["one_at_a_time"]
        table.add_row(
            f"batched vs one at a time, {name} ({single['sentences']} sentences)",
            f"{single['sentences_per_s']:.1f} sent/s, {single['tokens_per_s']:.0f} tok/s one at a time",
            f"{entry['speedup_over_one_at_a_time']:.1f}x",
            ">= 10x",
        )
    table.add_row(
        "bf16 batched vs fp32 one at a time",
        "",
        f"{batch['speedup_bf16_batched_over_fp32_one_at_a_time']:.1f}x",
        ">= 10x",
    )
    table.add_row(
        "bf16 trees differing from fp32",
        f"{batch['bf16']['trees_differing_from_fp32']} of {batch['sentences']}",
        f"{100 * batch['bf16']['trees_differing_share']:.1f}%",
        "report",
    )
    side = results["side_by_side"]
    table.add_row(
        f"the default beside {PREVIOUS_DEFAULT}, fp32 ({side['sentences']} sentences, whole parses)",
        f"{side['default']:.0f} sent/s against {side[PREVIOUS_DEFAULT]:.0f}",
        f"{side['speedup']:.1f}x",
        ">= 2x",
    )
    table.add_row(
        "the German and Chinese models, the same sentences and run",
        ", ".join(f"{name} {side[name]:.0f}" for name in LANGUAGE_MODELS if name in side) + " sent/s",
        "",
        "report",
    )
    table.add_row(
        "start-up: one sentence",
        f"{startup['parse_one_sentence_s']:.2f} s (import torch {startup['import_torch_s']:.2f} s)",
        f"{startup['parse_over_import_torch']:.2f}x import torch",
        "<= 1.5x",
    )
    table.add_row(
        "start-up: --help / --version", f"{startup['help_s']:.2f} s / {startup['version_s']:.2f} s", "", "< 0.3 s"
    )
    if "scoring" in results:
        scoring = results["scoring"]
        table.add_row(
            f"eval --pred: {scoring['trees']:,} one-line trees against themselves",
            f"{scoring['seconds']:.1f} s",
            f"import torch {scoring['import_torch_s']:.2f} s",
            f"<= {scoring['goal_s']} s",
        )
    for count, entry in memory.items():
        table.add_row(
            f"stream {int(count):,} lines (bf16)",
            f"peak RSS {entry['peak_rss_mb']:.0f} MB",
            f"{entry['lines_per_s']:.0f} lines/s",
            "flat",
        )
    Console(width=None if sys.stdout.isatty() else 170).print(table)


if __name__ == "__main__":
    main()
