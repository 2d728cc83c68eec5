"""onparse speed and memory benchmark (`make bench`).

Everything is measured side by side in one run, since these machines are
noisy: ratios compare figures taken minutes apart on the same machine.
Prints a table and writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from onparse.modeldir import load
from onparse.parse import Parser
from onparse.train import hardware
from onparse.treebank import read_gold

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def sentences_for_bench(ptb: Path, count: int) -> tuple[list[list[str]], str]:
    """WSJ sections 21-22 when present, else random vocabulary words at WSJ-like lengths."""
    if (ptb / "22").is_dir():
        words = [list(s.words) for section in ("21", "22") for s in read_gold(str(ptb / section))]
        return [w for w in words if w][:count], "WSJ sections 21-22"
    rng = random.Random(0)
    vocab = load().vocab.words[2:2000]
    return [rng.choices(vocab, k=max(1, int(rng.gauss(23, 11)))) for _ in range(count)], "synthetic, WSJ-like lengths"


def flops_per_token(parser: Parser) -> float:
    """Multiply-adds of the ON-LSTM layers (the distances need no softmax decoder), times two."""
    total = 0
    for layer in parser.model.layers:
        gates = layer.recurrent_proj.weight.shape[0]
        total += 2 * gates * (layer.input_proj.weight.shape[1] + layer.hidden_size)
    return float(total)


def matmul_rate(parser: Parser, dtype: torch.dtype, batch: int) -> float:
    """FLOP/s of the recurrent step's matmul (batch x hidden by hidden x gates), the dominant shape."""
    layer = parser.model.layers[1]
    h = torch.randn(batch, layer.hidden_size, dtype=dtype)
    w = layer.recurrent_proj.weight.detach().to(dtype)
    for _ in range(3):
        torch.nn.functional.linear(h, w)
    runs = 30
    start = time.perf_counter()
    for _ in range(runs):
        torch.nn.functional.linear(h, w)
    seconds = (time.perf_counter() - start) / runs
    return 2 * batch * w.shape[0] * w.shape[1] / seconds


def timed_distances(parser: Parser, sentences: list[list[str]]) -> tuple[float, list]:
    start = time.perf_counter()
    distances = parser.distances(sentences)
    return time.perf_counter() - start, distances


def wall(command: list[str], repeats: int = 3) -> float:
    """Median wall time of a command, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss_mb(command: list[str], stdin_path: Path) -> tuple[float, float]:
    """Peak resident memory (MB) and wall time of a command reading a file on stdin."""
    start = time.perf_counter()
    with stdin_path.open("rb") as source:
        process = subprocess.Popen(command, stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
    if status:
        raise RuntimeError(f"{command} failed with status {status}")
    return usage.ru_maxrss / 1024, time.perf_counter() - start


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--ptb", type=Path, default=Path("../shared/data/ptb/wsj"))
    options.add_argument("--sentences", type=int, default=3000)
    options.add_argument("--single", type=int, default=150, help="sentences parsed one at a time")
    options.add_argument("--lines", type=int, nargs="+", default=[1000, 100000])
    options.add_argument("--out", type=Path, default=Path("benchmarks/results.json"))
    args = options.parse_args()

    results: dict = {"machine": hardware()}
    sentences, source = sentences_for_bench(args.ptb, args.sentences)
    tokens = sum(len(s) + 1 for s in sentences)  # each sentence is read after an <eos>
    results["batch"] = {"source": source, "sentences": len(sentences), "tokens": tokens}

    # 1. Batch parsing against the FLOP floor and against one sentence at a time.
    per_token = flops_per_token(Parser(load()))
    reference = None
    for name, dtype in DTYPES.items():
        parser = Parser(load(), dtype=dtype, batch_size=128)
        seconds, distances = timed_distances(parser, sentences)
        rate = matmul_rate(parser, dtype, 128)
        floor = per_token * tokens / rate
        layer = parser.layer - 1
        entry = {"seconds": seconds, "sentences_per_s": len(sentences) / seconds, "tokens_per_s": tokens / seconds,
                 "matmul_gflops": rate / 1e9, "floor_seconds": floor, "ratio_to_floor": seconds / floor}
        if reference is None:
            reference = distances
        else:
            from onparse.trees import build_tree

            def tree(d):
                return build_tree(d[layer].tolist(), list(range(d.shape[1]))) if d.shape[1] else None

            differ = sum(tree(a) != tree(b) for a, b in zip(reference, distances))
            entry["trees_differing_from_fp32"] = differ
            entry["trees_differing_share"] = differ / len(sentences)
        results["batch"][name] = entry
    single_parser = Parser(load(), batch_size=1)
    subset = sentences[: args.single]
    seconds, _ = timed_distances(single_parser, subset)
    results["batch"]["one_at_a_time_fp32"] = {"sentences": len(subset), "sentences_per_s": len(subset) / seconds}
    results["batch"]["speedup_fp32_batched_over_single"] = results["batch"]["fp32"]["sentences_per_s"] / (len(subset) / seconds)
    results["batch"]["speedup_bf16_batched_over_single"] = results["batch"]["bf16"]["sentences_per_s"] / (len(subset) / seconds)

    # 2. Start-up.
    onparse = [sys.executable, "-m", "onparse"]
    startup = {
        "import_torch_s": wall([sys.executable, "-c", "import torch"]),
        "parse_one_sentence_s": wall(onparse + ["the cat sat on the mat"]),
        "help_s": wall(onparse + ["--help"]),
        "version_s": wall(onparse + ["--version"]),
    }
    startup["parse_over_import_torch"] = startup["parse_one_sentence_s"] / startup["import_torch_s"]
    results["startup"] = startup

    # 3. Memory while streaming files of many lines.
    memory = {}
    rng = random.Random(1)
    words = load().vocab.words[2:3000]
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.lines:
            path = Path(tmp) / f"{count}.txt"
            with path.open("w") as file:
                for _ in range(count):
                    file.write(" ".join(rng.choices(words, k=rng.randint(4, 12))) + "\n")
            rss, seconds = peak_rss_mb(onparse + ["--dtype", "bf16"], path)
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
    for name in DTYPES:
        entry = batch[name]
        table.add_row(f"batch parse {name} ({batch['sentences']} {batch['source']})",
                      f"{entry['sentences_per_s']:.0f} sent/s, {entry['tokens_per_s']:.0f} tok/s; matmul {entry['matmul_gflops']:.0f} GFLOP/s",
                      f"{entry['ratio_to_floor']:.2f}x FLOP floor", "<= 3x")
    table.add_row("batched vs one at a time", f"{batch['one_at_a_time_fp32']['sentences_per_s']:.1f} sent/s single (fp32)",
                  f"{batch['speedup_fp32_batched_over_single']:.1f}x fp32, {batch['speedup_bf16_batched_over_single']:.1f}x bf16", ">= 10x")
    table.add_row("bf16 trees differing from fp32", f"{batch['bf16']['trees_differing_from_fp32']} of {batch['sentences']}",
                  f"{100 * batch['bf16']['trees_differing_share']:.1f}%", "report")
    table.add_row("start-up: one sentence", f"{startup['parse_one_sentence_s']:.2f} s (import torch {startup['import_torch_s']:.2f} s)",
                  f"{startup['parse_over_import_torch']:.2f}x import torch", "<= 1.5x")
    table.add_row("start-up: --help / --version", f"{startup['help_s']:.2f} s / {startup['version_s']:.2f} s", "", "< 0.3 s")
    for count, entry in memory.items():
        table.add_row(f"stream {int(count):,} lines (bf16)", f"peak RSS {entry['peak_rss_mb']:.0f} MB", f"{entry['lines_per_s']:.0f} lines/s", "flat")
    Console().print(table)


if __name__ == "__main__":
    main()
