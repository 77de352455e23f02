"""The chip bandwidth table: exact names only, tiered chips by GPU cores, unknown -> None."""

import pytest

from collector.fingerprint.chips import CHIPS, chip_name, peak_bandwidth_gbs


@pytest.mark.parametrize(
    ("chip", "expected"),
    [
        ("Apple M1", 68.25),
        ("Apple M1 Pro", 200),
        ("Apple M1 Max", 400),
        ("Apple M1 Ultra", 800),
        ("Apple M2", 100),
        ("Apple M2 Pro", 200),
        ("Apple M2 Max", 400),
        ("Apple M2 Ultra", 800),
        ("Apple M3", 100),
        ("Apple M3 Pro", 150),
        ("Apple M3 Ultra", 819),
        ("Apple M4", 120),
        ("Apple M4 Pro", 273),
        ("Apple M5", 153),
    ],
)
def test_exact_chip_names(chip, expected):
    assert peak_bandwidth_gbs(chip, None) == expected
    assert peak_bandwidth_gbs(chip, 10) == expected  # untiered: cores do not matter


def test_tier_is_not_prefix_matched():
    assert peak_bandwidth_gbs("Apple M3", None) == 100
    assert peak_bandwidth_gbs("Apple M3 Pro", None) == 150  # not M3's 100
    assert peak_bandwidth_gbs("Apple M3 Ultra", None) == 819


@pytest.mark.parametrize(
    ("chip", "cores", "expected"),
    [("Apple M3 Max", 30, 300), ("Apple M3 Max", 40, 400), ("Apple M4 Max", 32, 410), ("Apple M4 Max", 40, 546)],
)
def test_tiered_chips_by_gpu_cores(chip, cores, expected):
    assert peak_bandwidth_gbs(chip, cores) == expected


@pytest.mark.parametrize(
    ("chip", "cores"), [("Apple M3 Max", None), ("Apple M4 Max", None), ("Apple M4 Max", 36), ("Apple M3 Max", 38)]
)
def test_tiered_chip_with_unknown_cores_is_none(chip, cores):
    assert peak_bandwidth_gbs(chip, cores) is None


@pytest.mark.parametrize(
    "chip",
    [
        None,
        "",
        "Apple M9",
        "Apple M3 Maxx",
        "Apple M3 Max Turbo",
        "M3 Max chip",
        "Intel(R) Core(TM) i9-9880H",
        "AMD EPYC 7763",
        "NVIDIA H100",
        "x86_64",
        "Apple A17 Pro",
    ],
)
def test_unknown_or_non_apple_chips_are_none(chip):
    assert peak_bandwidth_gbs(chip, 40) is None


def test_names_are_normalised_case_and_space():
    assert chip_name("  apple m4 pro ") == "M4 Pro"
    assert peak_bandwidth_gbs("APPLE M2 ULTRA", 76) == 800
    assert peak_bandwidth_gbs("M3 Max", 40) == 400  # the brand string without the vendor word


def test_every_entry_names_its_source():
    assert all(entry.source for entry in CHIPS.values())
    assert all((entry.gbs is None) != (entry.by_gpu_cores is None) for entry in CHIPS.values())


# --- NVIDIA GPUs: named from the device, bandwidth from collector/fingerprint/nvidia.py (no GPU here: recorded names) ------
# device names as torch.cuda.get_device_name() / nvidia-smi report them on each board
@pytest.mark.parametrize(
    ("device_name", "chip", "gbs"),
    [
        ("NVIDIA H200", "NVIDIA H200", 4800),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", 3350),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe", 2000),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", 2039),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", 1555),
        ("  NVIDIA  L4 ", "NVIDIA L4", 300),
        ("Tesla T4", "Tesla T4", 320),
    ],
)
def test_nvidia_chips_are_named_from_the_gpu_with_their_datasheet_bandwidth(device_name, chip, gbs):
    from collector.fingerprint.nvidia import gpu_chip

    assert gpu_chip(device_name) == chip
    assert peak_bandwidth_gbs(gpu_chip(device_name), None) == gbs


@pytest.mark.parametrize("device_name", ["NVIDIA GeForce RTX 5090", "NVIDIA H100", "NVIDIA B300 SXM6 AC"])
def test_unknown_or_ambiguous_gpus_have_no_bandwidth(device_name):
    from collector.fingerprint.nvidia import gpu_chip

    assert gpu_chip(device_name) == device_name and peak_bandwidth_gbs(device_name, None) is None


def test_a_cuda_machine_records_its_gpu_as_its_chip(monkeypatch):
    import torch

    import collector.fingerprint as fingerprint

    smi = "NVIDIA H200, 143771 MiB\n"  # recorded `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader`
    monkeypatch.setattr(fingerprint, "_run", lambda cmd, timeout_s=20.0: smi if cmd[0] == "nvidia-smi" else "")
    assert fingerprint._linux_fields("cuda")["chip"] == "NVIDIA H200"
    monkeypatch.setattr(fingerprint, "_run", lambda cmd, timeout_s=20.0: "")  # no nvidia-smi: torch names it
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    assert fingerprint._linux_fields("cuda")["chip"] == "NVIDIA H200"
    assert fingerprint._linux_fields("cpu")["chip"] is None  # a CPU run names no GPU


def test_bandwidth_fraction_on_a_known_and_an_unknown_gpu():
    import torch

    from bundle.schema import Status
    from collector.adapters.cpu import CpuAdapter
    from collector.isolation.runner import RunContext, run_case
    from collector.timing.loop import TimingPolicy
    from tests.test_collector_passes import OneOff

    a = torch.ones(1 << 16)
    w = OneOff(lambda b: b.time_op(lambda: a * 2, bytes_per_call=2 * a.numel() * 4))
    quick = TimingPolicy(budget_s=0.05, min_samples=6, min_time_s=0.01)
    for chip, peak in (("NVIDIA H200", 4800.0), ("NVIDIA GeForce RTX 5090", None)):
        got = {r.metric: r for r in run_case(w, w.cases("quick")[0], RunContext(CpuAdapter(), quick, chip=chip))}
        fraction, achieved = got["bandwidth_fraction"], got["achieved_bandwidth"]
        if peak is None:
            assert fraction.status == Status.unavailable and fraction.samples == []
            assert fraction.message == f"no specified peak memory bandwidth is known for chip {chip!r}"
        else:
            assert fraction.status == Status.ok and "4800 GB/s" in fraction.message
            assert fraction.samples == pytest.approx([s / peak * 100 for s in achieved.samples])


def test_a_cuda_bundle_without_a_chip_is_stored_under_its_gpu_name(tmp_path):
    """A bundle from a collector that did not name a CUDA chip (chip null, device "NVIDIA H200") is stored under
    the GPU's name, so chip scope pools it as "NVIDIA H200", not "unknown chip: vm"."""
    from db.ingest.core import ingest_bundle
    from db.review.comparison import CompareQuery, compute_compare
    from db.store.engine import open_store
    from tests.bundles import make_bundle

    engine = open_store(tmp_path / "s.duckdb")
    vm = {
        "name": "vm",
        "os": "Linux",
        "os_version": "6.8",
        "chip": None,
        "arch": "x86_64",
        "memory_bytes": 2**37,
        "power_source": "ac",
    }
    stable = {"torch_version": "2.14.1", "channel": "stable", "python_version": "3.11.7", "collector_version": "0.1.0"}
    for build in (stable, None):
        ingest_bundle(
            engine,
            make_bundle(
                machine=vm, device={"type": "cuda", "name": "NVIDIA H200"}, **({"build": build} if build else {})
            ),
        )
    result = compute_compare(
        engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1", "scope": "chip"})
    )
    engine.dispose()
    assert set(result.cases.scope) == {"NVIDIA H200"}
