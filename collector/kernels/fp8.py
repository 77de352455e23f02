"""FP8 (float8_e4m3fn): storage of a weight vs its bf16 source, and scaled matmul vs a bf16 matmul (PR #196916).

Variants (param `variant`):
- "storage": storage_bytes of a (N, K) weight, param `tensor` = "float8_e4m3fn" (the quantized copy, made on
  the device; its round trip is psnr_vs_input) or "bfloat16_source";
- "scaled_mm_tensorwise" / "scaled_mm_rowwise": F.scaled_mm (torch._scaled_mm before it existed) with fp32
  scales, one per tensor or scale_a (M, 1) and scale_b (1, N); b is column-major (the weight transposed);
- "bf16_matmul": the same shape in bf16, the baseline.
Correctness is the kernel's: each matmul is compared with an fp32 CPU matmul of exactly the operands it was
given (the dequantized fp8 values x their scales, or the bf16 values), so a wrong kernel fails and the fp8
format's own rounding, the same on every build, is left out; that is the storage case's psnr_vs_input.
A build without FP8 on the device (MPS before ~2.15: "Trying to convert Float8_e4m3fn to the MPS backend but
it does not have support for that dtype.") records `unsupported` with that message.
Bytes per call are given for the M = 1 case only, the one bound by memory rather than compute.
"""

from __future__ import annotations

from typing import Any, Mapping

from collector.kernels.family import (
    BANDWIDTH_METRICS,
    CORRECTNESS_METRICS,
    TIMING_METRICS,
    KernelFamily,
    first_available,
    generator,
    randn,
    torch_dtype,
)
from collector.workload import Bench, Case, Unsupported

FP8 = "float8_e4m3fn"
E4M3_MAX = 448.0
CUBES = (256, 512, 1024, 2048, 4096, 8192)
MATMUL_VARIANTS = ("scaled_mm_tensorwise", "scaled_mm_rowwise", "bf16_matmul")


def full_shapes() -> list[tuple[int, int, int]]:
    return [(s, s, s) for s in CUBES] + [(1, 4096, 4096)]


def matmul_bytes(variant: str, m: int, k: int, n: int) -> int:
    if variant == "bf16_matmul":
        return 2 * (m * k + k * n + m * n)
    scales = 2 if variant == "scaled_mm_tensorwise" else m + n
    return m * k + k * n + 2 * m * n + 4 * scales  # fp8 inputs, bf16 output, fp32 scales


class Fp8(KernelFamily):
    name = "fp8"
    description = "float8_e4m3fn weight storage and scaled matmul (tensor-/row-wise) beside a bf16 matmul"
    metrics = (*TIMING_METRICS, *BANDWIDTH_METRICS, *CORRECTNESS_METRICS, "storage_bytes", "psnr_vs_input")
    default_dtypes = (FP8, "bfloat16")
    supported_dtypes = (FP8, "bfloat16")

    def specs(self, profile: str) -> list[dict[str, Any]]:
        shapes = [(256, 256, 256)] if profile == "quick" else full_shapes()
        weights = sorted({(k, n) for _, k, n in shapes})
        out = [
            {"variant": "storage", "tensor": t, "K": k, "N": n} for k, n in weights for t in (FP8, "bfloat16_source")
        ]
        return out + [{"variant": v, "M": m, "K": k, "N": n} for m, k, n in shapes for v in MATMUL_VARIANTS]

    def fixed_dtype(self, params: Mapping[str, Any]) -> str | None:
        if params["variant"] == "storage":
            return FP8 if params["tensor"] == FP8 else "bfloat16"
        return "bfloat16" if params["variant"] == "bf16_matmul" else FP8

    def run(self, case: Case, bench: Bench) -> None:
        if case.params["variant"] == "storage":
            self._storage(case, bench)
        else:
            self._matmul(case, bench)

    def _storage(self, case: Case, bench: Bench) -> None:
        import torch

        k, n = int(case.params["K"]), int(case.params["N"])
        source = randn((n, k), torch.bfloat16, generator(case)).to(bench.device)
        if case.params["tensor"] != FP8:
            bench.record("storage_bytes", [float(source.untyped_storage().nbytes())], "B")
            return
        scale = source.abs().amax().float() / E4M3_MAX
        quantized = to_fp8(source.float() / scale)
        bench.record("storage_bytes", [float(quantized.untyped_storage().nbytes())], "B")
        bench.correctness(quantized.float() * scale, source.float(), psnr_metric="psnr_vs_input")

    def _matmul(self, case: Case, bench: Bench) -> None:
        import torch

        variant = str(case.params["variant"])
        m, k, n = (int(case.params[d]) for d in ("M", "K", "N"))
        gen = generator(case, ignore=("variant",))
        a = randn((m, k), torch.bfloat16, gen).to(bench.device)
        w = randn((n, k), torch.bfloat16, gen, k**-0.5).to(bench.device)  # outputs O(1)
        op = BfMatmul(a, w) if variant == "bf16_matmul" else ScaledMatmul(a, w, variant == "scaled_mm_rowwise")
        bench.time_op(op, bytes_per_call=matmul_bytes(variant, m, k, n) if m == 1 else None)
        bench.correctness(op(), op.reference())


def to_fp8(t):
    """Cast to e4m3fn; a device without the dtype raises here, and that is `unsupported`, not an error."""
    try:
        return t.to(torch_dtype(FP8))
    except (TypeError, RuntimeError) as exc:
        raise Unsupported(f"{type(exc).__name__}: {exc}") from exc


class BfMatmul:
    def __init__(self, a, w) -> None:
        self.a, self.b = a, w.T

    def __call__(self):
        return self.a @ self.b

    def reference(self):
        return self.a.cpu().float() @ self.b.cpu().float()


class ScaledMatmul:
    """a (row-major) and w quantized with fp32 scales; b = w8.T is column-major, as _scaled_mm requires."""

    def __init__(self, a, w, rowwise: bool) -> None:
        self.rowwise = rowwise
        self.scale_a = (a.abs().amax(dim=1, keepdim=True) if rowwise else a.abs().amax()).float() / E4M3_MAX
        scale_w = (w.abs().amax(dim=1, keepdim=True) if rowwise else w.abs().amax()).float() / E4M3_MAX
        self.a8, self.b8 = to_fp8(a.float() / self.scale_a), to_fp8(w.float() / scale_w).T
        self.scale_b = scale_w.T if rowwise else scale_w  # (1, N) row-wise
        self.call = self._bind()

    def _bind(self):
        import torch
        import torch.nn.functional as F

        if hasattr(F, "scaled_mm"):
            recipe = F.ScalingType.RowWise if self.rowwise else F.ScalingType.TensorWise
            return lambda: F.scaled_mm(
                self.a8, self.b8, self.scale_a, recipe, self.scale_b, recipe, output_dtype=torch.bfloat16
            )
        scaled_mm = first_available(
            [(F, "scaled_mm", "torch.nn.functional.scaled_mm"), (torch, "_scaled_mm", "torch._scaled_mm")]
        )
        return lambda: scaled_mm(self.a8, self.b8, scale_a=self.scale_a, scale_b=self.scale_b, out_dtype=torch.bfloat16)

    def __call__(self):
        return self.call()

    def reference(self):
        a = self.a8.cpu().float() * self.scale_a.cpu()
        b = self.b8.cpu().float() * self.scale_b.cpu()
        return a @ b
