"""Every quick case runs on the CPU through a fake bench: outputs match the references, bytes are the
hand-computed ones, and the checks would catch a wrong kernel (a pad that loses its data, a mis-routed MoE)."""

import pytest
import torch
import torch.nn.functional as F

from collector.kernels import WORKLOADS, constant_pad, grouped_mm
from collector.kernels.fp8 import matmul_bytes
from tests.fake_bench import run_case

# Independent of collector.timing.correctness: what each output dtype's rounding allows here (outputs are O(1)).
TOLERANCE = {
    "float32": (1e-4, 1e-5),
    "bfloat16": (3e-2, 3e-2),
    "float16": (5e-3, 5e-3),
    "float8_e4m3fn": (3e-2, 3e-2),
}  # fp8 matmuls output bf16; the fp8 round trip is checked below

QUICK = [(w, c) for w in WORKLOADS for c in w.cases("quick")]
BY_NAME = {w.name: w for w in WORKLOADS}


def _case(name, **params):
    return next(c for c in BY_NAME[name].cases("quick") if all(c.params[k] == v for k, v in params.items()))


def _close(output, reference, dtype):
    rtol, atol = TOLERANCE[dtype]
    out, ref = output.to(torch.float64), reference.to(torch.float64)
    return out.shape == ref.shape and bool(((out - ref).abs() <= atol + rtol * ref.abs()).all())


@pytest.mark.parametrize(("workload", "case"), QUICK, ids=[c.label() for _, c in QUICK])
def test_quick_case_matches_its_reference(workload, case):
    bench = run_case(workload, case)
    assert bench.comparisons or "storage_bytes" in bench.records
    for cmp in bench.comparisons:
        if cmp.psnr_metric == "psnr_vs_cpu":
            assert _close(cmp.output, cmp.reference, case.dtype), case.label()
        assert cmp.reference.dtype in (torch.float64, torch.float32)
    if bench.timed:
        assert "op_time" in bench.claimed


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("softmax", {"rows": 1, "vocab": 128256, "dtype": "float32"}, 2 * 128256 * 4),
        ("softmax", {"rows": 8, "vocab": 151936, "dtype": "bfloat16"}, 2 * 8 * 151936 * 2),
        ("linear", {"M": 1, "K": 1024, "N": 2048, "bias": False}, (2048 * 1024 + 1024 + 2048) * 2),
        ("linear", {"M": 1, "K": 1024, "N": 2048, "bias": True}, (2048 * 1024 + 1024 + 2048 + 2048) * 2),
        ("linear", {"M": 4, "K": 1024, "N": 2048}, (2048 * 1024 + 4 * 1024 + 4 * 2048) * 2),
        # (1, 96, 2, 32, 32) padded (1,1,1,1,2,0) -> (1, 96, 4, 34, 34)
        ("constant_pad", {"T": 2, "H": 32}, (96 * 2 * 32 * 32 + 96 * 4 * 34 * 34) * 4),
        # q 16 x 1 x 128, k and v 8 x 512 x 128, output 16 x 1 x 128, bf16
        ("sdpa", {"mode": "decode", "heads": 16}, (16 * 128 * 2 + 8 * 512 * 128 * 2) * 2),
    ],
)
def test_bytes_per_call_by_hand(name, params, expected):
    dtype = params.pop("dtype", None)
    case = next(
        c
        for c in BY_NAME[name].cases("quick")
        if all(c.params[k] == v for k, v in params.items()) and (dtype is None or c.dtype == dtype)
    )
    bench = run_case(BY_NAME[name], case)
    assert [t.bytes_per_call for t in bench.timed] == [expected]


def test_fp8_bytes_only_for_the_memory_bound_shape():
    assert matmul_bytes("scaled_mm_tensorwise", 1, 4096, 4096) == 4096 + 4096 * 4096 + 2 * 4096 + 4 * 2
    assert matmul_bytes("scaled_mm_rowwise", 1, 4096, 4096) == 4096 + 4096 * 4096 + 2 * 4096 + 4 * (1 + 4096)
    assert matmul_bytes("bf16_matmul", 1, 4096, 4096) == 2 * (4096 + 4096 * 4096 + 4096)
    bench = run_case(BY_NAME["fp8"], _case("fp8", variant="scaled_mm_rowwise"))
    assert [t.bytes_per_call for t in bench.timed] == [None]  # 256^3 is compute-bound: no bandwidth figure


def test_fp8_storage_is_half_of_its_bf16_source():
    fp8 = run_case(BY_NAME["fp8"], _case("fp8", variant="storage", tensor="float8_e4m3fn"))
    bf16 = run_case(BY_NAME["fp8"], _case("fp8", variant="storage", tensor="bfloat16_source"))
    assert fp8.records["storage_bytes"] == [256 * 256 * 1]
    assert bf16.records["storage_bytes"] == [256 * 256 * 2]
    (trip,) = fp8.comparisons
    assert trip.psnr_metric == "psnr_vs_input"
    # e4m3 keeps 3 mantissa bits: relative round-trip error ≤ 2^-4, plus the subnormal step near zero
    assert bool(((trip.output - trip.reference).abs() <= 2**-4 * trip.reference.abs() + 2**-9 * 4).all())


def test_constant_pad_runs_the_memory_pass():
    bench = run_case(BY_NAME["constant_pad"], _case("constant_pad", H=32))
    assert bench.memory_calls == 1 and "memory_driver_peak" in bench.claimed


def test_pad_comparison_catches_data_replaced_by_pad_value(monkeypatch):
    """The MPSGraph bug class: with H*W ≥ 65,536 the output held only the pad value."""
    real_pad = F.pad

    def buggy_pad(x, pad, mode="constant", value=0.0):
        out = real_pad(x, pad, mode=mode, value=value)
        return out.fill_(value) if x.shape[-1] * x.shape[-2] >= constant_pad.INNER_LIMIT else out

    monkeypatch.setattr(F, "pad", buggy_pad)
    big = run_case(BY_NAME["constant_pad"], _case("constant_pad", inner_elements=65536))
    small = run_case(BY_NAME["constant_pad"], _case("constant_pad", H=32))
    assert not _close(big.comparisons[0].output, big.comparisons[0].reference, "float32")
    assert _close(small.comparisons[0].output, small.comparisons[0].reference, "float32")


def test_grouped_mm_comparison_catches_misrouted_rows(monkeypatch):
    """Offsets shifted by one row send a token to the wrong expert: the CPU loop reference must disagree."""
    real = grouped_mm.routed_rows

    def off_by_one(*args):
        rows, perm, offsets = real(*args)
        return rows, perm, torch.clamp(offsets - 1, min=0)

    monkeypatch.setattr(grouped_mm, "routed_rows", off_by_one)
    bench = run_case(BY_NAME["grouped_mm"], _case("grouped_mm", tokens=64, variant="loop_cpu_offsets"))
    assert not _close(bench.comparisons[0].output, bench.comparisons[0].reference, "bfloat16")


def test_grouped_variants_agree_with_each_other():
    outputs = [
        run_case(BY_NAME["grouped_mm"], _case("grouped_mm", tokens=64, variant=v)).comparisons[0]
        for v in ("grouped_mm", "loop_cpu_offsets")
    ]
    assert torch.equal(outputs[0].reference, outputs[1].reference)  # the seed ignores the variant: same inputs
    assert _close(outputs[0].output, outputs[1].output.to(torch.float64), "bfloat16")


def test_inputs_are_seeded_per_shape():
    first = run_case(BY_NAME["softmax"], _case("softmax", rows=5)).comparisons[0]
    again = run_case(BY_NAME["softmax"], _case("softmax", rows=5)).comparisons[0]
    other = run_case(BY_NAME["softmax"], _case("softmax", rows=1)).comparisons[0]
    assert torch.equal(first.output, again.output) and first.output.shape != other.output.shape
