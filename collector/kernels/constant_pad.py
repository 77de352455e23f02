"""F.pad(mode="constant") on 5-D video-VAE activations with causal-conv padding (PR #195368, bugs #194922 et al.).

WanCausalConv3d pads (W left/right, H top/bottom, T front/back) = (1, 1, 1, 1, 2, 0): the time axis only in
front. Channel counts and resolutions follow the Wan VAE decoder (96 / 192 / 384 channels). MPSGraph's pad
replaced the data with the pad value when the two innermost dims held ≥ 65,536 elements; the cases with
H*W ≥ 65,536 exist to catch that, which is why the whole output is compared with the CPU's.
Bytes per call = input read + output written. Memory: the three figures of bench.memory.
"""

from __future__ import annotations

import math
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
from collector.workload import Bench, Case

CAUSAL_PAD = (1, 1, 1, 1, 2, 0)
CHANNELS = (96, 192, 384)
SIDES = (64, 128, 256)  # 256 x 256 = 65,536: the MPSGraph inner-extent limit
FRAMES = (1, 4)
INNER_LIMIT = 65536


def padded_shape(shape: tuple[int, ...], pad: tuple[int, ...]) -> tuple[int, ...]:
    """F.pad's pad list runs from the last dim backwards, two numbers per dim."""
    out = list(shape)
    for i in range(len(pad) // 2):
        out[-1 - i] += pad[2 * i] + pad[2 * i + 1]
    return tuple(out)


def pad_bytes(shape: tuple[int, ...], pad: tuple[int, ...], itemsize: int) -> int:
    return (math.prod(shape) + math.prod(padded_shape(shape, pad))) * itemsize


def _params(c: int, t: int, h: int, w: int) -> dict[str, Any]:
    return {
        "B": 1,
        "C": c,
        "T": t,
        "H": h,
        "W": w,
        "pad": ",".join(map(str, CAUSAL_PAD)),
        "value": 0.0,
        "inner_elements": h * w,
    }


class ConstantPad(KernelFamily):
    name = "constant_pad"
    description = "F.pad(x[B,C,T,H,W], causal (1,1,1,1,2,0), constant) at Wan-VAE decoder shapes"
    metrics = (
        *TIMING_METRICS,
        *BANDWIDTH_METRICS,
        *CORRECTNESS_METRICS,
        "memory_driver_peak",
        "memory_reserved_peak",
        "memory_allocated_peak",
        "memory_outside_allocator",
    )
    default_dtypes = ("float32", "bfloat16")
    quick_dtypes = ("float32",)

    def specs(self, profile: str) -> list[dict[str, Any]]:
        if profile == "quick":  # one small tile and one at the 65,536 inner-extent limit
            return [_params(96, 2, 32, 32), _params(96, 1, 256, 256)]
        return [_params(c, t, s, s) for c in CHANNELS for s in SIDES for t in FRAMES]

    def run(self, case: Case, bench: Bench) -> None:
        import torch.nn.functional as F

        pad_op = require_op(F, "pad", "torch.nn.functional.pad")
        dtype = torch_dtype(case.dtype)
        p = case.params
        shape = tuple(int(p[d]) for d in ("B", "C", "T", "H", "W"))
        pad = tuple(int(v) for v in str(p["pad"]).split(","))
        value = float(p["value"])
        x_cpu = randn(shape, dtype, generator(case))
        x = x_cpu.to(bench.device)
        call = lambda: pad_op(x, pad, mode="constant", value=value)  # noqa: E731
        bench.time_op(call, bytes_per_call=pad_bytes(shape, pad, x.element_size()))
        bench.correctness(call(), pad_reference(x_cpu, pad, value))
        bench.memory(call)


def pad_reference(x, pad: tuple[int, ...], value: float):
    """float64 CPU reference built by hand (fill, then copy x into the interior), independent of F.pad."""
    import torch

    out = torch.full(padded_shape(tuple(x.shape), pad), value, dtype=torch.float64)
    interior = [slice(None)] * x.dim()
    for i in range(len(pad) // 2):
        dim = x.dim() - 1 - i
        interior[dim] = slice(pad[2 * i], pad[2 * i] + x.shape[dim])
    out[tuple(interior)] = x.to(torch.float64)
    return out
