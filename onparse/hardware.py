"""The machine: a one-line description for cards, logs and benchmarks, usable devices, CPU threads.

torch is imported only where a function needs it, so the command line can
import this module (``one_line``) without loading torch for ``--help``.
"""

from __future__ import annotations

import os
import platform
import time
from typing import TYPE_CHECKING

from onparse.settings import AUTO_DTYPE, COMPUTE_DTYPES

if TYPE_CHECKING:  # imported where needed, so that --help answers without it
    import torch


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next(
                (line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), platform.machine()
            )
    except OSError:
        return platform.machine()


def describe(device: str = "cpu") -> str:
    """The CPU and its thread count, the GPU where ``device`` is one, and the torch build."""
    import torch

    device = torch.device(device)
    accelerator = torch.cuda.get_device_name(device) if device.type == "cuda" else "no GPU used"
    return f"{cpu_name()}, {torch.get_num_threads()} threads, {accelerator}, torch {torch.__version__}"


# CPU flags of native bf16 matmuls (oneDNN's bf16 kernels); without them torch emulates bf16 far slower than fp32
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (/proc/cpuinfo; none where the system does not say)."""
    try:
        with open("/proc/cpuinfo") as info:
            return frozenset(next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), []))
    except OSError:
        return frozenset()


def native_bf16(device: object = "cpu") -> bool:
    """Whether ``device`` computes bf16 matmuls natively: a CUDA GPU that supports them, or a CPU with AVX-512 BF16 or
    AMX. On an AVX2 CPU a bf16 training step ran about 20x slower than fp32 (docs/speed.md)."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return device.type == "cpu" and bool(NATIVE_BF16_FLAGS & cpu_flags())


def compute_dtype(name: str, device: object = "cpu") -> torch.dtype:
    """The torch dtype of a matmul precision named as in ``settings.DTYPE_CHOICES`` (``auto``: bf16 where ``device``
    computes it natively, float32 elsewhere)."""
    import torch

    if name == AUTO_DTYPE:
        return torch.bfloat16 if native_bf16(device) else torch.float32
    return getattr(torch, COMPUTE_DTYPES[name])


def check_device(device: str) -> None:
    """ValueError for a device that cannot hold data and give it back (a missing GPU, ``meta``), said before any
    work."""
    import torch

    try:
        if torch.ones(1, device=device).cpu().item() != 1:
            raise RuntimeError("a value did not come back unchanged")
    except Exception as err:
        raise ValueError(f"device {str(device)!r} is not usable here ({one_line(err)})") from None


def one_line(err: BaseException, width: int = 160) -> str:
    """An exception as the one line an error message may quote: its first line, cut to ``width``, or its type's name."""
    text = str(err).strip()
    return text.splitlines()[0][:width] if text else type(err).__name__


def free_memory() -> int | None:
    """Bytes this process may still allocate: the memory the system has free (``MemAvailable``), or less under an
    address-space limit (``ulimit -v``); None where neither is known."""
    import resource

    found = []
    try:
        with open("/proc/meminfo") as meminfo:
            found += [int(line.split()[1]) * 1024 for line in meminfo if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        found.append(limit)
    return min(found) if found else None


def use_threads(threads: int | None = None) -> None:
    """Use ``threads`` CPU threads for torch (default: one per core, fewer where other work already runs:
    ``default_threads``)."""
    threads = threads or default_threads()
    if threads:
        import torch

        torch.set_num_threads(threads)


def default_threads() -> int | None:
    """CPU threads for torch when the user names none: None (torch's own, one per core) on an idle machine,
    and the cores left over where other work is running right now; under torchrun, a share of the cores per process.

    torch's OpenMP threads spin while they wait: two jobs that each take every
    core run 5-10x slower than one after the other (docs/speed.md). The load
    average would say so a minute late; the count of runnable threads
    (``/proc/loadavg``), lowest of three looks 2 ms apart, says it now.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    processes = int(os.environ.get("LOCAL_WORLD_SIZE", 1))  # torchrun's processes on this machine share its cores
    if processes > 1:
        return max(1, cores // processes)
    busy = running_elsewhere()
    return max(1, cores - busy) if busy else None


def running_elsewhere(looks: int = 3) -> int:
    """Threads runnable on the machine besides this one (0 where the system does not say)."""
    counts = []
    for look in range(looks):
        try:
            with open("/proc/loadavg") as loadavg:
                counts.append(int(loadavg.read().split()[3].split("/")[0]) - 1)
        except (OSError, ValueError, IndexError):
            return 0
        if look + 1 < looks:
            time.sleep(0.002)
    return max(0, min(counts))
