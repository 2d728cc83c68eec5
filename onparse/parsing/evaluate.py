"""Running parsers over gold sentences: every layer, the untrained control, dev F1 during training.

Scoring itself is ``onparse.structures.scoring``; this module feeds it trees built from
a model's distances.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from nltk import Tree

from onparse.families import of_readout, readouts
from onparse.parsing.parse import Parser
from onparse.settings import Reading, layer_key
from onparse.store.modeldir import Model, ModelBundle, new_model
from onparse.structures.builder import TreeBuilder
from onparse.structures.scoring import PROTOCOL, baseline_scores, is_sentence, score
from onparse.structures.trees import Span, spans
from onparse.text.language import ENGLISH, written_without_spaces
from onparse.text.treebank import GoldSentence, WordRule, gold_sentence, is_empty, read_gold, read_trees, tree_files
from onparse.text.vocabulary import Vocabulary

Advance = Callable[[int], None]  # told how many more sentences are done


def named_builders(parser: Parser) -> dict[str, TreeBuilder]:
    """The trees eval reports, each a builder: every layer and the mean for a single model (a grammar: its span
    marginals); for an ensemble each member alone, the vote, and the vote with a right-branching voter (its own
    votes, or one)."""
    if not parser.is_ensemble:
        return {layer_key(layer): TreeBuilder((layer,)) for layer in readouts(parser.members[0].model.config)}
    layers = parser.builder.layers
    return {
        "ensemble": TreeBuilder(layers),
        "ensemble_right_branching": TreeBuilder(layers, parser.right_branching_voter or 1.0),
    }


def model_spans(
    parser: Parser, gold: Sequence[GoldSentence], advance: Advance | None = None
) -> list[dict[str, set[Span]]]:
    """Named span sets (``named_builders``, and an ensemble's members "1", "2", ...) for every gold sentence."""
    builders = named_builders(parser)
    result = []
    for distances in parser.distances([sentence.sentence for sentence in gold]):
        found = {}
        for name, builder in builders.items():
            built = builder.build(distances)
            found[name] = spans(built.tree)
        if parser.is_ensemble:  # each member alone, as the vote saw it
            found.update({str(m + 1): spans(tree) for m, tree in enumerate(built.member_trees)})
        result.append(found)
        if advance:
            advance(1)
    return result


def score_each(parser: Parser, gold: Sequence[GoldSentence], advance: Advance | None = None) -> dict[str, dict]:
    """Figures for each named span set of ``model_spans``."""
    per_sentence = model_spans(parser, gold, advance)
    return {name: score([found[name] for found in per_sentence], gold) for name in per_sentence[0]} if gold else {}


def untrained_like(parser: Parser, seed: int = 0) -> Parser:
    """The first member's architecture, vocabulary, layer and settings, with freshly initialised weights.

    Seeded on its own generator state, so the caller's random stream is untouched.
    """
    member = parser.members[0]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = new_model(member.bundle.model.config)
    bundle = ModelBundle(
        model.eval(), member.bundle.vocab, member.layer, None, language=member.bundle.language, reading=member.reading
    )
    return Parser(bundle, member.layer, **vars(parser.settings))


def evaluate_parser(
    parser: Parser, gold: Sequence[GoldSentence], untrained_seed: int | None = 0, advance: Advance | None = None
) -> dict:
    """Score a parser on gold sentences, beside the baselines.

    ``layers`` holds each member's layer and the top level the figures of the
    parser's own trees (``chosen`` names them). For a single model,
    ``per_layer`` holds each layer and ``mean`` (distances averaged over
    layers). For an ensemble, ``members`` holds each member alone (its own
    layer), ``ensemble`` and ``ensemble_right_branching`` the voted trees
    without and with a right-branching voter.
    ``baselines`` holds left/right-branching, balanced, and (with
    ``untrained_seed``) the same builder on an untrained model of the (first
    member's) architecture, which shows what training adds (Dyer et al., 2019).
    """
    figures = score_each(parser, gold, advance)
    baselines = baseline_scores(gold)
    if untrained_seed is not None:
        control = untrained_like(parser, untrained_seed)
        layer = control.builder.layers[0]
        name = "untrained_" + of_readout(layer).untrained_name(layer)
        baselines[name] = score_each(control, gold, advance)[layer_key(layer)]
    layers = list(parser.builder.layers)
    if not parser.is_ensemble:
        chosen = str(layers[0])
        return {
            **figures[chosen],
            "layers": layers,
            "chosen": chosen,
            "per_layer": figures,
            "baselines": baselines,
            "protocol": PROTOCOL,
        }
    chosen = "ensemble_right_branching" if parser.right_branching_voter else "ensemble"
    members = {name: result for name, result in figures.items() if name.isdigit()}
    return {
        **figures[chosen],
        "layers": layers,
        "chosen": chosen,
        "members": members,
        "ensemble": figures["ensemble"],
        "ensemble_right_branching": figures["ensemble_right_branching"],
        "baselines": baselines,
        "protocol": PROTOCOL,
    }


def dev_f1(
    gold_path: str, encoding: str = "UTF-8", reading: Reading = Reading()
) -> Callable[[Model, Vocabulary], dict[str, float]]:
    """A callback for training: dev sentence F1 per layer (and mean; a grammar: its span marginals) of the model as
    it is now, reading as it trains."""
    gold = list(read_gold(gold_path, encoding=encoding))

    def measure(model: Model, vocab: Vocabulary) -> dict[str, float]:
        bundle = ModelBundle(model, vocab, readouts(model.config)[-1], None, reading=reading)
        parser = Parser(bundle, device=str(next(model.parameters()).device))
        return {name: figures["sentence_f1"] for name, figures in score_each(parser, gold).items()}

    return measure


# What the Penn Treebank writes for characters a user types, so gold words can be typed back as text.
_TYPED = {
    "``": '"',
    "''": '"',
    "`": "'",
    "-LRB-": "(",
    "-RRB-": ")",
    "-LCB-": "{",
    "-RCB-": "}",
    "-LSB-": "[",
    "-RSB-": "]",
}


def character_spans(pieces: Sequence[str], text: str) -> list[tuple[int, int]]:
    """Where each piece lies in ``text``, found left to right."""
    spans_found, position = [], 0
    for piece in pieces:
        start = text.find(piece, position)
        if start < 0:
            raise ValueError(f"{piece!r} is not in the text after position {position}")
        spans_found.append((start, start + len(piece)))
        position = start + len(piece)
    return spans_found


def typed_back(trees: Sequence, language: str = ENGLISH) -> list[tuple[list[str], str]]:
    """Each gold tree's tokens as a user would type them (``(`` not ``-LRB-``; no empty elements), and the sentence as
    its language writes it: with spaces as nltk's detokenizer puts them, or, in a script written without spaces
    (Chinese), run together, so the raw-text path segments it afresh rather than reading the treebank's words."""
    from nltk.tokenize.treebank import TreebankWordDetokenizer

    detokenizer = TreebankWordDetokenizer()
    typed = [[_TYPED.get(token, token) for token, tag in tree.pos() if not is_empty(tag)] for tree in trees]
    join = "".join if written_without_spaces(language) else detokenizer.detokenize
    return [(tokens, join(tokens)) for tokens in typed]


def same_tokens(tokens: Sequence[str], typed: Sequence[str]) -> bool:
    """Whether raw-text tokens are the treebank's, brackets and quotes read as typed."""
    return [_TYPED.get(token, token) for token in tokens] == list(typed)


def read_typed_gold(
    path: str, rule: WordRule, encoding: str = "UTF-8", max_length: int | None = None
) -> tuple[list[GoldSentence], list[Tree]]:
    """Gold sentences and their trees (leaves with their tags, for typing them back), at most ``max_length`` words."""
    pairs = [
        (gold_sentence(tree, source, rule), tree)
        for file in tree_files(path)
        for tree, source in read_trees(file, encoding)
    ]
    pairs = [(s, t) for s, t in pairs if is_sentence(s) and (max_length is None or len(s.words) <= max_length)]
    return [s for s, _ in pairs], [t for _, t in pairs]


def evaluate_raw(parser: Parser, gold: Sequence[GoldSentence], trees: Sequence, advance: Advance | None = None) -> dict:
    """Score the raw-text path: each gold sentence typed back as text (nltk's detokenizer), then tokenized as the
    model's language is (``Parser.tokenize``) and parsed.

    ``trees`` are the gold trees (leaves with their tags), for the full token
    sequence a user would type. A predicted constituent counts as the gold
    words whose characters lie inside it, so sentences whose tokens differ
    from the treebank's are still scored; how many differ is reported.
    """
    typed = typed_back(trees, parser.language)
    texts = [text for _, text in typed]
    token_lists = [parser.tokenize(text) for text in texts]  # as the model's own language splits text
    matched = sum(same_tokens(tokens, typed_tokens) for tokens, (typed_tokens, _) in zip(token_lists, typed))
    predicted = []
    for sentence, text, tokens, parse in zip(gold, texts, token_lists, parser.parse_stream(token_lists)):
        token_chars = character_spans(tokens, text)
        word_chars = character_spans([_TYPED.get(w, w) for w in sentence.words], text)
        found = set()
        for start, end in spans(parse.tree):
            inside = [
                k for k, (a, b) in enumerate(word_chars) if token_chars[start][0] <= a and b <= token_chars[end - 1][1]
            ]
            if inside:
                found.add((inside[0], inside[-1] + 1))
        predicted.append(found)
        if advance:
            advance(1)
    return {
        **score(predicted, gold),
        "same_tokens": matched,
        "baselines": baseline_scores(gold),
        "protocol": PROTOCOL
        + (
            " Raw text: each gold sentence is typed back with nltk's TreebankWordDetokenizer, tokenized and parsed as "
            "user text; a predicted constituent counts as the gold words whose characters it covers."
        ),
    }


def evaluate_treebank(
    gold: str,
    parser: Callable[[], Parser],
    pred: str | None = None,
    word_rule: str | None = None,
    encoding: str = "UTF-8",
    pred_encoding: str = "UTF-8",
    max_length: int | None = None,
    skip_unaligned: bool = False,
    raw: bool = False,
    untrained: bool = True,
) -> dict:
    """``onparse eval``'s figures on the gold trees at ``gold``: another parser's trees in ``pred``, the raw-text path
    (``raw``: each sentence typed back as text), or the model ``parser()`` loads (only once the gold trees are read),
    with a progress bar on stderr. TreebankError or ValueError for trees that cannot be scored."""
    from onparse.parsing.report import progress_bar
    from onparse.structures.scoring import protocol, score_predictions
    from onparse.text.treebank import collector_paused, named_rule

    with collector_paused():  # reading and scoring files of trees builds millions of acyclic objects
        reader = read_gold(gold, named_rule(word_rule) if word_rule else None, encoding)
        every_sentence = list(reader)
        kept = [is_sentence(s) and len(s.words) <= (max_length or len(s.words)) for s in every_sentence]
        sentences = [s for s, keep in zip(every_sentence, kept) if keep]
        if not sentences:
            raise ValueError(f"{gold}: no gold sentences" + (f" of at most {max_length} words" if max_length else ""))
        if pred:
            result = score_predictions(pred, every_sentence, kept, pred_encoding, skip_unaligned, reader.rule)
    if raw and not pred:
        sentences, trees = read_typed_gold(gold, reader.rule, encoding, max_length)
        model = parser()
        with progress_bar("parsing raw text", len(sentences)) as advance:
            result = {**evaluate_raw(model, sentences, trees, advance), "model": str(model.path)}
    elif not pred:
        model = parser()
        with progress_bar("parsing", len(sentences) * (2 if untrained else 1)) as advance:
            result = {**evaluate_parser(model, sentences, 0 if untrained else None, advance), "model": str(model.path)}
    result.update(
        gold=gold,
        max_length=max_length,
        words=reader.rule.name,
        protocol=result["protocol"].replace(PROTOCOL, protocol(reader.rule), 1),
    )
    return result
