"""The ON-LSTM language model (Shen et al., 2019) and its syntactic distances.

Equations, per time step t, with chunked master gates of ``n_chunks`` entries
each broadcast over ``chunk_size`` hidden units:

    f~ = cumax(W_f~ x + U_f~ h + b)          master forget gate
    i~ = 1 - cumax(W_i~ x + U_i~ h + b)      master input gate
    w  = f~ * i~                             overlap
    f^ = f * w + (f~ - w),  i^ = i * w + (i~ - w)
    c_t = f^ * c_{t-1} + i^ * c~_t,  h_t = o * tanh(c_t)
    d_t = 1 - sum(f~) / n_chunks            syntactic distance read for parsing

Matmuls run in ``compute_dtype`` (bf16 where the CPU or GPU has fast bf16); gate math and
the cell state stay in float32 so long sequences do not drift.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_sequence, pad_packed_sequence

from onparse.families import OnlstmConfig
from onparse.kernels import linear
from onparse.settings import Reading
from onparse.text.language import Sentence
from onparse.text.reading import pool, word_ranges

State = list[tuple[Tensor, Tensor]]

# A forked child (spaCy's ``nlp.pipe(n_process=...)``, a fork-started multiprocessing pool) inherits
# an OpenMP thread pool whose threads did not survive the fork: its first matmul waits for them
# forever. With one thread the child never enters that pool.
os.register_at_fork(after_in_child=lambda: torch.set_num_threads(1))


# Sentences of a batch are padded in groups of this many, so the number still
# running at a step (a matmul's row count) takes few distinct values: the
# matmul library builds and caches a kernel for each shape, and memory would
# otherwise creep up as new counts appear.
ROW_GROUP = 16


def cumax(x: Tensor, dim: int = -1) -> Tensor:
    """Cumulative softmax: a soft, monotone step function (the paper's cumax)."""
    return torch.cumsum(torch.softmax(x, dim=dim), dim=dim)


def locked_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Variational dropout: one mask per sequence, shared across time steps (x is T x B x F)."""
    if not training or p == 0.0:
        return x
    mask = x.new_empty(1, x.size(1), x.size(2)).bernoulli_(1 - p) / (1 - p)
    return x * mask


def gate_width(hidden_size: int, chunk_size: int) -> int:
    """Pre-activations per step: two master gates of one entry per chunk, then o, f, i and the cell input."""
    return 2 * (hidden_size // chunk_size) + 4 * hidden_size


def layer_sizes(config: OnlstmConfig) -> list[int]:
    """Input size of each layer, then the last layer's output: the top layer returns to the (tied) embedding size."""
    return [config.embedding_size] + [config.hidden_size] * (config.n_layers - 1) + [config.embedding_size]


class _SegmentWeight(torch.autograd.Function):
    """Hands the recurrent weight to the time loop, deferring its gradient to one matmul.

    Autograd would otherwise form ``g_t^T h_{t-1}`` at every step (a skinny,
    slow matmul) and add it into the weight gradient T times. Each step
    (``_recurrent_matmul``) records its output gradient instead; this node feeds
    the initial hidden state, so its backward runs after every step's and can
    form ``sum_t g_t^T h_{t-1}`` as a single segment-sized matmul.
    """

    @staticmethod
    def forward(ctx, weight: Tensor, h0: Tensor, tape: dict) -> Tensor:
        ctx.tape = tape
        return h0.clone()

    @staticmethod
    def backward(ctx, grad_h0: Tensor):
        tape = ctx.tape
        grads = torch.cat(tape["grads"])  # steps may hold fewer rows as packed sequences end
        inputs = torch.cat(tape["inputs"])
        tape["grads"].clear()
        tape["inputs"].clear()
        return grads.t().to(inputs.dtype) @ inputs, grad_h0, None


class _RecurrentMatmul(torch.autograd.Function):
    """``h @ W^T`` whose weight gradient is left to ``_SegmentWeight``."""

    @staticmethod
    def forward(ctx, h: Tensor, weight: Tensor, tape: dict) -> Tensor:
        ctx.save_for_backward(h, weight)
        ctx.tape = tape  # filled only during backward: the graph never holds a cycle through it
        return F.linear(h, weight)

    @staticmethod
    def backward(ctx, grad: Tensor):
        h, weight = ctx.saved_tensors
        ctx.tape["grads"].append(grad)
        ctx.tape["inputs"].append(h)
        return grad.to(weight.dtype) @ weight, None, None


class ONLSTMLayer(nn.Module):
    """One ON-LSTM layer over a whole segment, returning outputs, state and distances."""

    def __init__(self, input_size: int, hidden_size: int, chunk_size: int, wdrop: float = 0.0):
        super().__init__()
        if hidden_size % chunk_size:
            raise ValueError(f"hidden size {hidden_size} is not a multiple of chunk size {chunk_size}")
        self.hidden_size = hidden_size
        self.chunk_size = chunk_size
        self.n_chunks = hidden_size // chunk_size
        gate_size = gate_width(hidden_size, chunk_size)
        self.input_proj = nn.Linear(input_size, gate_size)
        self.recurrent_proj = nn.Linear(hidden_size, gate_size, bias=False)
        self.wdrop = wdrop

    def initial_state(self, batch_size: int, device: torch.device) -> tuple[Tensor, Tensor]:
        zeros = torch.zeros(batch_size, self.n_chunks, self.chunk_size, device=device)
        return zeros, zeros.clone()

    def cell(self, gates: Tensor, c_prev: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """One step of the equations above, from pre-activations to (h, c, distance)."""
        batch = gates.size(0)
        master_f, master_i, rest = gates.split([self.n_chunks, self.n_chunks, 4 * self.hidden_size], dim=1)
        f_master = cumax(master_f)
        i_master = 1.0 - cumax(master_i)
        o, f, i, c_hat = rest.view(batch, 4, self.n_chunks, self.chunk_size).unbind(1)
        w = (f_master * i_master).unsqueeze(-1)
        f_hat = torch.sigmoid(f) * w + (f_master.unsqueeze(-1) - w)
        i_hat = torch.sigmoid(i) * w + (i_master.unsqueeze(-1) - w)
        c = f_hat * c_prev + i_hat * torch.tanh(c_hat)
        h = torch.sigmoid(o) * torch.tanh(c)
        distance = 1.0 - f_master.sum(-1) / self.n_chunks
        return h, c, distance

    def forward(
        self,
        x: Tensor,
        state: tuple[Tensor, Tensor],
        compute_dtype: torch.dtype = torch.float32,
        batch_sizes: Sequence[int] | None = None,
    ) -> tuple[Tensor, tuple[Tensor, Tensor], Tensor]:
        """Run the segment x and return its outputs, the last state and the distances.

        x is T x B x input, giving outputs T x B x hidden and distances T x B.
        With ``batch_sizes``, x is packed as in torch's PackedSequence: rows of
        step t are the ``batch_sizes[t]`` sequences still running, longest
        first, so finished sequences cost nothing; outputs and distances are
        packed the same way, and the last state is that of the longest.
        """
        packed = batch_sizes is not None
        rows = x if packed else x.flatten(0, 1)
        projected = linear(
            rows.to(compute_dtype), self.input_proj.weight.to(compute_dtype), self.input_proj.bias.to(compute_dtype)
        )
        recurrent = F.dropout(self.recurrent_proj.weight, self.wdrop, self.training).to(compute_dtype)
        h, c = state
        h = h.flatten(1).to(compute_dtype)
        if torch.is_grad_enabled() and recurrent.requires_grad:
            tape: dict = {"inputs": [], "grads": []}
            h = _SegmentWeight.apply(recurrent, h, tape)
            matmul = lambda h_prev: _RecurrentMatmul.apply(h_prev, recurrent.detach(), tape)  # noqa: E731
        else:
            matmul = lambda h_prev: linear(h_prev, recurrent)  # noqa: E731
        outputs, distances = [], []
        # split and unbind: one gradient buffer for the segment, not one per step
        steps = projected.split(list(batch_sizes)) if packed else projected.view(*x.shape[:2], -1).unbind(0)
        for projected_t in steps:
            running = projected_t.size(0)
            if running < h.size(0):
                h, c = h[:running], c[:running]
            gates = (projected_t + matmul(h)).float()
            h, c, distance = self.cell(gates, c)
            h = h.flatten(1).to(compute_dtype)
            outputs.append(h)
            distances.append(distance)
        output, distance = torch.cat(outputs).float(), torch.cat(distances)
        if not packed:
            output, distance = output.view(*x.shape[:2], -1), distance.view(x.shape[:2])
        return output, (h.view_as(c).float(), c), distance


@contextmanager
def _without_random_init() -> Iterator[None]:
    """Layers built inside hold uninitialised memory instead of drawing random weights.

    For a model whose every weight is about to be loaded: drawing them costs a
    quarter of a second for the shipped ensemble's start-up, for nothing.
    (Building on the meta device would import torch._dynamo: 1.8 s more.)
    """
    saved = nn.Linear.reset_parameters, nn.Embedding.reset_parameters, nn.init.uniform_
    nn.Linear.reset_parameters = nn.Embedding.reset_parameters = lambda self: None
    nn.init.uniform_ = lambda tensor, *args, **kwargs: tensor
    try:
        yield
    finally:
        nn.Linear.reset_parameters, nn.Embedding.reset_parameters, nn.init.uniform_ = saved


class OnlstmModel(nn.Module):
    """Embedding, stacked ON-LSTM layers and a decoder tied to the embedding."""

    def __init__(self, config: OnlstmConfig):
        super().__init__()
        config.check()
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.embedding_size)
        sizes = layer_sizes(config)
        self.layers = nn.ModuleList(
            ONLSTMLayer(sizes[k], sizes[k + 1], config.chunk_size, config.wdrop) for k in range(config.n_layers)
        )
        self.decoder_bias = nn.Parameter(torch.zeros(config.vocab_size))
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)

    @classmethod
    def from_weights(cls, config: OnlstmConfig, state: dict[str, Tensor]) -> "OnlstmModel":
        """A model holding exactly ``state`` (in float32), built without drawing weights it would discard."""
        with _without_random_init():
            model = cls(config)
        model.load_state_dict({name: tensor.float() for name, tensor in state.items()})
        return model

    def initial_state(self, batch_size: int) -> State:
        device = self.embedding.weight.device
        return [layer.initial_state(batch_size, device) for layer in self.layers]

    def embed(self, ids: Tensor) -> Tensor:
        weight = self.embedding.weight
        if self.training and self.config.dropoute > 0:
            keep = weight.new_empty(weight.size(0), 1).bernoulli_(1 - self.config.dropoute)
            weight = weight * keep / (1 - self.config.dropoute)
        return F.embedding(ids, weight)

    def forward(
        self,
        ids: Tensor,
        state: State | None = None,
        compute_dtype: torch.dtype = torch.float32,
        batch_sizes: Sequence[int] | None = None,
    ) -> tuple[Tensor, State, Tensor]:
        """ids is T x B; returns the last layer's output, the new state and distances L x T x B.

        With ``batch_sizes``, ids are packed (see ``ONLSTMLayer.forward``) and so is what comes back.
        """
        if state is None:
            state = self.initial_state(batch_sizes[0] if batch_sizes is not None else ids.size(1))
        x = locked_dropout(self.embed(ids), self.config.dropouti, self.training)
        new_state, distances = [], []
        for k, layer in enumerate(self.layers):
            x, layer_state, distance = layer(x, state[k], compute_dtype, batch_sizes)
            new_state.append(layer_state)
            distances.append(distance)
            last = k == len(self.layers) - 1
            x = locked_dropout(x, self.config.dropout if last else self.config.dropouth, self.training)
        return x, new_state, torch.stack(distances)

    def logits(self, output: Tensor, compute_dtype: torch.dtype = torch.float32) -> Tensor:
        """Next-word scores from the last layer's output, through the tied embedding."""
        weight = self.embedding.weight.to(compute_dtype)
        return F.linear(output.to(compute_dtype), weight, self.decoder_bias.to(compute_dtype))

    def loss(self, output: Tensor, targets: Tensor, compute_dtype: torch.dtype = torch.float32) -> Tensor:
        """Mean next-word cross-entropy in nats, the log-softmax and the mean taken in float32 whatever the matmul
        dtype (in bfloat16 a loss of 6.66 moves in steps of 0.03: dev perplexities would tie and choose nothing)."""
        logits = self.logits(output, compute_dtype).float()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))

    stores_matmul_weights = True  # a parser keeps its weights in the matmul dtype once (the time loop casts nothing)

    def no_words_output(self) -> np.ndarray:
        """A sentence without words has no distances."""
        return np.zeros((self.config.n_layers, 0), np.float32)

    def sentence_outputs(
        self, read: list[list[int]], batch: list[Sentence], reading: Reading, eos_id: int, compute_dtype: torch.dtype
    ) -> list[np.ndarray]:
        """Distances (layers x words) of sentences (``read``: the ids this model reads of each), in one packed run:
        each sentence after an ``<eos>``, as in training, its steps' distances pooled into one per word."""
        order = sorted(range(len(batch)), key=lambda k: -len(read[k]))  # longest first, as packing needs
        ids = []
        for column, k in enumerate(order):  # padded to the longest of its group of ROW_GROUP
            longest = len(read[order[column - column % ROW_GROUP]])
            ids.append(torch.tensor([eos_id] + read[k] + [eos_id] * (longest - len(read[k]))))
        device = self.embedding.weight.device
        steps = (
            pad_packed_sequence(self.distances(pack_sequence(ids).to(device), compute_dtype))[0].float().cpu()
        )  # T x B x layers
        found: list[np.ndarray] = [np.empty(0)] * len(batch)
        for column, k in enumerate(order):
            read_steps = steps[1 : len(read[k]) + 1, column].T  # layers x steps read
            found[k] = pool(read_steps, word_ranges(reading, batch[k])).numpy()
        return found

    @torch.no_grad()
    def distances(
        self, ids: Tensor | PackedSequence, compute_dtype: torch.dtype = torch.float32
    ) -> Tensor | PackedSequence:
        """Master-forget distances of sequences read from a fresh state.

        ids T x B give distances L x T x B; a PackedSequence of ids gives a
        PackedSequence whose data is (tokens x L), with no work spent on padding.
        The model is causal, so what follows a sequence never changes its distances.
        """
        was_training = self.training
        self.eval()
        if isinstance(ids, PackedSequence):
            _, _, distances = self(ids.data, None, compute_dtype, ids.batch_sizes.tolist())
            result = ids._replace(data=distances.t())
        else:
            _, _, result = self(ids, None, compute_dtype)
        self.train(was_training)
        return result
