"""What every kernel family shares: case listing from declared shapes, dtype selection, seeded inputs, op lookup.

A family declares `specs(profile)` (one params dict per shape/variant) and, where a variant fixes its dtype
(fp8 storage, bf16 baseline), `fixed_dtype(params)`; this base crosses the rest with the run's dtypes.
"""

from __future__ import annotations

import zlib
from typing import Any, ClassVar, Mapping

from bundle.schema import case_key
from collector.workload import PROFILES, Case, Unsupported, Workload

FLOAT_DTYPES = ("float32", "bfloat16", "float16")
RANDN_CHUNK = 1 << 24
# the metric groups the bench records (collector.workload.Bench: time, bandwidth, correctness), named once
TIMING_METRICS = ("op_time", "first_call_time")
BANDWIDTH_METRICS = ("achieved_bandwidth", "bandwidth_fraction")
CORRECTNESS_METRICS = ("psnr_vs_cpu", "max_abs_error", "max_rel_error")


class KernelFamily(Workload):
    suite: ClassVar[str] = "kernels"
    supported_dtypes: ClassVar[tuple[str, ...]] = FLOAT_DTYPES
    quick_dtypes: ClassVar[tuple[str, ...] | None] = None  # quick's default; None = default_dtypes

    def specs(self, profile: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    def fixed_dtype(self, params: Mapping[str, Any]) -> str | None:
        """The dtype a variant always runs in (None: crossed with the run's dtypes)."""
        return None

    def cases(
        self, profile: str, dtypes: tuple[str, ...] | None = None, compile_modes: tuple[str, ...] = ("eager",)
    ) -> list[Case]:
        if profile not in PROFILES:
            raise ValueError(f"profile {profile!r}: must be one of {', '.join(PROFILES)}")
        if "eager" not in compile_modes:  # kernels are measured eagerly only
            return []
        chosen = self._dtypes(profile, dtypes)
        out: list[Case] = []
        for params in self.specs(profile):
            fixed = self.fixed_dtype(params)
            if fixed is None:
                out.extend(Case(self.name, params, d) for d in chosen)
            elif dtypes is None or fixed in dtypes:
                out.append(Case(self.name, params, fixed))
        return out

    def _dtypes(self, profile: str, requested: tuple[str, ...] | None) -> tuple[str, ...]:
        if requested is not None:
            return tuple(d for d in requested if d in self.supported_dtypes)
        if profile == "quick" and self.quick_dtypes is not None:
            return self.quick_dtypes
        return self.default_dtypes


def seed_for(case: Case, ignore: tuple[str, ...] = ()) -> int:
    """A stable seed per shape: the same inputs on every device, run, machine and dtype; variants named in
    `ignore` (e.g. grouped_mm vs its loop baseline) get the same inputs as each other."""
    kept = {k: v for k, v in case.params.items() if k not in ignore}
    return zlib.crc32(f"{case.workload}|{case_key(kept)}".encode())


def generator(case: Case, ignore: tuple[str, ...] = ()):
    import torch

    return torch.Generator().manual_seed(seed_for(case, ignore))


def torch_dtype(name: str):
    import torch

    found = getattr(torch, name, None)
    if not isinstance(found, torch.dtype):
        raise Unsupported(f"torch {torch.__version__} has no dtype torch.{name}")
    return found


def require_op(owner: Any, attr: str, what: str):
    """The op, looked up when the case runs, so a build without it records `unsupported` with this message."""
    import torch

    op = getattr(owner, attr, None)
    if op is None:
        raise Unsupported(f"{what} is not available in torch {torch.__version__}")
    return op


def first_available(candidates: list[tuple[Any, str, str]]):
    """The first op present among (owner, attr, name) candidates, else Unsupported naming all of them."""
    import torch

    for owner, attr, _ in candidates:
        op = getattr(owner, attr, None)
        if op is not None:
            return op
    names = [name for _, _, name in candidates]
    what = f"neither {' nor '.join(names)} is" if len(names) > 1 else f"{names[0]} is not"
    raise Unsupported(f"{what} available in torch {torch.__version__}")


def randn(shape: tuple[int, ...], dtype, gen, scale: float = 1.0):
    """Seeded normal values on the CPU (same on every device), scaled, in `dtype`; drawn in float32 chunks so
    a 1 GB bf16 weight never needs a 2 GB float32 copy."""
    import torch

    out = torch.empty(shape, dtype=dtype)
    flat = out.view(-1)
    for start in range(0, flat.numel(), RANDN_CHUNK):
        part = torch.randn(min(RANDN_CHUNK, flat.numel() - start), generator=gen, dtype=torch.float32)
        flat[start : start + part.numel()] = part.mul_(scale) if scale != 1.0 else part
    return out
