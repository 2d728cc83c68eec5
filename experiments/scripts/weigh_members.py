"""Gold-free weights for a vote's members, measured on gold dev trees: does a rule that sees only the members' own
trees of the dev sentences vote better than equal weights?

    python experiments/scripts/weigh_members.py --gold ../shared/data/negra/valid.penn --encoding latin-1 \
        --vote models/onlstm-negra --add TN1 --add TN2 --cache runs/diag/cache --json runs/diag/de-weights.json

The rules (``RULES``), each a weight per member from the members' trees and families alone:

- ``equal``: one vote each (the shipped votes);
- ``families``: each family's members share one vote, so a family of many members counts as one of few;
- ``pairwise``: a member's mean agreement (sentence F1) with each other member;
- ``others``: a member's agreement with the vote of all the others (leave one out);
- ``others^4``: the same, to the fourth power (the strong members count more);
- ``families x others``: the family share times the agreement with the others' vote.

Gold trees score the votes and choose nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import torch
from diagnose import vote, voters, voters_options

from onparse.parsing.ensemble import pairwise_agreement
from onparse.structures.scoring import score
from onparse.text.treebank import read_gold


def rules(trees: list[list[set]], families: list[str], sentences: list, lengths: list[int]) -> dict[str, list]:
    """Each rule's weights for the members (see the module's docstring)."""
    members = range(len(trees))
    counts = Counter(families)
    table = pairwise_agreement(trees, sentences)
    others = []
    for k in members:
        rest = [trees[j] for j in members if j != k]
        others.append(pairwise_agreement([trees[k], vote(rest, lengths)], sentences)[0][1] / 100)
        print(f"member {k + 1} of {len(trees)}: {100 * others[-1]:.2f} with the others' vote", flush=True)
    share = [1 / counts[f] for f in families]
    return {
        "equal": [1.0 for _ in members],
        "families": share,
        "pairwise": [sum(table[k][j] for j in members if j != k) / (100 * (len(trees) - 1)) for k in members],
        "others": others,
        "others^4": [a**4 for a in others],
        "families x others": [s * a for s, a in zip(share, others)],
    }


def main() -> None:
    args = voters_options(__doc__).parse_args()
    torch.set_num_threads(1)
    gold = [s for s in read_gold(args.gold, encoding=args.encoding) if s.words]
    sentences, lengths = [s.sentence for s in gold], [len(s.words) for s in gold]
    found = voters(args.vote, args.add, gold, args.gold, Path(args.cache) if args.cache else None)
    trees, families = found["trees"], found["families"]
    result: dict = {
        "gold": args.gold,
        "vote": args.vote,
        "added": args.add,
        "members": {
            name: {"family": family, "sentence_f1": round(score(t, gold)["sentence_f1"], 2)}
            for name, family, t in zip(found["names"], families, trees)
        },
        "rules": {},
    }
    for rule, weights in rules(trees, families, sentences, lengths).items():
        f1 = score(vote(trees, lengths, weights), gold)["sentence_f1"]
        result["rules"][rule] = {"sentence_f1": round(f1, 2), "weights": [round(w, 4) for w in weights]}
        print(f"{rule:>18}: {f1:.2f}", flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
