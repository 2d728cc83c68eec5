"""Training across processes and machines: torchrun's ranks, DistributedDataParallel, and what ranks must agree on.

``torchrun --nproc_per_node N -m onparse train ...`` starts N processes with
``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` set; each joins one process group
(gloo on the CPU, nccl on GPUs), trains a replica of the model on its own
columns of the batch (contiguous shards of the token stream, so the hidden
state each carries from segment to segment stays valid) and DDP averages the
gradients, so N ranks of batch B/N take the update one process of batch B
would. Without torchrun a run is one rank of world size 1 and nothing here
does any work.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel


@dataclass(frozen=True)
class Ranks:
    """This process's place among the run's processes."""

    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        """The one rank that writes the run folder and prints."""
        return self.rank == 0


def from_environment() -> Ranks:
    """The ranks torchrun announces in the environment (one rank without torchrun): read once, by the command that
    starts the work, and passed down from there."""
    return Ranks(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))


def join(device: str, ranks: Ranks) -> Ranks:
    """Join the process group of a launch of ``ranks.world`` processes (gloo on the CPU, nccl on GPUs, one GPU per
    local rank); a world of one joins nothing."""
    if ranks.world == 1:
        return Ranks()
    if not dist.is_initialized():
        if torch.device(device).type == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group("nccl" if torch.device(device).type == "cuda" else "gloo")
    return Ranks(dist.get_rank(), dist.get_world_size())


def wait_for_all() -> None:
    """Go on once every rank has come this far (nothing without a process group)."""
    if dist.is_initialized():
        dist.barrier()


def leave() -> None:
    """Leave the process group once every rank is done (nothing without one)."""
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def go_alone() -> Ranks:
    """End the launch's process group; the ranks to pass on from here: a world of one (``fit``: rank 0 goes on
    alone after the members, the others end)."""
    leave()
    return Ranks()


def own_columns(batch_size: int, ranks: Ranks) -> slice:
    """This rank's columns of a batch of ``batch_size`` streams; ValueError unless the ranks share it evenly."""
    if batch_size % ranks.world:
        raise ValueError(
            f"a batch of {batch_size} streams does not split evenly over {ranks.world} processes: "
            f"give --batch-size a multiple of {ranks.world}"
        )
    width = batch_size // ranks.world
    return slice(ranks.rank * width, (ranks.rank + 1) * width)


class Replica(DistributedDataParallel):
    """DDP over the language model: its forward synchronises gradients; its other methods (loss) are the model's."""

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)


def replicate(model: nn.Module, ranks: Ranks) -> nn.Module:
    """What the training step calls: the model itself in one process, a DDP replica across several."""
    return model if ranks.world == 1 else Replica(model)


def gather_columns(
    state: list[tuple[Tensor, Tensor]], ranks: Ranks, device: torch.device
) -> list[tuple[Tensor, Tensor]]:
    """Every rank's carried state joined along the batch, in rank order: the state one process would carry.

    A checkpoint so written resumes under any number of processes that divides the batch.
    """
    if ranks.world == 1:
        return state

    def gathered(tensor: Tensor) -> Tensor:
        parts = [torch.empty_like(tensor, device=device) for _ in range(ranks.world)]
        dist.all_gather(parts, tensor.to(device).contiguous())
        return torch.cat(parts).cpu()

    return [(gathered(h), gathered(c)) for h, c in state]


def scatter_columns(state: list[tuple[Tensor, Tensor]], ranks: Ranks) -> list[tuple[Tensor, Tensor]]:
    """This rank's part of a whole batch's carried state (``gather_columns`` undone)."""
    if ranks.world == 1 or not state:
        return state
    columns = own_columns(state[0][0].size(0), ranks)
    return [(h[columns], c[columns]) for h, c in state]


def total(count: int, ranks: Ranks, device: torch.device) -> int:
    """The sum of every rank's ``count`` (words trained on this update, say)."""
    if ranks.world == 1:
        return count
    summed = torch.tensor(count, dtype=torch.int64, device=device)
    dist.all_reduce(summed)
    return int(summed.item())


def any_rank(flags: list[bool], ranks: Ranks, device: torch.device) -> list[bool]:
    """Each flag, true where any rank raised it: a signal, a time limit or a checkpoint's hour seen by one rank
    stops or saves them all at the same update."""
    if ranks.world == 1:
        return flags
    raised = torch.tensor(flags, dtype=torch.int32, device=device)
    dist.all_reduce(raised, op=dist.ReduceOp.MAX)
    return [bool(flag) for flag in raised.tolist()]
