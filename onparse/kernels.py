"""Two workarounds for CPU libraries, each behind one named helper, so the model reads like the paper.

Both are measured in docs/speed.md.
"""

from __future__ import annotations

import ctypes

import torch
import torch.nn.functional as F
from torch import Tensor

_ONEDNN = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")

try:
    _malloc_trim = ctypes.CDLL(None).malloc_trim  # glibc
except (AttributeError, OSError, TypeError):
    _malloc_trim = None


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``F.linear``, through oneDNN for float32 on the CPU when no gradient is needed.

    torch sends CPU float32 matmuls to MKL, which on AMD Zen 4 runs them at
    about 110 GFLOP/s where oneDNN (already torch's path for bf16) reaches
    180-200, for one sentence and for batches alike.
    """
    global _ONEDNN
    if x.dtype == torch.float32 and x.device.type == "cpu" and _ONEDNN and not torch.is_grad_enabled():
        try:
            return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
        except (RuntimeError, TypeError):  # a private op a later torch may change: fall back to torch's own, for good
            _ONEDNN = False
    return F.linear(x, weight, bias)


def release_freed_memory() -> None:
    """Hand the heap's free pages back to the system.

    Batches allocate tensors of ever-different sizes, and glibc keeps what they
    free fragmented and resident: without this a long stream's memory creeps
    up (by 500 MB over 30,000 lines) instead of staying flat.
    """
    if _malloc_trim is not None:
        _malloc_trim(0)
