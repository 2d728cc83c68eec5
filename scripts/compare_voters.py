"""Score sets of models as ensembles on dev, each model's trees computed once (issue 10's member choice).

    python scripts/compare_voters.py --model a=models/onlstm-wsj-ensemble/members/small600-1ep \\
        --model b=runs/distill/NAME/model --set a,b --set a --ptb ../shared/data/ptb/wsj

For every set: sentence / corpus F1 on section 22 (and with ``--wsj10`` on
WSJ10 from sections 00-22) of the tree-averaged ensemble without and with a
right-branching voter, as ``onparse eval`` computes them. Prints a markdown table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from onparse.parse import Parser
from onparse.scoring import score
from onparse.treebank import GoldSentence, read_gold
from onparse.trees import build_tree, right_branching, spans
from onparse.voting import average


def model_trees(path: str, gold: list[GoldSentence]) -> list[set]:
    """One model's spans (its own layer) for every gold sentence."""
    parser = Parser.load(path)
    return [spans(build_tree(parser.tree_distances(d)[0])) for d in parser.distances([s.words for s in gold])]


def ensemble_figures(voters: list[list[set]], gold: list[GoldSentence], right_branching_voter: bool) -> str:
    trees = []
    for i, sentence in enumerate(gold):
        n = len(sentence.words)
        sets = [found[i] for found in voters] + ([spans(right_branching(n))] if right_branching_voter else [])
        trees.append(spans(average(sets, n)[0]) if len(sets) > 1 else sets[0])
    result = score(trees, gold)
    return f"{result['sentence_f1']:.2f} / {result['corpus_f1']:.2f}"


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--model", action="append", required=True, help="NAME=PATH of a single model directory")
    options.add_argument("--set", action="append", required=True, help="comma-separated model names")
    options.add_argument("--ptb", type=Path, default=Path("../shared/data/ptb/wsj"))
    options.add_argument("--wsj10", action="store_true", help="also score WSJ10 from sections 00-22")
    args = options.parse_args()
    models = dict(spec.split("=", 1) for spec in args.model)
    dev = {"section 22": list(read_gold(str(args.ptb / "22")))}  # the sentences eval and the cards score
    if args.wsj10:
        dev["WSJ10"] = [s for s in read_gold(str(args.ptb / "[0-2][0-9]")) if len(s.words) <= 10]
    trees = {(name, part): model_trees(path, gold) for name, path in models.items() for part, gold in dev.items()}
    print("| voters | " + " | ".join(f"{part} | {part} + right-branching voter" for part in dev) + " |")
    print("| --- |" + " ---: |" * 2 * len(dev))
    for voter_set in args.set:
        names = voter_set.split(",")
        cells = [f"{ensemble_figures([trees[n, part] for n in names], gold, False)} | "
                 f"{ensemble_figures([trees[n, part] for n in names], gold, True)}" for part, gold in dev.items()]
        print(f"| {', '.join(names)} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
