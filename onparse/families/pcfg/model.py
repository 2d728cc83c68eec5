"""A neural PCFG: rule probabilities from symbol embeddings, with independent left and right productions (or joint
ones), its inside pass, marginals and MBR tree those of every grammar (``onparse.families.grammar``).

The grammar (Liu, Yang, Kim & Tu, 2023, "Simple Hardware-Efficient PCFGs
with Independent Left and Right Productions"; neural rule scores over symbol
embeddings as in Kim, Dyer & Rush, 2019) has nonterminals ``N`` and
preterminals ``P``. A sentence is drawn from the root ``S``:

    S -> A                p(A | S)                       A in N
    A -> B C              p(B ↙ A) p(C ↘ A)              B, C in N + P
    T -> w                p(w | T)                        T in P

so each binary rule's probability is a left and a right choice made
independently, and the inside score of a span factors through two
projections of its children's scores (``O(n^2 |N|^2 + n^3 |N|)`` where a
general PCFG costs ``O(n^3 |N|^3)``).

A compound grammar (Kim, Dyer & Rush, 2019) draws a vector ``z`` for each
sentence, and its root and production networks read ``z`` beside each
symbol's embedding: each sentence gets its own rules, so the grammar need not
fit every sentence with one table. ``z`` comes from a BiLSTM over the
sentence (a Gaussian posterior ``q(z | x)``, its mean when parsing), and the
grammar trains on the evidence lower bound ``E_q log p(x | z) - KL(q || N(0, I))``.
Emissions stay shared, as they dominate the cost.

A grammar may instead take joint productions, ``p(A -> B C)`` one table of
``|N| x |N + P|^2`` (the neural PCFG of Kim, Dyer & Rush, 2019, whose
binary rules come from one linear layer): more expressive for few symbols,
at ``O(n^3 |N + P|^2 + n^2 |N| |N + P|^2)``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from onparse.families import PcfgConfig
from onparse.families.grammar import GrammarModel, Rules, inside, marginals, rule_network
from onparse.families.pcfg import JOINT


class NeuralPCFG(GrammarModel):
    """Rule probabilities computed from symbol embeddings: the same for every sentence, or, with
    ``config.latent_size``, from each sentence's vector too (a compound grammar)."""

    def __init__(self, config: PcfgConfig):
        super().__init__()
        config.check()
        self.config = config
        n, p, size, latent = config.nonterminals, config.preterminals, config.symbol_size, config.latent_size
        self.add_symbols(n, p, size)
        self.root_network = rule_network(size, n, latent)
        if config.productions == JOINT:
            self.binary_network = nn.Linear(size, (n + p) ** 2)
        else:
            self.left_network = rule_network(size, n + p, latent)
            self.right_network = rule_network(size, n + p, latent)
        self.emission_network = rule_network(size, config.vocab_size)
        if latent:  # q(z | x): a BiLSTM over the sentence, max-pooled, to a mean and a log-variance (half the
            # symbol size wide: on a CPU the encoder would otherwise cost as much as the inside pass)
            width = max(1, size // 2)
            self.encoder_embedding = nn.Embedding(config.vocab_size, width)
            self.encoder = nn.LSTM(width, width, batch_first=True, bidirectional=True)
            self.posterior_network = nn.Linear(2 * width, 2 * latent)

    def rules(self, latent: Tensor | None = None) -> Rules:
        """Every rule's log-probability, normalized over what each symbol may rewrite to; given sentence vectors
        (B x latent_size), the root and production rules of each sentence (a leading B axis)."""
        log_softmax = lambda x: torch.log_softmax(x, -1)  # noqa: E731

        def beside(embedding: Tensor) -> Tensor:  # each symbol's embedding, and each sentence's vector after it
            if latent is None:
                return embedding
            batch, symbols = latent.size(0), embedding.size(0)
            return torch.cat([embedding.expand(batch, -1, -1), latent[:, None].expand(-1, symbols, -1)], -1)

        root = log_softmax(self.root_network(beside(self.root_embedding)))[..., 0, :]
        emission = log_softmax(self.emission_network(self.preterminal_embedding))
        if self.config.productions == JOINT:
            symbols = self.config.nonterminals + self.config.preterminals
            binary = log_softmax(self.binary_network(self.nonterminal_embedding)).view(-1, symbols, symbols)
            return Rules(root, None, None, emission, binary)
        return Rules(
            root,
            log_softmax(self.left_network(beside(self.nonterminal_embedding))),
            log_softmax(self.right_network(beside(self.nonterminal_embedding))),
            emission,
        )

    def posterior(self, words: Tensor) -> tuple[Tensor, Tensor]:
        """A compound grammar's q(z | sentence): the mean and log-variance (B x latent_size each) of each row."""
        states, _ = self.encoder(self.encoder_embedding(words))
        return self.posterior_network(states.amax(1)).chunk(2, -1)

    def log_likelihood(self, words: Tensor, span_scores: Tensor | None = None) -> Tensor:
        """log p(sentence) of each row of ``words`` (B x n ids, one length, n >= 2): the marginal over every tree;
        under ``span_scores`` that keep one tree (``tree_span_scores``), log p(sentence, tree).
        A compound grammar's is its evidence lower bound: at a vector drawn from q(z | x) in train mode, at q's
        mean otherwise, less the KL divergence of q from the prior N(0, I)."""
        if not self.config.latent_size:
            return super().log_likelihood(words, span_scores)
        mean, log_variance = self.posterior(words)
        latent = mean + (0.5 * log_variance).exp() * torch.randn_like(mean) if self.training else mean
        divergence = 0.5 * (mean.square() + log_variance.exp() - 1 - log_variance).sum(-1)
        return inside(self.rules(latent), words, span_scores) - divergence

    @torch.no_grad()
    def span_marginals(self, words: Tensor) -> Tensor:
        """The span marginals (``GrammarModel.span_marginals``); a compound grammar's under the rules of each
        sentence's mean vector."""
        return marginals(self.rules(self.posterior(words)[0] if self.config.latent_size else None), words)
