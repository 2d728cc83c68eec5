"""Distillation: train one ON-LSTM whose distances rebuild a teacher's trees (or one grammar that learns them).

The teacher (an ensemble, Shayegh et al., ICLR 2024) parses the training
sentences; no gold trees are used. The student keeps its language-model loss
and adds a ranking loss on its syntactic distances (Shen et al., 2018,
"Straight to the Tree"): wherever the greedy builder (``trees.build_tree``)
must pick word ``k`` as the largest distance of a span to rebuild the
teacher's tree, ``d_k`` should exceed every other distance of that span by a
margin. A grammar student (``onparse.families.pcfg_model``) learns the joint likelihood of
each sentence and its teacher's tree, ``log p(x) + log p(t | x)``: its
marginal likelihood and the teacher's tree's share of it
(``grammar.GrammarObjective`` with trees). Distillation is the one training
loop (``onparse.train.Trainer``) with either objective; its run keeps as
``model/`` the point whose trees agree best with the teacher's on dev text.

The builder cannot produce every binary tree (a right child whose own left
child has two or more words is out of its reach), so the targets are those
of the nearest tree it can build: ``split_spans`` says, for each word, the
span in which it must win.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence

from onparse import modeldir
from onparse.atomic import replacing_file
from onparse.config import DistillConfig, TrainConfig
from onparse.corpus import read_sentences
from onparse.families import named, of
from onparse.families.onlstm import tree_row
from onparse.families.onlstm_model import OnlstmModel
from onparse.families.pcfg_model import MIN_SHARE
from onparse.families.pcfg_training import MAX_TRAINING_WORDS, GrammarObjective, grammar_perplexity
from onparse.language import Sentence
from onparse.modeldir import ModelBundle
from onparse.parse import Parser
from onparse.reading import model_tokens, pool, word_ranges
from onparse.report import progress_bar
from onparse.scoring import score
from onparse.settings import Layer, Reading
from onparse.train import Setup, WholeSentenceObjective, dev_stream, stream_perplexity
from onparse.treebank import GoldSentence
from onparse.trees import Span, spans
from onparse.vocabulary import Vocabulary


def split_spans(tree_spans: set[Span], n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """For each word k, the span [lo_k, hi_k) of the builder's recursion in which d_k must be the largest.

    Follows the builder top-down over the teacher's tree (its spans of two or
    more words): a span whose left child is one word splits at its first word;
    otherwise it splits before its right child, whose first word then joins
    the rest as a leaf (the nearest the builder comes when that right child
    has a larger left child of its own). Distances ``hi - lo`` rebuild that
    tree exactly.
    """
    lo, hi = np.zeros(n_words, dtype=np.int64), np.zeros(n_words, dtype=np.int64)
    pending = [(0, n_words)] if n_words else []
    while pending:
        start, end = pending.pop()
        # the teacher's left child of [start, end): its largest span starting at `start` (one word if none)
        middle = max([b for a, b in tree_spans if a <= start < b < end], default=start + 1)
        split = start if middle == start + 1 else middle
        lo[split], hi[split] = start, end
        if split == start:
            if end - start > 1:
                pending.append((start + 1, end))
        else:
            pending.append((start, middle))
            if middle + 1 < end:
                pending.append((middle + 1, end))
    return lo, hi


def ranking_loss(distances: Tensor, lo: Tensor, hi: Tensor, lengths: Tensor, margin: float) -> Tensor:
    """Mean hinge ``max(0, margin - (d_k - d_j))`` over every word j of the span in which word k must win.

    ``distances``, ``lo`` and ``hi`` are B x T (padding beyond ``lengths`` is ignored).
    """
    positions = torch.arange(distances.size(1), device=distances.device)
    inside = (lo.unsqueeze(2) <= positions) & (positions < hi.unsqueeze(2))  # [b, k, j]: j in k's span
    inside &= positions.view(1, -1, 1) != positions.view(1, 1, -1)
    inside &= (positions < lengths.unsqueeze(1)).unsqueeze(2)
    gaps = distances.unsqueeze(2) - distances.unsqueeze(1)  # d_k - d_j
    hinge = torch.relu(margin - gaps)[inside]
    return hinge.mean() if hinge.numel() else distances.sum() * 0.0


@dataclass
class Example:
    """One training sentence: what the model reads of it, how its steps make the words' distances, its teacher
    targets."""

    ids: list[int]
    ranges: list[tuple[int, int]]  # each word's read steps (``reading.word_ranges``)
    lo: np.ndarray
    hi: np.ndarray


def examples(
    sentences: Sequence[Sentence], tree_spans: Sequence[set[Span]], vocab: Vocabulary, reading: Reading = Reading()
) -> list[Example]:
    """Model ids and split targets of sentences and the teacher's spans over their words."""
    found = []
    for sentence, teacher in zip(sentences, tree_spans):
        lo, hi = split_spans(teacher, len(sentence.words))
        found.append(Example(vocab.ids(model_tokens(reading, sentence)), word_ranges(reading, sentence), lo, hi))
    return found


def batch_losses(
    model: OnlstmModel, batch: list[Example], vocab: Vocabulary, layer: Layer, margin: float, dtype: torch.dtype
) -> tuple[Tensor, Tensor]:
    """Language-model and ranking losses of sentences sorted longest first, each read from a fresh state as in
    parsing."""
    inputs = [torch.tensor([vocab.eos_id] + e.ids) for e in batch]
    targets = [torch.tensor(e.ids + [vocab.eos_id]) for e in batch]
    packed = pack_sequence(inputs)
    output, _, distances = model(packed.data, None, dtype, packed.batch_sizes.tolist())
    lm_loss = model.loss(output, pack_sequence(targets).data, dtype)
    padded = pad_packed_sequence(packed._replace(data=distances.t()))[0][1:]  # T x B x L: the read steps
    steps = tree_row(padded.permute(2, 1, 0), layer)  # B x T
    words = [pool(steps[b, : len(e.ids)], e.ranges) for b, e in enumerate(batch)]
    row = torch.nn.utils.rnn.pad_sequence(words, batch_first=True)  # B x words
    width = row.size(1)
    pad = lambda a: np.pad(a, (0, width - len(a)))  # noqa: E731
    lo = torch.from_numpy(np.stack([pad(e.lo) for e in batch]))
    hi = torch.from_numpy(np.stack([pad(e.hi) for e in batch]))
    lengths = torch.tensor([len(e.ranges) for e in batch])
    return lm_loss, ranking_loss(row, lo, hi, lengths, margin)


class DistillationObjective(WholeSentenceObjective):
    """Language-model loss plus ``rank_weight`` times the ranking loss, over shuffled batches of similar-length
    sentences.

    The model trains without dropout: packed sentences (no padding work) leave
    no time axis for variational dropout masks, and the ranking targets are
    sharp. Each epoch's order is drawn from the seed and the epoch alone, so a
    resumed run sees the batches an uninterrupted one would.
    """

    train_mode = False

    def __init__(
        self,
        data: list[Example],
        vocab: Vocabulary,
        layer: Layer,
        batch_size: int,
        rank_weight: float,
        margin: float,
        seed: int,
    ):
        self.data, self.vocab, self.layer = data, vocab, layer
        self.batch_size, self.rank_weight, self.margin, self.seed = batch_size, rank_weight, margin, seed
        self.batches_per_epoch = -(-len(data) // batch_size)
        self._order: tuple[int, list[list[int]]] | None = None

    def batches(self, epoch: int) -> list[list[int]]:
        """The epoch's batches of example indices: sorted by length, cut, shuffled."""
        if self._order is None or self._order[0] != epoch:
            rng = random.Random(self.seed * 1000 + epoch)
            order = sorted(range(len(self.data)), key=lambda i: (len(self.data[i].ids), rng.random()))
            batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
            rng.shuffle(batches)
            self._order = (epoch, batches)
        return self._order[1]

    def loss(
        self, model: OnlstmModel, epoch: int, batch: int, dtype: torch.dtype
    ) -> tuple[Tensor, int, dict[str, float]]:
        examples_ = sorted((self.data[i] for i in self.batches(epoch)[batch]), key=lambda e: -len(e.ids))
        lm_loss, rank_loss = batch_losses(model, examples_, self.vocab, self.layer, self.margin, dtype)
        tokens = sum(len(e.ids) + 1 for e in examples_)
        return lm_loss + self.rank_weight * rank_loss, tokens, {"lm": lm_loss.item(), "rank": rank_loss.item()}


def teacher_parses(
    teacher: str, sentences: list[Sentence], settings: dict, shares: bool = False
) -> list[tuple[list[Span], list]]:
    """The teacher's tree over each sentence, as sorted spans over its words, and (``shares``) each span of 2 to n - 1
    words that its voters hold, with its share of their votes (a lone grammar's: its posterior); a progress bar."""
    parser = Parser.load(teacher, **settings)
    found = []
    with progress_bar(f"teacher parses {len(sentences):,} sentences", len(sentences)) as advance:
        for distances in parser.distances(sentences):
            built = parser.build(distances)
            found.append((sorted(spans(built.tree)), span_shares(built.votes) if shares else []))
            advance(1)
    return found


def span_shares(votes: np.ndarray) -> list[tuple[int, int, float]]:
    """The spans of 2 to n - 1 words whose share of the votes (``votes[i, j]``) is at least ``MIN_SHARE``, with it."""
    n = len(votes) - 1
    return [
        (int(i), int(j), round(float(votes[i, j]), 4))
        for i, j in zip(*np.nonzero(votes >= MIN_SHARE))
        if 2 <= j - i < n
    ]


def teacher_trees(config: TrainConfig, work_dir: Path | None) -> tuple[list[Sentence], list[list[Span]], list | None]:
    """A seeded sample of training sentences, the teacher's spans over them and (soft targets) its span shares,
    kept in a file.

    The file (``distill.trees``, or ``work_dir/teacher.jsonl``) opens with the
    settings it was made with, so a resumed run, or another student of the
    same teacher and sample (one of trees reads a file of shares too), reads
    it back instead of parsing again, and a changed setting parses afresh.
    It is written whole or not at all.
    """
    spec = config.distill
    seed = config.seed if spec.sample_seed is None else spec.sample_seed
    key = {
        "teacher": str(Path(spec.teacher).resolve()),
        "train": config.train,
        "sentences": spec.sentences,
        "seed": seed,
        "tokens": "with punctuation",
    }  # files of words alone, made before models read punctuation, are parsed again
    if spec.learns_shares:
        key["targets"] = "span shares"
    cache = Path(spec.trees) if spec.trees else work_dir / "teacher.jsonl" if work_dir else None
    if cache and cache.is_file():
        lines = cache.read_text(encoding="utf-8").splitlines()
        made_with = json.loads(lines[0]) if lines else None
        if made_with == key or made_with == {
            **key,
            "targets": "span shares",
        }:  # shares kept serve a student of trees too
            found = [json.loads(line) for line in lines[1:]]
            return (
                [Sentence(tuple(f["tokens"]), tuple(f["words"])) for f in found],
                [[tuple(s) for s in f["spans"]] for f in found],
                [[tuple(s) for s in f["shares"]] for f in found] if spec.learns_shares else None,
            )
    sentences = read_sentences(config.train, config.language, config.encoding, config.tokenized)
    random.Random(seed).shuffle(sentences)
    sentences = sentences[: spec.sentences]
    parsed = teacher_parses(
        spec.teacher, sentences, {"device": config.device, "dtype": config.dtype}, spec.learns_shares
    )
    if cache:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with replacing_file(cache) as out:
            out.write(json.dumps(key) + "\n")
            out.writelines(
                json.dumps(
                    {
                        "tokens": sentence.tokens,
                        "words": sentence.words,
                        "spans": found,
                        **({"shares": shares} if spec.learns_shares else {}),
                    }
                )
                + "\n"
                for sentence, (found, shares) in zip(sentences, parsed)
            )
    return sentences, [found for found, _ in parsed], [shares for _, shares in parsed] if spec.learns_shares else None


def agreement(teacher: str, dev_sentences: list[Sentence], layer: Layer, settings: dict, reading: Reading = Reading()):
    """A measure for training: sentence F1 of the student's trees (``layer``) against the teacher's on dev text."""
    targets = [
        GoldSentence(tuple(sentence.word_tokens), frozenset(found), (), "teacher")
        for sentence, (found, _) in zip(dev_sentences, teacher_parses(teacher, dev_sentences, settings))
    ]

    def measure(model: OnlstmModel, vocab: Vocabulary) -> float:
        parser = Parser(
            ModelBundle(model, vocab, layer, None, reading=reading), device=str(next(model.parameters()).device)
        )
        predicted = [spans(parser.build(d).tree) for d in parser.distances(dev_sentences)]
        return score(predicted, targets)["sentence_f1"]

    return measure


def distillation_config(
    spec: DistillConfig, default_layer: Layer | None = None, direction: str | None = None, **settings
) -> TrainConfig:
    """A distillation run's settings: the student's shape, language and reading from its model directory
    (``spec.start``; a student from scratch may read in another ``direction``), the teacher found by name or path,
    its layer the student's own unless given; ``settings`` are TrainConfig's other fields. ModelDirError for a
    student that is no model."""
    student = modeldir.load(spec.start)
    family = of(student.model.config)
    if spec.learns_shares and not family.learns_span_shares:
        what = "focus (a teacher's span shares)" if spec.focus else "soft targets (a teacher's span shares)"
        raise ValueError(f"{what} is for a grammar student; {spec.start} learns trees")
    if spec.soft_targets and spec.focus:
        raise ValueError("give soft targets or a focus, not both: each weighs the trees by the teacher's span shares")
    if spec.focus_end is not None and not spec.focus:
        raise ValueError("a focus's end value is for a focused student: give --focus too")
    family.check_reading(replace(student.reading, direction=direction or student.reading.direction), True)
    for name, value in family.student_training.items():  # an update's size and rate (a grammar's clipping) where unset
        if settings.get(name) is None:
            settings[name] = value
    spec = replace(spec, teacher=str(modeldir.locate(spec.teacher or None)))
    return TrainConfig(
        family=student.family,
        model=student.model.config,
        default_layer=default_layer or student.default_layer,
        distill=spec,
        language=student.language,
        reading=replace(student.reading, direction=direction or student.reading.direction),
        **settings,
    )


def distillation_setup(config: TrainConfig, checkpoint: dict | None, work_dir: Path | None):
    """The student (``start``'s weights, or fresh ones of its shape), its vocabulary, the objective and the
    teacher-agreement measure."""
    spec = config.distill
    if not spec.teacher or not spec.start:
        raise ValueError("distillation needs a teacher and a student to start from")
    modeldir.check_languages(config.language, student=spec.start, teacher=spec.teacher)
    start = modeldir.load(spec.start)
    if start.reading != config.reading and not (
        spec.from_scratch and start.reading.punctuation == config.reading.punctuation
    ):
        # fresh weights may read the other way; the vocabulary holds punctuation or not, so that stays
        raise ValueError(f"the student {spec.start} reads {start.reading}; this run says {config.reading}")
    model, vocab = start.model, start.vocab
    if spec.from_scratch:  # fresh weights of the run's shape (the student's own unless the run says otherwise)
        if type(config.model) is not type(model.config):
            raise ValueError(
                f"a student from scratch is of {spec.start}'s family; the run's shape {config.model} is not"
            )
        torch.manual_seed(config.seed)
        model = type(model)(replace(config.model, vocab_size=model.config.vocab_size))  # the vocabulary is start's
    device = torch.device(config.device)
    model = model.to(device)
    sentences, found, shares = teacher_trees(config, work_dir)
    objective = named(config.family).part("student_objective")(config, sentences, found, vocab, shares)
    if not objective.batches_per_epoch:
        raise ValueError("the training corpus holds no sentences")
    measures, dev_figures = {}, None
    if config.dev:
        settings = {"device": config.device, "dtype": config.dtype}
        dev_sentences = read_sentences([config.dev], config.language, config.encoding, config.tokenized)
        measures["teacher_agreement"] = agreement(
            spec.teacher, dev_sentences, config.default_layer, settings, config.reading
        )
        dev_figures = named(config.family).part("dev_figures")(config, dev_sentences, vocab, device)
    return Setup(model, vocab, objective, dev_figures, measures)


def onlstm_student(
    config: TrainConfig, sentences: list[Sentence], found: list[list[Span]], vocab: Vocabulary, shares: None = None
):  # it learns trees alone (``Family.learns_span_shares``)
    """An ON-LSTM student's objective: its language model and the ranking loss toward the teacher's trees."""
    return DistillationObjective(
        examples(sentences, [set(s) for s in found], vocab, config.reading),
        vocab,
        config.default_layer,
        config.batch_size,
        config.distill.rank_weight,
        config.distill.margin,
        config.seed,
    )


def grammar_student(
    config: TrainConfig,
    sentences: list[Sentence],
    found: list[list[Span]],
    vocab: Vocabulary,
    shares: list[list[tuple[int, int, float]]] | None = None,
):
    """A grammar student's objective: the joint likelihood of each sentence of 2-40 words and its teacher's tree, or
    (``shares``, soft targets) of every tree, each weighed by the teacher's shares of its spans, or (a focus) the
    sentence's likelihood focused by those shares."""
    spec = config.distill
    focus = (
        (spec.focus, spec.focus if spec.focus_end is None else spec.focus_end, config.epochs) if spec.focus else None
    )
    kept = [k for k, sentence in enumerate(sentences) if 2 <= len(sentence.words) <= MAX_TRAINING_WORDS]
    return GrammarObjective(
        [vocab.ids(model_tokens(config.reading, sentences[k])) for k in kept],
        config.batch_size,
        config.seed,
        trees=[found[k] for k in kept],
        shares=[shares[k] for k in kept] if shares is not None else None,
        focus=focus,
    )


def onlstm_dev_figures(config: TrainConfig, sentences: list[Sentence], vocab: Vocabulary, device: torch.device):
    """An ON-LSTM student's dev figures: its perplexity on the dev text read as a stream."""
    return stream_perplexity(dev_stream(config, vocab, device), config.bptt)


def grammar_dev_figures(config: TrainConfig, sentences: list[Sentence], vocab: Vocabulary, device: torch.device):
    """A grammar student's dev figures: its perplexity on the dev sentences."""
    return grammar_perplexity([vocab.ids(model_tokens(config.reading, s)) for s in sentences], config.batch_size)
