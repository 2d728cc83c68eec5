"""Running parsers over gold sentences: every layer, the untrained control, dev F1 during training.

Scoring itself is ``onparse.scoring``; this module feeds it trees built from
a model's distances.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from onparse.model import LanguageModel
from onparse.modeldir import ModelBundle
from onparse.parse import Parser
from onparse.scoring import PROTOCOL, baseline_scores, score
from onparse.treebank import GoldSentence, read_gold
from onparse.trees import Span, build_tree, spans
from onparse.vocabulary import Vocabulary

Advance = Callable[[int], None]  # told how many more sentences are done


def layer_spans(distances: np.ndarray) -> dict[str, set[Span]]:
    """The builder's spans from each layer's distances ("1", "2", ...) and from their mean ("mean")."""
    rows = {str(k + 1): row for k, row in enumerate(distances)}
    rows["mean"] = distances.mean(axis=0)
    return {name: spans(build_tree(row)) for name, row in rows.items()}


def model_spans(parser: Parser, gold: Sequence[GoldSentence], advance: Advance | None = None) -> list[dict[str, set[Span]]]:
    """``layer_spans`` for every gold sentence, the model reading the gold words."""
    result = []
    for distances in parser.distances([sentence.words for sentence in gold]):
        result.append(layer_spans(distances))
        if advance:
            advance(1)
    return result


def score_layers(parser: Parser, gold: Sequence[GoldSentence], advance: Advance | None = None) -> dict[str, dict]:
    """Figures for each layer and the mean of layers."""
    per_sentence = model_spans(parser, gold, advance)
    return {name: score([found[name] for found in per_sentence], gold) for name in per_sentence[0]} if gold else {}


def untrained_like(parser: Parser, seed: int = 0) -> Parser:
    """The same architecture, vocabulary, layer and settings with freshly initialised weights.

    Seeded on its own generator state, so the caller's random stream is untouched.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LanguageModel(parser.bundle.model.config)
    bundle = ModelBundle(model.eval(), parser.bundle.vocab, parser.layer, None)
    return Parser(bundle, parser.layer, **vars(parser.settings))


def evaluate_parser(parser: Parser, gold: Sequence[GoldSentence], untrained_seed: int | None = 0,
                    advance: Advance | None = None) -> dict:
    """Score every layer of a parser's model on gold sentences, beside the baselines.

    The top level describes the parser's chosen layer; ``layers`` holds each
    layer and ``mean`` (distances averaged over layers), ``baselines``
    left/right-branching, balanced, and (with ``untrained_seed``) the same
    builder on an untrained model of the same architecture, which shows what
    training adds (Dyer et al., 2019).
    """
    layers = score_layers(parser, gold, advance)
    baselines = baseline_scores(gold)
    if untrained_seed is not None:
        untrained = score_layers(untrained_like(parser, untrained_seed), gold, advance)
        baselines[f"untrained_layer_{parser.layer}"] = untrained[str(parser.layer)]
    return {**layers[str(parser.layer)], "layer": parser.layer, "layers": layers, "baselines": baselines,
            "protocol": PROTOCOL}


def dev_f1(gold_path: str) -> Callable[[LanguageModel, Vocabulary], dict[str, float]]:
    """A callback for training: dev sentence F1 per layer (and mean) of the model as it is now."""
    gold = list(read_gold(gold_path))

    def measure(model: LanguageModel, vocab: Vocabulary) -> dict[str, float]:
        parser = Parser(ModelBundle(model, vocab, 1, None), device=str(next(model.parameters()).device))
        return {name: figures["sentence_f1"] for name, figures in score_layers(parser, gold).items()}

    return measure
