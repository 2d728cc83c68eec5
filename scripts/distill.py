"""Distil an ensemble's trees into one ON-LSTM (issue 10): the teacher parses training text, a member learns its trees.

    python scripts/distill.py --train '../shared/data/ptb/wsj/[01][0-9]' --train ../shared/data/ptb/wsj/20 \\
        --dev ../shared/data/ptb/wsj/22 --student models/onlstm-wsj-ensemble/members/small600-1ep \\
        --out runs/distill/NAME --sentences 20000

Only the words of the training files are read (the teacher's own trees are
the targets; no gold tree is used). The teacher's trees are kept in
``--teacher-trees`` (derived from treebank text: it stays under runs/) and
reused by later runs. The run folder holds config.json and history.jsonl in
the shape ``scripts/experiment_log.py`` reads, a model directory at every
evaluation (``epoch-P.PP``, P passes done) and the best by dev F1 in ``model/``.
"""

from __future__ import annotations

import argparse
import os
import json
import random
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import torch
from rich.progress import Progress

from onparse import modeldir
from onparse.distill import examples, n_updates, updates
from onparse.evaluate import dev_f1
from onparse.hardware import describe
from onparse.model import LanguageModel, compute_dtype
from onparse.parse import Parser
from onparse.train import batchify, perplexity, read_corpus, stream
from onparse.treebank import read_gold
from onparse.trees import spans


def teacher_trees(teacher: str, train: list[str], n_sentences: int, seed: int, cache: Path) -> list[dict]:
    """A seeded sample of training sentences (words only) with the teacher's spans, read from ``cache`` when it matches."""
    key = {"teacher": str(Path(teacher).resolve()), "train": train, "sentences": n_sentences, "seed": seed}
    if cache.is_file():
        lines = cache.read_text().splitlines()
        if json.loads(lines[0]) == key:
            return [json.loads(line) for line in lines[1:]]
    words = [s.words for path in train for s in read_gold(path) if s.words]
    random.Random(seed).shuffle(words)
    words = words[:n_sentences]
    parser = Parser.load(teacher, dtype="bf16")
    found = []
    with Progress() as progress:
        task = progress.add_task("teacher parses", total=len(words))
        for sentence, distances in zip(words, parser.distances(words)):
            tree, _ = parser.build(parser.tree_distances(distances))
            found.append({"words": sentence, "spans": sorted(spans(tree))})
            progress.advance(task)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text("\n".join(json.dumps(line) for line in [key] + found) + "\n")
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--teacher", default=os.path.relpath(modeldir.DEFAULT_MODEL), help="the ensemble whose trees are learnt")
    ap.add_argument("--student", required=True, help="model directory to fine-tune (with --from-scratch: whose shape and vocabulary to use)")
    ap.add_argument("--from-scratch", type=int, metavar="SEED", help="start from random weights drawn with this seed instead of the student's")
    ap.add_argument("--train", action="append", required=True, help=".mrg files, folders or globs (words only are read)")
    ap.add_argument("--dev", required=True, help="gold trees for dev F1 and perplexity (section 22)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--teacher-trees", type=Path, default=Path("runs/distill/teacher.jsonl"))
    ap.add_argument("--sentences", type=int, default=20000, help="training sentences the teacher parses")
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=32, help="sentences per update")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--rank-weight", type=float, default=1.0, help="weight of the ranking loss beside the LM loss")
    ap.add_argument("--margin", type=float, default=0.05, help="hinge margin between distances")
    ap.add_argument("--layer", default=None, help="the student's tree layer (1-based or 'mean'); default: its own")
    ap.add_argument("--evals", type=int, default=4, help="dev evaluations per pass")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--seed", type=int, default=1111)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    if args.out.exists():
        raise SystemExit(f"{args.out} exists: choose another --out")
    trees = teacher_trees(args.teacher, args.train, args.sentences, args.seed, args.teacher_trees)
    bundle = modeldir.load(args.student)
    layer = bundle.default_layer if args.layer is None else (args.layer if args.layer == "mean" else int(args.layer))
    if args.from_scratch is not None:
        torch.manual_seed(args.from_scratch)
        bundle.model = LanguageModel(bundle.model.config)
        torch.manual_seed(args.seed)
    model, vocab = bundle.model.train(), bundle.vocab
    data = examples([t["words"] for t in trees], [{tuple(s) for s in t["spans"]} for t in trees], vocab)
    dtype = compute_dtype(args.dtype)
    measure = dev_f1(args.dev)
    dev_data = batchify(stream(read_corpus([args.dev]), vocab), 10)
    config = {**vars(args), "out": str(args.out), "teacher_trees": str(args.teacher_trees), "layer": layer,
              "kind": "distillation", "model": asdict(model.config), "bptt": "sentence"}
    args.out.mkdir(parents=True)
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    total = n_updates(len(data), args.batch_size, args.passes)
    points = {round(total * k / (args.evals * args.passes)) for k in range(1, args.evals * args.passes + 1)}
    history, best, seconds, tokens = [], None, 0.0, 0
    tokens_per_update = sum(len(e.ids) + 1 for e in data) / n_updates(len(data), args.batch_size)

    def evaluate(update: int) -> None:
        nonlocal best
        ppl, _ = perplexity(model, dev_data, 70, dtype)
        f1 = measure(model, vocab)
        epoch = round(update / (total / args.passes), 2)
        record = {"epoch": epoch, "update": update, "tokens_seen": tokens, "train_minutes": round(seconds / 60, 2),
                  "dev_ppl": round(ppl, 2), "dev_f1_per_layer": {k: round(v, 2) for k, v in f1.items()},
                  "lm_loss": round(sum(lm) / max(len(lm), 1), 4), "rank_loss": round(sum(rk) / max(len(rk), 1), 4)}
        history.append(record)
        with (args.out / "history.jsonl").open("a") as out:
            out.write(json.dumps(record) + "\n")
        card = {"distilled_from": args.teacher, "student_start": args.student, "hardware": describe(torch.device("cpu")),
                "selection": f"dev (section 22) sentence F1 of layer {layer}", "dev_f1_per_layer": record["dev_f1_per_layer"]}
        modeldir.save(args.out / f"epoch-{epoch:05.2f}", model, vocab, layer, card)
        score = f1[str(layer)]
        print(f"update {update}/{total}: dev F1 {score:.2f} (layer {layer}), ppl {ppl:.1f}, "
              f"lm {record['lm_loss']}, rank {record['rank_loss']}", flush=True)
        if best is None or score > best:
            best = score
            shutil.copytree(args.out / f"epoch-{epoch:05.2f}", args.out / "model", dirs_exist_ok=True)
        lm.clear(), rk.clear()

    lm: list[float] = []
    rk: list[float] = []
    evaluate(0)
    start = time.perf_counter()
    for update, losses in enumerate(updates(model, data, vocab, layer, batch_size=args.batch_size, lr=args.lr,
                                            rank_weight=args.rank_weight, margin=args.margin, dtype=dtype,
                                            seed=args.seed, passes=args.passes), start=1):
        lm.append(losses.language_model)
        rk.append(losses.ranking)
        tokens += round(tokens_per_update)
        if update in points:
            seconds += time.perf_counter() - start
            evaluate(update)
            start = time.perf_counter()


if __name__ == "__main__":
    main()
