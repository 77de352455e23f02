"""CPU: nothing to synchronise; driver figure = process RSS peak (psutil); no caching allocator."""

from __future__ import annotations

import platform
from typing import Callable

from collector.adapters.allocator import Peaks
from collector.adapters.base import Adapter


class CpuAdapter(Adapter):
    device_type = "cpu"

    @property
    def name(self) -> str:
        return platform.processor() or platform.machine() or "cpu"

    def synchronize(self) -> None:
        return None  # CPU ops run synchronously in eager mode

    def driver_memory_probe(self) -> tuple[Callable[[], int] | None, str | None, str | None]:
        try:
            import psutil
        except ImportError:
            return None, "psutil is not installed: no process RSS probe", None
        process = psutil.Process()
        return (lambda: process.memory_info().rss), None, None

    def allocator_peaks(self) -> Peaks:
        return None, None, "the CPU has no caching allocator: reserved and live-tensor peaks are not tracked"
