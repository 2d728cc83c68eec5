"""A tensor grammar (TN-PCFG; Yang, Tu & Liu, 2021): binary rules as a low-rank tensor, parsed in rank space (Yang,
Liu & Tu, 2022).

With nonterminals ``N``, preterminals ``P`` and rank ``R``, a rule's probability is

    p(A -> B C) = sum_r p(r | A) p(B ↙ r) p(C ↘ r)          A in N, B, C in N + P, r in R

(``U``, ``V`` and ``W`` of the paper, each from the symbols' embeddings). Inside scores need never be kept per
symbol: with ``s_ij(r) = sum_k l_ik(r) r_kj(r)`` the score of span ``(i, j)`` at rank ``r``,
``beta_ij(A) = sum_r p(r | A) s_ij(r)``, and so a child's projection onto its parent's rank is

    l_ij(r') = sum_A p(A ↙ r') beta_ij(A) = sum_r H↙(r', r) s_ij(r),    H↙(r', r) = sum_A p(A ↙ r') p(r | A)

(a word's: ``sum_T p(T ↙ r') p(w | T)``), and ``Z = sum_r (sum_A p(A | S) p(r | A)) s_0n(r)``. These are the
independent productions' inside and outside passes (``onparse.families.grammar``) with the ranks as their
nonterminals, ``H↙`` and ``H↘`` as their production tables: ``O(n^2 R^2 + n^3 R)`` a sentence, whatever the
number of symbols.
"""

from __future__ import annotations

import torch
from torch import Tensor

from onparse.families.grammar import GrammarModel, Rules, rule_network
from onparse.families.tnpcfg import TnpcfgConfig


def through(first: Tensor, second: Tensor) -> Tensor:
    """log sum_A exp(first[A, i] + second[A, j]) for every (i, j): two log tables chained over their rows, each
    column's largest score taken out before the matrix product."""
    first_top, second_top = first.amax(0, keepdim=True), second.amax(0, keepdim=True)
    product = (first - first_top).exp().t() @ (second - second_top).exp()
    return torch.log(product + 1e-38) + first_top.t() + second_top


class TensorPCFG(GrammarModel):
    """Rule probabilities of a tensor grammar from symbol embeddings, given to the grammar passes in rank space."""

    def __init__(self, config: TnpcfgConfig):
        super().__init__()
        config.check()
        self.config = config
        n, p, rank, size = config.nonterminals, config.preterminals, config.rank, config.symbol_size
        self.add_symbols(n, p, size)
        self.root_network = rule_network(size, n)
        self.parent_network = rule_network(size, rank)  # p(r | A)
        self.left_network = rule_network(size, rank)  # p(B ↙ r): each rank's column normalized over the symbols
        self.right_network = rule_network(size, rank)  # p(C ↘ r)
        self.emission_network = rule_network(size, config.vocab_size)

    def factors(self) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """The grammar over its symbols, in log space: the root's choice of a nonterminal (N), each nonterminal's
        rank (N x R), each rank's left and right child ((N + P) x R, each column summing to one over the symbols)
        and each preterminal's word (P x V)."""
        symbols = torch.cat([self.nonterminal_embedding, self.preterminal_embedding])
        return (
            torch.log_softmax(self.root_network(self.root_embedding), -1)[0],
            torch.log_softmax(self.parent_network(self.nonterminal_embedding), -1),
            torch.log_softmax(self.left_network(symbols), 0),
            torch.log_softmax(self.right_network(symbols), 0),
            torch.log_softmax(self.emission_network(self.preterminal_embedding), -1),
        )

    def rules(self) -> Rules:
        """The rules in rank space: the root over ranks, each rank's projections of its children's ranks (the
        nonterminals' block) and of the preterminals, and the emissions."""
        root, parent, left, right, emission = self.factors()
        n = self.config.nonterminals
        return Rules(
            torch.logsumexp(root[:, None] + parent, 0),  # R: p(r | S)
            torch.cat([through(left[:n], parent), left[n:].t()], -1),  # R x (R + P)
            torch.cat([through(right[:n], parent), right[n:].t()], -1),
            emission,
        )
