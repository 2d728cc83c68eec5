"""What every grammar family shares: production rules in log space, their inside and outside passes, span scores,
and the model class around them (``GrammarModel``: a sentence's likelihood, its span marginals, its output).

A grammar's binary rules here are either independent left and right choices,

    l_ik(A) = sum_B p(B ↙ A) beta_ik(B),   r_kj(A) = sum_C p(C ↘ A) beta_kj(C)
    beta_ij(A) = sum_k l_ik(A) r_kj(A)
    Z = sum_A p(A | S) beta_0n(A)

each projection a matrix product and each span a sum over its split points
(``O(n^2 |N|^2 + n^3 |N|)``), or one joint table ``p(A -> B C)``. A family
whose rules factor another way (a tensor decomposition in rank space) gives
its rules in this shape and shares the rest. Scores live in log space; a
projection takes each span's largest score out before the matrix product, so
the sums stay exact in float32. Width by width, all spans of a width are
computed at once, for a batch of sentences of one length.

Span marginals are the gradient of ``log Z`` with respect to a score added to
every span (torch-struct's way; ``inside`` takes such scores), computed for
parsing by an explicit outside pass (``marginals``) whose memory grows as
n^2 where the gradient's grows as n^3; the tree is the binary tree with the
largest sum of marginals (minimum Bayes risk), found by the same CKY that
tree averaging uses (``voting.best_tree``). The same scores, zero on one
tree's spans and far below zero elsewhere, sum that tree alone: the joint
likelihood ``log p(x, t)`` a grammar student learns a teacher's trees by.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from onparse.settings import Reading
from onparse.text.language import Sentence
from onparse.text.reading import word_span_marginals


@dataclass
class Rules:
    """The grammar's log-probabilities: root over N, left and right children over N + P (nonterminals first),
    emissions of the vocabulary by each preterminal."""

    root: Tensor  # N (a compound grammar's: B x N, one row a sentence, and so its left and right)
    left: Tensor | None  # N x (N + P): log p(B ↙ A); None for joint productions
    right: Tensor | None  # N x (N + P): log p(C ↘ A)
    emission: Tensor  # P x V: log p(w | T)
    binary: Tensor | None = None  # joint productions: N x (N + P) x (N + P), log p(A -> B C)

    @property
    def nonterminals(self) -> int:
        return self.root.size(-1)


class ResidualLayer(nn.Module):
    """x + relu(W2 relu(W1 x)): the rule networks' layers (Kim et al., 2019)."""

    def __init__(self, size: int):
        super().__init__()
        self.first, self.second = nn.Linear(size, size), nn.Linear(size, size)

    def forward(self, x: Tensor) -> Tensor:
        return x + torch.relu(self.second(torch.relu(self.first(x))))


def rule_network(size: int, out: int, extra: int = 0) -> nn.Sequential:
    """A symbol's embedding (and ``extra`` inputs beside it: a compound grammar's sentence vector) to rule scores."""
    return nn.Sequential(nn.Linear(size + extra, size), ResidualLayer(size), ResidualLayer(size), nn.Linear(size, out))


class GrammarModel(nn.Module):
    """A grammar as a model family's model class (``FamilyModel``): a subclass gives its ``rules``; the likelihood,
    the span marginals and a sentence's output for the tree builder follow from them."""

    config: Any
    stores_matmul_weights = False  # the inside pass sums in float32 whatever the matmul dtype

    def rules(self) -> Rules:
        """Every rule's log-probability."""
        raise NotImplementedError

    def add_symbols(self, nonterminals: int, preterminals: int, size: int) -> None:
        """The root's, each nonterminal's and each preterminal's embedding (``size`` wide), from which the rules'
        networks compute the rules (Kim, Dyer & Rush, 2019), under the names every saved grammar's weights use."""
        self.root_embedding = nn.Parameter(torch.randn(1, size))
        self.nonterminal_embedding = nn.Parameter(torch.randn(nonterminals, size))
        self.preterminal_embedding = nn.Parameter(torch.randn(preterminals, size))

    @classmethod
    def from_weights(cls, config: Any, state: dict[str, Tensor]) -> "GrammarModel":
        model = cls(config)
        model.load_state_dict({name: tensor.float() for name, tensor in state.items()})
        return model

    def log_likelihood(self, words: Tensor, span_scores: Tensor | None = None) -> Tensor:
        """log p(sentence) of each row of ``words`` (B x n ids, one length, n >= 2): the marginal over every tree;
        under ``span_scores`` that keep one tree (``tree_span_scores``), log p(sentence, tree)."""
        return inside(self.rules(), words, span_scores)

    def forward(self, words: Tensor, span_scores: Tensor | None = None) -> Tensor:
        """``log_likelihood``: what DistributedDataParallel calls, so that training under torchrun syncs gradients."""
        return self.log_likelihood(words, span_scores)

    def no_words_output(self) -> np.ndarray:
        """A sentence without words: its only span, the sentence, certain."""
        return np.ones((1, 1))

    def sentence_outputs(
        self, read: list[list[int]], batch: list[Sentence], reading: Reading, eos_id: int, compute_dtype: torch.dtype
    ) -> list[np.ndarray]:
        """Span marginals ((words + 1) x (words + 1)) of sentences (``read``: the ids this grammar reads of each),
        those that read alike in length computed together; token spans become the words' (``word_span_marginals``)."""
        found: list[np.ndarray] = [np.empty(0)] * len(batch)
        by_length: dict[int, list[int]] = {}
        for k, tokens in enumerate(read):
            by_length.setdefault(len(tokens), []).append(k)
        device = next(self.parameters()).device
        for length, group in by_length.items():
            if length < 2:  # one token read: its only span is the sentence
                for k in group:
                    found[k] = np.ones((length + 1, length + 1))
                continue
            marginals = self.span_marginals(torch.tensor([read[k] for k in group], device=device))
            for row, k in enumerate(group):
                found[k] = word_span_marginals(reading, batch[k], marginals[row].cpu().numpy())
        return found

    @torch.no_grad()
    def span_marginals(self, words: Tensor) -> Tensor:
        """B x (n + 1) x (n + 1): the posterior probability that words i .. j-1 form a constituent (spans of 2 or more),
        by an inside and an outside pass in memory of order n^2 (any sentence length)."""
        return marginals(self.rules(), words)


OFF_TREE = (
    -1e4
)  # a span score that rules a span out: finite, so that no log-sum-exp meets only -inf and its gradient stays defined
MIN_SHARE = 1e-4  # a share recorded as held by some voter, however small, stays a tree's possible span


def tree_span_scores(trees: Sequence[Iterable[tuple[int, int]]], n: int) -> Tensor:
    """Span scores (B x (n+1) x (n+1)) that keep one binary tree a sentence: 0 on its spans of two or more words,
    ``OFF_TREE`` on every other span, so that ``inside`` under them sums that tree alone (log p(sentence, tree))."""
    return share_span_scores([[(start, end, 1.0) for start, end in tree] for tree in trees], n)


def share_span_scores(shares: Sequence[Iterable[tuple[int, int, float]]], n: int) -> Tensor:
    """Span scores (B x (n+1) x (n+1)) that weigh every tree by its teacher's confidence in its spans (soft targets):
    the log of each span's share of the teacher's votes (or its posterior), ``OFF_TREE`` on spans no voter holds,
    0 on the sentence, so that ``inside`` under them sums ``p(sentence, t) * prod_{s in t} share(s)`` over trees t.
    One tree's spans at share 1 give ``tree_span_scores``."""
    scores = _with_shares(shares, n, OFF_TREE, lambda values: values.clamp_min(MIN_SHARE).log())
    scores[:, 0, n] = 0.0
    return scores


def focus_span_scores(shares: Sequence[Iterable[tuple[int, int, float]]], n: int, focus: float) -> Tensor:
    """Span scores (B x (n+1) x (n+1)) that focus a grammar's likelihood on its teachers' spans (parse-focusing,
    Park & Kim, 2024): ``focus`` times each span's share of the teachers' votes, 0 on spans none holds, so that
    ``inside`` under them sums ``p(sentence, t) * exp(focus * sum_{s in t} share(s))`` over every tree t.

    Park & Kim add the log of a softmax of each span's count of teachers over the sentence's spans; a binary
    tree has n - 1 spans of two or more words, so the softmax's normaliser weighs every tree alike and only
    the counts remain: ``focus`` is the number of teachers over the softmax's temperature. Where every span
    weighs the same, every tree does, and the focused likelihood is the plain one times a constant.
    """
    return _with_shares(shares, n, 0.0, lambda values: focus * values)


def _with_shares(shares: Sequence[Iterable[tuple[int, int, float]]], n: int, elsewhere: float, score) -> Tensor:
    """B x (n+1) x (n+1) span scores: ``score`` of the shares on the spans they are given for, ``elsewhere`` on the
    rest, set in one indexed assignment for the batch (this runs at every update)."""
    scores = torch.full((len(shares), n + 1, n + 1), elsewhere)
    held = [(row, start, end, share) for row, found in enumerate(shares) for start, end, share in found]
    if held:
        rows, starts, ends, values = zip(*held)
        scores[rows, starts, ends] = score(torch.tensor(values, dtype=torch.float64)).float()
    return scores


def project(beta: Tensor, rules: Tensor) -> Tensor:
    """log sum_B exp(rules[A, B] + beta[..., B]) for every A: a matrix product, each row's largest score taken out
    first."""
    top = beta.amax(-1, keepdim=True).clamp_min(-1e30)
    return torch.log((beta - top).exp() @ rules.exp().transpose(-1, -2) + 1e-38) + top


def inside(rules: Rules, words: Tensor, span_scores: Tensor | None = None) -> Tensor:
    """log Z of each sentence (B x n word ids, n >= 2), summed over every binary tree and labelling.

    ``span_scores`` (B x (n+1) x (n+1), log space) are added to every symbol's
    inside score of each span of two or more words: their gradient is each
    span's marginal probability.
    """
    if rules.binary is not None:
        return joint_inside(rules, words, span_scores)
    return inside_chart(rules, words, span_scores)[-1]


def joint_inside(rules: Rules, words: Tensor, span_scores: Tensor | None = None) -> Tensor:
    """``inside`` for joint productions. A child of one word is a preterminal, a wider one a nonterminal, so a span's
    splits fall in four kinds (a word or a wider span on each side) with a block of the rule table each. Within a
    kind, the children's pairs are summed over its split points first (a matrix product, each split's scores scaled
    by their largest), then the block's rules apply to the pairs."""
    batch, n = words.shape
    if n < 2:
        raise ValueError("the inside algorithm here needs sentences of two or more words")
    nonterminals = rules.nonterminals
    table = rules.binary.exp()
    symbols = {True: slice(nonterminals, None), False: slice(0, nonterminals)}  # keyed by "is a single word"
    blocks = {
        (left, right): table[:, symbols[left], symbols[right]].flatten(1).t()  # (B x C) x A
        for left in (True, False)
        for right in (True, False)
    }
    beta = {1: rules.emission[:, words].permute(1, 2, 0)}  # B x n x P; wider spans: B x starts x N
    for width in range(2, n + 1):
        starts = n - width + 1
        parts = []  # per kind of split: its scale (B x starts x 1) and its rule-weighted sum (B x starts x N)
        for (left_word, right_word), block in blocks.items():
            splits = [k for k in range(1, width) if (k == 1) == left_word and (width - k == 1) == right_word]
            if not splits:
                continue
            left = torch.stack([beta[k][:, :starts] for k in splits], 2)  # B x starts x splits x symbols
            right = torch.stack([beta[width - k][:, k : k + starts] for k in splits], 2)
            left_top, right_top = left.amax(-1, keepdim=True), right.amax(-1, keepdim=True)
            top = (left_top + right_top).amax(2, keepdim=True)  # B x starts x 1 x 1
            left = (left - left_top).exp() * (left_top + right_top - top).exp()
            pairs = left.transpose(-1, -2) @ (right - right_top).exp()  # B x starts x symbols x symbols
            parts.append((top[..., 0], pairs.flatten(2) @ block))
        top = torch.stack([scale for scale, _ in parts]).amax(0)
        scores = torch.log(sum(found * (scale - top).exp() for scale, found in parts) + 1e-38) + top
        if span_scores is not None:
            first = torch.arange(starts)
            scores = scores + span_scores[:, first, first + width].unsqueeze(-1)
        beta[width] = scores
    return torch.logsumexp(beta[n][:, 0] + rules.root, -1)


def inside_chart(
    rules: Rules, words: Tensor, span_scores: Tensor | None = None
) -> tuple[dict[int, Tensor], dict[int, Tensor], dict[int, Tensor], Tensor]:
    """The inside pass: by width, every span's scores (B x starts x symbols), its projections l and r, and log Z."""
    batch, n = words.shape
    if n < 2:
        raise ValueError("the inside algorithm here needs sentences of two or more words")
    nonterminals = rules.nonterminals
    beta, left_from, right_from = {}, {}, {}  # width -> B x starts x symbols
    beta[1] = rules.emission[:, words].permute(1, 2, 0)  # B x n x P: single words
    left_from[1] = project(beta[1], rules.left[..., nonterminals:])
    right_from[1] = project(beta[1], rules.right[..., nonterminals:])
    left_nt, right_nt = rules.left[..., :nonterminals], rules.right[..., :nonterminals]
    for width in range(2, n + 1):
        starts = n - width + 1
        pieces = torch.stack(
            [left_from[k][:, :starts] + right_from[width - k][:, k : k + starts] for k in range(1, width)]
        )  # split points x B x starts x N
        beta[width] = torch.logsumexp(pieces, 0)
        if span_scores is not None:
            first = torch.arange(starts)
            beta[width] = beta[width] + span_scores[:, first, first + width].unsqueeze(-1)
        if width < n:
            left_from[width] = project(beta[width], left_nt)
            right_from[width] = project(beta[width], right_nt)
    return beta, left_from, right_from, torch.logsumexp(beta[n][:, 0] + rules.root, -1)


def marginals(rules: Rules, words: Tensor) -> Tensor:
    """Every span's posterior (B x (n+1) x (n+1)) from an inside and an outside pass.

    The outside score of a span as a parent's left child sums, over every
    parent starting where it starts, the parent's outside score times its
    right sibling's projection r; as a right child, over every parent ending
    where it ends, times its left sibling's projection l. A child width at a
    time, each sum is one product of charts gathered at every (child, parent)
    pair (``ScaledChart``), then one projection back through the rules
    (``project`` with the rules transposed).
    """
    if rules.binary is not None:  # the gradient of log Z with respect to every span's score
        with torch.enable_grad():
            scores = torch.zeros(words.size(0), words.size(1) + 1, words.size(1) + 1, requires_grad=True)
            binary = Rules(*(None if table is None else table.detach() for table in vars(rules).values()))
            return torch.autograd.grad(joint_inside(binary, words, scores).sum(), scores)[0]
    beta, left_from, right_from, log_z = inside_chart(rules, words)
    batch, n = words.shape
    nonterminals = rules.nonterminals
    left_nt, right_nt = rules.left[..., :nonterminals], rules.right[..., :nonterminals]
    # Log charts by (start, width) and by (end, width): a child's parents and siblings lie along their rows
    parents_by_start, parents_by_end = Chart(batch, n, nonterminals), Chart(batch, n, nonterminals)
    right_by_start, left_by_end = Chart(batch, n, nonterminals), Chart(batch, n, nonterminals)
    for width in range(1, n):
        right_by_start.by_start(width, right_from[width])
        left_by_end.by_end(width, left_from[width])
    outside = rules.root.reshape(-1, 1, nonterminals).expand(batch, 1, nonterminals)
    found = words.new_zeros((batch, n + 1, n + 1), dtype=torch.float32)
    for width in range(n, 1, -1):
        starts = n - width + 1
        if width < n:  # parents of width + q, siblings of width q, for q = 1 .. n - width
            as_left = parents_by_start.rows(0, width + 1, starts, n - width).times(
                right_by_start.rows(width, 1, starts, n - width)
            )
            as_right = parents_by_end.rows(width, width + 1, starts, n - width).times(
                left_by_end.rows(0, 1, starts, n - width)
            )
            outside = torch.logaddexp(
                project(as_left, left_nt.transpose(-1, -2)), project(as_right, right_nt.transpose(-1, -2))
            )
        parents_by_start.by_start(width, outside)
        parents_by_end.by_end(width, outside)
        first = torch.arange(starts)
        found[:, first, first + width] = torch.exp(outside + beta[width] - log_z[:, None, None]).sum(-1)
    return found


class Chart:
    """Log scores of spans (B x symbols each) in a (row, width) table, a row being the spans' start or end, none
    where no span is. Each is kept as exp(score - its largest) in float64 beside that largest, so that sums of
    products over many spans are products and sums instead of log-sum-exps (float64: a score 700 below its
    largest still counts)."""

    def __init__(self, batch: int, n: int, symbols: int):
        self.values = torch.zeros(batch, n + 1, n + 1, symbols, dtype=torch.float64)
        self.scales = torch.full((batch, n + 1, n + 1), float("-inf"), dtype=torch.float64)

    def by_start(self, width: int, scores: Tensor) -> None:
        self._put(slice(0, scores.size(1)), width, scores)

    def by_end(self, width: int, scores: Tensor) -> None:
        self._put(slice(width, width + scores.size(1)), width, scores)

    def _put(self, rows: slice, width: int, scores: Tensor) -> None:
        top = scores.amax(-1, keepdim=True).clamp_min(-1e30)
        self.values[:, rows, width] = (scores - top).double().exp()
        self.scales[:, rows, width] = top[..., 0].double()

    def rows(self, row: int, width: int, count: int, widths: int) -> "Chart":
        """Rows row .. row + count - 1, widths width .. width + widths - 1 of each: a view, nothing copied."""
        part = Chart.__new__(Chart)
        part.values = self.values[:, row : row + count, width : width + widths]
        part.scales = self.scales[:, row : row + count, width : width + widths]
        return part

    def times(self, other: "Chart") -> Tensor:
        """log sum over widths of exp(self + other), two views of one shape: B x rows x symbols, float32."""
        scale = self.scales + other.scales
        top = scale.amax(-1, keepdim=True).clamp_min(-1e30)
        summed = torch.einsum("brwn,brwn,brw->brn", self.values, other.values, (scale - top).exp())
        return (torch.log(summed + 1e-300) + top).float()
