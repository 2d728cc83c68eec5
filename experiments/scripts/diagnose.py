"""Why a vote reads what it reads: its members (and models added to them), its families, its students, on gold dev
trees.

    python experiments/scripts/diagnose.py --gold ../shared/data/negra/valid.penn --encoding latin-1 \
        --vote models/onlstm-negra --student models/pcfg-negra --cache runs/diag/cache --json runs/diag/de.json

Maintainers' tool for the third family's choice. Each member's outputs on the gold sentences are computed
once (``--cache`` keeps them), then, all on gold trees:

- each member's F1 and agreement with right-branching trees, and the best member;
- the vote of each family alone and of all members without each family (equal weights, no right-branching
  voter), beside the vote as shipped;
- mean span agreement (sentence F1 of one member's trees against another's) within each family and across;
- for the vote and each student: recall by gold label and by span length, agreement with right-branching;
  the precision of the spans only the student has, and of the spans only the vote has;
- for each grammar member: how many nonterminals have a near twin (the Jensen-Shannon divergence of their
  left and right production distributions under ``--twin-bits`` to another nonterminal's).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
from pathlib import Path

import torch

from onparse.parsing.ensemble import pairwise_agreement
from onparse.parsing.parse import Parser
from onparse.structures.scoring import score, scored_spans
from onparse.structures.trees import spans
from onparse.structures.voting import average
from onparse.text.treebank import read_gold


def outputs_of(parser: Parser, sentences: list, cache: Path | None, key: str) -> list[list]:
    """Each sentence's outputs of every member of ``parser`` (cached by the model's path and the gold's)."""
    cached = cache / (hashlib.sha1(key.encode()).hexdigest() + ".pt") if cache else None
    if cached and cached.is_file():
        return torch.load(cached, weights_only=False)
    found = list(parser.distances(sentences))
    if cached:
        cached.parent.mkdir(parents=True, exist_ok=True)
        torch.save(found, cached)
    return found


def voters(vote: str, added: list[str], gold: list, gold_path: str, cache: Path | None) -> dict:
    """Every voter of the ensemble ``vote`` and of the models ``added`` beside it, on the gold sentences: their
    names, families, model bundles and trees (as span sets), and the ensemble's own trees as shipped."""
    sentences = [s.sentence for s in gold]
    parser = Parser.load(vote, max_words=800)
    found = outputs_of(parser, sentences, cache, f"{Path(parser.path).resolve()} {gold_path}")
    built = [parser.build(outputs) for outputs in found]
    members = [member.bundle for member in parser.members]
    names = [Path(bundle.path).name if bundle.path else f"member {k}" for k, bundle in enumerate(members)]
    trees = [[spans(b.member_trees[m]) for b in built] for m in range(len(members))]
    for path in added:  # more voters, each at its own readout
        model = Parser.load(path)
        outputs = outputs_of(model, sentences, cache, f"{Path(model.path).resolve()} {gold_path}")
        members.append(model.members[0].bundle)
        names.append(Path(path).parent.name if Path(path).name == "model" else Path(path).name)
        trees.append([spans(model.build(o).tree) for o in outputs])
    return {
        "names": names,
        "families": [bundle.model.config.family for bundle in members],
        "bundles": members,
        "trees": trees,
        "shipped": [spans(b.tree) for b in built],
    }


def vote(trees: list[list[set]], lengths: list[int], weights: list[float] | None = None) -> list[set]:
    """The tree-averaging vote of several members' trees, sentence by sentence."""
    if len(trees) == 1:
        return trees[0]
    weights = weights or [1.0] * len(trees)
    return [spans(average([t[i] for t in trees], n, weights)[0]) for i, n in enumerate(lengths)]


def only_precision(ours: list[set], theirs: list[set], gold: list) -> dict:
    """How many scored spans ``ours`` has that ``theirs`` lacks, and the share of them in the gold trees."""
    found = right = 0
    for mine, other, sentence in zip(ours, theirs, gold):
        n = len(sentence.words)
        extra = scored_spans(mine, n) - scored_spans(other, n)
        found += len(extra)
        right += len(extra & scored_spans(sentence.spans, n))
    return {"spans": found, "precision": round(100 * right / found, 2) if found else None}


def twins(model, bits: float) -> dict:
    """A grammar's nonterminals whose production distributions (left and right children, halved) lie within
    ``bits`` of Jensen-Shannon divergence of another's."""
    with torch.no_grad():
        rules = model.rules()
    if rules.left is None:
        return {}
    rows = torch.cat([rules.left.exp(), rules.right.exp()], -1) / 2  # N x 2(N + P), each row sums to one
    mixture = (rows[:, None] + rows[None]) / 2
    kl = lambda p, q: (p * (p.clamp_min(1e-30).log2() - q.clamp_min(1e-30).log2())).sum(-1)  # noqa: E731
    divergence = (kl(rows[:, None], mixture) + kl(rows[None], mixture)) / 2
    divergence.fill_diagonal_(float("inf"))
    nearest = divergence.min(-1).values
    used = rules.root.exp()
    return {
        "nonterminals": rows.size(0),
        f"with_a_twin_under_{bits:g}_bits": int((nearest < bits).sum()),
        "nearest_bits_median": round(float(nearest.median()), 4),
        "root_mass_of_top_3": round(float(used.topk(min(3, used.numel())).values.sum()), 3),
    }


def voters_options(description: str) -> argparse.ArgumentParser:
    """The options that name a vote, the models added to it, the gold trees and where results and outputs go."""
    options = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--gold", required=True)
    options.add_argument("--encoding", default="UTF-8")
    options.add_argument("--vote", required=True, help="an ensemble folder (or a shipped model's name)")
    options.add_argument("--add", action="append", default=[], help="a model voting beside the vote's members")
    options.add_argument("--cache")
    options.add_argument("--json")
    return options


def main() -> None:
    options = voters_options(__doc__)
    options.add_argument("--student", action="append", default=[], help="a model compared with the vote")
    options.add_argument("--twin-bits", type=float, default=0.05)
    args = options.parse_args()
    torch.set_num_threads(1)
    cache = Path(args.cache) if args.cache else None
    gold = [s for s in read_gold(args.gold, encoding=args.encoding) if s.words]
    sentences = [s.sentence for s in gold]
    lengths = [len(s.words) for s in gold]
    found = voters(args.vote, args.add, gold, args.gold, cache)
    names, families, members, trees = (found[key] for key in ("names", "families", "bundles", "trees"))
    result: dict = {"gold": args.gold, "vote": args.vote, "sentences": len(gold), "members": {}}
    for name, family, member_trees, bundle in zip(names, families, trees, members):
        figures = score(member_trees, gold)
        result["members"][name] = {
            "family": family,
            "sentence_f1": round(figures["sentence_f1"], 2),
            "right_branching_agreement": round(figures["right_branching_agreement"], 2),
            **({"twins": twins(bundle.model, args.twin_bits)} if family == "pcfg" else {}),
        }
        print(name, result["members"][name], flush=True)
    best = max(result["members"], key=lambda name: result["members"][name]["sentence_f1"])
    result["best_member"] = {"name": best, "sentence_f1": result["members"][best]["sentence_f1"]}
    shipped = found["shipped"]
    result["vote_as_shipped"] = score(shipped, gold)
    groups = {"all": list(range(len(members)))}
    for family in sorted(set(families)):
        groups[f"{family} alone"] = [k for k, f in enumerate(families) if f == family]
        groups[f"without {family}"] = [k for k, f in enumerate(families) if f != family]
    result["votes"] = {}
    for group, chosen in groups.items():
        if chosen:
            f1 = score(vote([trees[k] for k in chosen], lengths), gold)["sentence_f1"]
            result["votes"][group] = {"members": len(chosen), "sentence_f1": round(f1, 2)}
            print(group, result["votes"][group], flush=True)
    table = pairwise_agreement(trees, sentences)
    pairs: dict[str, list[float]] = {}
    for a, b in itertools.combinations(range(len(members)), 2):
        kind = f"within {families[a]}" if families[a] == families[b] else "across families"
        pairs.setdefault(kind, []).append(table[a][b])
    result["agreement"] = {kind: round(sum(v) / len(v), 2) for kind, v in pairs.items()}
    print("agreement", result["agreement"], flush=True)
    result["students"] = {}
    for path in args.student:
        student = Parser.load(path, max_words=800)
        outputs = outputs_of(student, sentences, cache, f"{Path(student.path).resolve()} {args.gold}")
        student_trees = [spans(student.build(o).tree) for o in outputs]
        result["students"][path] = {
            **score(student_trees, gold),
            "only_student": only_precision(student_trees, shipped, gold),
            "only_vote": only_precision(shipped, student_trees, gold),
        }
        print(path, {k: result["students"][path][k] for k in ("sentence_f1", "only_student", "only_vote")}, flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
