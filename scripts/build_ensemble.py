"""Build an ensemble model directory from training runs, and write its card.

    python scripts/build_ensemble.py --out models/onlstm-wsj-ensemble \
        --run runs/exp/seed-1 --run runs/exp/seed-2 ... --ptb ../shared/data/ptb/wsj

Each run gives one member: the evaluation point (``epoch-EE.FF``) and layer
with the best dev (section 22) sentence F1 in the run's history, the
original ON-LSTM protocol of selecting on dev trees (Shi et al., 2020). The
member is copied into ``OUT/members/``, its default layer set, and its card
told how it was chosen. The ensemble is scored on section 22 with and without
a right-branching voter; the voter is kept only if it wins there. Its card
(card.json, card.md) holds the members, their commands, the selection rule,
training time, hardware, and the full dev table (section 22 and WSJ10 from
sections 00-22) beside every member and the baselines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from onparse.evaluate import evaluate_parser
from onparse.modeldir import PRECISIONS, load, read_ensemble, save, save_ensemble
from onparse.parse import Parser
from onparse.scoring import PROTOCOL
from onparse.treebank import read_gold

SELECTION = ("the evaluation point and layer (or the mean of the layers) with the best dev (section 22) sentence F1 in the run's "
             "history; the original ON-LSTM protocol selects on dev trees too (Shi et al., 2020)")


def best_point(run: Path) -> tuple[dict, str]:
    """The history record and layer with the best dev sentence F1."""
    history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    candidates = [(f1, layer, point) for point in history for layer, f1 in point.get("dev_f1_per_layer", {}).items()]
    _, layer, point = max(candidates, key=lambda candidate: candidate[0])  # ties: the earliest point, the lowest layer
    return point, layer


def add_member(run: Path, members: Path, precision: str) -> Path:
    point, layer = best_point(run)
    source = run / point.get("model_dir", f"epoch-{point['epoch']:05.2f}")
    target = members / run.name
    if target.exists():
        shutil.rmtree(target)
    layer = int(layer) if layer.isdigit() else layer
    bundle = load(source)
    save(target, bundle.model, bundle.vocab, layer, bundle.card, precision)
    card = json.loads((target / "card.json").read_text())
    config = json.loads((run / "config.json").read_text())
    card.update(selection=SELECTION, selected_epoch=point["epoch"], selected_layer=str(layer), weights=precision,
                dev_f1_at_selection=point["dev_f1_per_layer"], train_minutes=point["train_minutes"],
                tokens_seen=point["tokens_seen"], command=command(config, run))
    (target / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    return target


def command(config: dict, run: Path) -> str:
    """The command that reproduces a run from its saved settings: onparse train, or scripts/distill.py."""
    if config.get("kind") == "distillation":
        parts = ["python scripts/distill.py"] + [f"--train '{path}'" for path in config["train"]]
        parts += [f"--{name.replace('_', '-')} {config[name]}" for name in (
            "dev", "teacher", "student", "teacher_trees", "sentences", "passes", "batch_size", "lr", "rank_weight", "margin",
            "layer", "evals", "dtype", "seed")]
        if config.get("from_scratch") is not None:
            parts.append(f"--from-scratch {config['from_scratch']}")
        return " ".join(parts + [f"--out {run}"])
    model = config["model"]
    parts = ["onparse train"] + [f"--train '{path}'" for path in config["train"]]
    parts += [f"--dev {config['dev']}", f"--dev-gold {config['dev_gold']}", f"--out {run}",
              f"--epochs {config['epochs']}", f"--evals-per-epoch {config['evals_per_epoch']}",
              f"--embedding-size {model['embedding_size']}", f"--hidden-size {model['hidden_size']}",
              f"--layers {model['n_layers']}", f"--chunk-size {model['chunk_size']}", f"--batch-size {config['batch_size']}",
              f"--bptt {config['bptt']}", f"--lr {config['lr']}", f"--seed {config['seed']}", f"--dtype {config['dtype']}"]
    if config.get("device", "cpu") != "cpu":
        parts.append(f"--device {config['device']}")
    return " ".join(parts)


def brief(result: dict) -> dict:
    keep = ("sentences", "sentence_f1", "corpus_f1", "label_recall")
    out = {k: result[k] for k in keep}
    for group in ("members", "baselines"):
        out[group] = {k: {m: v[m] for m in keep[1:]} for k, v in result[group].items()}
    for key in ("ensemble", "ensemble_right_branching"):
        out[key] = {m: result[key][m] for m in keep[1:]}
    out["chosen"] = result["chosen"]
    return out


def render(card: dict) -> str:
    lines = [f"# {card['name']}: an ensemble of {len(card['members'])} ON-LSTMs whose trees vote", "",
             "Each sentence is parsed by every member (its own layer); every span of every member's binary tree gets one "
             "vote" + (", a right-branching tree votes too" if card["right_branching_voter"] else "") + ", and a CYK pass "
             "returns the binary tree with the most votes (tree averaging, Shayegh et al., ICLR 2024). No gold trees are "
             "used for parsing; members were selected on dev trees (below).", "",
             "## Members", "", "| member | epochs | tokens | training minutes | layer | dev F1 at selection | command |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for m in card["members"]:
        lines.append(f"| {m['name']} | {m['epoch']} | {m['tokens_seen']:,} | {m['train_minutes']:.0f} | {m['layer']} | "
                     f"{m['dev_f1']:.1f} | `{m['command']}` |")
    lines += ["", f"Selection: {SELECTION}. Hardware: {'; '.join(card['hardware'])}. Total training time: "
              f"{card['train_minutes']:.0f} minutes of training steps.", ""]
    if card.get("note"):
        lines += [card["note"], ""]
    lines += ["## Dev figures", "",
              "| sentences | parser | sentence F1 | corpus F1 |", "| --- | --- | ---: | ---: |"]
    for title, result in (("section 22", card["dev"]["section_22"]), ("WSJ10 (00-22)", card["dev"]["wsj10_sections_00_22"])):
        n = result["sentences"]
        rows = [(f"member {k}", v) for k, v in result["members"].items()]
        rows += [("ensemble" + (" (shipped)" if result["chosen"] == "ensemble" else ""), result["ensemble"]),
                 ("ensemble + right-branching voter" + (" (shipped)" if result["chosen"] != "ensemble" else ""),
                  result["ensemble_right_branching"])]
        rows += [(k.replace("_", " "), v) for k, v in result["baselines"].items()]
        lines += [f"| {title} ({n}) | {name} | {v['sentence_f1']:.1f} | {v['corpus_f1']:.1f} |" for name, v in rows]
    lines += ["", "For scale, the paper on section 23 (1000 epochs on a GPU): 47.7 mean / 49.4 best; WSJ10 65.1 / 66.8.",
              "", "## Protocol", "", PROTOCOL, ""]
    return "\n".join(lines)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--out", type=Path, required=True)
    options.add_argument("--run", type=Path, action="append", default=[], help="a training run: its best dev point becomes a member")
    options.add_argument("--with-model", type=Path, action="append", default=[],
                         help="a shipped model directory to add as a member where it stands (its own layer), not copied")
    options.add_argument("--members-dir", type=Path, help="where --run members are copied (default: OUT/members)")
    options.add_argument("--precision", choices=PRECISIONS, default="bf16", help="how --run members' weights are stored")
    options.add_argument("--ptb", type=Path, default=Path("../shared/data/ptb/wsj"))
    options.add_argument("--note", help="what the card should say that the runs do not (e.g. where a student came from)")
    args = options.parse_args()

    members = [add_member(run, args.members_dir or args.out / "members", args.precision) for run in args.run]
    members += args.with_model
    save_ensemble(args.out, members)
    dev = list(read_gold(str(args.ptb / "22")))
    section_22 = evaluate_parser(Parser.load(args.out), dev)  # scores the ensemble with and without the voter
    voter = section_22["ensemble_right_branching"]["sentence_f1"] > section_22["ensemble"]["sentence_f1"]
    save_ensemble(args.out, members, right_branching_voter=voter)
    chosen = "ensemble_right_branching" if voter else "ensemble"
    section_22.update(section_22[chosen], chosen=chosen)
    wsj10 = [s for s in read_gold(str(args.ptb / "[0-2][0-9]")) if len(s.words) <= 10]
    wsj10_result = evaluate_parser(Parser.load(args.out), wsj10)

    member_cards = [json.loads((m / "card.json").read_text()) for m in members]
    for path, card in zip(args.with_model, member_cards[len(args.run):]):  # a shipped model: what its own card says
        if "selected_epoch" in card:  # a member chosen from its run before (by add_member)
            continue
        last = card["history"][-1]
        card.update(selected_epoch=last["epoch"], selected_layer=str(card["default_layer"]), tokens_seen=last["tokens_seen"],
                    train_minutes=last["train_minutes"], dev_f1_at_selection={str(card["default_layer"]): card["dev"]["section_22"]["sentence_f1"]})
    card = {
        "name": args.out.name,
        "right_branching_voter": voter,
        "voter_rule": "a right-branching tree votes too only if that wins on section 22",
        "members": [{"name": m.name, "path": os.path.relpath(m, args.out), "epoch": c["selected_epoch"],
                     "layer": c["selected_layer"], "dev_f1": c["dev_f1_at_selection"][str(c["selected_layer"])],
                     "tokens_seen": c["tokens_seen"], "train_minutes": c["train_minutes"], "command": c["command"]}
                    for m, c in zip(members, member_cards)],
        "hardware": sorted({c.get("hardware") for c in member_cards if c.get("hardware")}),
        "train_minutes": sum(c["train_minutes"] for c in member_cards),
        "selection": SELECTION,
        "dev": {"section_22": brief(section_22), "wsj10_sections_00_22": brief(wsj10_result)},
        "protocol": PROTOCOL,
        **({"note": args.note} if args.note else {}),
        "size_mb": round(sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file()) / 2**20, 1),
    }
    save_ensemble(args.out, members, voter, card)
    (args.out / "card.md").write_text(render(card))
    assert read_ensemble(args.out) is not None
    print(render(card))


if __name__ == "__main__":
    main()
