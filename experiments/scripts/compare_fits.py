"""Two fits of one plan side by side, stage by stage: what each stage read, its dev perplexity and wall minutes, and
what the reading and direction stages chose (``python3 experiments/scripts/compare_fits.py FIT_A FIT_B``)."""

import json
import sys
from pathlib import Path


def stages(fit: Path) -> dict:
    record = json.loads((fit / "fit.json").read_text())
    return {entry["name"]: entry for entry in record["stages"]}, record.get("budget", {})


def main(first: str, second: str) -> None:
    (a, budget_a), (b, budget_b) = stages(Path(first)), stages(Path(second))
    for label, budget in (("first", budget_a), ("second", budget_b)):
        rates = {name: round(rate) for name, rate in budget.get("rates", {}).items()}
        print(f"{label}: scale {budget.get('scale')}, choices {budget.get('choices')}, rates {rates}")
    print(f"{'stage':28} {'tokens read':>20} {'dev ppl':>16} {'wall min':>12}  chose")
    for name in [name for name in a if name in b]:
        x, y = a[name], b[name]
        ppl = [round((entry.get("selected") or {}).get("dev_ppl", 0), 2) or "" for entry in (x, y)]
        tokens = [entry.get("tokens_seen", "") for entry in (x, y)]
        minutes = [entry.get("wall_minutes", "") for entry in (x, y)]
        chose = [
            {key: entry[key] for key in ("agreement", "perplexity", "chosen", "out_of_the_vote") if key in entry}
            for entry in (x, y)
        ]
        said = f"{chose[0]} / {'the same' if chose[0] == chose[1] else chose[1]}" if any(chose) else ""
        print(
            f"{name:28} {tokens[0]!s:>9}/{tokens[1]!s:<10} {ppl[0]!s:>7}/{ppl[1]!s:<8} "
            f"{minutes[0]!s:>5}/{minutes[1]!s:<6}  {said}"
        )


if __name__ == "__main__":
    main(*sys.argv[1:3])
