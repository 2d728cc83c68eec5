"""Sentences to trees: tokens -> model input -> distances (batched) -> trees.

Sentences are sorted by length and run in packed batches (torch's
PackedSequence): at each step only the sentences still running are computed,
so almost no work goes to padding. Every sentence starts from a fresh state
and the model is causal, so batched trees equal one-at-a-time trees.
"""

from __future__ import annotations

import copy
import ctypes
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from nltk import Tree
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence

from onparse import modeldir
from onparse.modeldir import ModelBundle
from onparse.tokenize import is_punct, normalize, tokenize
from onparse.trees import attach_punctuation, build_tree
from onparse.vocabulary import UNK

DEFAULT_MAX_WORDS = 400
# Sentences of a batch are padded in groups of this many, so the number still
# running at a step (a matmul's row count) takes few distinct values: the
# matmul library builds and caches a kernel for each shape, and memory would
# otherwise creep up as new counts appear.
ROW_GROUP = 16


try:
    _malloc_trim = ctypes.CDLL(None).malloc_trim  # glibc
except (AttributeError, OSError, TypeError):
    _malloc_trim = None


def _return_freed_memory() -> None:
    """Hand the heap's free pages back to the system.

    Batches allocate tensors of ever-different sizes, and glibc keeps what they
    free fragmented and resident: without this a long stream's memory creeps
    up (by 500 MB over 30,000 lines) instead of staying flat.
    """
    if _malloc_trim is not None:
        _malloc_trim(0)


class InputError(ValueError):
    """A sentence the parser will not take (empty, too long)."""


@dataclass
class Parse:
    """One parsed sentence: what the user gave, what the model read, what it built."""

    tokens: list[str]
    word_positions: list[int]  # tokens the model read (punctuation left out)
    model_input: list[str]  # normalized words, unknown ones as <unk>
    distances: np.ndarray  # layers x words
    layer: int  # 1-based layer that built the tree
    tree: Tree  # leaves are token positions; punctuation attached

    def words_tree(self) -> Tree:
        """The binary tree over the model's words alone (leaves are word indices)."""
        return build_tree(self.distances[self.layer - 1].tolist(), list(range(len(self.word_positions))))


class Parser:
    """An ON-LSTM model ready to parse, with its vocabulary and chosen layer."""

    def __init__(
        self,
        bundle: ModelBundle,
        layer: int | None = None,
        device: str = "cpu",
        dtype: torch.dtype = torch.float32,
        batch_size: int = 256,
        max_words: int = DEFAULT_MAX_WORDS,
    ):
        n_layers = bundle.model.config.n_layers
        self.layer = layer or bundle.default_layer
        if not 1 <= self.layer <= n_layers:
            raise InputError(f"--layer must be between 1 and {n_layers} for this model")
        self.bundle = bundle
        self.device = torch.device(device)
        model = bundle.model
        if dtype != torch.float32:  # weights stored once in the matmul dtype, not cast on every batch
            model = copy.deepcopy(model).to(dtype)
        self.model = model.to(self.device).eval()
        self.dtype = dtype
        self.batch_size = batch_size
        self.max_words = max_words

    @classmethod
    def load(cls, model: str | Path | None = None, **options) -> "Parser":
        return cls(modeldir.load(model), **options)

    def model_input(self, words: Sequence[str]) -> list[str]:
        vocab = self.bundle.vocab
        return [w if w in vocab else UNK for w in map(normalize, words)]

    def check(self, tokens: Sequence[str]) -> None:
        """Raise InputError for a sentence the parser will not take."""
        if not tokens:
            raise InputError("empty sentence")
        self._check_length(sum(not is_punct(token) for token in tokens))

    def _check_length(self, n_words: int) -> None:
        if n_words > self.max_words:
            raise InputError(f"{n_words} words is over the limit of {self.max_words} (raise --max-words)")

    def distances(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Distances (layers x words) for each word list, computed in length-sorted batches."""
        for words in sentences:
            self._check_length(len(words))
        results: list[np.ndarray] = [np.zeros((self.model.config.n_layers, 0), dtype=np.float32)] * len(sentences)
        order = sorted((i for i in range(len(sentences)) if sentences[i]), key=lambda i: -len(sentences[i]))
        vocab = self.bundle.vocab
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]  # longest first
            ids = []
            for column, i in enumerate(batch):
                # each sentence follows an <eos>, as in training, and is padded to the longest of its group
                longest = len(sentences[batch[column - column % ROW_GROUP]])
                words = vocab.ids(self.model_input(sentences[i]))
                ids.append(torch.tensor([vocab.eos_id] + words + [vocab.eos_id] * (longest - len(words))))
            packed = self.model.distances(pack_sequence(ids).to(self.device), self.dtype)
            distances = pad_packed_sequence(packed)[0].float().cpu().numpy()  # T x B x layers
            for column, i in enumerate(batch):
                results[i] = distances[1 : len(sentences[i]) + 1, column].T
        _return_freed_memory()
        return results

    def parse_tokens(self, token_lists: Sequence[Sequence[str]]) -> list[Parse]:
        """Parse tokenized sentences; each must hold at least one token."""
        positions = []
        for tokens in token_lists:
            self.check(tokens)
            positions.append([i for i, token in enumerate(tokens) if not is_punct(token)])
        word_lists = [[tokens[i] for i in pos] for tokens, pos in zip(token_lists, positions)]
        parses = []
        for tokens, pos, words, distances in zip(token_lists, positions, word_lists, self.distances(word_lists)):
            tree = build_tree(distances[self.layer - 1].tolist(), pos) if pos else Tree("X", [])
            parses.append(
                Parse(list(tokens), pos, self.model_input(words), distances, self.layer, attach_punctuation(tree, pos, len(tokens)))
            )
        return parses

    def parse(self, sentences: Iterable[str]) -> list[Parse]:
        """Parse raw sentences (one sentence per string)."""
        return self.parse_tokens([tokenize(text) for text in sentences])
