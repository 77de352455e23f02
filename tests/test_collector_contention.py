"""CPU contention: other processes' share of the machine during a case, and the warning it puts on results."""
from __future__ import annotations

import pytest

from collector import contention
from collector.adapters.cpu import CpuAdapter
from collector.contention import CpuSnapshot, contention_warning, other_share
from collector.runner import RunContext, run_case
from collector.timing import TimingPolicy
from tests.test_collector_passes import OneOff


def test_share_is_other_processes_cpu_over_wall_times_cores():
    before = CpuSnapshot(wall_s=100.0, machine_busy_s=50.0, own_s=10.0)
    after = CpuSnapshot(wall_s=102.0, machine_busy_s=54.0, own_s=12.0)  # 4 s busy, 2 s of them ours
    assert other_share(before, after, cores=2) == pytest.approx(0.5)  # 2 s of others over 2 s × 2 cores
    assert other_share(before, after, cores=8) == pytest.approx(0.125)


def test_share_is_clamped_and_unknown_for_a_too_short_interval():
    before = CpuSnapshot(0.0, 0.0, 0.0)
    assert other_share(before, CpuSnapshot(1.0, 0.0, 0.5), cores=2) == 0.0  # tick rounding: own > machine
    assert other_share(before, CpuSnapshot(1.0, 9.0, 0.0), cores=2) == 1.0
    assert other_share(before, CpuSnapshot(0.01, 1.0, 0.0), cores=2) is None


def test_warning_only_above_the_threshold():
    assert contention_warning(None, 2) is None
    assert contention_warning(contention.THRESHOLD - 0.01, 2) is None
    text = contention_warning(0.62, 2)
    assert text.startswith("CPU contention: other processes used 62 % of the machine's 2 cores")


def test_snapshot_reads_this_machine():
    snap = contention.snapshot()
    assert snap.machine_busy_s >= snap.own_s >= 0.0


def test_busy_machine_puts_the_warning_on_every_record(monkeypatch):
    snaps = iter([CpuSnapshot(0.0, 0.0, 0.0), CpuSnapshot(1.0, 1.8, 0.2)])  # others: 1.6 s of 2 cores × 1 s
    monkeypatch.setattr(contention, "snapshot", lambda: next(snaps))
    monkeypatch.setattr(contention, "cores", lambda: 2)
    w = OneOff(lambda bench: bench.record("first_call_time", [1.0]))
    results = run_case(w, w.cases("quick")[0], RunContext(CpuAdapter(), TimingPolicy.for_profile("quick")))
    assert results and all(any(x.startswith("CPU contention: other processes used 80 %") for x in r.warnings)
                           for r in results)
