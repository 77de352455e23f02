"""Correctness, memory figures (CPU + MPS branches via fakes) and per-case status (fallback/unsupported/error)."""

from __future__ import annotations

import math
import os
import sys
import warnings

import pytest
import torch

from bundle.schema import Status
from collector.adapters.cpu import CpuAdapter
from collector.adapters.mps import MpsAdapter
from collector.isolation.runner import RunContext, run_case
from collector.timing.bench import CaseBench
from collector.timing.correctness import check_against_reference, tolerance_for
from collector.timing.loop import TimingPolicy
from collector.workload import Case, Unsupported, Workload
from tests import fake_workloads as fw

QUICK = TimingPolicy(budget_s=0.05, min_samples=6, min_time_s=0.01)


def by_metric(results):
    return {r.metric: r for r in results}


class OneOff(Workload):
    name, suite = "one_off", "kernels"
    metrics = ("op_time", "first_call_time", "psnr_vs_cpu")

    def __init__(self, body):
        self.body = body

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {"x": 1}, "float32")]

    def run(self, case, bench):
        self.body(bench)


def run_body(body, adapter=None):
    w = OneOff(body)
    return by_metric(run_case(w, w.cases("quick")[0], RunContext(adapter or CpuAdapter(), QUICK)))


# --- correctness -----------------------------------------------------------------------------------------
def test_psnr_known_answer():
    ref = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float64)
    c = check_against_reference(ref + 0.1, ref, "float32")
    assert c.psnr_db == pytest.approx(10 * math.log10(9 / 0.01))  # peak = range 3, MSE = 0.01
    assert c.max_abs_error == pytest.approx(0.1)
    assert c.max_rel_error == pytest.approx(0.1 / (1e-6 * 3))  # at ref 0 the divisor is 1e-6 · max|ref|
    assert c.passed is False  # 0.1 > atol + rtol·|ref| for float32


def test_identical_outputs_give_a_capped_finite_psnr_with_a_warning():
    ref = torch.linspace(-1, 1, 100, dtype=torch.float64)
    c = check_against_reference(ref.clone(), ref, "float32")
    assert math.isfinite(c.psnr_db) and c.psnr_db == pytest.approx(-20 * math.log10(torch.finfo(torch.float64).eps))
    assert any("capped" in w for w in c.warnings) and c.passed


@pytest.mark.parametrize(
    "dtype,ok_err,bad_err",
    [("float16", 5e-3, 5e-2), ("bfloat16", 2e-2, 2e-1), ("float8_e4m3fn", 0.1, 0.9), ("float32", 5e-5, 1e-3)],
)
def test_tolerances_per_dtype(dtype, ok_err, bad_err):
    ref = torch.ones(8, dtype=torch.float64)
    assert check_against_reference(ref + ok_err, ref, dtype).passed
    assert not check_against_reference(ref + bad_err, ref, dtype).passed
    assert tolerance_for("tf32").rtol < tolerance_for("bfloat16").rtol


def test_nan_output_is_an_error_record_not_a_figure():
    ref = torch.ones(4)
    results = run_body(lambda b: b.correctness(torch.tensor([1.0, float("nan"), 1.0, 1.0]), ref))
    assert results["psnr_vs_cpu"].status == Status.error and "non-finite" in results["psnr_vs_cpu"].message
    assert results["max_abs_error"].samples == []


def test_correctness_records_carry_passed_and_tolerance():
    ref = torch.arange(10, dtype=torch.float64)
    r = run_body(lambda b: b.correctness(ref.float(), ref))
    assert r["max_abs_error"].passed is True and r["max_abs_error"].tolerance == tolerance_for("float32").atol
    assert r["max_rel_error"].tolerance == tolerance_for("float32").rtol
    assert r["psnr_vs_cpu"].unit == "dB"


# --- memory ----------------------------------------------------------------------------------------------
def test_cpu_memory_figures_unavailable_never_zero():
    r = run_body(lambda b: b.memory(lambda: torch.ones(1_000_000)))
    assert r["memory_driver_peak"].status == Status.ok and r["memory_driver_peak"].samples[0] > 0
    for name in ("memory_reserved_peak", "memory_allocated_peak", "memory_outside_allocator"):
        assert r[name].status == Status.unavailable and r[name].samples == [] and r[name].message


class FakeAcceleratorMemory:
    def __init__(self, reserved=8 << 30, allocated=4 << 30):
        self.reserved, self.allocated, self.resets, self.events = reserved, allocated, 0, []

    def reset_peak_memory_stats(self):
        self.resets += 1
        self.events.append("reset peaks")

    def empty_cache(self):
        self.events.append("empty cache")

    def max_memory_reserved(self):
        return self.reserved

    def max_memory_allocated(self):
        return self.allocated


@pytest.fixture
def fake_mps(monkeypatch):
    """torch.mps / torch.accelerator as on a Mac with torch 2.14 (peak API wired to the MPS allocator)."""
    driver = iter(range(9 << 30, 20 << 30, 1 << 20))
    monkeypatch.setattr(torch.mps, "synchronize", lambda: None)
    monkeypatch.setattr(torch.mps, "driver_allocated_memory", lambda: next(driver))
    memory = FakeAcceleratorMemory()
    monkeypatch.setattr(torch.mps, "empty_cache", memory.empty_cache)
    monkeypatch.setattr(torch.accelerator, "memory", memory, raising=False)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda *a: torch.device("mps"))
    return memory


def test_mps_three_figures_and_the_derived_one(fake_mps):
    r = run_body(lambda b: b.memory(lambda: None), MpsAdapter("Apple M3 Ultra"))
    driver = r["memory_driver_peak"].samples[0]
    assert driver >= 9 << 30
    assert r["memory_reserved_peak"].samples == [8 << 30] and r["memory_allocated_peak"].samples == [4 << 30]
    assert r["memory_outside_allocator"].samples == [driver - (8 << 30)]
    assert fake_mps.resets >= 1 and fake_mps.events[-2:] == ["empty cache", "reset peaks"]


def test_mps_build_without_peak_api_is_unavailable_with_reason(fake_mps, monkeypatch):
    monkeypatch.setattr(torch.accelerator, "memory", object(), raising=False)  # torch < 2.14
    r = run_body(lambda b: b.memory(lambda: None), MpsAdapter())
    assert r["memory_driver_peak"].status == Status.ok
    for name in ("memory_reserved_peak", "memory_allocated_peak", "memory_outside_allocator"):
        assert r[name].status == Status.unavailable and r[name].message


def test_mps_peak_api_not_wired_to_mps_is_unavailable(fake_mps, monkeypatch):
    def broken():
        raise RuntimeError("MPS allocator is not a DeviceAllocator")

    monkeypatch.setattr(fake_mps, "reset_peak_memory_stats", broken)
    r = run_body(lambda b: b.memory(lambda: None), MpsAdapter())
    assert "not a DeviceAllocator" in r["memory_reserved_peak"].message


def test_mps_without_driver_probe(fake_mps, monkeypatch):
    monkeypatch.delattr(torch.mps, "driver_allocated_memory")
    r = run_body(lambda b: b.memory(lambda: None), MpsAdapter())
    assert r["memory_driver_peak"].status == Status.unavailable
    assert r["memory_outside_allocator"].status == Status.unavailable
    assert r["memory_reserved_peak"].status == Status.ok


# --- status per case -------------------------------------------------------------------------------------
def test_fallback_warning_marks_every_measured_record():
    w = fw.FallbackWorkload()
    results = run_case(w, w.cases("quick")[0], RunContext(CpuAdapter(), QUICK))
    assert {r.status for r in results} == {Status.fallback}
    assert all("aten::_fake_op" in r.message for r in results)


def test_a_real_torch_warn_once_is_seen_in_every_case():
    # torch.meshgrid's warning is a C++ TORCH_WARN_ONCE like the MPS fallback one: without the runner's
    # set_warn_always it would reach only the first case of the process
    a = torch.arange(3)

    def body(bench):
        torch.meshgrid(a, a)
        bench.record("first_call_time", [1.0])

    for _ in range(2):
        assert any("torch.meshgrid" in w for w in run_body(body)["first_call_time"].warnings)


@pytest.mark.parametrize(
    "exc",
    [
        TypeError(fw.FP8_TEXT),
        Unsupported("no fp8"),
        NotImplementedError(
            "The operator 'aten::foo' is not currently implemented for "
            "the MPS device. ... https://github.com/pytorch/pytorch/"
            "issues/141287"
        ),
        RuntimeError("\"addmm_impl_cpu_\" not implemented for 'BFloat16'"),
    ],
)
def test_unsupported_errors(exc):
    def body(bench):
        raise exc

    r = run_body(body)
    assert set(r) == set(OneOff.metrics)
    assert all(x.status == Status.unsupported and str(exc) in x.message for x in r.values())


def test_other_errors_keep_measured_records():
    def body(bench):
        bench.record("first_call_time", [0.25])
        raise ValueError("boom")

    r = run_body(body)
    assert r["first_call_time"].status == Status.ok and r["first_call_time"].samples == [0.25]
    assert r["op_time"].status == Status.error and "ValueError: boom" in r["op_time"].message


def test_time_limit_overrun_is_a_warning_and_bench_warn_reaches_every_record():
    def body(bench):
        bench.warn("inputs are tiny")
        bench.time_region(lambda: fw.spin(0.03), metric="decode_time", repeats=2)
        bench.record("first_call_time", [1.0])

    w = OneOff(body)
    results = run_case(w, w.cases("quick")[0], RunContext(CpuAdapter(), QUICK, case_time_limit_s=0.01))
    assert all("inputs are tiny" in r.warnings for r in results)
    assert all(any("over its 0.01 s time limit" in x for x in r.warnings) for r in results)


def test_bandwidth_records_and_units():
    a = torch.ones(1 << 16)
    r = run_body(lambda b: b.time_op(lambda: a * 2, bytes_per_call=2 * a.numel() * 4))
    assert r["op_time"].unit == "µs" and r["first_call_time"].unit == "s"
    bw, t = r["achieved_bandwidth"], r["op_time"]
    assert bw.unit == "GB/s" and len(bw.samples) == len(t.samples)
    assert bw.samples[0] == pytest.approx(2 * a.numel() * 4 / (t.samples[0] * 1e-6) / 1e9)
    assert r["bandwidth_fraction"].status in (Status.ok, Status.unavailable)


def test_bandwidth_fraction_uses_the_chip_table(monkeypatch):
    import collector.timing.bench as bench_mod

    monkeypatch.setattr(bench_mod, "chip_peak_bandwidth", lambda chip, cores: 800.0)
    a = torch.ones(1 << 16)
    r = run_body(lambda b: b.time_op(lambda: a * 2, bytes_per_call=1000))
    assert r["bandwidth_fraction"].samples[0] == pytest.approx(r["achieved_bandwidth"].samples[0] / 800 * 100)


def test_recording_a_metric_twice_is_an_error():
    r = run_body(lambda b: (b.record("first_call_time", [1.0]), b.record("first_call_time", [2.0])))
    assert r["op_time"].status == Status.error and "twice" in r["op_time"].message


def test_record_converts_to_the_canonical_unit():
    r = run_body(lambda b: b.record("first_call_time", [250.0], "ms"))
    assert r["first_call_time"].samples == [0.25] and r["first_call_time"].unit == "s"


def test_case_bench_exposes_the_contract_attributes():
    w = OneOff(lambda b: None)
    b = CaseBench(w.cases("quick")[0], w, CpuAdapter(), chip="Apple M2", gpu_cores=10)
    assert b.device == torch.device("cpu") and b.device_type == "cpu" and b.chip == "Apple M2"


# --- CUDA adapter branches (no GPU here: torch.cuda monkeypatched) ---------------------------------------
def test_cuda_without_pynvml_uses_mem_get_info_and_says_so(monkeypatch):
    import collector.adapters.cuda as cuda_mod

    used = iter(range(1 << 30, 2 << 30, 1 << 20))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (80 << 30, (80 << 30) + next(used)))
    monkeypatch.setattr(cuda_mod, "_nvml_process_probe", lambda index: (None, "pynvml not installed"))
    memory = FakeAcceleratorMemory(reserved=512 << 20, allocated=256 << 20)
    monkeypatch.setattr(torch.cuda, "empty_cache", memory.empty_cache)
    monkeypatch.setattr(torch.accelerator, "memory", memory, raising=False)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda *a: torch.device("cuda"))
    r = run_body(lambda b: b.memory(lambda: None), cuda_mod.CudaAdapter())
    assert r["memory_driver_peak"].samples[0] >= 1 << 30
    assert any("device-wide" in w for w in r["memory_driver_peak"].warnings)
    assert r["memory_outside_allocator"].samples == [r["memory_driver_peak"].samples[0] - (512 << 20)]
    # cached blocks of earlier cases are handed back before the peaks are reset (the last reset is the pass's)
    assert memory.events[-2:] == ["empty cache", "reset peaks"]


def _fake_pynvml(monkeypatch, procs):
    import types

    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetComputeRunningProcesses=lambda h: procs,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)


def test_nvml_that_cannot_see_this_process_is_not_read_as_zero(monkeypatch):
    import types

    import collector.adapters.cuda as cuda_mod

    # a container: NVML lists the host pid of this process (not os.getpid()), so its figure for us would be 0
    _fake_pynvml(monkeypatch, [types.SimpleNamespace(pid=os.getpid() + 100000, usedGpuMemory=3 << 30)])
    probe, why = cuda_mod._nvml_process_probe(0)
    assert probe is None and "PID namespace" in why


def test_nvml_reads_this_process_bytes_only(monkeypatch):
    import types

    import collector.adapters.cuda as cuda_mod

    _fake_pynvml(
        monkeypatch,
        [
            types.SimpleNamespace(pid=os.getpid(), usedGpuMemory=700 << 20),
            types.SimpleNamespace(pid=os.getpid() + 1, usedGpuMemory=5 << 30),
        ],
    )
    probe, _ = cuda_mod._nvml_process_probe(0)
    assert probe() == 700 << 20


def test_bad_dtype_option_is_refused():
    from collector.errors import CollectorError
    from collector.run.plan import Plan

    with pytest.raises(CollectorError, match="--dtype floot32"):
        Plan(dtypes=("float32", "floot32"))
    assert Plan(dtypes=("bfloat16", "tf32", "float8_e4m3fn")).dtypes


def test_a_warning_per_call_is_kept_once_with_a_count():
    from collector.isolation.capture import CaseWarnings

    with CaseWarnings() as caught:
        for _ in range(5000):
            warnings.warn(fw.FALLBACK_TEXT, stacklevel=1)
    assert len(caught.messages) == 1 and list(caught.counts.values()) == [5000]
    assert warnings.showwarning != caught._show  # restored after the case


def test_cpu_driver_peak_catches_a_transient_allocation():
    import time as _time

    import psutil

    before = psutil.Process().memory_info().rss

    def allocate_and_free():
        big = torch.ones(64 << 20)  # 256 MiB of float32, touched, held 30 ms, then freed
        _time.sleep(0.03)
        del big

    r = run_body(lambda b: b.memory(allocate_and_free))
    assert r["memory_driver_peak"].samples[0] - before >= 200 << 20


def test_a_case_listed_twice_is_planned_once_and_reported():
    from collector.catalog import Catalog
    from collector.run.plan import Plan, expand

    class Twice(OneOff):
        def cases(self, profile, dtypes=None, compile_modes=("eager",)):
            return [Case(self.name, {"x": 1}, "float32")] * 2

    planned = expand(Plan(), Catalog(workloads={"one_off": Twice(lambda b: None)}))
    assert len(planned.cases) == 1 and "more than once" in planned.failed["one_off"]


def test_a_workload_that_records_nothing_is_an_error_for_each_metric():
    r = run_body(lambda b: None)
    assert set(r) == set(OneOff.metrics) and all(x.status == Status.error for x in r.values())
    assert "recorded no figure" in r["op_time"].message


def test_an_unknown_declared_metric_does_not_crash_the_case():
    class Bad(OneOff):
        metrics = ("op_time", "no_such_metric")

    def body(bench):
        raise RuntimeError("boom")

    w = Bad(body)
    results = run_case(w, w.cases("quick")[0], RunContext(CpuAdapter(), QUICK))
    assert [r.metric for r in results] == ["op_time"] and "no_such_metric" in results[0].warnings[0]


@pytest.mark.parametrize(
    "exc,status",
    [
        (
            NotImplementedError("Could not run 'aten::_scaled_mm' with arguments from the 'MPS' backend."),
            Status.unsupported,
        ),
        (
            RuntimeError(
                "MPS backend out of memory (MPS allocated: 8.00 GiB, other allocations: 1.00 GiB, max allowed: "
                "9.07 GiB). Tried to allocate 256.00 MiB on private pool."
            ),
            Status.error,
        ),
        (KeyError("weights"), Status.error),
    ],
)
def test_out_of_memory_and_bugs_are_errors_not_unsupported(exc, status):
    def body(bench):
        raise exc

    assert run_body(body)["op_time"].status == status
