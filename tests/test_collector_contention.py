"""CPU contention in the collector: other processes' share of the machine during a case (each record's
`contention`), the wait for an idle machine (a fake clock and a fake load: no real waiting), the retakes of
contended worker processes, and how a run words what it met."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundle.contention import MIN_CLEAN_PROCESSES, THRESHOLD, enough_clean
from bundle.schema import Result, Status
from collector.adapters.cpu import CpuAdapter
from collector.catalog import Catalog
from collector.isolation.isolator import CaseOutcome
from collector.isolation.processes import merge, run_note
from collector.isolation.runner import RunContext, run_case
from collector.run import session as run_session
from collector.run.plan import Plan
from collector.timing import contention
from collector.timing.contention import CpuSnapshot, IdleGate, IdlePolicy, other_share
from collector.timing.loop import TimingPolicy
from collector.workload import Case
from tests.fake_workloads import AddWorkload
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


def test_snapshot_reads_this_machine():
    snap = contention.snapshot()
    assert snap.machine_busy_s >= snap.own_s >= 0.0


def test_the_rule_one_place():
    assert not contention.contended(THRESHOLD) and contention.contended(THRESHOLD + 0.01)
    assert not contention.contended(None)  # not measured is not evidence of contention
    assert enough_clean(MIN_CLEAN_PROCESSES, 10) and not enough_clean(MIN_CLEAN_PROCESSES - 1, 10)
    assert enough_clean(2, 2) and not enough_clean(1, 2)  # a case timed in fewer needs all of them


def test_a_busy_case_records_its_share_on_every_measured_record(monkeypatch):
    snaps = iter([CpuSnapshot(0.0, 0.0, 0.0), CpuSnapshot(1.0, 1.8, 0.2)])  # others: 1.6 s of 2 cores × 1 s
    monkeypatch.setattr(contention, "snapshot", lambda: next(snaps))
    monkeypatch.setattr(contention, "cores", lambda: 2)

    def timed(bench):
        bench.time_once(lambda: None, metric="first_call_time")
        bench.record("pad_calls", [3.0])

    w = OneOff(timed)
    results = run_case(w, w.cases("quick")[0], RunContext(CpuAdapter(), TimingPolicy.for_profile("quick")))
    measured = [r for r in results if r.samples]
    assert len(measured) == 2 and all(r.contention == [0.8] for r in measured)
    assert all(r.contention == [] for r in results if not r.samples)  # no figure: no share


def test_a_short_cases_share_looks_back_over_the_cases_before_it(monkeypatch):
    """Cases of 20 ms: each share is read over the last ≥ 0.1 s of this process's case boundaries."""
    monkeypatch.setattr(contention, "_HISTORY", contention.deque(maxlen=256))
    monkeypatch.setattr(contention, "cores", lambda: 2)
    clock = iter(range(100))

    def snap() -> CpuSnapshot:  # every 20 ms; others take one core throughout, this process the other
        t = 0.02 * next(clock)
        return CpuSnapshot(t, 2 * t, t)

    monkeypatch.setattr(contention, "snapshot", snap)
    shares = []
    for _ in range(8):
        meter = contention.ShareMeter()
        with meter.measuring():
            pass
        shares.append(meter.share())
    assert shares[0] is None  # 20 ms of history: too short to say
    assert shares[1:] == [pytest.approx(0.5)] * 7  # 60 ms back, then from the third case on ≥ 0.1 s back


class FakeLoad:
    """A machine whose other processes take `shares` of the cores, one per look; each look advances the clock."""

    def __init__(self, shares: list[float | None]) -> None:
        self.shares, self.now, self.looks = list(shares), 0.0, []

    def look(self, seconds: float) -> float | None:
        self.now += seconds
        self.looks.append(seconds)
        return self.shares.pop(0) if len(self.shares) > 1 else self.shares[0]

    def clock(self) -> float:
        return self.now


def test_the_gate_looks_once_on_an_idle_machine_and_not_again_after_a_clean_case():
    load = FakeLoad([0.02])
    gate = IdleGate(IdlePolicy(wait_s=30), look=load.look, clock=load.clock)
    assert gate.wait() == 0.02 and load.looks == [0.2]
    gate.saw(0.05)  # the next case's own share: clean
    assert gate.wait() == 0.05 and load.looks == [0.2]  # no look: a case just measured the machine
    assert gate.waits == 0 and gate.waited_s == pytest.approx(0.2)


def test_the_gate_waits_while_busy_then_goes_on():
    load = FakeLoad([0.8, 0.7, 0.6, 0.1])
    seen = []
    gate = IdleGate(IdlePolicy(wait_s=30), look=load.look, clock=load.clock, on_wait=lambda s, t: seen.append((s, t)))
    assert gate.wait() == 0.1
    assert load.looks == [0.2, 1.0, 1.0, 1.0] and gate.waits == 1 and gate.timeouts == 0
    assert seen == [(0.8, 30.0)]  # progress says the share and how long it may wait


def test_the_gate_gives_up_at_its_limit_and_its_budget():
    load = FakeLoad([0.9])  # busy for good
    gate = IdleGate(IdlePolicy(wait_s=5, budget_factor=2), look=load.look, clock=load.clock)
    assert gate.wait() == 0.9 and 5.0 <= load.now <= 5.3 and gate.timeouts == 1
    gate.wait()
    assert gate.spent and 10.0 <= load.now <= 10.6
    looks = len(load.looks)
    assert gate.wait() == 0.9 and len(load.looks) == looks  # budget spent: no more waiting, no look


def test_no_wait_when_switched_off():
    load = FakeLoad([0.9])
    gate = IdleGate(IdlePolicy(wait_s=0), look=load.look, clock=load.clock)
    assert gate.wait() is None and load.looks == []


def _timing(share: float | None, samples: list[float]) -> dict:
    return Result(
        workload="add",
        suite="kernels",
        params={"n": 1},
        dtype="float32",
        metric="op_time",
        unit="µs",
        status=Status.ok,
        samples=samples,
        contention=[] if share is None else [share],
    ).model_dump(mode="json")


def test_merge_keeps_each_processes_share_in_order_and_words_the_contended_and_the_retakes():
    parts = {
        0: [_timing(0.01, [1.0, 1.1])],
        1: [_timing(0.8, [9.0])],
        2: [_timing(None, [1.2])],
        3: [_timing(0.02, [1.05])],
    }  # 3: a retake of process 1 (the plan had 3 processes)
    [merged] = merge(parts, planned=3)
    assert merged["processes"] == [2, 1, 1, 1] and merged["contention"] == [0.01, 0.8, None, 0.02]
    [said] = [w for w in merged["warnings"] if w.startswith("CPU contention")]
    assert "1 of 4 worker processes ran while other processes took 80 %" in said
    assert "1 of the 4 are retakes" in said and "leaves the contended out" in said
    assert not any(w.startswith("CPU contention") for w in merge({0: [_timing(0.01, [1.0])]})[0]["warnings"])


def _merged(shares: list[float]) -> Result:
    return Result.model_validate(merge({p: [_timing(s, [1.0])] for p, s in enumerate(shares)})[0])


def test_the_runs_line_names_the_cases_whose_timings_are_not_evidence():
    busy = [0.7, 0.84, 0.75, 0.8, 0.9, 0.1, 0.72, 0.8, 0.77, 0.0]  # 2 clean of 10
    results = [_merged(busy).model_copy(update={"params": {"n": i}, "case_key": ""}) for i in range(9)]
    results += [_merged([0.0] * 10).model_copy(update={"params": {"n": 100 + i}, "case_key": ""}) for i in range(18)]
    results = [Result.model_validate(r.model_dump()) for r in results]
    line = run_note(results)
    assert line.startswith("CPU contention: 9 of 27 cases ran while other processes took 70–90 % of the machine's")
    assert "their timings are not evidence" in line
    some = run_note([_merged([0.6] + [0.0] * 9)])
    assert some.startswith("CPU contention: 1 worker-process timing (1 of 1 cases) ran") and "leaves it out" in some
    assert run_note([_merged([0.0] * 10)]) is None


class ScriptedIsolator:
    """Stands in for collector.isolation.isolator.Isolator: each case run gives op_time with the next scripted share."""

    shares: list[float] = []
    processes: list[int] = []

    def __init__(self, spec, ctx) -> None:
        self.spec = spec

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def run(self, workload, case) -> CaseOutcome:
        share = ScriptedIsolator.shares.pop(0)
        ScriptedIsolator.processes.append(self.spec.full)
        value = 50.0 if share <= THRESHOLD else 5000.0
        return CaseOutcome([_timing(share, [value, value * 1.01])])


@pytest.fixture
def scripted(monkeypatch):
    """A run of three processes whose case workers give op_time with the shares given, on an idle machine."""
    monkeypatch.setattr(run_session, "Isolator", ScriptedIsolator)
    monkeypatch.setattr(run_session, "worker_spec", lambda s, p: _Spec(p == 0))

    def make(out: Path, shares: list[float], idle_wait_s: float = 1.0) -> run_session.Session:
        ScriptedIsolator.shares, ScriptedIsolator.processes = list(shares), []
        session = _session(out, processes=3, idle_wait_s=idle_wait_s)
        load = FakeLoad([0.0])
        session.gate = IdleGate(IdlePolicy(wait_s=idle_wait_s), look=load.look, clock=load.clock)
        return session

    return make


def test_a_contended_process_is_retimed_in_a_fresh_one_and_both_are_kept(tmp_path: Path, scripted):
    # three processes; the second ran contended; its first retake ran contended too, the second clean
    session = scripted(tmp_path, [0.0, 0.9, 0.0, 0.8, 0.05])
    path = run_session.run(session)
    bundle = json.loads(path.read_text())
    [timing] = [r for r in bundle["results"] if r["metric"] == "op_time"]
    assert timing["contention"] == [0.0, 0.9, 0.0, 0.8, 0.05] and timing["processes"] == [2] * 5
    assert ScriptedIsolator.processes == [True, False, False, False, False]  # retakes time only
    assert any("2 of the 5 are retakes" in w for w in timing["warnings"])
    assert not session.needs_retake(session.cases.cases[0].id)  # 3 clean of the plan's 3: done
    assert any(w.startswith("CPU contention: 2 worker-process timings (1 of 1 cases)") for w in bundle["warnings"])


def test_retakes_stop_at_twice_the_contended_processes_and_without_the_wait(tmp_path: Path, scripted):
    run_session.run(scripted(tmp_path, [0.0, 0.9, 0.0, 0.9, 0.9]))
    assert len(ScriptedIsolator.processes) == 5 and ScriptedIsolator.shares == []  # 2 retakes of 1 contended
    run_session.run(scripted(tmp_path / "off", [0.0, 0.9, 0.0], idle_wait_s=0.0))
    assert len(ScriptedIsolator.processes) == 3  # --idle-wait 0: no retakes either


class _Spec:
    def __init__(self, full: bool) -> None:
        self.full = full

    def context(self):
        return None


class OneAdd(AddWorkload):
    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {"n": 1024}, "float32", "eager")]


def _session(out: Path, processes: int, idle_wait_s: float = 1.0) -> run_session.Session:
    catalog = Catalog({"fake_add": OneAdd()}, {})
    plan = Plan(workloads=("fake_add",), processes=processes, idle_wait_s=idle_wait_s)
    return run_session.start(out, plan, catalog, "cpu", "test-machine", {})
