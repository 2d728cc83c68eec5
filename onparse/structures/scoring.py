"""Unlabeled F1 under the ON-LSTM paper's protocol, with the trivial baselines.

Pure scoring of span sets against gold sentences: no model, no torch. Returns
plain dicts; printing belongs to the CLI, running models to ``onparse.parsing.evaluate``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from nltk import Tree

from onparse.structures.trees import Span, baseline_spans, labeled_spans
from onparse.text.tokenize import is_punct
from onparse.text.treebank import RULES, GoldSentence, WordRule, read_each

REPORTED_LABELS = ("NP", "VP", "PP", "SBAR", "ADJP", "ADVP")
LENGTHS = {"2-4": (2, 4), "5-8": (5, 8), "9+": (9, None)}  # gold spans' lengths in words, recalled apart: long
# right-edge spans are what a stage past the vote recovered in published pipelines


def length_bucket(width: int) -> str:
    """The ``LENGTHS`` bucket of a span ``width`` words long (two or more)."""
    return next(name for name, (low, high) in LENGTHS.items() if width >= low and (high is None or width <= high))


def protocol(rule: WordRule) -> str:
    """The protocol line under every table, naming the treebank's word rule."""
    return PROTOCOL.replace(RULES["ptb"].description, rule.description, 1)


PROTOCOL = (
    "Protocol (Shen et al. 2019, ON-LSTM): words are the leaves whose POS tag is a word tag "
    "(punctuation, $, # and -NONE- dropped); unary chains collapsed; whole-sentence and one-word "
    "spans not counted. Sentence F1 is the mean over all sentences of per-sentence F1 (a sentence "
    "whose gold has no span scores recall 1, and precision 1 if the prediction has none either); "
    "corpus F1 pools the span counts of all sentences; a tree with no words (punctuation alone) is no "
    "sentence. Label recall: share of gold spans with that label (function tags stripped) found by the "
    "prediction; length recall the same for gold spans of 2-4, 5-8 and 9 or more words; RB: sentence F1 "
    "against the right-branching tree (how right-branching the trees are, no gold)."
)


def is_sentence(sentence: GoldSentence) -> bool:
    """Whether a gold tree counts as a sentence: one with no words under the rule (punctuation alone) does not."""
    return bool(sentence.words)


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
    length_found: dict[str, int] = field(default_factory=dict)
    length_total: dict[str, int] = field(default_factory=dict)
    right_branching_sum: float = 0.0

    def add(self, predicted_spans: Iterable[Span], sentence: GoldSentence) -> None:
        """Count one sentence; a tree that ``is_sentence`` refuses is left out, so every caller scores the same
        sentences."""
        if not is_sentence(sentence):
            return
        n = len(sentence.words)
        predicted = scored_spans(predicted_spans, n)
        gold = scored_spans(sentence.spans, n)
        self.f1_sum += sentence_prf(predicted, gold)[2]
        self.sentences += 1
        self.overlap += len(predicted & gold)
        self.predicted += len(predicted)
        self.gold += len(gold)
        self.right_branching_sum += sentence_prf(predicted, scored_spans(baseline_spans("right_branching", n), n))[2]
        for start, end in gold:
            bucket = length_bucket(end - start)
            self.length_total[bucket] = self.length_total.get(bucket, 0) + 1
            self.length_found[bucket] = self.length_found.get(bucket, 0) + ((start, end) in predicted)
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
            "length_recall": {
                bucket: 100 * self.length_found.get(bucket, 0) / self.length_total[bucket]
                for bucket in LENGTHS
                if self.length_total.get(bucket)
            },
            "right_branching_agreement": 100 * self.right_branching_sum / self.sentences if self.sentences else 0.0,
        }


def score(predictions: Sequence[Iterable[Span]], gold: Sequence[GoldSentence]) -> dict:
    """Score span sets aligned with gold sentences."""
    if len(predictions) != len(gold):
        raise ValueError(f"{len(predictions)} predictions for {len(gold)} gold sentences")
    scorer = Scorer()
    for predicted, sentence in zip(predictions, gold):
        scorer.add(predicted, sentence)
    return scorer.result()


def baseline_scores(gold: Sequence[GoldSentence]) -> dict[str, dict]:
    """Left-branching, right-branching and balanced trees on the same sentences."""
    return {
        name: score([baseline_spans(name, len(s.words)) for s in gold], gold)
        for name in ("left_branching", "right_branching", "balanced")
    }


def predicted_spans(tree: Tree, words: Sequence[str], source: str = "", rule: WordRule | None = None) -> set[Span]:
    """Spans of another parser's tree over the gold words.

    The tree's leaves are matched to the gold words in order; a leaf that
    matches none may be punctuation the parser kept (skipped: punctuation by
    its characters, or by its tag under the treebank's ``rule``), never a
    word: ValueError when the leaves are not the gold words in order.
    """
    matched = 0
    extra: list[object] = []

    def is_next_word(leaf: object, parent: Tree) -> bool:
        nonlocal matched
        if matched < len(words) and leaf == words[matched]:
            matched += 1
            return True
        tagged_punctuation = rule is not None and len(parent) == 1 and not rule.is_word(parent.label(), str(leaf))
        if not (isinstance(leaf, str) and is_punct(leaf)) and not tagged_punctuation:
            extra.append(leaf)
        return False

    found = {(s, e) for _, s, e in labeled_spans(tree, is_next_word)}
    if matched != len(words) or extra:
        why = f"a word the gold lacks: {extra[0]!r}" if extra else f"matched {matched} of {len(words)} gold words"
        raise ValueError(f"{source}: prediction's leaves are not the gold words in order ({why})")
    return found


def score_predictions(
    pred: str,
    gold: Sequence[GoldSentence],
    kept: Sequence[bool] | None = None,
    encoding: str = "UTF-8",
    skip_unaligned: bool = False,
    rule: WordRule | None = None,
) -> dict:
    """Another parser's trees in ``pred`` (one per gold tree, in order), scored on the gold sentences ``kept``.

    A prediction whose leaves are not its gold sentence's words (punctuation
    aside) is an error naming it (never scored as if it aligned); with
    ``skip_unaligned`` it is left out of the score and listed in
    ``unaligned`` (its position from 1, where it is, why), as EVALB-style
    tools do, and only a file where nothing aligns is an error. An empty
    tree stands for a gold tree without words. ValueError for a file that
    does not hold one tree per gold tree.
    """
    kept = list(kept) if kept is not None else [True] * len(gold)
    position = iter(range(len(gold)))
    unaligned: list[dict] = []

    def spans_of(tree: Tree, source: str) -> set[Span] | None:
        k = next(position, None)
        if k is None or not kept[k] or not gold[k].words:
            return None
        try:
            return predicted_spans(tree, gold[k].words, source, rule)
        except ValueError as err:
            unaligned.append({"sentence": k + 1, "source": source, "reason": str(err).split(": ", 1)[-1]})
            return None

    found = list(read_each(pred, spans_of, encoding, empty_trees=True))
    if len(found) != len(gold):
        raise ValueError(f"{pred}: {len(found)} trees for {len(gold)} gold sentences")
    pairs = [(spans, sentence) for spans, sentence, keep in zip(found, gold, kept) if keep and spans is not None]
    if unaligned and (not skip_unaligned or not pairs):
        first = unaligned[0]
        raise ValueError(
            f"{first['source']}: {first['reason']}"
            + (
                f"; {len(unaligned)} of {len(unaligned) + len(pairs)} predictions do not align (--skip-unaligned "
                f"scores the rest)"
                if pairs
                else ": no prediction aligns with its gold sentence"
            )
        )
    sentences = [sentence for _, sentence in pairs]
    return {
        **score([spans for spans, _ in pairs], sentences),
        "aligned": len(pairs),
        "unaligned": unaligned,
        "baselines": baseline_scores(sentences),
        "protocol": PROTOCOL,
    }


COLLAPSED_SHARE = 0.9  # of a model's trees of one shape past which it has collapsed into that shape
SHAPE_WORDS = 4  # the shortest sentence whose tree tells a shape (up to three words, few trees are possible)
SHAPE_SENTENCES = 10  # the fewest such sentences that tell it


def collapsed_shape(trees: Sequence[Iterable[Span]], lengths: Sequence[int]) -> str | None:
    """The one shape a model's trees have collapsed into, without gold trees: right- or left-branching, or one tree
    for every sentence of a length (``COLLAPSED_SHARE`` of the sentences of ``SHAPE_WORDS`` words or more); None for
    trees that follow their sentences. A focused grammar student has collapsed into right-branching trees in a
    language none of us knew, and voted its model below the vote that taught it; a vote keeps such a model out."""
    telling = [(frozenset(scored_spans(tree, n)), n) for tree, n in zip(trees, lengths) if n >= SHAPE_WORDS]
    if len(telling) < SHAPE_SENTENCES:
        return None
    for name in ("right_branching", "left_branching"):
        same = sum(tree == scored_spans(baseline_spans(name, n), n) for tree, n in telling)
        if same >= COLLAPSED_SHARE * len(telling):
            return name.replace("_", "-")
    by_length: dict[int, list[frozenset]] = {}
    for tree, n in telling:
        by_length.setdefault(n, []).append(tree)
    shared = [group for group in by_length.values() if len(group) > 1]  # a length one sentence has tells nothing
    counted = sum(map(len, shared))
    modal = sum(max(group.count(tree) for tree in group) for group in shared)
    if counted >= SHAPE_SENTENCES and modal >= COLLAPSED_SHARE * counted:
        return "one tree a length"
    return None


# The most a students' vote may move toward a fixed shape past the vote that taught it, in points of agreement with
# right- or left-branching trees: between what sound students moved and what one collapsed voter does. Sound
# students' votes moved -1.7 to -0.3 (English, German, Chinese dev texts) and +5.9 (a 3,000-sentence German fit, whose
# students' vote read 3.4 above its teacher; +8.7 without one of its students); one right-branching voter among
# that fit's seven moved it 20.5 (and cost 0.3), two 43.6 (and cost 6.5). Dev gold trees showed which were sound.
SHAPE_DRIFT = 15.0


def shape_agreement(trees: Sequence[Iterable[Span]], lengths: Sequence[int]) -> dict[str, float]:
    """Mean sentence F1 of ``trees`` against the right- and left-branching trees of their sentences (of SHAPE_WORDS
    words or more), by shape: how near a parser is to a fixed shape, without gold trees."""
    telling = [(scored_spans(tree, n), n) for tree, n in zip(trees, lengths) if n >= SHAPE_WORDS]
    return {
        name.replace("_", "-"): 100
        * sum(sentence_prf(tree, scored_spans(baseline_spans(name, n), n))[2] for tree, n in telling)
        / max(len(telling), 1)
        for name in ("right_branching", "left_branching")
    }


def shape_drift(trees: Sequence[Iterable[Span]], taught: Sequence[Iterable[Span]], lengths: Sequence[int]) -> float:
    """How much nearer to a fixed shape ``trees`` are than the ``taught`` trees they learnt from: the larger gain in
    agreement with right- or left-branching trees, in points (negative where they moved away from both)."""
    now, before = shape_agreement(trees, lengths), shape_agreement(taught, lengths)
    return max(now[shape] - before[shape] for shape in now)
