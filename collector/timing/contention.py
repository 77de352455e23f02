"""CPU contention during a case: the share of the machine's CPU time that OTHER processes took while it ran, and
the wait for an idle machine before a case is timed.

Why it matters: torch runs an op's work on one thread per core and joins them; when another process holds a core,
the op waits for its descheduled worker for a scheduler time slice (milliseconds). So a busy machine inflates
µs-scale timings by whole orders of magnitude, not by a few percent. Measured on a 2-core Linux box:
softmax 5×51866 fp32 median 117 µs idle; 562 µs (IQR 198 % of the median) beside three busy-loop processes; a
grouped_mm case 47 µs in a quiet worker process and 14,644–44,104 µs in the contended ones of the same run.
Each worker process records its share per case (`Result.contention`); bundle.contention says when a process
ran contended and when a case still has enough clean processes to be evidence.

The share is measured over the whole case in its worker, or over the 0.1 s before its end where the case was
shorter (ShareMeter, collector.isolation.runner). "Own" CPU time is the worker's process tree (its threads, and children
such as inductor's compile workers), so only other processes count.
"""

from __future__ import annotations

import os
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

import psutil

from bundle.contention import THRESHOLD, contended

_NOT_BUSY = {"idle", "iowait", "guest", "guest_nice"}  # guest time is already counted in user on Linux
__all__ = [
    "THRESHOLD",
    "CpuSnapshot",
    "snapshot",
    "other_share",
    "cores",
    "ShareMeter",
    "IdlePolicy",
    "IdleGate",
    "probe",
]


@dataclass(frozen=True)
class CpuSnapshot:
    wall_s: float
    machine_busy_s: float  # all processes, summed over cores
    own_s: float  # this process tree (collector.timing.contention._own_cpu_s)


_ME: list[psutil.Process] = []  # this process, made once (a new one per call costs more than the read)


def _own_cpu_s() -> float:
    """CPU seconds of this process (all its threads), its reaped children and its living descendants (a case's
    inductor compile workers are part of the case, not other processes)."""
    if not _ME or _ME[0].pid != os.getpid():
        _ME[:] = [psutil.Process()]
    own = _ME[0].cpu_times()
    total = own.user + own.system + own.children_user + own.children_system
    for child in _ME[0].children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:  # ended between the listing and the read: its time is in children_* once reaped
            continue
        total += times.user + times.system
    return total


def snapshot() -> CpuSnapshot:
    machine = psutil.cpu_times()._asdict()
    return CpuSnapshot(time.monotonic(), sum(v for k, v in machine.items() if k not in _NOT_BUSY), _own_cpu_s())


def other_share(before: CpuSnapshot, after: CpuSnapshot, cores: int) -> float | None:
    """Other processes' CPU time / (wall time × cores); None when the interval is too short to say."""
    wall = after.wall_s - before.wall_s
    if wall <= 0.05 or cores < 1:
        return None
    others = (after.machine_busy_s - before.machine_busy_s) - (after.own_s - before.own_s)
    return round(min(1.0, max(0.0, others / (wall * cores))), 4)  # CPU times tick at 10 ms: 4 decimals say all


def cores() -> int:
    return os.cpu_count() or 1


WINDOW_S = 0.1  # the shortest interval a share is read over: 20 ticks of psutil's 10 ms on 2 cores (±10 %)
_HISTORY: deque[CpuSnapshot] = deque(maxlen=256)  # this process's case-boundary snapshots, newest last


@dataclass
class ShareMeter:
    """Other processes' share of the cores while a case ran, read over at least WINDOW_S before its end: a
    worker process's case often lasts 20–50 ms at the quick profile's shared-out budgets, shorter than psutil's
    10 ms CPU ticks resolve, so a short case's share looks back over this process's cases before it (contention
    lasts seconds, not milliseconds)."""

    before: CpuSnapshot | None = None
    after: CpuSnapshot | None = None

    @contextmanager
    def measuring(self) -> Iterator[None]:
        start = snapshot()
        _HISTORY.append(start)
        try:
            yield
        finally:
            self.after = snapshot()
            _HISTORY.append(self.after)
            self.before = next((s for s in reversed(_HISTORY) if self.after.wall_s - s.wall_s >= WINDOW_S), _HISTORY[0])

    def share(self) -> float | None:
        """As other_share over the window; None when even the lookback is too short to say."""
        if self.before is None or self.after is None:
            return None
        return other_share(self.before, self.after, cores())


def probe(window_s: float) -> float | None:
    """Other processes' share of the cores over the next `window_s` seconds (this process sleeps meanwhile)."""
    before = snapshot()
    time.sleep(window_s)
    return other_share(before, snapshot(), cores())


@dataclass(frozen=True)
class IdlePolicy:
    """How long a run waits for other processes to leave the cores before it times a case (`--idle-wait`)."""

    wait_s: float = 30.0  # the longest one wait lasts; 0: never wait (nor re-time contended processes)
    budget_factor: float = 20.0  # a run waits at most this many × wait_s in all, then times without waiting
    probe_s: float = 0.2  # the first look (psutil's CPU times tick at 10 ms: 40 ticks of 2 cores)
    poll_s: float = 1.0  # each further look while waiting

    @property
    def budget_s(self) -> float:
        return self.wait_s * self.budget_factor


@dataclass
class IdleGate:
    """Waits, before a case is timed, while other processes take more than THRESHOLD of the cores: at most
    wait_s each time and budget_s in all. `look(seconds)` measures the share (probe; a test gives a fake)."""

    policy: IdlePolicy
    look: Callable[[float], float | None] = probe
    clock: Callable[[], float] = time.monotonic
    on_wait: Callable[[float, float], None] | None = None  # (share, seconds it may wait): progress shows it
    waited_s: float = 0.0  # in all, this run
    waits: int = 0  # how many waits found the machine busy
    timeouts: int = 0  # how many of them ended busy
    last: float | None = field(default=None)  # the last share seen (a case's own, or a look's)

    @property
    def enabled(self) -> bool:
        return self.policy.wait_s > 0

    @property
    def spent(self) -> bool:
        return self.waited_s >= self.policy.budget_s

    def saw(self, share: float | None) -> None:
        """A case's own share, measured by its worker: the next wait starts from it."""
        if share is not None:
            self.last = share

    def wait(self) -> float | None:
        """Wait until the machine is idle (or the limits are reached); the share last seen. No look at all while
        the last share seen was clean: a case just measured it, and its own share catches a change."""
        if not self.enabled or (self.last is not None and not contended(self.last)):
            return self.last
        if self.spent:
            return self.last
        start = self.clock()
        share = self.last = self.look(self.policy.probe_s)
        if not contended(share):
            self.waited_s += self.clock() - start
            return share
        self.waits += 1
        limit = min(self.policy.wait_s, self.policy.budget_s - self.waited_s)
        if self.on_wait is not None:
            self.on_wait(share, limit)
        while contended(share) and self.clock() - start < limit:
            share = self.last = self.look(min(self.policy.poll_s, max(0.05, limit - (self.clock() - start))))
        self.waited_s += self.clock() - start
        self.timeouts += contended(share)
        return share
