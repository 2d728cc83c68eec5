"""What early stopping saves, replayed on the shipped models' own training curves (English, German, Chinese).

    python benchmarks/early_stopping.py --out benchmarks/early_stopping.json

Every shipped model and member keeps, in its card, the curve of the run that made it: at each evaluation the text
read, the training minutes, the figure its rule keeps a point by (dev perplexity, or agreement with its teacher)
and, where the run scored gold dev trees for the record, its sentence F1. A run stopped after ``--patience``
passes without a better figure (``TrainConfig.patience``, the rule the training loop applies) would have kept the
best point seen until then. For each patience this prints, by language, the training minutes the runs would have
saved and the F1 of the point each would have kept against the point it kept, over the runs that scored gold
trees. No torch, no training: the curves are the runs' own, so the figures are exact for those runs and seeds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

MODELS = Path(__file__).resolve().parents[1] / "models"
PATIENCES = (0.5, 1.0, 2.0)
RULES = {  # the card's model selection, in words, to the figure it keeps a point by (lower or higher is better)
    "lowest dev perplexity": ("dev_ppl", False),
    "agree best with the teacher": ("teacher_agreement", True),
}


def curves() -> list[dict]:
    """Each shipped run's curve with what it kept by: its card's history, language and rule."""
    found = []
    for card_path in sorted(MODELS.glob("*/card.json")) + sorted(MODELS.glob("*/members/*/card.json")):
        card = json.loads(card_path.read_text())
        history, rule = card.get("history") or [], card.get("model_selection") or ""
        keyed = [figure for words, figure in RULES.items() if words in rule]
        language = (card.get("config") or {}).get("language")
        if len(history) < 2 or not keyed or not language:
            continue
        found.append(
            {
                "run": str(card_path.parent.relative_to(MODELS)),
                "language": language,
                "history": history,
                "key": keyed[0],
                "layer": (card.get("config") or {}).get("default_layer"),
            }
        )
    return found


def replay(run: dict, patience: float | None) -> dict:
    """Where the run would have stopped with ``patience`` (None: its whole schedule), and the point it keeps."""
    (key, higher), best, stop = run["key"], None, run["history"][-1]
    for point in run["history"]:
        value = point.get(key)
        if value is not None and (best is None or (value >= best[key] if higher else value <= best[key])):
            best = point
        if patience is not None and best is not None and point["epoch"] - best["epoch"] >= patience:
            stop = point
            break
    return {"minutes": stop["train_minutes"], "kept": best or stop}


def gold_f1(point: dict, layer: object) -> float | None:
    """The kept point's sentence F1 on gold dev trees (scored for the record), at the run's own readout."""
    figures = point.get("dev_f1_per_layer") or {}
    return figures.get(str(layer), next(iter(figures.values()), None)) if figures else None


def table(runs: list[dict]) -> dict:
    """By language and patience: runs, training minutes in all and saved, and the mean F1 kept against today's."""
    results = {}
    for language in sorted({run["language"] for run in runs}):
        mine = [run for run in runs if run["language"] == language]
        whole = [replay(run, None) for run in mine]
        for patience in PATIENCES:
            stopped = [replay(run, patience) for run in mine]
            scored = [
                (gold_f1(now["kept"], run["layer"]), gold_f1(before["kept"], run["layer"]))
                for run, now, before in zip(mine, stopped, whole)
                if gold_f1(before["kept"], run["layer"]) is not None
            ]
            results[f"{language} patience {patience:g}"] = {
                "runs": len(mine),
                "minutes": round(sum(before["minutes"] for before in whole), 1),
                "saved_minutes": round(sum(b["minutes"] - n["minutes"] for b, n in zip(whole, stopped)), 1),
                "runs_stopped_early": sum(n["minutes"] < b["minutes"] for b, n in zip(whole, stopped)),
                "scored_runs": len(scored),
                "f1_kept": round(sum(now for now, _ in scored) / len(scored), 2) if scored else None,
                "f1_kept_today": round(sum(before for _, before in scored) / len(scored), 2) if scored else None,
                "worst_f1_change": round(min(now - before for now, before in scored), 2) if scored else None,
            }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    results = table(curves())
    print(
        "| language, patience (passes) | runs | training minutes | saved | stopped early | F1 kept (gold runs) "
        "| today | worst change |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, row in results.items():
        print(
            f"| {name} | {row['runs']} | {row['minutes']} | {row['saved_minutes']} | {row['runs_stopped_early']} | "
            f"{row['f1_kept']} ({row['scored_runs']}) | {row['f1_kept_today']} | {row['worst_f1_change']} |"
        )
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
