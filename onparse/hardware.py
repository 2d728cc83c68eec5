"""A one-line description of the machine a run used, for cards, logs and benchmarks."""

from __future__ import annotations

import platform

import torch


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), platform.machine())
    except OSError:
        return platform.machine()


def describe(device: str | torch.device = "cpu") -> str:
    """The CPU and its thread count, the GPU where ``device`` is one, and the torch build."""
    device = torch.device(device)
    accelerator = torch.cuda.get_device_name(device) if device.type == "cuda" else "no GPU used"
    return f"{cpu_name()}, {torch.get_num_threads()} threads, {accelerator}, torch {torch.__version__}"
