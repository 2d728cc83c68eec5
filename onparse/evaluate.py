"""Unlabeled F1 under the ON-LSTM paper's protocol, with baselines.

Returns plain dicts; printing belongs to the CLI.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from onparse.treebank import GoldSentence
from onparse.trees import Span, balanced, build_tree, labeled_spans, left_branching, right_branching, spans

if TYPE_CHECKING:
    from onparse.parse import Parser

REPORTED_LABELS = ("NP", "VP", "PP", "SBAR", "ADJP", "ADVP")

PROTOCOL = (
    "Protocol (Shen et al. 2019, ON-LSTM): words are the leaves whose POS tag is a word tag "
    "(punctuation, $, # and -NONE- dropped); unary chains collapsed; whole-sentence and one-word "
    "spans not counted. Sentence F1 is the mean over all sentences of per-sentence F1 (a sentence "
    "whose gold has no span scores recall 1, and precision 1 if the prediction has none either); "
    "corpus F1 pools the span counts of all sentences. Label recall: share of gold spans with that "
    "label (function tags stripped) found by the prediction."
)


def scored_spans(spans: Iterable[Span], n_words: int) -> set[Span]:
    """The spans the protocol counts: two or more words, not the whole sentence."""
    return {(s, e) for s, e in spans if e - s >= 2 and (s, e) != (0, n_words)}


def sentence_prf(predicted: set[Span], gold: set[Span]) -> tuple[float, float, float]:
    """Precision, recall and F1 of one sentence, with the paper's empty-set conventions."""
    overlap = len(predicted & gold)
    precision = overlap / len(predicted) if predicted else 0.0
    recall = overlap / len(gold) if gold else 0.0
    if not gold:
        recall = 1.0
        if not predicted:
            precision = 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


@dataclass
class Scorer:
    """Accumulates one parser's scores over a corpus."""

    f1_sum: float = 0.0
    sentences: int = 0
    overlap: int = 0
    predicted: int = 0
    gold: int = 0
    label_found: dict[str, int] = field(default_factory=dict)
    label_total: dict[str, int] = field(default_factory=dict)

    def add(self, predicted_spans: Iterable[Span], sentence: GoldSentence) -> None:
        n = len(sentence.words)
        predicted = scored_spans(predicted_spans, n)
        gold = scored_spans(sentence.spans, n)
        self.f1_sum += sentence_prf(predicted, gold)[2]
        self.sentences += 1
        self.overlap += len(predicted & gold)
        self.predicted += len(predicted)
        self.gold += len(gold)
        for label, start, end in set(sentence.labeled):
            if label in REPORTED_LABELS and (start, end) in gold:
                self.label_total[label] = self.label_total.get(label, 0) + 1
                self.label_found[label] = self.label_found.get(label, 0) + ((start, end) in predicted)

    def result(self) -> dict:
        """Figures in percent (0-100)."""
        precision = self.overlap / self.predicted if self.predicted else 0.0
        recall = self.overlap / self.gold if self.gold else 0.0
        corpus_f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {
            "sentences": self.sentences,
            "sentence_f1": 100 * self.f1_sum / self.sentences if self.sentences else 0.0,
            "corpus_f1": 100 * corpus_f1,
            "corpus_precision": 100 * precision,
            "corpus_recall": 100 * recall,
            "label_recall": {
                label: 100 * self.label_found.get(label, 0) / self.label_total[label]
                for label in REPORTED_LABELS
                if self.label_total.get(label)
            },
        }


def score(predictions: Sequence[Iterable[Span]], gold: Sequence[GoldSentence]) -> dict:
    """Score span sets aligned with gold sentences."""
    if len(predictions) != len(gold):
        raise ValueError(f"{len(predictions)} predictions for {len(gold)} gold sentences")
    scorer = Scorer()
    for predicted, sentence in zip(predictions, gold):
        scorer.add(predicted, sentence)
    return scorer.result()


def evaluate_parser(parser: "Parser", gold: Sequence[GoldSentence], untrained_seed: int | None = 0, progress=None) -> dict:
    """Score every layer of a parser's model on gold sentences, beside the baselines.

    The top level describes the parser's chosen layer; ``layers`` holds each
    layer and ``mean`` (distances averaged over layers), ``baselines`` left/right-branching, balanced, and (with
    ``untrained_seed``) the same builder on an untrained model of the same
    architecture, which shows what training adds (Dyer et al., 2019).
    """
    words = [sentence.words for sentence in gold]
    distances = _distances_in_chunks(parser, words, progress)
    n_layers = parser.model.config.n_layers
    layers = {
        str(k + 1): score([_tree_spans(d[k]) for d in distances], gold) for k in range(n_layers)
    }
    layers["mean"] = score([_tree_spans(d.mean(axis=0)) for d in distances], gold)
    baselines = baseline_scores(gold)
    if untrained_seed is not None:
        untrained = _untrained_like(parser, untrained_seed)
        untrained_distances = _distances_in_chunks(untrained, words, progress)
        baselines[f"untrained_layer_{parser.layer}"] = score(
            [_tree_spans(d[parser.layer - 1]) for d in untrained_distances], gold
        )
    chosen = layers[str(parser.layer)]
    return {**chosen, "layer": parser.layer, "layers": layers, "baselines": baselines, "protocol": PROTOCOL}


def baseline_scores(gold: Sequence[GoldSentence]) -> dict[str, dict]:
    """Left-branching, right-branching and balanced trees on the same sentences."""
    makers = {"left_branching": left_branching, "right_branching": right_branching, "balanced": balanced}
    return {
        name: score([spans(make(len(s.words))) if s.words else set() for s in gold], gold) for name, make in makers.items()
    }


def _tree_spans(distances) -> set[Span]:
    return spans(build_tree(distances.tolist(), list(range(len(distances))))) if len(distances) else set()


def _distances_in_chunks(parser: "Parser", words: Sequence[Sequence[str]], progress) -> list:
    """Distances for all sentences, reporting progress every few batches."""
    step = parser.batch_size * 4
    task = progress.add_task("parsing", total=len(words)) if progress else None
    result = []
    for start in range(0, len(words), step):
        result.extend(parser.distances(words[start : start + step]))
        if progress:
            progress.update(task, advance=len(words[start : start + step]))
    return result


def _untrained_like(parser: "Parser", seed: int) -> "Parser":
    import torch

    from onparse.model import LanguageModel
    from onparse.modeldir import ModelBundle
    from onparse.parse import Parser

    torch.manual_seed(seed)
    model = LanguageModel(parser.model.config)
    bundle = ModelBundle(model, parser.bundle.vocab, parser.layer, parser.bundle.path)
    return Parser(bundle, parser.layer, str(parser.device), parser.dtype, parser.batch_size, parser.max_words)


def layer_f1(model, vocab, gold_path: str) -> dict[str, float]:
    """Dev sentence F1 per layer for a model being trained (no baselines)."""
    from onparse.modeldir import ModelBundle
    from onparse.parse import Parser
    from onparse.treebank import read_gold

    parser = Parser(ModelBundle(model, vocab, 1, None))
    result = evaluate_parser(parser, list(read_gold(gold_path)), untrained_seed=None)
    model.train()
    return {layer: figures["sentence_f1"] for layer, figures in result["layers"].items()}


def predicted_spans(tree, words: Sequence[str], source: str = "") -> set[Span]:
    """Spans of another parser's tree over the gold words.

    The tree's leaves are matched to the gold words in order; leaves that match
    none (punctuation the parser kept, say) are skipped.
    """
    keep, k = set(), 0
    for i, leaf in enumerate(tree.leaves()):
        if k < len(words) and leaf == words[k]:
            keep.add(i)
            k += 1
    if k != len(words):
        raise ValueError(f"{source}: prediction's leaves do not contain the gold words in order (matched {k} of {len(words)})")
    return {(s, e) for _, s, e in labeled_spans(tree, lambda i, _: i in keep)}
