"""CUDA: process device memory from NVML (pynvml) or device-wide mem_get_info; allocator peaks from torch."""

from __future__ import annotations

import os
from typing import Callable

import torch

from collector.adapters.allocator import Peaks, allocator_peaks
from collector.adapters.base import Adapter


class CudaAdapter(Adapter):
    device_type = "cuda"

    def __init__(self) -> None:
        super().__init__()
        self.device = torch.device("cuda", torch.cuda.current_device())

    @property
    def name(self) -> str:
        return torch.cuda.get_device_name(self.device)

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)

    def driver_memory_probe(self) -> tuple[Callable[[], int] | None, str | None, str | None]:
        probe, why_not = _nvml_process_probe(self.device.index or 0)
        if probe is not None:
            return probe, None, None

        def device_used() -> int:
            free, total = torch.cuda.mem_get_info(self.device)
            return int(total - free)

        return (
            device_used,
            None,
            (
                "memory_driver_peak is device-wide used memory (torch.cuda.mem_get_info; "
                f"{why_not}): other processes on this GPU are included"
            ),
        )

    def release_cached(self) -> None:
        torch.cuda.empty_cache()

    def allocator_peaks(self) -> Peaks:
        return allocator_peaks("cuda", torch.cuda)


def _nvml_process_probe(index: int) -> tuple[Callable[[], int] | None, str]:
    """(bytes NVML attributes to this process on the GPU, or None with why NVML cannot say)."""
    try:
        import pynvml
    except ImportError:
        return None, "pynvml not installed"
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        pid = os.getpid()

        def used() -> int:
            procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
            return sum(int(p.usedGpuMemory or 0) for p in procs if p.pid == pid)

        seen = used()
    except Exception as exc:  # noqa: BLE001 - any NVML failure means: fall back to mem_get_info
        return None, f"NVML failed: {type(exc).__name__}"
    # This process holds a CUDA context by now, so NVML reading 0 bytes for it means NVML cannot see it (a
    # container's PID namespace hides host pids): a 0 there would be a stand-in, not a measurement.
    if seen <= 0:
        return None, "NVML lists no memory for this process id, e.g. inside a container's PID namespace"
    return used, ""
