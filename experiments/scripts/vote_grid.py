"""Score many ways of voting over the same members on gold dev trees, distances computed once per member.

    python scripts/vote_grid.py --gold ../shared/data/ctb/30 runs/exp29/ctb-punct-fwd runs/exp29/ctb-punct-bwd \
        --group fwd=1 --group both=1,2 --votes 0 0.5 --layers mean agreement --json out.json

Maintainers' tool for recipe design (issue 29): every member alone at every
layer, then each group of members (1-based indices; all by default) voting
at each layer rule (a fixed layer, the mean, or layers by agreement on the
dev text's own words, gold-free) with the right-branching tree at each
weight (a share of the group's votes). Gold trees score only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import torch

from onparse.families import MEAN, SPANS, readouts
from onparse.parsing.ensemble import agreeing_layers, member_source, most_central, most_consistent
from onparse.parsing.parse import Parser
from onparse.store.modeldir import load
from onparse.structures.builder import TreeBuilder
from onparse.structures.scoring import score
from onparse.structures.trees import spans
from onparse.text.treebank import read_gold


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("members", nargs="+")
    options.add_argument("--gold", required=True)
    options.add_argument("--encoding", default="UTF-8")
    options.add_argument("--group", action="append", default=[], help="NAME=1,2,3 (1-based member indices)")
    options.add_argument(
        "--votes", nargs="*", type=float, default=[0, 0.5], help="right-branching votes as a share of the members'"
    )
    options.add_argument(
        "--layers",
        nargs="*",
        default=["mean", "agreement"],
        help="1, 2, 3, mean, agreement, consistency, own (--member-layers), every (each layer of each member votes)",
    )
    options.add_argument(
        "--member-layers",
        action="append",
        default=[],
        help="NAME=L1,L2,... : a group's members each at its own layer (1-based, or mean), as --group NAME lists them",
    )
    options.add_argument(
        "--keep", type=int, help="also score each group's K members whose trees agree best with the others' (gold-free)"
    )
    options.add_argument("--json")
    options.add_argument("--cache", help="a folder keeping each member's distances on --gold, so later grids skip them")
    args = options.parse_args()
    gold = [s for s in read_gold(args.gold, encoding=args.encoding) if s.words]
    sentences = [s.sentence for s in gold]
    distances, candidates, names = [], [], []
    for member in args.members:
        bundle = load(member_source(member).model)
        key = hashlib.sha1(f"{Path(member).resolve()} {args.gold}".encode()).hexdigest()
        cached = Path(args.cache, key + ".pt") if args.cache else None
        if cached and cached.is_file():
            distances.append(torch.load(cached, weights_only=False))
        else:
            distances.append([found for (found,) in Parser(bundle, max_words=800).distances(sentences)])
            if cached:
                cached.parent.mkdir(parents=True, exist_ok=True)
                torch.save(distances[-1], cached)
        candidates.append(readouts(bundle.model.config))  # a grammar's one readout: spans
        names.append(member)
    own = [
        {layer: [spans(TreeBuilder((layer,)).build([d]).tree) for d in distances[m]] for layer in candidates[m]}
        for m in range(len(names))
    ]
    results: dict = {"members": {}, "groups": {}}
    for m, name in enumerate(names):
        results["members"][name] = {
            str(layer): round(
                score([spans(TreeBuilder((layer,)).build([d]).tree) for d in distances[m]], gold)["sentence_f1"], 2
            )
            for layer in candidates[m]
        }
        print(name, results["members"][name], flush=True)
    groups = dict(group.split("=") for group in args.group) or {"all": ",".join(str(k + 1) for k in range(len(names)))}
    own_layers = {
        name: [layer if layer in (MEAN, SPANS) else int(layer) for layer in layers.split(",")]
        for name, layers in (spec.split("=") for spec in args.member_layers)
    }
    for group, indices in groups.items():
        chosen = [int(k) - 1 for k in indices.split(",")]
        for rule in args.layers:
            voters = chosen
            if rule == "agreement":
                layers, _ = agreeing_layers(
                    [distances[k] for k in chosen], [candidates[k] for k in chosen], [own[k] for k in chosen], sentences
                )
            elif rule == "consistency":  # the library's gold-free rule: one layer, the most consistent between members
                layered = [k for k in chosen if candidates[k] != [SPANS]]
                layer, _ = most_consistent([own[k] for k in layered], sentences) if layered else (SPANS, {})
                layers = [layer if k in layered else SPANS for k in chosen]
            elif rule == "own":  # the layers --member-layers gives this group
                layers = own_layers[group]
            elif rule == "every":  # each layer of each member votes, a member's layers sharing one member's votes
                voters = [k for k in chosen for _ in candidates[k][:-1]]
                layers = [layer for k in chosen for layer in candidates[k][:-1]]
            else:  # one layer for the ON-LSTMs; a grammar keeps its span marginals
                layers = [SPANS if candidates[k] == [SPANS] else rule if rule == MEAN else int(rule) for k in chosen]
            ways = [(rule, voters, layers)]
            if args.keep and rule != "every" and args.keep < len(voters):
                kept, centrality = most_central(
                    [own[k][layer] for k, layer in zip(voters, layers)], sentences, args.keep
                )
                print(f"{group} {rule}: agreement with the others {centrality}, kept {[voters[m] + 1 for m in kept]}")
                ways.append((f"{rule} keep {args.keep}", [voters[m] for m in kept], [layers[m] for m in kept]))
            for name, voting, voting_layers in ways:
                for share in args.votes:
                    builder = TreeBuilder(tuple(voting_layers), share * len(voting))
                    predicted = [spans(builder.build([distances[k][i] for k in voting]).tree) for i in range(len(gold))]
                    f1 = round(score(predicted, gold)["sentence_f1"], 2)
                    results["groups"][f"{group} {name} rb={share:g}"] = {
                        "members": [k + 1 for k in voting],
                        "layers": voting_layers,
                        "sentence_f1": f1,
                    }
                    print(f"{group} layers {name} ({voting_layers}) right-branching {share:g}n: {f1}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
