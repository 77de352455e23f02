"""vae_tiled_decode: diffusers AutoencoderKLWan tiled decode of a latent sized to a chosen tile grid.

The published Wan2.2 case: a 28-tile decode made 8,764 constant-pad calls and drove the Metal driver's peak
to 270 GiB while the allocator's reserved peak stayed at 8 GiB. Per case, each its own record and pass:
pad_calls (F.pad calls of one decode, counted under a TorchFunctionMode in a pass of its own), decode_time
(s per decode), the three memory peaks and driver memory outside the allocator.

Tiles: diffusers walks the latent in steps of stride_latent = tile_stride / spatial compression, so a
latent of rows·stride_latent × cols·stride_latent decodes as exactly rows × cols tiles. MPSBENCH_WAN_VAE
(a local directory or cached hub id; a pipeline's vae/ subfolder is found) replaces the random configs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from collector.kernels.family import generator, torch_dtype
from collector.models import vae_models
from collector.models.locate import local_models, require_named
from collector.models.model_workload import MEMORY_METRICS, ModelWorkload
from collector.models.pad_counter import count_pads
from collector.workload import Bench, Case

VAE_VARIABLE = "MPSBENCH_WAN_VAE"
SUBFOLDERS = ("", "vae")


@dataclass(frozen=True)
class Tiling:
    sample: int  # tile side in pixels (diffusers' tile_sample_min_height/width)
    stride: int  # pixels between tile starts (tile_sample_stride_height/width)


DIFFUSERS_TILING = Tiling(256, 192)  # AutoencoderKLWan's defaults
TINY_TILING = Tiling(64, 48)  # the same 4:3 overlap at a size a 2-core CPU decodes in well under a second
RANDOM_SPECS = {  # (config, tile rows, tile cols, latent frames, tiling)
    "quick": [("wan-tiny", 2, 2, 2, TINY_TILING)],
    "full": [
        ("wan2.1", 2, 2, 3, DIFFUSERS_TILING),
        ("wan2.2-ti2v-5b", 4, 7, 1, DIFFUSERS_TILING),
        ("wan2.2-ti2v-5b", 4, 7, 3, DIFFUSERS_TILING),
    ],
}
LOCAL_GRIDS = {"quick": [(2, 2, 1)], "full": [(4, 7, 1), (4, 7, 3)]}  # (rows, cols, latent frames)


def latent_stride(tiling: Tiling, compression: int) -> int:
    return tiling.stride // compression


def tile_grid(latent_h: int, latent_w: int, tiling: Tiling, compression: int) -> tuple[int, int]:
    """How many tile rows and columns diffusers' tiled_decode walks for this latent."""
    step = latent_stride(tiling, compression)
    return math.ceil(latent_h / step), math.ceil(latent_w / step)


def _grid_params(identity: dict[str, Any], rows: int, cols: int, frames: int, tiling: Tiling) -> dict[str, Any]:
    compression = int(identity.get("scale_factor_spatial") or 8)
    step = latent_stride(tiling, compression)
    return identity | {
        "tiles": rows * cols,
        "tile_rows": rows,
        "tile_cols": cols,
        "latent_frames": frames,
        "latent_h": rows * step,
        "latent_w": cols * step,
        "height": rows * step * compression,
        "width": cols * step * compression,
        "tile_sample": tiling.sample,
        "tile_stride": tiling.stride,
    }


class VaeTiledDecode(ModelWorkload):
    name = "vae_tiled_decode"
    description = "AutoencoderKLWan tiled decode: F.pad calls per decode, s per decode, driver vs allocator memory"
    metrics = ("pad_calls", "decode_time", *MEMORY_METRICS)
    default_dtypes = ("float32",)  # Wan pipelines keep the VAE in float32

    def specs(self, profile: str) -> list[dict[str, Any]]:
        local = local_models(VAE_VARIABLE, SUBFOLDERS)
        if local:
            return [
                _grid_params(vae_models.local_identity(m), r, c, f, DIFFUSERS_TILING)
                for m in local
                for r, c, f in LOCAL_GRIDS[profile]
            ]
        return [_grid_params(vae_models.random_identity(n), r, c, f, t) for n, r, c, f, t in RANDOM_SPECS[profile]]

    def run(self, case: Case, bench: Bench) -> None:
        import torch

        p = case.params
        path = require_named(str(p["model"]), VAE_VARIABLE, SUBFOLDERS) if p["source"] == "local" else None
        model = vae_models.build(case, torch_dtype(case.dtype), bench.device, path)
        tiling = Tiling(int(p["tile_sample"]), int(p["tile_stride"]))
        _enable_tiling(model, tiling, (int(p["tile_rows"]), int(p["tile_cols"])), case)
        shape = (1, model.config.z_dim, int(p["latent_frames"]), int(p["latent_h"]), int(p["latent_w"]))
        z = torch.randn(shape, generator=generator(case)).to(bench.device, torch_dtype(case.dtype))
        decode = lambda: model.decode(z).sample  # noqa: E731
        with torch.inference_mode():
            bench.record("pad_calls", [count_pads(decode)])
            bench.time_region(decode, metric="decode_time")
            bench.memory(decode)


def _enable_tiling(model: Any, tiling: Tiling, grid: tuple[int, int], case: Case) -> None:
    """Tiling on, and the tile grid the model will walk checked against the case's (a local VAE whose
    compression differs from its config's would otherwise be measured at a different tile count)."""
    model.enable_tiling(
        tile_sample_min_height=tiling.sample,
        tile_sample_min_width=tiling.sample,
        tile_sample_stride_height=tiling.stride,
        tile_sample_stride_width=tiling.stride,
    )
    walked = tile_grid(
        int(case.params["latent_h"]), int(case.params["latent_w"]), tiling, int(model.spatial_compression_ratio)
    )
    if walked != grid:
        raise ValueError(
            f"the VAE would decode {walked[0]}×{walked[1]} tiles, not the case's {grid[0]}×{grid[1]} "
            f"(spatial compression {model.spatial_compression_ratio})"
        )
