"""Diffusers VAEs for the VAE workloads: named random-weight configs, or a user's local weights.

Each random config spells out the values that identify it (so cases() needs no diffusers import and a
config's identity does not shift with a diffusers default). "wan2.2-ti2v-5b" is the Wan2.2-TI2V-5B VAE's
architecture (z 48, patch 2, 16× spatial) — the model of the published 28-tile, 8,764-pad decode — with
random weights; "wan2.1" is diffusers' default AutoencoderKLWan. A local directory's identity is read from
its config.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from collector.models.locate import LocalModel
from collector.workload import Case, Unsupported

_WAN_TINY = dict(
    base_dim=8,
    z_dim=4,
    dim_mult=[1, 2, 2, 2],
    num_res_blocks=1,
    scale_factor_spatial=8,
    latents_mean=[0.0] * 4,
    latents_std=[1.0] * 4,
)
_KL_TINY = dict(
    block_out_channels=[16, 32],
    down_block_types=["DownEncoderBlock2D"] * 2,
    up_block_types=["UpDecoderBlock2D"] * 2,
    layers_per_block=1,
    latent_channels=4,
    norm_num_groups=8,
)
_KL_SD = dict(
    block_out_channels=[128, 256, 512, 512],
    down_block_types=["DownEncoderBlock2D"] * 4,
    up_block_types=["UpDecoderBlock2D"] * 4,
    layers_per_block=2,
    latent_channels=4,
)
RANDOM: dict[str, tuple[str, dict[str, Any]]] = {
    "wan-tiny": ("AutoencoderKLWan", _WAN_TINY),
    "wan2.1": ("AutoencoderKLWan", dict(base_dim=96, z_dim=16, scale_factor_spatial=8)),
    "wan2.2-ti2v-5b": (
        "AutoencoderKLWan",
        dict(
            base_dim=160,
            decoder_base_dim=256,
            z_dim=48,
            dim_mult=[1, 2, 4, 4],
            num_res_blocks=2,
            in_channels=12,
            out_channels=12,
            is_residual=True,
            patch_size=2,
            scale_factor_spatial=16,
            scale_factor_temporal=4,
            temperal_downsample=[False, True, True],
            latents_mean=[0.0] * 48,
            latents_std=[1.0] * 48,
        ),
    ),
    "kl-tiny": ("AutoencoderKL", _KL_TINY),
    "kl-sd": ("AutoencoderKL", _KL_SD),
    "kl-flux": ("AutoencoderKL", dict(_KL_SD, latent_channels=16)),
    "qwenimage-tiny": (
        "AutoencoderKLQwenImage",
        dict(
            base_dim=8, z_dim=4, dim_mult=[1, 2, 2, 2], num_res_blocks=1, latents_mean=[0.0] * 4, latents_std=[1.0] * 4
        ),
    ),
    "qwenimage": ("AutoencoderKLQwenImage", dict(base_dim=96, z_dim=16)),
}
IDENTITY_KEYS = (
    "base_dim",
    "decoder_base_dim",
    "z_dim",
    "latent_channels",
    "patch_size",
    "scale_factor_spatial",
    "block_out_channels",
)


def _identity(class_name: str, config: dict[str, Any]) -> dict[str, Any]:
    found = {k: config[k] for k in IDENTITY_KEYS if config.get(k) is not None}
    return {"vae": class_name} | {k: ",".join(map(str, v)) if isinstance(v, list) else v for k, v in found.items()}


def random_identity(name: str) -> dict[str, Any]:
    class_name, config = RANDOM[name]
    return {"model": name, "source": "random"} | _identity(class_name, config)


def local_identity(model: LocalModel) -> dict[str, Any]:
    base: dict[str, Any] = {"model": model.name, "source": "local"}
    if model.path is None:  # listed anyway: run() turns it into an error record naming what was looked for
        return base
    config = json.loads((model.path / "config.json").read_text(encoding="utf-8"))
    return base | _identity(str(config.get("_class_name", "?")), config)


def vae_class(class_name: str):
    import diffusers

    found = getattr(diffusers, class_name, None)
    if found is None:
        raise Unsupported(f"diffusers {diffusers.__version__} has no {class_name}")
    return found


def build(case: Case, dtype, device, path: Path | None = None):
    """The case's VAE in eval mode: seeded random weights from its named config, or a local directory's."""
    from collector.models.model_workload import seeded_weights

    cls = vae_class(str(case.params["vae"]))
    if path is not None:
        model = cls.from_pretrained(str(path), dtype=dtype, local_files_only=True)
    else:
        with seeded_weights(case):
            model = cast(cls(**RANDOM[str(case.params["model"])][1]), dtype=dtype)
    return cast(model, device=device).eval()


def cast(model: Any, device=None, dtype=None):
    """Move/cast a diffusers model. Classes without float32-pinned modules are cast as a plain nn.Module:
    diffusers' own to() would only log a warning about that (empty) module list on every cast."""
    import torch

    if getattr(model, "_keep_in_fp32_modules", None):
        return model.to(device=device, dtype=dtype)
    return torch.nn.Module.to(model, device=device, dtype=dtype)
