"""MPS: deliberately thin. Driver figure = torch.mps.driver_allocated_memory() sampled by a thread (there is no
driver peak API); allocator peaks from torch.accelerator.memory where the build wired MPS in (~2.14); the kernel
pass reads PyTorch's MPSProfiler statistics (collector.adapters.profilers, mps_log), not torch.profiler."""

from __future__ import annotations

from typing import Callable

import torch

from collector.adapters.allocator import Peaks, allocator_peaks
from collector.adapters.base import Adapter
from collector.adapters.profilers import KernelProfiler, MpsStatsProfiler


class MpsAdapter(Adapter):
    device_type = "mps"

    def __init__(self, chip: str | None = None) -> None:
        super().__init__()
        self.chip = chip

    @property
    def name(self) -> str:
        return f"{self.chip} (MPS)" if self.chip else "Apple GPU (MPS)"

    def synchronize(self) -> None:
        torch.mps.synchronize()

    def driver_memory_probe(self) -> tuple[Callable[[], int] | None, str | None, str | None]:
        probe = getattr(torch.mps, "driver_allocated_memory", None)
        if probe is None:
            return None, f"torch {torch.__version__} has no torch.mps.driver_allocated_memory", None
        return probe, None, None

    def release_cached(self) -> None:
        torch.mps.empty_cache()

    def kernel_profiler(self) -> KernelProfiler:
        return MpsStatsProfiler()

    def allocator_peaks(self) -> Peaks:
        return allocator_peaks("mps")
