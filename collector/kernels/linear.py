"""Decode-time F.linear (GEMV-like, M = 1 / 4 / 8) over the projection shapes of real models (PRs #186927, #189628).

Shapes come from collector.kernels.model_shapes (derived from config numbers), de-duplicated across models; the case
names the first model/projection using a shape and `used_by` lists all of them. Bytes per call = weight +
input + output (+ bias), each touched once: at M ≤ 8 the weight read dominates, so achieved bandwidth is the
figure that says how close to the memory roofline the kernel runs.
"""

from __future__ import annotations

from typing import Any

from collector.kernels.family import (
    BANDWIDTH_METRICS,
    CORRECTNESS_METRICS,
    TIMING_METRICS,
    KernelFamily,
    generator,
    randn,
    require_op,
    torch_dtype,
)
from collector.kernels.model_shapes import LinearShape, linear_shapes, model, projection_shapes
from collector.workload import Bench, Case

FULL_M = (1, 4, 8)
QUICK_MODEL = "Qwen3-0.6B"  # the smallest model: its shapes run fast on a 2-core CPU
REFERENCE_CHUNK = 8192  # output columns per float64 reference block (keeps lm_head references small)


def linear_bytes(m: int, k: int, n: int, bias: bool, itemsize: int) -> int:
    return (n * k + m * k + m * n + (n if bias else 0)) * itemsize


def _params(m: int, shape: LinearShape, bias: bool) -> dict[str, Any]:
    model_name, projection = shape.users[0]
    return {
        "M": m,
        "K": shape.K,
        "N": shape.N,
        "bias": bias,
        "model": model_name,
        "projection": projection,
        "used_by": shape.used_by,
    }


def quick_shapes() -> list[tuple[int, LinearShape, bool]]:
    """The quick model's projections at M = 1, plus one biased and one M = 4 case (lm_head left out: large)."""
    cfg = model(QUICK_MODEL)
    by_kn = {(s.K, s.N): s for s in linear_shapes()}
    own = [by_kn[kn] for p, kn in projection_shapes(cfg).items() if p != "lm_head"]
    return [(1, s, False) for s in own] + [(1, own[0], True), (4, own[0], False)]


class Linear(KernelFamily):
    name = "linear"
    description = "F.linear(x[M,K], W[N,K], bias?) at decode batch sizes over real models' projection shapes"
    metrics = TIMING_METRICS + BANDWIDTH_METRICS + CORRECTNESS_METRICS
    default_dtypes = ("bfloat16",)

    def specs(self, profile: str) -> list[dict[str, Any]]:
        if profile == "quick":
            return [_params(m, s, b) for m, s, b in quick_shapes()]
        return [_params(m, s, b) for s in linear_shapes() for m in FULL_M for b in (False, True)]

    def run(self, case: Case, bench: Bench) -> None:
        import torch.nn.functional as F

        linear = require_op(F, "linear", "torch.nn.functional.linear")
        dtype = torch_dtype(case.dtype)
        m, k, n, has_bias = (int(case.params[p]) for p in ("M", "K", "N", "bias"))
        gen = generator(case)
        x_cpu = randn((m, k), dtype, gen)
        w_cpu = randn((n, k), dtype, gen, k**-0.5)  # nn.Linear-like scale: outputs stay O(1)
        b_cpu = randn((n,), dtype, gen) if has_bias else None
        x, w = x_cpu.to(bench.device), w_cpu.to(bench.device)
        b = b_cpu.to(bench.device) if b_cpu is not None else None
        call = lambda: linear(x, w, b)  # noqa: E731
        bench.time_op(call, bytes_per_call=linear_bytes(m, k, n, bool(has_bias), x.element_size()))
        bench.correctness(call(), linear_reference(x_cpu, w_cpu, b_cpu))


def linear_reference(x, w, b):
    """x @ w.T + b in float64 on the CPU, in column blocks so a 1 GB lm_head needs no 4 GB float64 copy."""
    import torch

    x64 = x.to(torch.float64)
    blocks = []
    for start in range(0, w.shape[0], REFERENCE_CHUNK):
        block = x64 @ w[start : start + REFERENCE_CHUNK].to(torch.float64).T
        if b is not None:
            block += b[start : start + REFERENCE_CHUNK].to(torch.float64)
        blocks.append(block)
    return torch.cat(blocks, dim=1)
