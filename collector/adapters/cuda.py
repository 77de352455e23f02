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
        probe = _nvml_process_probe(self.device.index or 0)
        if probe is not None:
            return probe, None, None

        def device_used() -> int:
            free, total = torch.cuda.mem_get_info(self.device)
            return int(total - free)
        return device_used, None, ("memory_driver_peak is device-wide used memory (torch.cuda.mem_get_info; "
                                   "pynvml not installed): other processes on this GPU are included")

    def allocator_peaks(self) -> Peaks:
        return allocator_peaks("cuda", torch.cuda)


def _nvml_process_probe(index: int) -> Callable[[], int] | None:
    """Bytes NVML attributes to this process on the GPU, or None without pynvml / NVML support."""
    try:
        import pynvml
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        pid = os.getpid()

        def used() -> int:
            procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
            return sum(int(p.usedGpuMemory or 0) for p in procs if p.pid == pid)
        used()
        return used
    except Exception:  # noqa: BLE001 - any NVML failure means: fall back to mem_get_info
        return None
