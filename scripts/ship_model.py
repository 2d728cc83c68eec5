"""Ship a trained run as a single model: copy it, evaluate it, write its card.

    python scripts/ship_model.py --run runs/wsj-paper --out models/onlstm-wsj --ptb ../shared/data/ptb/wsj

Copies ``RUN/model`` (the best epoch by dev perplexity) to ``--out``, a new
folder or a single model's that no shipped ensemble lists as a member (an
ensemble, the default among them, or a member of one is refused: replacing it
would silently change what that ensemble parses with);
scores every epoch directory on section 22 (the F1-against-compute curve),
scores the shipped model on section 22 and on WSJ10 (sections 00-22, at most
10 words) with the baselines, picks the default layer, and writes card.json
(machine-readable; tests compare against it) and card.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from onparse.evaluate import evaluate_parser
from onparse.modeldir import MODELS, load, pointing_at, read_ensemble, set_default_layer
from onparse.parse import Parser
from onparse.scoring import PROTOCOL
from onparse.treebank import read_gold


def refuse_shipped_ensembles(target: Path, models: Path = MODELS) -> None:
    """SystemExit where writing ``target`` would change an ensemble: it is one, or a shipped one has a member there."""
    if target.exists() and read_ensemble(target) is not None:
        raise SystemExit(f"{target} is an ensemble: make ensembles with onparse ensemble")
    holder = pointing_at(target, models)
    if holder:
        raise SystemExit(f"{target} holds a member of {holder}: write the run to a new folder instead")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--run", type=Path, required=True)
    options.add_argument("--out", type=Path, default=MODELS / "onlstm-wsj", help="the model folder to write")
    options.add_argument("--ptb", type=Path, default=Path("../shared/data/ptb/wsj"))
    options.add_argument("--command", help="the exact training command, for the card")
    options.add_argument("--curve-only", action="store_true", help="only score the epochs written so far")
    options.add_argument("--select-layer-by", choices=["fixed", "dev_f1"], default="fixed")
    args = options.parse_args()

    dev = list(read_gold(str(args.ptb / "22")))
    if args.curve_only:
        for epoch_dir in sorted(args.run.glob("epoch-*")):
            if (epoch_dir / "weights.pt").is_file():
                print(epoch_dir.name, dev_f1_per_layer(epoch_dir, dev))
        return
    wsj10 = [s for s in read_gold(str(args.ptb / "[0-2][0-9]")) if len(s.words) <= 10]

    curve = []
    history = {h["epoch"]: h for h in map(json.loads, (args.run / "history.jsonl").read_text().splitlines())}
    for epoch_dir in sorted(args.run.glob("epoch-*")):
        epoch = float(epoch_dir.name.split("-")[1])
        point = {"epoch": epoch, **{k: v for k, v in history.get(epoch, {}).items() if k != "epoch"},
                 "dev_sentence_f1": dev_f1_per_layer(epoch_dir, dev)}
        curve.append(point)
        print(json.dumps(point))

    target = args.out
    refuse_shipped_ensembles(target)
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(args.run / "model", target)
    card = json.loads((target / "card.json").read_text())
    bundle = load(target)
    section_22 = evaluate_parser(Parser(bundle), dev)
    best_layer = max((k for k in section_22["per_layer"] if k.isdigit()), key=lambda k: section_22["per_layer"][k]["sentence_f1"])
    layer = int(best_layer) if args.select_layer_by == "dev_f1" else bundle.default_layer
    if layer != bundle.default_layer:
        set_default_layer(target, layer)
        section_22 = evaluate_parser(Parser(load(target)), dev)
    wsj10_result = evaluate_parser(Parser(load(target)), wsj10)

    card.update(
        name="onlstm-wsj",
        command=args.command,
        default_layer=layer,
        layer_selection=("the paper's layer 2, fixed before training" if args.select_layer_by == "fixed"
                         else "the layer with the best dev (section 22) sentence F1"),
        model_selection="the epoch with the lowest dev (section 22) perplexity; no gold trees",
        dev={"section_22": brief(section_22), "wsj10_sections_00_22": brief(wsj10_result)},
        curve=curve,
        protocol=PROTOCOL,
        best_dev_ppl=min(h["dev_ppl"] for h in card["history"]),  # the shipped epoch's
        size_mb=round(sum(p.stat().st_size for p in target.iterdir()) / 2**20, 1),
    )
    (target / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    (target / "card.md").write_text(render(card))
    print(render(card))


def brief(result: dict) -> dict:
    """What a card keeps of ``evaluate_parser``'s result for a single model."""
    keep = ("sentences", "sentence_f1", "corpus_f1", "label_recall")
    return {**{k: result[k] for k in keep}, "layers": {k: {m: v[m] for m in keep[1:]} for k, v in result["per_layer"].items()},
            "baselines": {k: {m: v[m] for m in keep[1:]} for k, v in result["baselines"].items()}}


def dev_f1_per_layer(model_dir: Path, dev: list) -> dict[str, float]:
    """Section 22 sentence F1 per layer, cached beside the model (``--curve-only`` fills it during training)."""
    cache = model_dir / "dev_f1.json"
    if not cache.is_file():
        result = evaluate_parser(Parser.load(model_dir), dev, untrained_seed=None)
        cache.write_text(json.dumps({k: round(v["sentence_f1"], 2) for k, v in result["per_layer"].items()}))
    return json.loads(cache.read_text())


def render(card: dict) -> str:
    cfg = {**card["config"], **card["config"].get("model", {})}  # architecture fields nest under "model"
    s22, w10 = card["dev"]["section_22"], card["dev"]["wsj10_sections_00_22"]
    last = card["history"][-1]
    change = card.get("int8_change_from_bf16")
    weights = "bf16" if not change else (
        "int8 rows with a scale each (scripts/store_int8.py), which moved section 22 by "
        f"{change['section_22']['sentence_f1']:+.2f} sentence F1 and WSJ10 by {change['wsj10_sections_00_22']['sentence_f1']:+.2f} "
        "from the bf16 weights")
    lines = [
        "# onlstm-wsj: the shipped ON-LSTM",
        "",
        f"An ON-LSTM language model ({cfg['n_layers']} layers, embedding {cfg['embedding_size']}, hidden {cfg['hidden_size']}, "
        f"chunk size {cfg['chunk_size']}, tied weights, {cfg['vocab_size']:,}-word vocabulary) trained on Penn Treebank WSJ "
        "sections 00-20 (words only, as the parser reads them), selected by dev perplexity on section 22.",
        "",
        "## Recipe",
        "",
        f"    {card['command']}",
        "",
        f"Adam (lr {cfg['lr']}, {cfg['warmup_updates']} warm-up updates, cosine decay to {cfg['min_lr_ratio']} x lr over "
        f"{cfg['epochs']} epochs), batch {cfg['batch_size']} x BPTT {cfg['bptt']}, gradient clip {cfg['clip']}, "
        f"weight decay {cfg['weight_decay']}; dropout out {cfg['dropout']}, between layers {cfg['dropouth']}, "
        f"input {cfg['dropouti']}, embedding {cfg['dropoute']}, recurrent DropConnect {cfg['wdrop']}; decoder bias "
        f"initialised to log unigram frequencies; bf16 matmuls, float32 gates and cell states; seed {cfg['seed']}.",
        "",
        f"Trained {last['epoch']} epochs ({last['tokens_seen']:,} tokens) in {last['train_minutes']:.0f} minutes of training "
        f"steps on {card['hardware']}. Model selection: {card['model_selection']}. Default layer: {card['default_layer']} "
        f"({card['layer_selection']}). Weights: {weights}, {card['size_mb']} MB for the directory.",
        "",
        "## Dev figures",
        "",
        f"Dev perplexity (section 22): {card['best_dev_ppl']:.1f}.",
        "",
        "| sentences | parser | sentence F1 | corpus F1 |",
        "| --- | --- | ---: | ---: |",
    ]
    for title, result in (("section 22", s22), ("WSJ10 (00-22)", w10)):
        n = result["sentences"]
        for k, v in result["per_layer"].items():
            name = "ON-LSTM mean of layers" if k == "mean" else f"ON-LSTM layer {k}" + (" (default)" if k == str(card["default_layer"]) else "")
            lines.append(f"| {title} ({n}) | {name} | {v['sentence_f1']:.1f} | {v['corpus_f1']:.1f} |")
        for k, v in result["baselines"].items():
            lines.append(f"| {title} ({n}) | {k.replace('_', ' ')} | {v['sentence_f1']:.1f} | {v['corpus_f1']:.1f} |")
    lines += ["", "For scale, the paper on section 23 (1000 epochs on a GPU, perplexity 56.2): 47.7 mean / 49.4 best; "
              "WSJ10 65.1 / 66.8.", "", "## F1 against compute (section 22, sentence F1 per layer)", "",
              "| epoch | tokens seen | training minutes | dev perplexity | mean abs cell | layer 1 | layer 2 | layer 3 | mean |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for p in card["curve"]:
        f1 = p["dev_sentence_f1"]
        lines.append(f"| {p['epoch']} | {p.get('tokens_seen', 0):,} | {p.get('train_minutes', 0):.0f} | "
                     f"{p.get('dev_ppl', float('nan')):.1f} | {p.get('dev_mean_abs_cell', float('nan')):.2f} | "
                     f"{f1['1']:.1f} | {f1['2']:.1f} | {f1['3']:.1f} | {f1['mean']:.1f} |")
    lines += ["", "Epoch 0 is the untrained model (decoder bias at log unigram frequencies).", "", "## Protocol", "", card["protocol"], ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
