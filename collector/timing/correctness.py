"""Correctness of a device output against its CPU reference: PSNR (dB), max abs / max rel error, pass/fail.

Pass rule (as torch.allclose): every element |out - ref| ≤ atol + rtol·|ref|. Tolerances per case dtype, sized
from each format's unit roundoff (fp32 2^-24, tf32/fp16 2^-11, bf16 2^-8, e4m3 2^-4, e5m2 2^-3) with headroom
for reductions over a few thousand terms (long dot products, softmax denominators):
  float64 1e-10/1e-10 · float32 1e-4/1e-4 · tf32 5e-3/5e-3 · float16 1e-2/1e-3 (rtol/atol) · bfloat16 5e-2/1e-2
  · float8_e4m3fn(uz) 0.25/0.1 · float8_e5m2(fnuz) 0.5/0.2 · integers and bool exact.

Each figure also carries its rounding level (`rounding`): the same figure for the reference itself rounded once
to the output's dtype — measured on this reference, so it holds both the dtype's unit roundoff and the
reference's magnitudes (a softmax's tiny probabilities round to far smaller errors than its peak). A review
judges a change of the figure on that scale (bundle.metrics: ROUNDING_UNITS): bf16's 8-bit mantissa moves a
PSNR by a few dB between builds that only reorder an accumulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

FLOAT64_EPS = float(torch.finfo(torch.float64).eps)
REL_EPS_FRACTION = 1e-6  # max_rel_error divides by max(|ref|, 1e-6 · max|ref|): no blow-up at exact zeros


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(1e-10, 1e-10),
    "float32": Tolerance(1e-4, 1e-4),
    "tf32": Tolerance(5e-3, 5e-3),
    "float16": Tolerance(1e-2, 1e-3),
    "bfloat16": Tolerance(5e-2, 1e-2),
    "float8_e4m3fn": Tolerance(0.25, 0.1),
    "float8_e4m3fnuz": Tolerance(0.25, 0.1),
    "float8_e5m2": Tolerance(0.5, 0.2),
    "float8_e5m2fnuz": Tolerance(0.5, 0.2),
}
EXACT = Tolerance(0.0, 0.0)


def tolerance_for(dtype: str) -> Tolerance:
    return TOLERANCES.get(dtype.removeprefix("torch."), EXACT)


@dataclass
class ReferenceCheck:
    psnr_db: float | None
    max_abs_error: float | None
    max_rel_error: float | None
    passed: bool
    tolerance: Tolerance
    warnings: list[str] = field(default_factory=list)
    error: str | None = None  # set when no finite figure exists (non-finite output, shape mismatch)
    # the same three figures for the reference rounded once to the output's dtype (None: no finite figure)
    rounding: tuple[float, float, float] | None = None

    @property
    def rule(self) -> str:
        return f"|out - ref| ≤ atol + rtol·|ref| with atol={self.tolerance.atol:g}, rtol={self.tolerance.rtol:g}"


def _as_reference_precision(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu").to(torch.float64)


def psnr_db(diff: torch.Tensor, ref: torch.Tensor) -> tuple[float, list[str]]:
    """PSNR with peak = the reference's data range; identical outputs give the float64-resolution cap."""
    warnings: list[str] = []
    peak = float(ref.max() - ref.min()) if ref.numel() else 0.0
    if peak == 0.0:
        peak = float(ref.abs().max()) if ref.numel() else 0.0
        if peak == 0.0:
            peak = 1.0
            warnings.append("reference is all zeros: PSNR peak taken as 1")
        else:
            warnings.append("reference is constant: PSNR peak taken as its magnitude")
    mse = float((diff * diff).mean()) if diff.numel() else 0.0
    floor = (FLOAT64_EPS * peak) ** 2
    if mse <= floor:
        cap = 10 * math.log10(peak * peak / floor)
        warnings.append(f"output matches the reference to float64 resolution: PSNR capped at {cap:.1f} dB")
        mse = floor
    return 10 * math.log10(peak * peak / mse), warnings


def _non_finite(out: torch.Tensor, ref: torch.Tensor) -> str | None:
    """Why no finite figure exists (NaN/inf in the output where the reference is finite, or in the reference)."""
    bad = int((~torch.isfinite(out) & torch.isfinite(ref)).sum())
    if bad:
        return f"device output has {bad} non-finite values (NaN/inf) where the reference is finite"
    return None if bool(torch.isfinite(ref).all()) else "the CPU reference itself has non-finite values"


def check_against_reference(output: torch.Tensor, reference: torch.Tensor, dtype: str) -> ReferenceCheck:
    tol = tolerance_for(dtype)
    out, ref = _as_reference_precision(output), _as_reference_precision(reference)
    if out.shape != ref.shape:
        return ReferenceCheck(
            None,
            None,
            None,
            False,
            tol,
            error=f"output shape {tuple(out.shape)} differs from reference shape {tuple(ref.shape)}",
        )
    what = _non_finite(out, ref)
    if what:
        return ReferenceCheck(None, None, None, False, tol, error=what)
    diff = (out - ref).abs()
    scale = float(ref.abs().max()) if ref.numel() else 0.0
    denominator = ref.abs().clamp_min(max(REL_EPS_FRACTION * scale, torch.finfo(torch.float64).tiny))
    psnr, warnings = psnr_db(diff, ref)
    passed = bool((diff <= tol.atol + tol.rtol * ref.abs()).all())
    max_abs = float(diff.max()) if diff.numel() else 0.0
    max_rel = float((diff / denominator).max()) if diff.numel() else 0.0
    rounded = (ref.to(output.dtype).to(torch.float64) - ref).abs()  # what rounding alone gives this reference
    level = (
        psnr_db(rounded, ref)[0],
        float(rounded.max()) if rounded.numel() else 0.0,
        float((rounded / denominator).max()) if rounded.numel() else 0.0,
    )
    return ReferenceCheck(psnr, max_abs, max_rel, passed, tol, warnings, rounding=level)
