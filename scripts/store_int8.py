"""Store a shipped single model's weights as int8 rows, re-measure it, and record the change in its card.

    python scripts/store_int8.py models/onlstm-wsj --ptb ../shared/data/ptb/wsj
    python scripts/store_int8.py models/onlstm-wsj-ensemble/members/small600-1ep

Issue 10 allows int8 weights where they change F1 by no more than 0.2: both
precisions are scored (section 22 and WSJ10 from sections 00-22, the model's
own layer), the card records the change, and the script refuses (leaving the
bf16 weights in place) where section 22 moves further. A card with dev
figures (a shipped model's) gets the int8 ones; an ensemble holding the model
is re-measured by rebuilding it (scripts/build_ensemble.py --with-model).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ship_model import brief, render

from onparse.evaluate import evaluate_parser
from onparse.modeldir import load, save
from onparse.parse import Parser
from onparse.treebank import read_gold

ALLOWED_CHANGE = 0.2


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("model", type=Path)
    options.add_argument("--ptb", type=Path, default=Path("../shared/data/ptb/wsj"))
    args = options.parse_args()

    bundle = load(args.model)
    card = json.loads((args.model / "card.json").read_text())
    staged = args.model.with_name(args.model.name + ".int8")
    save(staged, bundle.model, bundle.vocab, bundle.default_layer, card, precision="int8")
    dev = {"section_22": list(read_gold(str(args.ptb / "22"))),
           "wsj10_sections_00_22": [s for s in read_gold(str(args.ptb / "[0-2][0-9]")) if len(s.words) <= 10]}
    # the change needs F1 only: the bf16 side skips the untrained control; the int8 side's full figures go in the card
    before = {name: evaluate_parser(Parser(bundle), gold, untrained_seed=None) for name, gold in dev.items()}
    after = {name: brief(evaluate_parser(Parser(load(staged)), gold)) for name, gold in dev.items()}
    change = {name: {k: round(after[name][k] - before[name][k], 3) for k in ("sentence_f1", "corpus_f1")} for name in dev}
    print(json.dumps(change))
    if abs(change["section_22"]["sentence_f1"]) > ALLOWED_CHANGE:
        raise SystemExit(f"int8 moves section 22 by {change['section_22']['sentence_f1']:+.2f}: kept bf16 ({staged} left to inspect)")
    card.update(weights="int8", int8_change_from_bf16=change,
                size_mb=round(sum(p.stat().st_size for p in staged.iterdir()) / 2**20, 1))
    if "dev" in card:
        card["dev"] = after
    (staged / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    written = ["weights.pt", "config.json", "card.json"]
    if (args.model / "card.md").is_file():
        (staged / "card.md").write_text(render(card))
        written.append("card.md")
    for name in written:
        (staged / name).replace(args.model / name)
    for leftover in staged.iterdir():
        leftover.unlink()
    staged.rmdir()


if __name__ == "__main__":
    main()
