"""Sentences to trees: tokens -> model input -> distances (batched) -> trees.

Sentences are sorted by length and run in packed batches (torch's
PackedSequence): at each step only the sentences still running are computed,
so almost no work goes to padding. Every sentence starts from a fresh state
and the model is causal, so batched trees equal one-at-a-time trees.
"""

from __future__ import annotations

import copy
import itertools
import logging
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from onparse.config import ParseConfig
from onparse.families import checked_layer, of, readouts
from onparse.hardware import check_device, compute_dtype
from onparse.kernels import release_freed_memory
from onparse.parsing.parsed import InputError, Parse
from onparse.settings import MAX_SENTENCE_WORDS, Layer
from onparse.store import modeldir
from onparse.store.modeldir import ModelBundle
from onparse.structures.builder import Built, TreeBuilder
from onparse.structures.trees import attach_punctuation
from onparse.text.batching import in_input_order, sorted_batches
from onparse.text.corpus import id_end, is_comment
from onparse.text.language import Sentence, tokenizer, unspaced_script, written_without_spaces
from onparse.text.lines import TooLong
from onparse.text.reading import model_tokens
from onparse.text.sentences import sentence_starts
from onparse.text.tokenize import word_positions
from onparse.text.vocabulary import UNK

log = logging.getLogger("onparse")

# Past this share of the words read unknown to its vocabulary, a model is most likely given another language's text
UNKNOWN_SHARE, UNKNOWN_AFTER = 0.5, 3  # (said once a parser, once it has read at least UNKNOWN_AFTER words)

# A packed batch holds at most this many words, whatever --batch-size says:
# memory for a batch (the input projection alone is words x 4,830 floats at
# paper size) is bounded by words, not by a user's number of sentences.
BATCH_WORDS = 8192
# A stream is read this many words ahead (four full batches), so sentences sort
# into batches of similar length while memory stays bounded however many lines come.
WINDOW_WORDS = 4 * BATCH_WORDS


class Member:
    """One model of a parser, in the parser's device and matmul dtype, with the layer it parses with.

    The seam every family meets: what it reads of a sentence (``model_input``)
    and, for a batch, one output a sentence that the builder turns into its
    tree (``batch_outputs``: an ON-LSTM's distances, a grammar's span marginals).
    """

    def __init__(self, bundle: ModelBundle, layer: Layer | None, device: torch.device, dtype: torch.dtype):
        several = len(readouts(bundle.model.config)) > 1  # a grammar has one readout: an asked layer is the ON-LSTMs'
        chosen = layer if layer is not None and several else bundle.default_layer
        try:
            self.layer = checked_layer(chosen, bundle.model.config)
        except ValueError as err:
            raise InputError(f"{bundle.path or 'this model'}: {err}", "layer") from None
        self.bundle = bundle
        model = bundle.model
        if dtype != torch.float32 and model.stores_matmul_weights:  # once in the matmul dtype, not cast on every batch
            model = copy.deepcopy(model).to(dtype)
        self.model = model.to(device)  # distances() runs it in eval mode and restores the mode it had
        self.device, self.dtype = device, dtype

    @property
    def reading(self):
        """What this member reads of a sentence (``onparse.text.reading``)."""
        return self.bundle.reading

    def model_input(self, sentence: Sentence) -> list[str]:
        """The tokens this member reads, in its order, as its vocabulary spells them (unknown ones as <unk>)."""
        vocab = self.bundle.vocab
        return [token if token in vocab else UNK for token in model_tokens(self.reading, sentence)]

    def no_words_output(self) -> np.ndarray:
        """The output of a sentence without words, found without running the model."""
        return self.model.no_words_output()

    def batch_outputs(self, batch: list[Sentence]) -> list[np.ndarray]:
        """One output a sentence, in one run over the batch, as the member's family gives it (an ON-LSTM's distances,
        layers x words; a grammar's span marginals, (words + 1) x (words + 1))."""
        vocab = self.bundle.vocab
        read = [vocab.ids(self.model_input(sentence)) for sentence in batch]
        return self.model.sentence_outputs(read, batch, self.reading, vocab.eos_id, self.dtype)


class Parser:
    """Models ready to parse: one model, or an ensemble whose members' trees vote (ON-LSTMs, grammars, or both).

    ``settings`` are the fields of ``onparse.config.ParseConfig`` (batch size,
    longest sentence, device, matmul precision). ``layer`` overrides every
    ON-LSTM member's own layer (a grammar has one readout, ``SPANS``). Trees come from ``builder``
    (``onparse.structures.builder``): an
    ensemble's is the binary tree with the most span votes over its members'
    trees (and a right-branching tree, with ``right_branching_voter`` votes).
    """

    def __init__(
        self,
        bundles: ModelBundle | Sequence[ModelBundle],
        layer: Layer | None = None,
        *,
        right_branching_voter: float = 0.0,
        path: Path | None = None,
        **settings: Any,
    ):
        self.settings = ParseConfig(**settings)
        try:
            self.settings.check()
            check_device(self.settings.device)
        except ValueError as err:
            raise InputError(str(err)) from None
        bundles = [bundles] if isinstance(bundles, ModelBundle) else list(bundles)
        if not bundles:
            raise InputError("a parser needs at least one model")
        self.device = torch.device(self.settings.device)
        self.dtype = compute_dtype(self.settings.dtype, self.device)
        choices = [readouts(bundle.model.config) for bundle in bundles]
        if layer is not None and all(len(found) == 1 and layer not in found for found in choices):
            raise InputError(
                f"layer {layer!r}: this model has no layers to choose from (a grammar's trees come from its "
                "span marginals)",
                "layer",
            )
        longest = min(of(bundle.model.config).longest_sentence for bundle in bundles)
        if self.settings.max_words > longest:
            raise InputError(
                f"max_words {self.settings.max_words} is over the {longest} words this model parses "
                "(a grammar's inside and outside passes are cubic in length: about 70 s at 800 words)",
                "max_words",
            )
        self.members = [Member(bundle, layer, self.device, self.dtype) for bundle in bundles]
        self.builder = TreeBuilder(tuple(member.layer for member in self.members), right_branching_voter)
        languages = {bundle.language for bundle in bundles}
        if len(languages) > 1:
            raise InputError(f"an ensemble's members must read one language, not {', '.join(sorted(languages))}")
        self.language = languages.pop()
        self.path = path if path is not None else bundles[0].path
        self._warned_control = False  # said once a parser (``check``)
        self._warned: set[str] = set()  # what ``_note_text`` said already
        # words the first member read, and how many of them its vocabulary lacked (``_note_unknown``)
        self._read = [0, 0]

    @classmethod
    def load(cls, model: str | Path | None = None, layer: Layer | None = None, **settings: Any) -> "Parser":
        """A parser for the model or ensemble directory at ``model`` (the shipped one by default)."""
        ensemble = modeldir.read_ensemble(model)
        if ensemble is None:
            return cls(modeldir.load(model), layer, **settings)
        ensemble.check_members()
        bundles = [modeldir.load(member) for member in ensemble.members]
        for k, chosen in enumerate(ensemble.layers or []):  # the ensemble's choice of each member's layer, in a copy
            try:
                bundles[k] = replace(bundles[k], default_layer=checked_layer(chosen, bundles[k].model.config))
            except ValueError as err:
                raise modeldir.ModelDirError(f"{ensemble.path / 'config.json'}: for {bundles[k].path}, {err}") from None
        return cls(bundles, layer, right_branching_voter=ensemble.right_branching_voter, path=ensemble.path, **settings)

    @property
    def is_ensemble(self) -> bool:
        """Whether trees are voted on (several members, or one with the right-branching voter)."""
        return len(self.members) > 1 or bool(self.right_branching_voter)

    @property
    def right_branching_voter(self) -> float:
        """The votes a right-branching tree casts (0: none)."""
        return self.builder.right_branching_voter

    @property
    def bundle(self) -> ModelBundle:
        """The first (or only) member's model directory."""
        return self.members[0].bundle

    @property
    def batch_size(self) -> int:
        return self.settings.batch_size

    def model_input(self, sentence: Sentence) -> list[str]:
        """What the first (or only) member reads of a sentence."""
        return self.members[0].model_input(sentence)

    def check(self, tokens: Sequence[str]) -> list[int]:
        """The positions of the words the model would read; InputError for a sentence the parser will not take."""
        if not tokens:
            raise InputError("empty sentence")
        if not all(tokens):
            raise InputError(f"token {list(tokens).index('') + 1} is empty: a token holds at least one character")
        # a token may hold spaces ("New York", written New␣York in tree strings: ``trees.escape``); any other
        # whitespace would break a line or not read back as itself
        spaced = next((k for k, token in enumerate(tokens) if any(c.isspace() and c != " " for c in token)), None)
        if spaced is not None:
            raise InputError(
                f"token {spaced + 1} ({tokens[spaced][:40]!r}) holds whitespace other than a space (a tab, a line "
                "break): a token of a bracketed tree holds none (give it as two tokens)"
            )
        control = next(
            ((k, char) for k, token in enumerate(tokens) for char in token if unicodedata.category(char) == "Cc"), None
        )
        if control is not None and not self._warned_control:  # kept as given (nothing lost), said once a parser
            self._warned_control = True
            log.warning(
                f"onparse: a token ({control[1].encode('unicode_escape').decode('ascii')} in token {control[0] + 1}) "
                "holds a control character: kept as given, shown escaped on a terminal and in pictures (a binary "
                "file, or a stray byte?)"
            )
        self._note_text(tokens)
        positions = word_positions(tokens)
        if len(positions) > self.settings.max_words:
            raise InputError(
                f"{len(positions)} words is over the limit of {self.settings.max_words} (--max-words, or max_words "
                f"in the library, raises it to {MAX_SENTENCE_WORDS:,} at most)"
            )
        return positions

    def distances(self, sentences: Iterable[Sentence], window: int | None = None) -> Iterator[list[np.ndarray]]:
        """Each member's distances (layers x words) for each sentence, in order, in length-sorted batches.

        Every member reads the same batches; a sentence without words gives
        an empty array without running the model. ``window`` is as in ``parse_stream``.
        """
        if window is None and isinstance(sentences, Sequence):
            window = len(sentences)
        for _, distances in self._with_distances(sentences, lambda sentence: sentence, window):
            yield distances

    def _with_distances(
        self,
        items: Iterable[Any],
        sentence_of: Callable[[Any], Sentence | None],
        window: int | None,
        progress: Callable[[int], None] | None = None,
    ) -> Iterator[tuple[Any, list[np.ndarray] | None]]:
        """Each item with the distances of its sentence's words, in input order; an item without a sentence gets None.

        A stream is read ``window`` items ahead, or by default ``WINDOW_WORDS``
        words ahead; batches hold at most ``batch_size`` sentences and
        ``BATCH_WORDS`` words, so memory is bounded by words, whatever the options.
        """
        length = lambda item: len(sentence.tokens) if (sentence := sentence_of(item)) else 0  # noqa: E731
        if window is None:
            batches = sorted_batches(items, self.batch_size, length, WINDOW_WORDS, BATCH_WORDS, WINDOW_WORDS)
        else:
            batches = sorted_batches(items, self.batch_size, length, window, BATCH_WORDS)
        return in_input_order(self._batch_distances(batch, sentence_of, progress) for batch in batches)

    def _batch_distances(
        self,
        batch: list[tuple[int, Any]],
        sentence_of: Callable[[Any], Sentence | None],
        progress: Callable[[int], None] | None = None,
    ) -> list[tuple[int, tuple[Any, list[np.ndarray] | None]]]:
        sentences = [sentence_of(item) for _, item in batch]
        running = [k for k, found in enumerate(sentences) if found and found.words]
        results: list[list[np.ndarray] | None] = [
            None if found is None else [member.no_words_output() for member in self.members] for found in sentences
        ]
        if running:
            per_member = [member.batch_outputs([sentences[k] for k in running]) for member in self.members]
            release_freed_memory()
            for i, k in enumerate(running):
                results[k] = [found[i] for found in per_member]
        if progress:
            progress(len(batch))
        return [(position, (item, result)) for (position, item), result in zip(batch, results)]

    def build(self, outputs: Sequence[np.ndarray]) -> Built:
        """A sentence's tree from its members' outputs (``onparse.structures.builder``)."""
        return self.builder.build(outputs)

    def parse_stream(
        self,
        token_lists: Iterable[Sequence[str] | None],
        window: int | None = None,
        invalid: Callable[[int, InputError], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Iterator[Parse | None]:
        """Parse tokenized sentences in order; ``None`` in gives ``None`` out, so callers keep their alignment.

        Each sentence is checked (``check``) as it is read. One that fails
        raises InputError or, where ``invalid`` is given, is passed to it with
        its position (from 0) and gives ``None``. ``None`` and refused
        sentences never reach the model. A sequence is sorted into batches
        whole; a stream is read ``window`` sentences ahead (1 answers each line
        as it comes), by default ``WINDOW_WORDS`` words ahead. ``progress`` is told how many sentences each batch
        answered as it ends: the work done, where the parses come out in input order, in bursts.
        """
        if window is None and isinstance(token_lists, Sequence):
            window = len(token_lists)

        def prepared(position: int, tokens: Sequence[str] | None) -> Sentence | None:
            if tokens is None:
                return None
            tokens = list(tokens) if isinstance(tokens, Iterable) and not isinstance(tokens, (str, bytes)) else tokens
            if not isinstance(tokens, list) or any(not isinstance(token, str) for token in tokens):
                raise TypeError(
                    f"sentence {position + 1}: parse_tokens and parse_stream take a list of token lists, one "
                    f"per sentence, not {tokens!r:.60}: wrap one sentence's tokens in a list, or use parse() for text"
                )
            try:
                positions = self.check(tokens)
            except InputError as err:
                if invalid is None:  # a caller of many sentences is told which
                    raise InputError(f"sentence {position + 1}: {err}", err.setting) from None
                invalid(position, err)
                return None
            return Sentence(tuple(tokens), tuple(positions))

        items = itertools.starmap(prepared, enumerate(token_lists))
        for sentence, distances in self._with_distances(items, lambda sentence: sentence, window, progress):
            yield None if sentence is None else self._parse(sentence, distances)

    def _parse(self, sentence: Sentence, distances: list[np.ndarray]) -> Parse:
        built = self.build(distances)
        tokens, positions = list(sentence.tokens), list(sentence.words)
        read = self.model_input(sentence)
        self._note_unknown(read)
        return Parse(
            tokens,
            positions,
            read,
            distances,
            self.builder,
            built,
            attach_punctuation(built.tree, positions, len(tokens)),
        )

    def _note_sentences(self, tokens: Sequence[str]) -> None:
        """A warning, once, where a line of raw text holds several sentences: it is parsed as one tree."""
        if "sentences" not in self._warned and (starts := sentence_starts(tokens)):
            self._warned.add("sentences")
            log.warning(
                f"onparse: a line holds several sentences (one ends before {tokens[starts[0]]!r}): each line is parsed "
                "as one sentence; --sentences (onparse.text.sentences.split_sentences in the library) splits them"
            )

    def _note_text(self, tokens: Sequence[str]) -> None:
        """A warning, once, where a word written in a script without spaces (Thai, Japanese) reaches a model of a
        language written with them: the whole run of it is one unknown word."""
        if "script" not in self._warned and not written_without_spaces(self.language):
            beyond_ascii = (token for token in tokens if not token.isascii() and len(token) > 1)  # a cheap test first
            script = next((found for token in beyond_ascii if (found := unspaced_script(token))), None)
            if script:
                self._warned.add("script")
                log.warning(
                    f"onparse: this text is written without spaces ({script}), which a model of language "
                    f"{self.language} reads as one unknown word a run: use or fit a model of that language "
                    f"(onparse fit --language {script})"
                )

    def _note_unknown(self, read: list[str]) -> None:
        """A warning, once, where most words read so far are unknown to the model: its trees of them are guesses
        over <unk>, most likely of another language's text than the model's."""
        if self._read[0] < 0:
            return
        self._read[0] += len(read)
        self._read[1] += read.count(UNK)
        if self._read[0] >= UNKNOWN_AFTER and self._read[1] > UNKNOWN_SHARE * self._read[0]:
            log.warning(
                f"onparse: {self._read[1] / self._read[0]:.0%} of the words read are unknown to "
                f"{Path(self.path).name if self.path else 'this model'} (language {self.language}): is the text "
                "in another language? `onparse models` lists the models by language"
            )
            self._read[0] = -1

    def parse_lines(
        self,
        lines: Iterable[bytes | TooLong],
        tokenized: bool = False,
        blank_lines: bool = True,
        invalid: Callable[[int, object], None] | None = None,
        window: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Iterator[Parse | None]:
        """Parse UTF-8 lines of text (``lines.read_lines``), one result a line, in order.

        Each line is tokenized as the model's language is, or split at
        whitespace with ``tokenized``. A blank line gives None (with
        ``blank_lines``; otherwise it is an empty sentence, refused). Where the
        first sentence line starts with an id (``17<TAB>``), each line's id is
        left out and, as in training text (``onparse.text.corpus``), a ``%%`` line
        is a comment (NEGRA's header) giving None; elsewhere it is a sentence.
        A line holding a carriage return inside (CR line ends) is refused. A line
        over the byte limit, not UTF-8 or over the word limit gives None and
        is passed to ``invalid`` with its position (from 0) and the reason.
        ``window`` and ``progress`` are as in ``parse_stream``.
        """

        def refused(position: int, reason: object) -> None:
            if invalid is None:
                raise InputError(f"line {position + 1}: {reason}")
            invalid(position, reason)

        def tokens_of(position: int, line: str) -> list[str] | None:
            if "\r" in line:  # a line break of old Macs: the lines would run into one sentence
                refused(
                    position,
                    "holds a carriage return inside it: a file with CR line ends? (convert them: tr '\\r' '\\n')",
                )
                return None
            tokens = line.split() if tokenized else self.tokenize(line)
            return tokens if tokens or not blank_lines else None

        def token_lists() -> Iterator[list[str] | None]:
            ids = None  # whether the lines start with ids: as the first sentence line does (one may be parsed at once)
            held: list[tuple[int, str]] = []  # leading %% lines (and blank ones among them), until a sentence line says
            # whether they are a NEGRA-style header (its lines carry ids) or sentences
            for position, raw in enumerate(lines):
                if isinstance(raw, TooLong):
                    refused(position, f"{raw}, more than a sentence of --max-words {self.settings.max_words} can be")
                    yield None
                    continue
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    refused(position, "not UTF-8 text")
                    yield None
                    continue
                if (
                    blank_lines
                    and ids is None
                    and (held or is_comment(line))
                    and (is_comment(line) or not line.strip())
                ):
                    held.append((position, line))
                    continue
                if blank_lines and ids is None and line.strip():
                    ids = bool(id_end(line))
                    for place, kept in held:
                        yield None if ids or not kept.strip() else tokens_of(place, kept)
                    held = []
                if blank_lines and ids and is_comment(line):
                    yield None
                    continue
                if ids:
                    line = line[id_end(line) :]
                yield tokens_of(position, line)
            for place, kept in held:  # no sentence line came: they were sentences
                yield tokens_of(place, kept) if kept.strip() else None

        return self.parse_stream(token_lists(), window, invalid, progress)

    def parse_tokens(self, token_lists: Sequence[Sequence[str]]) -> list[Parse]:
        """Parse tokenized sentences, each taken exactly as given; each must hold at least one token."""
        return list(self.parse_stream(token_lists))  # type: ignore[arg-type]

    def parse(self, text: str) -> Parse:
        """Parse one sentence of raw text, tokenized as the model's training text was.

        >>> print(onparse.load().parse("Stocks fell sharply on Friday.").text_tree)
        (X Stocks (X fell (X sharply (X on Friday))) .)
        """
        if not isinstance(text, str):
            raise TypeError(
                f"parse takes one sentence as a string, not {type(text).__name__}: "
                "parse_sents takes many (texts or token lists)"
            )
        return self.parse_tokens([self.tokenize(text)])[0]

    def parse_sents(self, sentences: Iterable[str | Sequence[str]]) -> Iterator[Parse]:
        """Parse many sentences in input order, streamed: each a string of raw text or a list of tokens taken as given.

        Sentences are read a bounded window ahead (``WINDOW_WORDS`` words) and
        run in length-sorted batches, so memory stays flat over an endless
        iterable.

            >>> texts = ["The cat sat on the mat.", ["Stocks", "fell", "."]]
            >>> [str(parse.text_tree) for parse in onparse.load().parse_sents(texts)]
            ['(X (X The cat) (X sat (X on (X the mat))) .)', '(X Stocks fell .)']
        """
        if isinstance(sentences, str):
            raise TypeError("parse_sents takes an iterable of sentences: parse(text) parses one")

        def tokens() -> Iterator[Sequence[str]]:
            for position, item in enumerate(sentences, 1):
                if item is None:
                    raise TypeError(f"sentence {position} is None: parse_sents takes texts or token lists")
                yield self.tokenize(item) if isinstance(item, str) else item

        return self.parse_stream(tokens())  # type: ignore[arg-type]

    def tokenize(self, text: str) -> list[str]:
        """One sentence as tokens, split as the model's training text was (``onparse.text.language``)."""
        tokens = tokenizer(self.language)(text)
        self._note_sentences(tokens)
        return tokens
