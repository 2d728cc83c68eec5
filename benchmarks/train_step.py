"""Training-step benchmark: tokens/s at the paper's size, and bf16 against fp32.

    python benchmarks/train_step.py --out benchmarks/train_step.json

1. Throughput of one full step (forward, backward, Adam) at embedding 400,
   hidden 1150, 3 layers, chunk 10, 10k vocabulary, for bf16 and fp32 side by
   side, beside the FLOP floor from a matmul rate measured in the same run.
2. Agreement: the same model, seed and batches trained with bf16 and with fp32
   matmuls; the two loss curves over the first steps should coincide.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from onparse.families import OnlstmConfig
from onparse.families.onlstm.model import OnlstmModel
from onparse.families.onlstm.training import batchify, detach, n_segments, segment, stream
from onparse.hardware import compute_dtype
from onparse.settings import COMPUTE_DTYPES
from onparse.text.corpus import read_corpus
from onparse.text.vocabulary import Vocabulary


def matmul_params(model: OnlstmModel) -> int:
    layers = sum(layer.input_proj.weight.numel() + layer.recurrent_proj.weight.numel() for layer in model.layers)
    return layers + model.embedding.weight.numel()  # the tied decoder


def step_rate(config: OnlstmConfig, dtype: torch.dtype, batch: int, bptt: int, steps: int) -> float:
    torch.manual_seed(0)
    model = OnlstmModel(config)
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    ids = torch.randint(0, config.vocab_size, (bptt + 1, batch))
    seconds = []
    for _ in range(steps + 1):
        start = time.perf_counter()
        output, _, _ = model(ids[:-1], None, dtype)
        loss = model.loss(output, ids[1:], dtype)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        seconds.append(time.perf_counter() - start)
    return batch * bptt / (sum(seconds[1:]) / steps)  # the first step warms up


def matmul_rate(dtype: torch.dtype) -> float:
    a, b = torch.randn(64, 1150, dtype=dtype), torch.randn(1150, 4830, dtype=dtype)
    for _ in range(3):
        a @ b
    start = time.perf_counter()
    for _ in range(30):
        a @ b
    return 30 * 2 * 64 * 1150 * 4830 / (time.perf_counter() - start)


def loss_curves(ptb: Path, steps: int, size: tuple[int, int]) -> dict:
    sentences = read_corpus([str(ptb / "00"), str(ptb / "01")])
    vocab = Vocabulary.build(sentences, 10000)
    data = batchify(stream(sentences, vocab), 32)
    curves = {}
    for name in COMPUTE_DTYPES:
        dtype = compute_dtype(name)
        torch.manual_seed(0)
        config = OnlstmConfig(
            vocab_size=len(vocab),
            embedding_size=size[0],
            hidden_size=size[1],
            chunk_size=10,
            dropout=0,
            dropouth=0,
            dropouti=0,
            dropoute=0,
            wdrop=0,
        )
        model = OnlstmModel(config)
        optimizer = torch.optim.Adam(model.parameters(), 2e-3)
        curve, state = [], None
        for step in range(steps):
            inputs, targets = segment(data, 35, step % (n_segments(data, 35) - 1))
            output, state, _ = model(inputs, detach(state), dtype)
            loss = model.loss(output, targets, dtype)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            optimizer.step()
            curve.append(loss.item())
        curves[name] = curve
    gaps = [abs(a - b) for a, b in zip(curves["bf16"], curves["fp32"])]
    window = 20
    return {
        "steps": steps,
        "model": f"embedding {size[0]}, hidden {size[1]}, batch 32 x 35, WSJ 00-01",
        "fp32_mean_loss_last": sum(curves["fp32"][-window:]) / window,
        "bf16_mean_loss_last": sum(curves["bf16"][-window:]) / window,
        "max_abs_gap": max(gaps),
        "mean_abs_gap": sum(gaps) / len(gaps),
        "curves_every_10": {k: [round(v, 3) for v in c[::10]] for k, c in curves.items()},
    }


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--ptb", type=Path, default=Path("../shared/data/ptb/wsj"))
    options.add_argument("--steps", type=int, default=3)
    options.add_argument("--agreement-steps", type=int, default=300)
    options.add_argument("--out", type=Path, default=Path("benchmarks/train_step.json"))
    args = options.parse_args()
    config = OnlstmConfig(vocab_size=10000)
    flops = 6 * matmul_params(OnlstmModel(config))
    results = {"threads": torch.get_num_threads(), "flop_per_token": flops}
    for name in COMPUTE_DTYPES:
        rate = matmul_rate(compute_dtype(name))
        tokens = step_rate(config, compute_dtype(name), 64, 70, args.steps)
        results[name] = {
            "tokens_per_s": tokens,
            "matmul_gflops": rate / 1e9,
            "floor_tokens_per_s": rate / flops,
            "share_of_floor": tokens * flops / rate,
        }
        print(name, json.dumps(results[name]))
    if (args.ptb / "00").is_dir() and args.agreement_steps:
        results["agreement"] = loss_curves(args.ptb, args.agreement_steps, (200, 400))
        print(json.dumps({k: v for k, v in results["agreement"].items() if k != "curves_every_10"}))
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
