"""Rendering parses: one-line brackets, EVALB-ready MRG, JSON lines, a drawn tree.

Every format shows the user's own tokens; brackets inside tokens are escaped as
-LRB-/-RRB- so that every output reads back as a tree.
"""

from __future__ import annotations

import bisect
import io
import json
import re

from nltk import Tree

from onparse.parse import Parse
from onparse.tokenize import punct_tag
from onparse.trees import LABEL, Span, bracketed, map_leaves, spans

WORD_TAG = LABEL
BAR_WIDTH = 20


def escape(token: str) -> str:
    return token.replace("(", "-LRB-").replace(")", "-RRB-")


def printed_tree(parse: Parse, punct: bool = True) -> Tree:
    """The tree to show, over token positions: with punctuation attached, or over the words alone."""
    return parse.tree if punct else map_leaves(parse.words_tree, parse.word_positions.__getitem__)


def constituent_spans(parse: Parse, punct: bool = True) -> list[Span]:
    """Each constituent of the printed tree as (first token, last token + 1), in token positions.

    Positions index ``parse.tokens`` with or without punctuation, so spans mean
    the same in both; the whole sentence is included, single tokens are not.
    """
    if punct:
        found = spans(parse.tree)
    else:
        positions = parse.word_positions
        found = {(positions[start], positions[end - 1] + 1) for start, end in spans(parse.words_tree)}
    return sorted(found, key=lambda span: (span[0], -span[1]))


def confidence(parse: Parse, span: Span) -> float:
    """The share of the voters whose trees hold the words of a token span (1 for spans every tree has)."""
    first = bisect.bisect_left(parse.word_positions, span[0])
    end = bisect.bisect_left(parse.word_positions, span[1])
    n_words = len(parse.word_positions)
    if not 2 <= end - first < n_words:
        return 1.0
    return float(parse.votes[first, end])


def token_tree(parse: Parse, punct: bool = True) -> Tree:
    """The printed tree with escaped tokens as leaves."""
    return map_leaves(printed_tree(parse, punct), lambda position: escape(parse.tokens[position]))


def bracket(parse: Parse, punct: bool = True) -> str:
    """One line: ``(X (X The cat) (X sat (X on (X the mat))))``."""
    return bracketed(token_tree(parse, punct))


def mrg(parse: Parse, punct: bool = True) -> str:
    """One line with a preterminal per token, as EVALB and nltk's treebank readers expect."""
    words = set(parse.word_positions)

    def preterminal(position: int) -> Tree:
        token = escape(parse.tokens[position])
        return Tree(WORD_TAG if position in words else punct_tag(token), [token])

    return bracketed(map_leaves(printed_tree(parse, punct), preterminal))


def as_dict(parse: Parse, punct: bool = True) -> dict:
    """Tokens, model input, distances, and the printed tree with its spans (token positions).

    The same keys for a single model and an ensemble: ``layers`` holds each
    member's layer, ``distances`` the row each member built its tree from,
    ``layer_distances`` every layer of every member, and ``confidence`` each
    span's share of the voters whose trees hold it (a lone member: 1).
    """
    found = constituent_spans(parse, punct)
    rounded = lambda rows: [[round(float(d), 5) for d in row] for row in rows]  # noqa: E731
    return {
        "tokens": parse.tokens,
        "model_input": parse.model_input,
        "word_positions": parse.word_positions,
        "layers": list(parse.builder.layers),
        "right_branching_voter": parse.builder.right_branching_voter,
        "distances": rounded(parse.tree_distances),
        "layer_distances": [rounded(member) for member in parse.distances],
        "spans": found,
        "confidence": [round(confidence(parse, span), 4) for span in found],
        "tree": bracket(parse, punct),
    }


def json_line(parse: Parse, punct: bool = True) -> str:
    return json.dumps(as_dict(parse, punct), ensure_ascii=False)


def pretty(parse: Parse, punct: bool = True) -> str:
    """The tree drawn with guide lines; each word shows its distance as a bar (an ensemble: the mean of its members' rows).

    Bars run from the sentence's smallest distance (one block) to its largest,
    since the split order depends only on how distances compare. Tokens are
    plain text to rich, never markup: ``[bold]`` prints as typed.
    """
    from rich.console import Console  # only this format draws; the others start faster without rich
    from rich.text import Text
    from rich.tree import Tree as RichTree

    distance = {pos: float(d) for pos, d in zip(parse.word_positions, parse.tree_distances.mean(axis=0))}
    low, high = min(distance.values(), default=0.0), max(distance.values(), default=1.0)

    def label(node: Tree | int) -> Text:
        if isinstance(node, Tree):
            return Text(LABEL, style="dim")
        token = parse.tokens[node]
        if node not in distance:
            return Text(token, style="dim")
        d = distance[node]
        bar = "█" * (1 + round((d - low) / (high - low or 1.0) * (BAR_WIDTH - 1)))
        return Text.assemble(f"{token:<14} ", (f"{bar:<{BAR_WIDTH}}", "cyan"), f" {d:.3f}")

    source = parse.builder.describe()
    root = RichTree(Text.assemble((LABEL, "bold"), (f"  ({source})", "dim")))
    pending, depth = [(root, printed_tree(parse, punct), 1)], 1
    while pending:  # no recursion: trees are as deep as sentences are long
        branch, node, level = pending.pop()
        depth = max(depth, level)
        for child in node:
            added = branch.add(label(child), highlight=False)
            if isinstance(child, Tree):
                pending.append((added, child, level + 1))
    longest = max(map(len, parse.tokens), default=0)
    width = max(100, 4 * (depth + 1) + max(longest, 14) + BAR_WIDTH + 8)  # deep trees widen rather than lose tokens
    buffer = io.StringIO()
    Console(file=buffer, width=width, force_terminal=False, color_system=None).print(root)
    return buffer.getvalue().rstrip("\n")


# Characters that move a terminal's cursor, change its colours or reorder text (C0 and C1 controls,
# DEL, bidirectional overrides): printed to a terminal, each is shown as an escape instead.
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` with terminal control characters shown as ``\\x1b``-style escapes (line breaks and tabs kept)."""
    return _TERMINAL_CONTROLS.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


FORMATS = {"bracket": bracket, "mrg": mrg, "json": json_line, "pretty": pretty}
