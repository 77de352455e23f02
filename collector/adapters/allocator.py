"""Allocator peak figures (reserved, live tensors) from whichever peak API this build has for a device."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import torch

Peaks = tuple[Callable[[], None] | None, Callable[[], tuple[int, int]] | None, str | None]
_NAMES = ("reset_peak_memory_stats", "max_memory_reserved", "max_memory_allocated")


def _accelerator_memory(device_type: str) -> ModuleType | None:
    """torch.accelerator.memory, when the current accelerator is this device type (MPS gained it ~2.14)."""
    accelerator = getattr(torch, "accelerator", None)
    memory = getattr(accelerator, "memory", None)
    if memory is None or not all(hasattr(memory, n) for n in _NAMES):
        return None
    try:
        current = accelerator.current_accelerator()
    except Exception:  # noqa: BLE001 - an older build without a current accelerator has no peaks here
        return None
    return memory if current is not None and current.type == device_type else None


def allocator_peaks(device_type: str, legacy: ModuleType | None = None) -> Peaks:
    """(reset, read, reason): the accelerator API first, then a legacy module (torch.cuda), probed once."""
    for module in (_accelerator_memory(device_type), legacy):
        if module is None or not all(hasattr(module, n) for n in _NAMES):
            continue
        reset = module.reset_peak_memory_stats

        def read(m: ModuleType = module) -> tuple[int, int]:
            return int(m.max_memory_reserved()), int(m.max_memory_allocated())

        try:  # an API that exists but is not wired to this device's allocator raises here
            reset()
            read()
        except Exception as exc:  # noqa: BLE001 - recorded as the reason the figure is unavailable
            return None, None, f"allocator peak API present but failed on {device_type}: {exc}"
        return reset, read, None
    return (
        None,
        None,
        (
            f"torch {torch.__version__} has no allocator peak API for {device_type} "
            "(torch.accelerator.memory max_memory_reserved/max_memory_allocated)"
        ),
    )
