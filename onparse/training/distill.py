"""Distillation: train one ON-LSTM whose distances rebuild a teacher's trees (or one grammar that learns them).

The teacher (an ensemble, Shayegh et al., ICLR 2024) parses the training
sentences; no gold trees are used. The student keeps its language-model loss
and adds a ranking loss on its syntactic distances (Shen et al., 2018,
"Straight to the Tree"): wherever the greedy builder (``trees.build_tree``)
must pick word ``k`` as the largest distance of a span to rebuild the
teacher's tree, ``d_k`` should exceed every other distance of that span by a
margin. A grammar student (``onparse.families.pcfg.model``) learns the joint likelihood of
each sentence and its teacher's tree, ``log p(x) + log p(t | x)``: its
marginal likelihood and the teacher's tree's share of it
(``grammar.GrammarObjective`` with trees). Distillation is the one training
loop (``onparse.training.train.Trainer``) with either objective; its run keeps as
``model/`` the point whose trees agree best with the teacher's on dev text.

The builder cannot produce every binary tree (a right child whose own left
child has two or more words is out of its reach), so the targets are those
of the nearest tree it can build: ``split_spans`` says, for each word, the
span in which it must win.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from onparse.config import DistillConfig, TrainConfig
from onparse.families import named, of
from onparse.families.grammar import MIN_SHARE
from onparse.families.onlstm.model import OnlstmModel
from onparse.parsing.parse import Parser
from onparse.parsing.report import progress_bar
from onparse.settings import Layer, Reading
from onparse.store import modeldir
from onparse.store.atomic import replacing_file
from onparse.store.modeldir import ModelBundle
from onparse.structures.scoring import score
from onparse.structures.trees import Span, spans
from onparse.text.corpus import read_sentences
from onparse.text.language import Sentence
from onparse.text.treebank import GoldSentence
from onparse.text.vocabulary import Vocabulary
from onparse.training.train import Setup


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
