"""A stage after the vote, measured before it is built: a language model of words and trees together.

    python experiments/scripts/bracket_lm.py --trees runs/tn/de-eight.jsonl --gold ../shared/data/negra/valid.penn \
        --encoding latin-1 --vote models/onlstm-negra --add TN1 --student STUDENT --cache runs/diag/cache \
        --out runs/blm/de

An LSTM over each training sentence's teacher tree written out as brackets and words ("( ( Da muss ) ( man ... ) )",
Choe & Charniak 2016, parsing as language modelling) learns p(words, tree) from the distilled trees alone: a model
that is not context-free, trained on the text's likelihood, as URNNG's RNNG was. It stops on the held-out teacher
trees' likelihood (no gold). Then it chooses among each dev sentence's candidate trees (every member's, the vote's,
the student's) by p(words, tree), and votes the candidates weighted by their share of that probability. Gold trees
score the result and choose nothing. ``--timing-only`` times 200 updates and stops.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import Counter
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
from diagnose import outputs_of, vote  # noqa: E402

from onparse.parsing.parse import Parser  # noqa: E402
from onparse.structures.scoring import score  # noqa: E402
from onparse.structures.trees import right_branching, spans  # noqa: E402
from onparse.text.treebank import read_gold  # noqa: E402

PAD, START, END, OPEN, CLOSE, UNK = range(6)
SPECIAL = ["<pad>", "<s>", "</s>", "(", ")", "<unk>"]


def bracketed_ids(words: list[str], constituents: set, vocab: dict[str, int]) -> list[int]:
    """``<s>``, the tree's brackets around its words' ids, ``</s>``: an opening bracket for each constituent before
    its first word (the longest first), a closing one after its last."""
    opening = Counter(start for start, _ in constituents)
    closing = Counter(end for _, end in constituents)
    ids = [START]
    for i, word in enumerate(words):
        ids += [OPEN] * opening[i] + [vocab.get(word, UNK)] + [CLOSE] * closing[i + 1]
    return ids + [END]


class BracketLM(nn.Module):
    """An LSTM language model over bracketed sentences."""

    def __init__(self, size: int, embedding: int, hidden: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.embed = nn.Embedding(size, embedding, padding_idx=PAD)
        self.lstm = nn.LSTM(embedding, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.drop = nn.Dropout(dropout)
        # the words by frequency in the vocabulary: an adaptive softmax spends on rare words only where they come
        cutoffs = [c for c in (1000, 5000) if c < size - 1]
        self.out = nn.AdaptiveLogSoftmaxWithLoss(hidden, size, cutoffs, div_value=4.0)

    def log_probs(self, batch: torch.Tensor) -> torch.Tensor:
        """Each sequence's log-probability (batch x length of ids, padded with PAD)."""
        states, _ = self.lstm(self.drop(self.embed(batch[:, :-1])))
        targets = batch[:, 1:]
        kept = targets != PAD
        picked = torch.zeros(targets.shape)
        picked[kept] = self.out(self.drop(states)[kept], targets[kept]).output
        return picked.sum(-1)


def padded(sequences: list[list[int]]) -> torch.Tensor:
    longest = max(map(len, sequences))
    return torch.tensor([s + [PAD] * (longest - len(s)) for s in sequences])


def batches(sequences: list[list[int]], size: int, rng: random.Random) -> list[list[list[int]]]:
    """Batches of sequences of like length (sorted in pools of 50 batches), in a shuffled order."""
    order = list(range(len(sequences)))
    rng.shuffle(order)
    found = []
    for pool in range(0, len(order), size * 50):
        chunk = sorted(order[pool : pool + size * 50], key=lambda i: len(sequences[i]))
        found += [[sequences[i] for i in chunk[k : k + size]] for k in range(0, len(chunk), size)]
    rng.shuffle(found)
    return found


def mean_loss(model: BracketLM, sequences: list[list[int]], size: int = 64) -> float:
    """Nats per token of the held-out sequences."""
    model.eval()
    total = tokens = 0.0
    with torch.no_grad():
        for k in range(0, len(sequences), size):
            chunk = sequences[k : k + size]
            total -= float(model.log_probs(padded(chunk)).sum())
            tokens += sum(len(s) - 1 for s in chunk)
    model.train()
    return total / tokens


def word_spans(record: dict) -> tuple[list[str], set]:
    """A sentence's words and its constituents over them, from a distillation's trees file (spans over the words)
    or from ``onparse --format json`` (spans over the tokens, the punctuation attached)."""
    if "words" in record:
        return [record["tokens"][i] for i in record["words"]], {tuple(s) for s in record["spans"]}
    positions = record["word_positions"]
    found = set()
    for start, end in record["spans"]:
        inside = [k for k, p in enumerate(positions) if start <= p < end]
        if len(inside) >= 2:
            found.add((inside[0], inside[-1] + 1))
    return [record["tokens"][p] for p in positions], found


def teacher_trees(path: str) -> list[tuple[list[str], set]]:
    """The words and constituents of each sentence of a trees file (a distillation's header line left out)."""
    with open(path, encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    return [word_spans(r) for r in records if "spans" in r]


def train(args: argparse.Namespace, vocab: dict[str, int], trees: list) -> tuple[BracketLM, list[dict]]:
    """The model kept at its best held-out likelihood of the teacher's trees; and its curve."""
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    rng.shuffle(trees)
    held = [bracketed_ids(w, c, vocab) for w, c in trees[: args.held_out]]
    train_ids = [bracketed_ids(w, c, vocab) for w, c in trees[args.held_out :]]
    model = BracketLM(len(vocab), args.embedding, args.hidden, args.layers, args.dropout)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    best, best_state, curve, since, updates, start = math.inf, None, [], 0, 0, time.time()
    for epoch in range(1, args.epochs + 1):
        for batch in batches(train_ids, args.batch_size, rng):
            ids = padded(batch)
            loss = -model.log_probs(ids).sum() / (ids[:, 1:] != PAD).sum()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            updates += 1
            if updates % 20 == 0 and updates <= 200:
                print(f"{updates} updates: {time.time() - start:.1f} s", flush=True)
            if updates == 200:
                print(f"200 updates: {time.time() - start:.1f} s", flush=True)
                if args.timing_only:
                    return model, [{"updates": 200, "seconds": round(time.time() - start, 1)}]
            if updates % args.eval_every == 0:
                held_loss = mean_loss(model, held)
                curve.append(
                    {
                        "epoch": epoch,
                        "updates": updates,
                        "held_out_ppl": round(math.exp(held_loss), 2),
                        "minutes": round((time.time() - start) / 60, 2),
                    }
                )
                kept = held_loss < best
                if kept:
                    best, best_state, since = held_loss, {k: v.clone() for k, v in model.state_dict().items()}, 0
                else:
                    since += 1
                print(curve[-1], "kept" if kept else "", flush=True)
                if since >= args.patience:
                    model.load_state_dict(best_state)
                    return model, curve
    if best_state is not None:
        model.load_state_dict(best_state)
    return model, curve


def joint_log_probs(model: BracketLM, words: list[str], candidates: list[set], vocab: dict[str, int]) -> list[float]:
    """log p(words, tree) of each candidate tree."""
    model.eval()
    with torch.no_grad():
        return model.log_probs(padded([bracketed_ids(words, c, vocab) for c in candidates])).tolist()


def parsed_by(path: str, sentences: list, args: argparse.Namespace) -> tuple[Parser, list]:
    """A model and its built outputs on the gold sentences (cached as ``diagnose.py`` caches them)."""
    parser = Parser.load(path)
    found = outputs_of(parser, sentences, Path(args.cache), f"{Path(parser.path).resolve()} {args.gold}")
    return parser, [parser.build(o) for o in found]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--trees", required=True, help="a distillation's trees (jsonl) of the training text")
    options.add_argument("--gold", required=True)
    options.add_argument("--encoding", default="UTF-8")
    options.add_argument("--vote", required=True)
    options.add_argument("--add", action="append", default=[])
    options.add_argument("--student", action="append", default=[])
    options.add_argument("--cache")
    options.add_argument("--out", required=True)
    options.add_argument("--vocab-size", type=int, default=10000)
    options.add_argument("--embedding", type=int, default=256)
    options.add_argument("--hidden", type=int, default=512)
    options.add_argument("--layers", type=int, default=1)
    options.add_argument("--dropout", type=float, default=0.3)
    options.add_argument("--lr", type=float, default=1e-3)
    options.add_argument("--batch-size", type=int, default=32)
    options.add_argument("--epochs", type=int, default=6)
    options.add_argument("--eval-every", type=int, default=200)
    options.add_argument("--patience", type=int, default=4)
    options.add_argument("--held-out", type=int, default=500)
    options.add_argument("--seed", type=int, default=1111)
    options.add_argument("--timing-only", action="store_true")
    args = options.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    trees = teacher_trees(args.trees)
    counts = Counter(w for words, _ in trees for w in words)
    vocab = {w: i for i, w in enumerate(SPECIAL)}
    for word, _ in counts.most_common(args.vocab_size):
        vocab.setdefault(word, len(vocab))
    saved = out / "model.pt"
    if saved.is_file() and not args.timing_only:  # trained before: scored again
        kept = torch.load(saved, weights_only=False)
        vocab, curve = kept["vocab"], kept.get("curve", [])
        model = BracketLM(len(vocab), args.embedding, args.hidden, args.layers, args.dropout)
        model.load_state_dict(kept["state"])
    else:
        model, curve = train(args, vocab, trees)
    result: dict = {"settings": vars(args), "curve": curve}
    if args.timing_only:
        (out / "timing.json").write_text(json.dumps(result, indent=2) + "\n")
        return
    torch.save({"state": model.state_dict(), "vocab": vocab, "settings": vars(args), "curve": curve}, saved)
    gold = [s for s in read_gold(args.gold, encoding=args.encoding) if s.words]
    sentences = [s.sentence for s in gold]
    lengths = [len(s.words) for s in gold]
    parser, built = parsed_by(args.vote, sentences, args)
    sources = {f"member {k}": [spans(b.member_trees[k]) for b in built] for k in range(len(parser.members))}
    sources |= {path: [spans(b.tree) for b in parsed_by(path, sentences, args)[1]] for path in args.add}
    sources["vote"] = vote(list(sources.values()), lengths)
    sources |= {path: [spans(b.tree) for b in parsed_by(path, sentences, args)[1]] for path in args.student}
    sources["right-branching"] = [spans(right_branching(n)) for n in lengths]
    names = list(sources)
    chosen, weighted, wins = [], [], Counter()
    for i, sentence in enumerate(gold):
        candidates = [sources[name][i] for name in names]
        log_p = joint_log_probs(model, list(sentence.words), candidates, vocab)
        best = max(range(len(names)), key=lambda k: log_p[k])
        wins[names[best]] += 1
        chosen.append(candidates[best])
        top = max(log_p)
        shares = [math.exp(p - top) for p in log_p]
        weighted.append(vote([[c] for c in candidates], [lengths[i]], shares)[0])
    result["sources"] = {name: round(score(trees_of, gold)["sentence_f1"], 2) for name, trees_of in sources.items()}
    result["chosen_by_joint_likelihood"] = round(score(chosen, gold)["sentence_f1"], 2)
    result["voted_by_joint_likelihood"] = round(score(weighted, gold)["sentence_f1"], 2)
    result["wins"] = dict(wins)
    print(json.dumps({k: v for k, v in result.items() if k not in ("settings", "curve")}, indent=1), flush=True)
    (out / "result.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
