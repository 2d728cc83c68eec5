"""Sentences to trees: tokens -> model input -> distances (batched) -> trees.

Sentences are sorted by length and run in packed batches (torch's
PackedSequence): at each step only the sentences still running are computed,
so almost no work goes to padding. Every sentence starts from a fresh state
and the model is causal, so batched trees equal one-at-a-time trees.
"""

from __future__ import annotations

import copy
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from nltk import Tree
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence

from onparse import modeldir
from onparse.batching import in_input_order, sorted_batches
from onparse.config import ParseConfig
from onparse.kernels import release_freed_memory
from onparse.model import compute_dtype
from onparse.modeldir import ModelBundle
from onparse.tokenize import is_punct, normalize, tokenize
from onparse.trees import attach_punctuation, build_tree
from onparse.vocabulary import UNK

# Sentences of a batch are padded in groups of this many, so the number still
# running at a step (a matmul's row count) takes few distinct values: the
# matmul library builds and caches a kernel for each shape, and memory would
# otherwise creep up as new counts appear.
ROW_GROUP = 16


class InputError(ValueError):
    """A sentence or setting the parser will not take (empty, too long, no such layer)."""


@dataclass
class Parse:
    """One parsed sentence: what the user gave, what the model read, what it built."""

    tokens: list[str]
    word_positions: list[int]  # tokens the model read (punctuation left out)
    model_input: list[str]  # normalized words, unknown ones as <unk>
    distances: np.ndarray  # layers x words
    layer: int  # 1-based layer that built the tree
    words_tree: Tree  # the builder's binary tree; leaves are word indices
    tree: Tree  # the same with punctuation attached; leaves are token positions


class Parser:
    """An ON-LSTM model ready to parse, with its vocabulary and chosen layer.

    ``settings`` are the fields of ``onparse.config.ParseConfig`` (batch size,
    longest sentence, device, matmul precision).
    """

    def __init__(self, bundle: ModelBundle, layer: int | None = None, **settings: Any):
        self.settings = ParseConfig(**settings)
        n_layers = bundle.model.config.n_layers
        self.layer = bundle.default_layer if layer is None else layer
        if not 1 <= self.layer <= n_layers:
            raise InputError(f"layer {self.layer} does not exist: this model has layers 1 to {n_layers}")
        if self.settings.batch_size < 1 or self.settings.max_words < 1:
            raise InputError("batch size and word limit must be at least 1")
        self.bundle = bundle
        self.device = torch.device(self.settings.device)
        self.dtype = compute_dtype(self.settings.dtype)
        model = bundle.model
        if self.dtype != torch.float32:  # weights stored once in the matmul dtype, not cast on every batch
            model = copy.deepcopy(model).to(self.dtype)
        self.model = model.to(self.device)  # distances() runs it in eval mode and restores the mode it had

    @classmethod
    def load(cls, model: str | Path | None = None, layer: int | None = None, **settings: Any) -> "Parser":
        """A parser for the model directory at ``model`` (the shipped one by default)."""
        return cls(modeldir.load(model), layer, **settings)

    @property
    def batch_size(self) -> int:
        return self.settings.batch_size

    def model_input(self, words: Sequence[str]) -> list[str]:
        vocab = self.bundle.vocab
        return [w if w in vocab else UNK for w in map(normalize, words)]

    def check(self, tokens: Sequence[str]) -> None:
        """Raise InputError for a sentence the parser will not take."""
        if not tokens:
            raise InputError("empty sentence")
        n_words = sum(not is_punct(token) for token in tokens)
        if n_words > self.settings.max_words:
            raise InputError(f"{n_words} words is over the limit of {self.settings.max_words}")

    def distances(self, word_lists: Iterable[Sequence[str]], window: int | None = None) -> Iterator[np.ndarray]:
        """Distances (layers x words) for each word list, in order, computed in length-sorted batches.

        Reads ``window`` lists at a time (default: all of a sequence, four
        batches of a stream), so a stream of any length runs in bounded memory.
        """
        if window is None:
            window = len(word_lists) if isinstance(word_lists, Sequence) else 4 * self.batch_size
        batches = sorted_batches(word_lists, self.batch_size, len, window)
        return in_input_order(self._batch_distances(batch) for batch in batches)

    def _batch_distances(self, batch: list[tuple[int, Sequence[str]]]) -> list[tuple[int, np.ndarray]]:
        """One packed run over a batch sorted longest first."""
        vocab = self.bundle.vocab
        ids = []
        for column, (_, words) in enumerate(batch):
            # each sentence follows an <eos>, as in training, and is padded to the longest of its group
            longest = len(batch[column - column % ROW_GROUP][1])
            word_ids = vocab.ids(self.model_input(words))
            ids.append(torch.tensor([vocab.eos_id] + word_ids + [vocab.eos_id] * (longest - len(word_ids))))
        packed = self.model.distances(pack_sequence(ids).to(self.device), self.dtype)
        distances = pad_packed_sequence(packed)[0].float().cpu().numpy()  # T x B x layers
        release_freed_memory()
        return [(position, distances[1 : len(words) + 1, column].T.copy()) for column, (position, words) in enumerate(batch)]

    def parse_stream(
        self,
        token_lists: Iterable[Sequence[str] | None],
        window: int | None = None,
        invalid: Callable[[int, InputError], None] | None = None,
    ) -> Iterator[Parse | None]:
        """Parse tokenized sentences in order; ``None`` in gives ``None`` out, so callers keep their alignment.

        Each sentence is checked (``check``) as it is read. One that fails
        raises InputError or, where ``invalid`` is given, is passed to it with
        its position (from 0) and gives ``None``. ``window`` is as in ``distances``.
        """
        if window is None and isinstance(token_lists, Sequence):
            window = len(token_lists)
        pending: deque[tuple[list[str], list[int]] | None] = deque()  # read, not yet parsed

        def words_of(position: int, tokens: Sequence[str] | None) -> list[str]:
            if tokens is not None:
                try:
                    self.check(tokens)
                except InputError as err:
                    if invalid is None:
                        raise
                    invalid(position, err)
                    tokens = None
            if tokens is None:
                pending.append(None)
                return []
            positions = [i for i, token in enumerate(tokens) if not is_punct(token)]
            pending.append((list(tokens), positions))
            return [tokens[i] for i in positions]

        for distances in self.distances(itertools.starmap(words_of, enumerate(token_lists)), window):
            sentence = pending.popleft()
            yield None if sentence is None else self._parse(*sentence, distances)

    def _parse(self, tokens: list[str], positions: list[int], distances: np.ndarray) -> Parse:
        words_tree = build_tree(distances[self.layer - 1])
        words = [tokens[i] for i in positions]
        return Parse(tokens, positions, self.model_input(words), distances, self.layer, words_tree,
                     attach_punctuation(words_tree, positions, len(tokens)))

    def parse_tokens(self, token_lists: Sequence[Sequence[str]]) -> list[Parse]:
        """Parse tokenized sentences; each must hold at least one token."""
        return list(self.parse_stream(token_lists))  # type: ignore[arg-type]

    def parse(self, sentences: Iterable[str]) -> list[Parse]:
        """Parse raw sentences (one sentence per string)."""
        return self.parse_tokens([tokenize(text) for text in sentences])
