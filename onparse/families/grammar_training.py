"""Training any grammar (``onparse.families.grammar``) on raw text: the sentences' marginal likelihood, nothing else;
or, as a student (``onparse.training.distill``), the joint likelihood of each sentence and its teacher's tree. Every
grammar family names these as its training parts; its model class comes from its family.

The objective is the mean negative log-likelihood per word of batches of
sentences of one length (the inside algorithm runs a batch at one length),
each batch about ``batch_size`` words; sentences of two to
``MAX_TRAINING_WORDS`` words train, as the literature trains (Kim, Dyer &
Rush, 2019), while parsing takes any length. The dev figure is perplexity
per word, so a run keeps its point of lowest dev perplexity: never gold trees.
The one training loop (``onparse.training.train.Trainer``) runs it; under torchrun each
process takes every ``world``-th sentence of each batch, and DDP's averaged
gradients are the one process's.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

import torch
from torch import Tensor, nn

from onparse.config import TrainConfig
from onparse.families import of
from onparse.families.base import MAX_TRAINING_WORDS
from onparse.families.grammar import focus_span_scores, share_span_scores, tree_span_scores
from onparse.structures.trees import Span
from onparse.text.corpus import read_corpus, training_sentences
from onparse.text.language import Sentence
from onparse.text.reading import model_tokens
from onparse.text.vocabulary import Vocabulary
from onparse.training import distributed
from onparse.training.train import DevFigures, Setup, WholeSentenceObjective


def length_batches(lengths: list[int], words: int, rng: random.Random | None = None) -> list[list[int]]:
    """Indices grouped by length, each group cut into batches of about ``words`` words (at least one sentence);
    shuffled within and between lengths by ``rng`` where given."""
    by_length: dict[int, list[int]] = {}
    for index, length in enumerate(lengths):
        by_length.setdefault(length, []).append(index)
    batches = []
    for length, indices in sorted(by_length.items()):
        if rng:
            rng.shuffle(indices)
        size = max(1, words // length)
        batches += [indices[start : start + size] for start in range(0, len(indices), size)]
    if rng:
        rng.shuffle(batches)
    return batches


class GrammarObjective(WholeSentenceObjective):
    """Negative log-likelihood per word of a batch of sentences of one length: of each sentence, or where ``trees``
    are given (a student's teacher's spans over each sentence), of each sentence with its tree; where ``shares`` are
    (the teacher's span shares, soft targets), of each sentence with every tree, each weighed by its spans' shares;
    with ``focus`` too, of each sentence with every tree, each weighed by exp(focus x its spans' shares)
    (parse-focusing),
    the focus on a linear schedule (to 0: the plain likelihood at the end).

    Each epoch's batches are drawn from the seed and the epoch alone, so a
    resumed run sees the batches an uninterrupted one would, under any number
    of processes: each rank takes its share of a batch (none where a batch has
    fewer sentences than ranks; the rules still get their gradient) and scales
    its loss so that the ranks' mean is the whole batch's loss per word.
    """

    train_mode = (
        True  # a compound grammar draws each sentence's vector while training (a plain one trains alike either way)
    )

    def __init__(
        self,
        sentences: list[list[int]],
        words_per_batch: int,
        seed: int,
        ranks: distributed.Ranks = distributed.Ranks(),
        trees: list[list[Span]] | None = None,
        shares: list[list[tuple[int, int, float]]] | None = None,
        focus: tuple[float, float, int] | None = None,
    ):
        self.sentences, self.words_per_batch, self.seed, self.ranks = sentences, words_per_batch, seed, ranks
        # a student's targets, and the span scores that weigh its trees: by the teacher's span shares (soft targets),
        # or its one tree; focused, by the shares at the schedule's focus
        self.targets, self.span_scores = (
            (shares, share_span_scores) if shares is not None else (trees, tree_span_scores)
        )
        self.focus = focus  # (at the start, at the end, passes): the focus falls (or rises) linearly over the updates
        self._order: tuple[int, list[list[int]]] | None = None
        self.batches_per_epoch = len(self.batches(0))

    def focus_at(self, epoch: int, batch: int) -> float:
        """The focus of update ``batch`` of pass ``epoch``: from its start to its end value, linearly."""
        start, end, passes = self.focus
        return start + (end - start) * (epoch * self.batches_per_epoch + batch) / max(
            1, passes * self.batches_per_epoch
        )

    def batches(self, epoch: int) -> list[list[int]]:
        if self._order is None or self._order[0] != epoch:
            rng = random.Random(self.seed * 1000 + epoch)
            self._order = (epoch, length_batches([len(s) for s in self.sentences], self.words_per_batch, rng))
        return self._order[1]

    def loss(
        self, model: nn.Module, epoch: int, batch: int, dtype: torch.dtype
    ) -> tuple[Tensor, int, dict[str, float]]:
        device = next(model.parameters()).device
        indices = self.batches(epoch)[batch]
        length = len(self.sentences[indices[0]])
        share = indices[self.ranks.rank :: self.ranks.world]
        words = torch.tensor([self.sentences[k] for k in share], dtype=torch.long, device=device).view(
            len(share), length
        )
        if self.focus:
            focus = self.focus_at(epoch, batch)
            span_scores = (
                focus_span_scores([self.targets[k] for k in share], length, focus).to(device) if focus else None
            )
        else:
            span_scores = (
                self.span_scores([self.targets[k] for k in share], length).to(device) if self.targets else None
            )
        loss = -model(words, span_scores).sum() * self.ranks.world / (len(indices) * length)
        return loss, words.numel(), {}


def grammar_perplexity(sentences: list[list[int]], words_per_batch: int) -> DevFigures:
    """Dev perplexity per word of a grammar over sentences of two or more words (one word has no tree to sum over)."""
    kept = [sentence for sentence in sentences if len(sentence) >= 2]
    if not kept:
        raise ValueError("the dev corpus holds no sentence of two or more words")
    batches = length_batches([len(sentence) for sentence in kept], words_per_batch)

    @torch.no_grad()
    def figures(model: nn.Module, dtype: torch.dtype) -> dict[str, float]:
        device = next(model.parameters()).device
        total = sum(
            model.log_likelihood(torch.tensor([kept[k] for k in batch], device=device)).sum().item()
            for batch in batches
        )
        return {"dev_ppl": math.exp(-total / sum(map(len, kept)))}

    return figures


def grammar_setup(
    config: TrainConfig, checkpoint: dict | None = None, ranks: distributed.Ranks = distributed.Ranks()
) -> Setup:
    """A grammar of its family's model class from random weights, and its vocabulary from the corpus (the
    checkpoint's, resuming)."""
    device = torch.device(config.device)
    sentences = training_sentences(config)
    if not sentences:
        raise ValueError("the training corpus holds no sentences")
    vocab = Vocabulary(checkpoint["vocab"]) if checkpoint else Vocabulary.build(sentences, config.model.vocab_size)
    data = [vocab.ids(sentence) for sentence in sentences if 2 <= len(sentence) <= MAX_TRAINING_WORDS]
    if not data:
        raise ValueError(f"the training corpus holds no sentence of 2 to {MAX_TRAINING_WORDS} words")
    dev = None
    if config.dev:
        dev_sentences = read_corpus([config.dev], config.language, config.encoding, config.reading, config.tokenized)
        dev = grammar_perplexity([vocab.ids(sentence) for sentence in dev_sentences], config.batch_size)
    torch.manual_seed(config.seed)
    model = of(config.model).part("model")(replace(config.model, vocab_size=len(vocab))).to(device)
    return Setup(model, vocab, GrammarObjective(data, config.batch_size, config.seed, ranks), dev)


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


def grammar_dev_figures(config: TrainConfig, sentences: list[Sentence], vocab: Vocabulary, device: torch.device):
    """A grammar student's dev figures: its perplexity on the dev sentences."""
    return grammar_perplexity([vocab.ids(model_tokens(config.reading, s)) for s in sentences], config.batch_size)
