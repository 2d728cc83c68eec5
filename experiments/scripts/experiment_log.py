"""Record a training run in the experiment log, and print the log as a table.

    python experiments/scripts/experiment_log.py runs/exp/NAME --note "what was tried"
    python experiments/scripts/experiment_log.py --table        # the markdown summary for experiments/notebook.md
    python experiments/scripts/experiment_log.py runs/fit/NAME/member-* --prefix fit-NAME/   # a fit's stages

One JSON object a line in experiments/log.jsonl, keyed by run name (a run
recorded again replaces its row): the run's settings, the machine, speed, and
its dev curve (perplexity and sentence F1 per layer at every evaluation), with
the best point by dev F1 (a layer, or the mean of the layers). The runs themselves stay out of git.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

LOG = Path(__file__).resolve().parent.parent / "log.jsonl"


def row(run: Path, note: str, prefix: str = "") -> dict:
    config = json.loads((run / "config.json").read_text())
    curve = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    cards = sorted(run.glob("epoch-*/card.json"))
    hardware = json.loads(cards[-1].read_text()).get("hardware") if cards else None
    last = curve[-1]
    points = [(f1, layer, point["epoch"]) for point in curve for layer, f1 in point.get("dev_f1_per_layer", {}).items()]
    best_f1, best_layer, best_epoch = max(points) if points else (None, None, None)
    return {
        "name": prefix + run.name,
        "recorded": datetime.date.today().isoformat(),
        "note": note,
        "config": config,
        "hardware": hardware,
        "epochs_done": last["epoch"],
        "tokens_seen": last["tokens_seen"],
        "train_minutes": last["train_minutes"],
        "tokens_per_s": round(last["tokens_seen"] / (60 * last["train_minutes"])) if last["train_minutes"] else None,
        "best_dev_f1": {"sentence_f1": best_f1, "layer": best_layer, "epoch": best_epoch},
        "curve": [
            {
                k: point[k]
                for k in ("epoch", "tokens_seen", "train_minutes", "dev_ppl", "dev_f1_per_layer")
                if k in point
            }
            for point in curve
        ],
    }


def read_log() -> list[dict]:
    return [json.loads(line) for line in LOG.read_text().splitlines()] if LOG.is_file() else []


def table(rows: list[dict]) -> str:
    lines = [
        "| run | model (emb/hidden/layers/chunk) | batch x bptt | lr | epochs done | tok/s | best dev F1 (layer, "
        "epoch) | dev ppl at end | note |",
        "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | --- |",
    ]
    for r in rows:
        c, m = r["config"], r["config"]["model"]
        best = r["best_dev_f1"]
        ppl = r["curve"][-1].get("dev_ppl")
        lines.append(
            f"| {r['name']} | {m['embedding_size']}/{m['hidden_size']}/{m['n_layers']}/{m['chunk_size']} | "
            f"{c['batch_size']} x {c['bptt']} | {c['lr']} | {r['epochs_done']} | {r['tokens_per_s']} | "
            f"{best['sentence_f1']:.1f} ({best['layer']}, {best['epoch']}) | {ppl:.1f} | {r['note']} |"
        )
    return "\n".join(lines)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("runs", nargs="*", type=Path)
    options.add_argument("--note", default="")
    options.add_argument("--prefix", default="", help="put before each run's name (a fit's stages: --prefix fit-wsj/)")
    options.add_argument("--table", action="store_true")
    args = options.parse_args()
    rows = {r["name"]: r for r in read_log()}
    for run in args.runs:
        name = args.prefix + run.name
        rows[name] = row(run, args.note or rows.get(name, {}).get("note", ""), args.prefix)
    if args.runs:
        LOG.parent.mkdir(exist_ok=True)
        LOG.write_text("".join(json.dumps(r) + "\n" for r in rows.values()))
    if args.table or not args.runs:
        print(table(list(rows.values())))


if __name__ == "__main__":
    main()
