"""Training throughput across processes: torchrun ranks x threads against one process, tokens/s of training steps.

    python benchmarks/ddp.py --train '../shared/data/ptb/wsj/0[0-4]' --minutes 2 --out benchmarks/ddp.json

Each layout trains the same model from the same seed for ``--minutes`` of
wall time into a scratch run folder; the figure is the run's own count of
tokens over its seconds of training steps (evaluations and start-up left
out). Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from onparse.hardware import describe

LAYOUTS = [(1, 2), (2, 1)]  # (processes, threads each)
SIZES = {
    "small": ["--embedding-size", "200", "--hidden-size", "600"],
    "paper": ["--embedding-size", "400", "--hidden-size", "1150"],
}


def measure(processes: int, threads: int, size: str, options: argparse.Namespace, folder: Path) -> dict:
    out = folder / f"{size}-{processes}x{threads}"
    launch = (
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(processes),
            "-m",
            "onparse",
        ]
        if processes > 1
        else [sys.executable, "-m", "onparse"]
    )
    command = [
        *launch,
        "train",
        "--train",
        options.train,
        "--out",
        str(out),
        "--threads",
        str(threads),
        "--batch-size",
        "64",
        "--epochs",
        "1",
        "--max-minutes",
        str(options.minutes),
        *SIZES[size],
    ]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    run = torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=True)["run"]
    return {
        "size": size,
        "processes": processes,
        "threads": threads,
        "tokens": run["tokens_seen"],
        "seconds": round(run["train_seconds"], 1),
        "tokens_per_second": round(run["tokens_seen"] / run["train_seconds"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", required=True, help="training text (a glob of .mrg files or a text file)")
    parser.add_argument("--minutes", type=float, default=2.0, help="wall minutes each layout trains")
    parser.add_argument("--sizes", nargs="+", default=["small"], choices=sorted(SIZES))
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = [
            measure(processes, threads, size, options, Path(folder))
            for size in options.sizes
            for processes, threads in LAYOUTS
        ]
    for row in rows:
        print(
            f"{row['size']:6} {row['processes']} process(es) x {row['threads']} thread(s): "
            f"{row['tokens_per_second']:,} tokens/s "
            f"({row['tokens']:,} tokens in {row['seconds']} s of steps)"
        )
    if options.out:
        options.out.write_text(
            json.dumps(
                {"hardware": describe(), "train": options.train, "minutes": options.minutes, "rows": rows}, indent=2
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
