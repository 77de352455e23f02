"""vae_tiled_decode and vae_roundtrip on the CPU through the real runner: the pad count against an independent
count, the tile grid against what diffusers walks, PSNR records, local weights and a missing VAE class."""

import math

import pytest
import torch

from collector.adapters.cpu import CpuAdapter
from collector.isolation.runner import RunContext, run_case
from collector.models import vae_models
from collector.models.pad_counter import count_pads
from collector.models.vae_roundtrip import CPU_IS_REFERENCE, VaeRoundtrip, roundtrip, seeded_image
from collector.models.vae_tiled_decode import TINY_TILING, VAE_VARIABLE, VaeTiledDecode, tile_grid
from collector.timing.correctness import psnr_db
from collector.timing.loop import TimingPolicy
from tests.torch_threads import one_thread  # noqa: F401  (autouse fixture)

FAST = TimingPolicy(region_budget_s=0.3, min_region_samples=3, max_region_samples=3)


def _run(workload, case) -> dict:
    return {r.metric: r for r in run_case(workload, case, RunContext(CpuAdapter(), FAST))}


def _hooked_counts(model) -> dict:
    """Calls of every WanCausalConv3d (each pads once before its conv) and of the decoder (once per tile
    and latent frame), counted by module hooks — a mechanism independent of the TorchFunctionMode."""
    from diffusers.models.autoencoders.autoencoder_kl_wan import WanCausalConv3d

    counts = {"causal_convs": 0, "decoder_calls": 0}

    def bump(key):
        return lambda *_: counts.__setitem__(key, counts[key] + 1)

    for module in model.modules():
        if isinstance(module, WanCausalConv3d):
            module.register_forward_pre_hook(bump("causal_convs"))
    model.decoder.register_forward_pre_hook(bump("decoder_calls"))
    return counts


def test_tiled_decode_quick_case():
    (case,) = VaeTiledDecode().cases("quick")
    p = case.params
    assert (p["tiles"], p["tile_rows"], p["tile_cols"], p["latent_frames"]) == (4, 2, 2, 2)
    assert tile_grid(p["latent_h"], p["latent_w"], TINY_TILING, 8) == (2, 2)
    r = _run(VaeTiledDecode(), case)
    model = vae_models.build(case, torch.float32, torch.device("cpu"))
    model.enable_tiling(
        tile_sample_min_height=64, tile_sample_min_width=64, tile_sample_stride_height=48, tile_sample_stride_width=48
    )
    counts = _hooked_counts(model)
    with torch.inference_mode():
        model.decode(torch.zeros(1, 4, 2, p["latent_h"], p["latent_w"]))
    assert counts["decoder_calls"] == p["tiles"] * p["latent_frames"]  # diffusers walked the case's grid
    assert r["pad_calls"].unit == "calls" and r["pad_calls"].samples == [counts["causal_convs"]] == [208.0]
    assert r["decode_time"].status.value == "ok" and r["decode_time"].unit == "s" and min(r["decode_time"].samples) > 0
    assert r["memory_driver_peak"].status.value == "ok"
    assert r["memory_outside_allocator"].status.value == "unavailable"


def test_pad_counter_counts_both_entry_points_once():
    x = torch.zeros(1, 1, 4, 4)
    assert count_pads(lambda: (torch.nn.functional.pad(x, (1, 1)), torch._C._nn.pad(x, (1, 1)), x + 1)) == 2


def test_full_tiled_decode_has_the_published_28_tile_case():
    cases = VaeTiledDecode().cases("full")
    wan22 = [c.params for c in cases if c.params["model"] == "wan2.2-ti2v-5b"]
    assert wan22 and all(p["tiles"] == 28 and (p["latent_h"], p["latent_w"]) == (48, 84) for p in wan22)
    assert all(p["z_dim"] == 48 and p["scale_factor_spatial"] == 16 for p in wan22)


def test_local_wan_vae_in_a_pipeline_folder(monkeypatch, tmp_path):
    (random_case,) = VaeTiledDecode().cases("quick")
    vae_models.build(random_case, torch.float32, torch.device("cpu")).save_pretrained(tmp_path / "Wan-tiny" / "vae")
    monkeypatch.setenv(VAE_VARIABLE, str(tmp_path / "Wan-tiny"))
    (case,) = VaeTiledDecode().cases("quick")
    assert (
        case.params["model"] == "Wan-tiny"
        and case.params["vae"] == "AutoencoderKLWan"
        and case.params["source"] == "local"
        and case.params["z_dim"] == 4
    )
    assert (case.params["tiles"], case.params["latent_h"]) == (4, 48)  # diffusers' 256/192 tiles, 8× compression
    assert _run(VaeTiledDecode(), case)["pad_calls"].samples[0] > 0


def test_roundtrip_float32_on_cpu():
    cases = VaeRoundtrip().cases("quick")
    assert [c.params["model"] for c in cases] == ["kl-tiny", "qwenimage-tiny"] and {c.dtype for c in cases} == {
        "float32"
    }
    for case in cases:
        r = _run(VaeRoundtrip(), case)
        for metric in ("psnr_vs_cpu", "max_abs_error", "max_rel_error"):
            assert (r[metric].status.value, r[metric].message) == ("unavailable", CPU_IS_REFERENCE)
        model = vae_models.build(case, torch.float32, torch.device("cpu"))
        image = seeded_image(case, 64, 64)
        with torch.inference_mode():
            out = roundtrip(model, image).double()
        mse = float(((out - image.double()) ** 2).mean())
        peak = float(image.max() - image.min())
        assert r["psnr_vs_input"].unit == "dB"
        assert r["psnr_vs_input"].samples[0] == pytest.approx(10 * math.log10(peak * peak / mse), rel=1e-6)
        assert math.isfinite(r["psnr_vs_input"].samples[0])


def test_roundtrip_bfloat16_compares_with_cpu_float32():
    case = VaeRoundtrip().cases("quick", ("bfloat16",))[0]
    r = _run(VaeRoundtrip(), case)
    psnr = r["psnr_vs_cpu"]
    assert psnr.status.value == "ok" and psnr.unit == "dB" and 10 < psnr.samples[0] < 150
    assert psnr.passed is not None and r["max_abs_error"].samples[0] > 0
    assert psnr_db(torch.zeros(3), torch.tensor([0.0, 1.0, 2.0]))[0] > psnr.samples[0]  # not the identical cap


def test_missing_vae_class_is_unsupported(monkeypatch):
    import diffusers

    monkeypatch.setattr(diffusers, "AutoencoderKLQwenImage", None)  # as an older diffusers lacks it
    case = VaeRoundtrip().cases("quick")[1]
    r = _run(VaeRoundtrip(), case)
    assert {x.status.value for x in r.values()} == {"unsupported"}
    assert f"diffusers {diffusers.__version__} has no AutoencoderKLQwenImage" in r["psnr_vs_input"].message
