"""vae_roundtrip: encode → decode of a seeded image on the device, and the same on the CPU in float32.

The published case: a VAE round trip's agreement with a CPU reference rose from 10.06 to 29.95 dB PSNR
after an MPS fix. Records: psnr_vs_cpu (dB, device output vs the CPU float32 output of the same weights)
with max_abs_error / max_rel_error and pass/fail at the case dtype's tolerance, and psnr_vs_input (dB,
the device's round trip vs the input image; peak = the input's range, 2 for [-1, 1]).
The latent is the posterior's mode (no sampling), so both sides compute the same thing.
On the CPU device in float32 the device output *is* the reference: psnr_vs_cpu would only be the
identical-output cap, which reads like a perfect score next to real MPS figures, so those three records
are `unavailable` with that reason (a bfloat16/float16 CPU case still compares with float32).
Random weights do not reconstruct images, so psnr_vs_input is a build-to-build tracking figure there;
MPSBENCH_ROUNDTRIP_VAE (a local directory or cached hub id) gives a real one.
"""

from __future__ import annotations

import copy
from typing import Any

from collector.kernels.family import CORRECTNESS_METRICS, generator, torch_dtype
from collector.models import vae_models
from collector.models.locate import local_models, require_named
from collector.models.model_workload import ModelWorkload
from collector.workload import Bench, Case

VAE_VARIABLE = "MPSBENCH_ROUNDTRIP_VAE"
SUBFOLDERS = ("", "vae")
RANDOM_SPECS = {
    "quick": [("kl-tiny", 64), ("qwenimage-tiny", 64)],
    "full": [("kl-sd", 512), ("kl-flux", 1024), ("qwenimage", 512), ("qwenimage", 1024)],
}
LOCAL_SIZES = {"quick": (256,), "full": (512, 1024)}
VIDEO_CLASSES = ("AutoencoderKLQwenImage",)  # take (B, C, T, H, W): the image is one frame
CPU_IS_REFERENCE = (
    "the device is the CPU and the case is float32: its output is the CPU float32 reference "
    "itself, so there is no device-vs-CPU difference to measure"
)


def seeded_image(case: Case, height: int, width: int):
    """A smooth image in (-1, 1): seeded noise at 1/8 resolution, upsampled — closer to a picture than
    per-pixel noise, which no VAE reconstructs."""
    import torch
    import torch.nn.functional as F

    low = torch.randn((1, 3, max(height // 8, 1), max(width // 8, 1)), generator=generator(case))
    image = torch.tanh(F.interpolate(low, size=(height, width), mode="bicubic", align_corners=False))
    return image.unsqueeze(2) if case.params["vae"] in VIDEO_CLASSES else image


def roundtrip(model: Any, image: Any):
    return model.decode(model.encode(image).latent_dist.mode()).sample


class VaeRoundtrip(ModelWorkload):
    name = "vae_roundtrip"
    description = "VAE encode→decode on the device vs CPU float32: PSNR vs CPU and vs the input (dB)"
    metrics = ("psnr_vs_input", *CORRECTNESS_METRICS)
    default_dtypes = ("float32",)

    def specs(self, profile: str) -> list[dict[str, Any]]:
        local = local_models(VAE_VARIABLE, SUBFOLDERS)
        if local:
            return [
                vae_models.local_identity(m) | {"height": s, "width": s} for m in local for s in LOCAL_SIZES[profile]
            ]
        return [vae_models.random_identity(n) | {"height": s, "width": s} for n, s in RANDOM_SPECS[profile]]

    def run(self, case: Case, bench: Bench) -> None:
        import torch

        p = case.params
        path = require_named(str(p["model"]), VAE_VARIABLE, SUBFOLDERS) if p["source"] == "local" else None
        reference_model = vae_models.build(case, torch.float32, torch.device("cpu"), path)
        device_model = vae_models.cast(copy.deepcopy(reference_model), bench.device, torch_dtype(case.dtype))
        image = seeded_image(case, int(p["height"]), int(p["width"]))
        with torch.inference_mode():
            output = roundtrip(device_model, image.to(bench.device, torch_dtype(case.dtype)))
            if bench.device_type == "cpu" and case.dtype == "float32":
                for metric in CORRECTNESS_METRICS:
                    bench.unavailable(metric, CPU_IS_REFERENCE)
            else:
                bench.correctness(output, roundtrip(reference_model, image), psnr_metric="psnr_vs_cpu")
            _record_vs_input(bench, output, image)


def _record_vs_input(bench: Bench, output: Any, image: Any) -> None:
    import torch

    from collector.timing.correctness import psnr_db  # imports torch: kept out of this module's import time

    out = output.detach().to("cpu", torch.float64)
    bad = int((~torch.isfinite(out)).sum())
    if bad:
        raise ValueError(f"the device's round-trip output has {bad} non-finite values (NaN/inf): no PSNR vs input")
    ref = image.to(torch.float64)
    psnr, warnings = psnr_db((out - ref).abs(), ref)
    bench.record("psnr_vs_input", [psnr], warnings=warnings)
