"""The kernel pass (collector.run.kernel_pass, collector.isolation.profiled): each timed case's call, in a worker of its own,
under the backend's profiler; its breakdown in the bundle (schema 5). Real workers, a real torch.profiler on the
CPU, and MPSProfiler's reading through a worker that prints a fixture at exit as MPS prints its statistics."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundle.kernels import KernelKind
from bundle.schema import Bundle, Status
from collector.adapters.cpu import CpuAdapter
from collector.adapters.profilers import Raw
from collector.journal.run_journal import Journal
from collector.run.kernel_pass import entries
from tests.kernel_workloads import FixtureLogProfiler

FIXTURES = Path(__file__).parent / "fixtures" / "mps_profiler"


@pytest.fixture(autouse=True)
def catalog(monkeypatch):
    monkeypatch.setenv("MPSBENCH_CATALOG", "tests.kernel_workloads")
    monkeypatch.setenv("COLUMNS", "200")


def _run(tmp_path: Path, *args: str) -> Bundle:
    from collector.cli.main import main

    out = tmp_path / "runs"
    code = main(["run", "--device", "cpu", "--out", str(out), "--processes", "1", "--idle-wait", "0", *args])
    assert code == 0
    [path] = out.glob("*.json")
    return Bundle.model_validate_json(path.read_text())


def test_process_wide_entries_leave_the_setup_out_and_share_the_time():
    raw = [
        Raw("graph", "softmax", 23, 1323.0),
        Raw("kernel", "fill", 1, 4.0),  # once: before the calls
        Raw("copy", "CPU to MPS", 24, 46.0, 24 * 1000),
    ]
    listed, warnings = entries(raw, 23, process_wide=True)
    assert [(e.kind.value, e.name) for e in listed] == [("graph", "softmax"), ("copy", "CPU to MPS")]
    graph, copy = listed
    assert graph.device_time_us == pytest.approx(1323.0 / 23) and graph.calls_per_call == 1.0
    assert copy.calls_per_call == pytest.approx(24 / 23) and copy.bytes_per_call == pytest.approx(24000 / 23)
    assert graph.share == pytest.approx(1323 / 1369) and copy.share == pytest.approx(46 / 1369)
    assert warnings == [
        "left out as the case's setup (ran fewer times than the 23 op calls the profiler counted): kernel fill ×1"
    ]
    kept, none = entries(raw, 23, process_wide=False)  # torch.profiler's figures are the profiled calls' alone
    assert len(kept) == 3 and none == []


def test_cpu_run_records_aten_ops_per_op_call(tmp_path):
    b = _run(tmp_path, "--workload", "fake_ops", "--kernels")
    assert b.schema_version == 5
    # the unsupported case has no timing and the untimed one no call: only "ops" is profiled (the untimed case
    # has a first_call_time figure, so the pass ran it and found nothing to break down)
    by_case = {k.params["how"]: k for k in b.kernels}
    assert set(by_case) == {"ops", "untimed"}
    assert by_case["untimed"].status == Status.unavailable and "times no op call" in by_case["untimed"].message
    ops = by_case["ops"]
    assert ops.status == Status.ok and ops.profiler == "torch.profiler" and ops.metric == "op_time"
    assert ops.op_calls == 20
    calls = {e.name: e.calls_per_call for e in ops.entries}
    assert calls["aten::exp"] == 1.0 and calls["aten::sum"] == 2.0 and calls["aten::add"] == 1.0
    assert {e.kind for e in ops.entries} == {KernelKind.aten_op}
    assert sum(e.share for e in ops.entries) == pytest.approx(1.0)
    assert ops.device_time_us == pytest.approx(sum(e.device_time_us for e in ops.entries)) and ops.device_time_us > 0


def test_mps_statistics_are_read_from_the_workers_output_at_exit(tmp_path, monkeypatch):
    profiler = FixtureLogProfiler(str(FIXTURES / "graph.txt"))
    monkeypatch.setattr(CpuAdapter, "kernel_profiler", lambda self: profiler)
    [k] = _run(tmp_path, "--workload", "fake_logged", "--kernels").kernels
    assert k.status == Status.ok and k.profiler == "fixture MPSProfiler"
    assert k.op_calls == 23  # 3 warm-up + 20 profiled calls: MPSProfiler counts every call of the process
    [graph] = k.entries  # graph.txt: softmax 23 runs, 1.323 ms GPU; a fill kernel and a copy in ran once
    assert (graph.kind, graph.name) == (KernelKind.graph, "softmax_mps_out:f32[1,128256]:Contiguous:1")
    assert graph.calls_per_call == 1.0 and graph.device_time_us == pytest.approx(1323.0 / 23) and graph.share == 1.0
    assert any("kernel fill_scalar_contiguous_float" in w and "copy CPU to MPS ×1" in w for w in k.warnings)


def test_a_crash_in_the_pass_is_the_breakdowns_error_and_the_timing_stays(tmp_path, monkeypatch):
    profiler = FixtureLogProfiler(str(FIXTURES / "graph.txt"), crash=True)
    monkeypatch.setattr(CpuAdapter, "kernel_profiler", lambda self: profiler)
    b = _run(tmp_path, "--workload", "fake_logged", "--kernels")
    [k] = b.kernels
    assert k.status == Status.error and k.message.startswith("crashed: SIGSEGV (signal 11)") and not k.entries
    [timed] = [r for r in b.results if r.metric == "op_time"]
    assert timed.status == Status.ok and timed.samples


def test_no_pass_without_kernels_and_the_journal_keeps_each_breakdown(tmp_path):
    assert _run(tmp_path / "plain", "--workload", "fake_ops").kernels == []
    b = _run(tmp_path, "--workload", "fake_ops", "--kernels")
    [journal] = (tmp_path / "runs").glob("*.journal.jsonl")
    state = Journal(journal).load(repair=False)
    assert {v["params"]["how"] for v in state.kernels.values()} == {k.params["how"] for k in b.kernels}


def test_torch_profiler_events_become_entries_by_device():
    """key_averages() rows as torch.profiler gives them on CUDA (no GPU here: the rows stated, their fields as
    FunctionEventAvg names them): kernels by self device time, Memcpy as a copy, operators by the time of the
    kernels they launched themselves, the CUDA runtime's host calls left out."""
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    from collector.adapters.profilers import TorchProfiler

    def ev(key, device, count, self_cpu, self_device):
        return SimpleNamespace(
            key=key, device_type=device, count=count, self_cpu_time_total=self_cpu, self_device_time_total=self_device
        )

    events = [
        ev("aten::_softmax", DeviceType.CPU, 20, 90.0, 1200.0),
        ev("aten::softmax", DeviceType.CPU, 20, 30.0, 0.0),
        ev("cudaLaunchKernel", DeviceType.CPU, 20, 60.0, 0.0),
        ev("void cunn_SoftMaxForward<4, float>(float*, float const*, int)", DeviceType.CUDA, 20, 0.0, 1200.0),
        ev("Memcpy DtoD (Device -> Device)", DeviceType.CUDA, 20, 0.0, 40.0),
    ]
    found = TorchProfiler("cuda")._entries(events)
    assert found.raw == [
        Raw("aten_op", "aten::_softmax", 20, 1200.0),
        Raw("aten_op", "aten::softmax", 20, 0.0),
        Raw("device_kernel", "void cunn_SoftMaxForward<4, float>(float*, float const*, int)", 20, 1200.0),
        Raw("copy", "Memcpy DtoD (Device -> Device)", 20, 40.0),
    ]
    listed, _ = entries(found.raw, 20, process_wide=False)
    # the device time is the kernels' and the copy's: 62 µs per op call; the aten ops group it a second way
    assert sum(e.device_time_us for e in listed if e.kind != KernelKind.aten_op) == pytest.approx(62.0)
    cpu = TorchProfiler("cpu")._entries([ev("aten::_softmax", DeviceType.CPU, 20, 900.0, 0.0),
                                        ev("## Call CompiledFxGraph ##", DeviceType.CPU, 20, 300.0, 0.0)])  # fmt: skip
    assert cpu.raw == [Raw("aten_op", "aten::_softmax", 20, 900.0)]
    assert cpu.regions == [("## Call CompiledFxGraph ##", 300.0, 20)]  # not an operator: left out, with a warning


def test_an_entry_seen_call_by_call_takes_its_median_call():
    """One call of 20 stalled by another process (5000 µs instead of 100): the entry's time is the median call's,
    as the timing's op_time is a median; without per-call times (MPSProfiler) it is the total over the calls."""
    stalled = (100.0,) * 19 + (5000.0,)
    [entry], _ = entries([Raw("aten_op", "aten::mm", 20, sum(stalled), None, stalled)], 20, process_wide=False)
    assert entry.device_time_us == 100.0 and entry.calls_per_call == 1.0
    [total], _ = entries([Raw("graph", "mm", 20, sum(stalled))], 20, process_wide=True)
    assert total.device_time_us == pytest.approx(6900 / 20)


def test_confirm_bisect_and_sweep_runs_ask_for_the_pass(tmp_path, monkeypatch):
    import argparse
    import subprocess

    from collector.run.plan import Plan
    from collector.sweep.options import run_args
    from mpsbench.workflows import confirm
    from mpsbench.workflows.bisect import _plan

    base = {"profile": "quick", "device": "cpu", "compile": "eager"}
    assert run_args({**base, "kernels": True})[-1] == "--kernels" and "--kernels" not in run_args(base)
    assert (
        Plan.from_json({}).kernels is False
        and Plan.from_json(Plan(kernels=True, idle_wait_s=0.0).to_json()).kernels is True
    )
    case = 'softmax|{"rows":8,"vocab":151936}|float32|eager'
    o = argparse.Namespace(device="cpu", machine_name=None, processes=2, idle_wait=0.0)
    assert "--kernels" in run_args(_plan(o, [case]))
    seen = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: seen.append(cmd) or subprocess.CompletedProcess(cmd, 1))
    with pytest.raises(confirm.ConfirmError):  # no bundle made: the run "failed", its command line is what we check
        confirm._Side("baseline", Path("/bin/python"), "torch=2.14.1").run(1, [case], tmp_path, {"device": "cpu"})
    assert "--kernels" in seen[0]


def test_a_contended_profile_is_taken_again_and_the_calmest_kept(monkeypatch):
    from dataclasses import asdict

    from collector.adapters.profilers import TorchProfiler
    from collector.run import kernel_pass
    from collector.run.plan import PlannedCase
    from collector.workload import Case
    from tests.kernel_workloads import OpsWorkload

    def run(shares: list[float], allowed: bool) -> tuple[dict, int]:
        taken = iter(shares)
        calls = []

        def fake(planned, spec, profiler):
            calls.append(1)
            raw = [asdict(Raw("aten_op", "aten::exp", 20, 2000.0))]
            answer = {"status": "ok", "metric": "op_time", "op_calls": 20, "raw": raw, "warnings": []}
            return {**answer, "contention": next(taken)}, "", None

        monkeypatch.setattr(kernel_pass, "_profiled", fake)
        got = []
        planned = PlannedCase(OpsWorkload(), Case("fake_ops", {"how": "ops"}, "float32"))
        kernel_pass.profile_cases(
            [planned], None, TorchProfiler("cpu"), lambda p, k: got.append(k), retake=lambda: allowed
        )
        return got[0], len(calls)

    kept, profiles = run([0.8, 0.3, 0.5], allowed=True)  # three profiles, all contended: the calmest (30 %) kept
    assert profiles == 3 and "took 30 % of the machine's" in kept["warnings"][-1]
    kept, profiles = run([0.8, 0.1], allowed=True)  # the second ran clean: no warning, no third
    assert profiles == 2 and kept["warnings"] == []
    kept, profiles = run([0.8], allowed=False)  # no idle wait (--idle-wait 0): one profile, flagged
    assert profiles == 1 and "took 80 %" in kept["warnings"][-1]


def test_a_models_workload_is_broken_down_on_its_decode_region(tmp_path):
    [k] = _run(tmp_path, "--workload", "fake_regions", "--kernels").kernels
    assert k.status == Status.ok and k.metric == "decode_time" and k.op_calls == 2  # 1 warm-up + 2 profiled
    assert {e.name: e.calls_per_call for e in k.entries} == {"aten::exp": 2.0}  # the prefill's aten::sum: not profiled


def test_a_run_stopped_in_the_kernel_pass_is_incomplete_and_a_resume_finishes_it(tmp_path):
    from collector.cli.main import main

    _run(tmp_path, "--workload", "fake_ops", "--kernels")
    out = tmp_path / "runs"
    [journal] = out.glob("*.journal.jsonl")
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(line for line in lines if '"type":"kernels"' not in line) + "\n")  # stopped there
    [bundle] = out.glob("*.json")
    bundle.write_text(bundle.read_text().replace('"complete": true', '"complete": false'))
    code = main(["run", "--resume", "--out", str(out), "--idle-wait", "0"])
    assert code == 0
    b = Bundle.model_validate_json(bundle.read_text())
    assert b.complete and {k.params["how"] for k in b.kernels} == {"ops", "untimed"}
    resumed = Journal(journal).load(repair=False)
    assert len(resumed.kernels) == 2 and resumed.resumes == 1


def test_torch_profiler_on_the_cpu_knows_each_call_apart():
    """One profile of 20 back-to-back calls, each under its mark: every operator's time call by call, adding up
    to the profiler's own total for it."""
    import torch

    from collector.adapters.profilers import TorchProfiler

    x = torch.ones(256)
    found = TorchProfiler("cpu").profile(lambda: torch.exp(x) + x.sum(), 20, lambda: None)
    by_name = {r.name: r for r in found.raw}
    assert {"aten::exp", "aten::sum", "aten::add"} <= set(by_name) and found.warnings == []
    for name in ("aten::exp", "aten::sum", "aten::add"):
        r = by_name[name]
        assert r.count == 20 and len(r.per_call_us) == 20 and all(t > 0 for t in r.per_call_us)
        assert sum(r.per_call_us) == pytest.approx(r.total_us, rel=1e-6)
