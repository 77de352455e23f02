"""A torch without a family's op (or without FP8 on the device) makes its cases `unsupported`, with the reason."""

import pytest
import torch
import torch.nn.functional as F

from collector.kernels import WORKLOADS, fp8, sdpa
from collector.workload import Unsupported
from tests.fake_bench import FakeBench, run_case

BY_NAME = {w.name: w for w in WORKLOADS}
MISSING = {  # family -> the ops to take away, and the words the message must carry
    "softmax": ([(F, "softmax")], "torch.nn.functional.softmax"),
    "linear": ([(F, "linear")], "torch.nn.functional.linear"),
    "grouped_mm": ([(F, "grouped_mm"), (torch, "_grouped_mm")], "torch._grouped_mm"),
    "constant_pad": ([(F, "pad")], "torch.nn.functional.pad"),
    "fp8": ([(F, "scaled_mm"), (torch, "_scaled_mm")], "torch._scaled_mm"),
    "sdpa": ([(F, "scaled_dot_product_attention")], "scaled_dot_product_attention"),
}


def _first_timed_case(workload):
    return next(c for c in workload.cases("quick") if c.params.get("variant") != "storage")


@pytest.mark.parametrize("name", sorted(MISSING))
def test_missing_op_raises_unsupported_naming_it(monkeypatch, name):
    ops, words = MISSING[name]
    for owner, attr in ops:
        monkeypatch.delattr(owner, attr, raising=False)
    workload = BY_NAME[name]
    case = _first_timed_case(workload)
    with pytest.raises(Unsupported, match=words.replace(".", r"\.")) as caught:
        run_case(workload, case)
    assert torch.__version__ in str(caught.value)


def test_missing_op_through_the_engine_records_unsupported(monkeypatch):
    from bundle.schema import Status
    from collector.adapters.cpu import CpuAdapter
    from collector.isolation import runner
    from collector.timing.loop import TimingPolicy

    monkeypatch.delattr(F, "grouped_mm", raising=False)
    monkeypatch.delattr(torch, "_grouped_mm", raising=False)
    workload = BY_NAME["grouped_mm"]
    ctx = runner.RunContext(adapter=CpuAdapter(), policy=TimingPolicy(budget_s=0.05, min_time_s=0.01))
    results = runner.run_case(workload, workload.cases("quick")[0], ctx)
    assert {r.metric for r in results} == set(workload.metrics)
    assert {r.status for r in results} == {Status.unsupported}
    assert all("torch._grouped_mm" in r.message for r in results)


class _NoFp8OnDevice:
    """Stands in for an MPS tensor on torch < 2.15: casting to e4m3fn raises PyTorch's own TypeError."""

    def to(self, dtype):
        raise TypeError(
            "Trying to convert Float8_e4m3fn to the MPS backend but it does not have support for that dtype."
        )


def test_device_without_fp8_is_unsupported_with_the_message():
    with pytest.raises(Unsupported, match="does not have support for that dtype"):
        fp8.to_fp8(_NoFp8OnDevice())


def test_fp8_cases_unsupported_when_the_cast_fails(monkeypatch):
    def refuse(_tensor):
        raise Unsupported(
            "TypeError: Trying to convert Float8_e4m3fn to the MPS backend but it does not have support for that dtype."
        )

    monkeypatch.setattr(fp8, "to_fp8", refuse)
    workload = BY_NAME["fp8"]
    for case in workload.cases("quick"):
        if case.dtype == "float8_e4m3fn":
            with pytest.raises(Unsupported, match="MPS backend"):
                run_case(workload, case)
        else:  # the bf16 source and the bf16 baseline need no FP8: still measured
            assert run_case(workload, case).claimed


def test_sdpa_without_enable_gqa_is_unsupported():
    def old_sdpa():
        raise TypeError("scaled_dot_product_attention() got an unexpected keyword argument 'enable_gqa'")

    with pytest.raises(Unsupported, match="enable_gqa"):
        sdpa.probe_enable_gqa(old_sdpa)


def test_fake_bench_refuses_undeclared_metrics():
    workload = BY_NAME["softmax"]
    bench = FakeBench(workload, workload.cases("quick")[0])
    with pytest.raises(AssertionError, match="does not declare"):
        bench.record("storage_bytes", [1.0])
