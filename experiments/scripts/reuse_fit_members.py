"""Start a fit from another fit's member runs: the same plan and seeds train the same members, so only what is kept
differs.

    python scripts/reuse_fit_members.py runs/fit/wsj-rb runs/fit/wsj-gold --variant gold   # --select-by-gold
    python scripts/reuse_fit_members.py runs/fit/wsj-rb runs/fit/wsj-top --variant top     # --layer-rule fixed, layer 3
    onparse fit --out runs/fit/wsj-gold --resume

A maintainer tool for comparing fits in less time (a member stage is the
slowest part of a fit); the new fit.json says which stages were copied and
keeps their measured minutes. The first fit must keep its evaluations
(`onparse fit --keep-evaluations`): a finished stage otherwise keeps its model alone.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import asdict
from pathlib import Path

from onparse.config import SELECTIONS
from onparse.fit.records import write_record
from onparse.fit.stages import stages
from onparse.plan import FitPlan
from onparse.store.atomic import replacing_file, replacing_folder
from onparse.store.modeldir import copy_model, read_json
from onparse.training import train as training

VARIANTS = {
    "agreement": {"layer_rule": "agreement"},
    "top": {"layer_rule": "fixed", "layer": 3},
    "gold": {"layer_rule": "agreement", "select_by_gold": True},  # gold turns the plan's voter (or one vote) on or off
}


def keep_best(run: Path, config) -> dict:
    """Make a member run's model/ its best point by ``config``'s selection rule (the library's,
    ``train.selection_value``:
    dev F1 for the gold-selected protocol); the point's record."""
    history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    higher = SELECTIONS[config.selection]
    best = (max if higher else min)(history, key=lambda point: training.selection_value(point, config))
    card = {
        **read_json(run / best["model_dir"] / "card.json"),
        "config": config.to_dict(),
        "model_selection": training.selection_rule(config),
        "selected": best,
    }
    with replacing_folder(run / "model") as folder:
        copy_model(run / best["model_dir"], folder)
        (folder / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    with replacing_file(run / "config.json") as file:
        file.write(json.dumps(config.to_dict(), indent=2) + "\n")
    return best


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("source", type=Path)
    options.add_argument("target", type=Path)
    options.add_argument("--variant", choices=VARIANTS, required=True)
    args = options.parse_args()
    record = json.loads((args.source / "fit.json").read_text())
    plan = FitPlan.from_dict({**record["plan"], **VARIANTS[args.variant]})
    command = record["command"].replace(str(args.source), str(args.target))
    if args.variant == "gold":
        command += " --select-by-gold"
    args.target.mkdir(parents=True)
    new = {
        "plan": asdict(plan),
        "command": command,
        "hardware": record["hardware"],
        "stages": [],
        "note": f"member stages copied from {args.source} (the same plan and seeds, so the same training)",
    }
    for stage in stages(plan, args.target):
        if not stage.name.startswith("member-"):
            continue
        run = args.target / stage.name
        shutil.copytree(args.source / stage.name, run)
        if plan.select_by_gold:
            kept = keep_best(run, stage.config)
        else:
            kept = json.loads((run / "model" / "card.json").read_text())["selected"]
        old = next(entry for entry in record["stages"] if entry["name"] == stage.name)
        new["stages"].append(
            {
                "name": stage.name,
                "train_minutes": old["train_minutes"],
                "tokens_seen": old["tokens_seen"],
                "selected": {k: kept[k] for k in ("epoch", "dev_ppl") if k in kept},
                "model_selection": training.selection_rule(stage.config),
                "dev_f1": round(kept["dev_f1_per_layer"][str(plan.layer)], 2),
                "wall_minutes": old["wall_minutes"],
                "copied_from": str(args.source / stage.name),
            }
        )
    write_record(args.target, new)
    print("\n".join(f"{entry['name']}: dev F1 {entry['dev_f1']}" for entry in new["stages"]))


if __name__ == "__main__":
    main()
