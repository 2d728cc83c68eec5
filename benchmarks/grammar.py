"""Speed of a grammar member (the PCFG family) beside an ON-LSTM member: training tokens/s and parsing sentences/s.

    python benchmarks/grammar.py --ptb ../shared/data/ptb/wsj --out benchmarks/grammar.json

1. Training: full updates (inside pass, backward, Adam) on WSJ sentences of
   2-40 words in batches of one length, as ``onparse train --family pcfg``
   runs them, for each grammar size asked; tokens/s and the minutes one epoch
   of WSJ 00-20 would take. The matmul precision is float32: the grammar's
   log-space sums are kept in float32 whatever ``--dtype`` says.
2. Parsing: span marginals (inside and outside passes) and the MBR tree of
   WSJ section 22's sentences, sentences/s, beside the ON-LSTM default's
   first member (distances and its greedy tree) on the same sentences.
Run with nothing else on the machine; threads as torch sets them unless --threads. ``--device cuda`` times
both on a GPU; ``--synthetic`` needs no treebank (a machine the data may not travel to): sentences of random
words of the shipped vocabulary, lengths drawn uniformly from 2-40 (WSJ 00-20's mean of 2-40 is about 21), and
an epoch counted as WSJ 00-20's 806k words.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch

from onparse.families import PcfgConfig
from onparse.families.base import MAX_TRAINING_WORDS
from onparse.families.grammar_training import length_batches
from onparse.families.pcfg.model import NeuralPCFG
from onparse.hardware import describe
from onparse.parsing.parse import Parser
from onparse.store import modeldir, shipped
from onparse.text.corpus import read_sentences
from onparse.text.language import Sentence
from onparse.text.tokenize import normalize
from onparse.text.treebank import read_gold
from onparse.text.vocabulary import Vocabulary

WSJ_EPOCH_TOKENS = 806_152  # words of WSJ 00-20's sentences of 2-40 words (benchmarks/grammar.json)


def synchronized(device: torch.device) -> float:
    """The time once the device has finished what it was given."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def training_rate(
    config: PcfgConfig,
    sentences: list[list[int]],
    words_per_batch: int,
    seconds: float,
    device: torch.device = torch.device("cpu"),
) -> float:
    """Tokens/s of full updates over length batches drawn from ``sentences``, timed for about ``seconds``."""
    torch.manual_seed(0)
    model = NeuralPCFG(config).to(device)
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    batches = length_batches([len(s) for s in sentences], words_per_batch, random.Random(0))
    tokens, started, first = 0, None, True
    for batch in batches:
        words = torch.tensor([sentences[k] for k in batch], device=device)
        loss = -model.log_likelihood(words).sum() / words.numel()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if first:  # the first update warms up
            first, started = False, synchronized(device)
            continue
        tokens += words.numel()
        if synchronized(device) - started > seconds:
            break
    return tokens / (synchronized(device) - started)


def parsing_rate(parser: Parser, sentences: list) -> float:
    started = time.perf_counter()
    for outputs in parser.distances(sentences):
        parser.build(outputs)
    return len(sentences) / (time.perf_counter() - started)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--ptb", type=Path, default=Path("../shared/data/ptb/wsj"))
    options.add_argument("--sizes", nargs="+", default=["30x60", "64x128"], help="NONTERMINALSxPRETERMINALS")
    options.add_argument("--words-per-batch", type=int, default=600)
    options.add_argument("--seconds", type=float, default=60.0, help="training timed for about this long per size")
    options.add_argument("--parse-sentences", type=int, default=500)
    options.add_argument(
        "--grammar", type=Path, help="a trained grammar's model directory to parse with (default: an untrained one)"
    )
    options.add_argument("--threads", type=int)
    options.add_argument("--device", default="cpu", help="torch device, e.g. cuda")
    options.add_argument(
        "--synthetic", action="store_true", help="random sentences of the shipped vocabulary: no treebank"
    )
    options.add_argument("--out", type=Path, default=Path("benchmarks/grammar.json"))
    args = options.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    onlstm = modeldir.load(modeldir.read_ensemble(shipped.DEFAULT_MODEL).members[0])
    if args.synthetic:
        vocab, draw = onlstm.vocab, random.Random(0)
        words = [
            [vocab.words[draw.randrange(2, len(vocab))] for _ in range(draw.randint(2, MAX_TRAINING_WORDS))]
            for _ in range(40000)
        ]
    else:
        train = read_sentences([str(args.ptb / f"{k:02d}") for k in range(21)])
        words = [[normalize(w) for w in s.word_tokens] for s in train]
        vocab = Vocabulary.build(words, 10000)
    kept = [vocab.ids(w) for w in words if 2 <= len(w) <= MAX_TRAINING_WORDS]
    epoch_tokens = WSJ_EPOCH_TOKENS if args.synthetic else sum(map(len, kept))
    results: dict = {
        "hardware": describe(args.device),
        "training": {},
        "epoch_tokens": epoch_tokens,
        "sentences": "synthetic" if args.synthetic else str(args.ptb),
    }
    for size in args.sizes:
        nonterminals, preterminals = map(int, size.split("x"))
        config = PcfgConfig(vocab_size=len(vocab), nonterminals=nonterminals, preterminals=preterminals)
        rate = training_rate(config, kept, args.words_per_batch, args.seconds, device)
        results["training"][size] = {
            "tokens_per_s": round(rate),
            "minutes_per_epoch": round(epoch_tokens / rate / 60, 1),
        }
        print(size, results["training"][size], flush=True)
    dev = (
        [Sentence.of_tokens(w) for w in words[-args.parse_sentences :]]
        if args.synthetic
        else [s.sentence for s in read_gold(str(args.ptb / "22")) if s.words][: args.parse_sentences]
    )
    grammar = modeldir.load(args.grammar) if args.grammar else None
    if grammar is None:
        config = PcfgConfig(vocab_size=len(vocab), nonterminals=30, preterminals=60)
        grammar = modeldir.ModelBundle(NeuralPCFG(config).eval(), vocab, "spans", None)
    results["parsing"] = {
        "sentences": len(dev),
        "grammar_sentences_per_s": round(parsing_rate(Parser(grammar, max_words=2000, device=args.device), dev), 1),
        "onlstm_paper_size_sentences_per_s": round(
            parsing_rate(Parser(onlstm, max_words=2000, device=args.device), dev), 1
        ),
        "grammar": str(args.grammar or "untrained 30x60"),
    }
    print(results["parsing"], flush=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
