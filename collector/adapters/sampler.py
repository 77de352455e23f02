"""A background thread that samples a memory probe and keeps the peak (used only during memory passes)."""

from __future__ import annotations

import threading
from typing import Callable


class PeakSampler:
    """Context manager: samples `probe` every `interval_s` from enter to exit (plus once at each end)."""

    def __init__(self, probe: Callable[[], int], interval_s: float = 0.001) -> None:
        self._probe = probe
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="memory-peak-sampler", daemon=True)
        self.peak = 0
        self.samples = 0

    def _take(self) -> None:
        self.peak = max(self.peak, int(self._probe()))
        self.samples += 1

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._take()

    def __enter__(self) -> "PeakSampler":
        self._take()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._take()
