"""Fake adapters for the collector's tests: a virtual clock with known sync and op costs."""

from __future__ import annotations

from typing import Callable

from collector.adapters.allocator import Peaks
from collector.adapters.base import Adapter


class VirtualClockAdapter(Adapter):
    """now_ns() costs `sync_ns` of virtual time; each op() call advances the clock by `op_ns`."""

    device_type = "cpu"

    def __init__(self, sync_ns: int, op_ns: int) -> None:
        super().__init__()
        self.clock, self.sync_ns, self.op_ns = 0, sync_ns, op_ns
        self.syncs = 0

    @property
    def name(self) -> str:
        return "virtual"

    def synchronize(self) -> None:
        self.clock += self.sync_ns
        self.syncs += 1

    def now_ns(self) -> int:
        self.synchronize()
        return self.clock

    def op(self) -> None:
        self.clock += self.op_ns

    def driver_memory_probe(self) -> tuple[Callable[[], int] | None, str | None, str | None]:
        return None, "virtual device", None

    def allocator_peaks(self) -> Peaks:
        return None, None, "virtual device"
