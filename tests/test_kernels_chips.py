"""The chip bandwidth table: exact names only, tiered chips by GPU cores, unknown -> None."""
import pytest

from collector.chips import CHIPS, chip_name, peak_bandwidth_gbs


@pytest.mark.parametrize(("chip", "expected"), [
    ("Apple M1", 68.25), ("Apple M1 Pro", 200), ("Apple M1 Max", 400), ("Apple M1 Ultra", 800),
    ("Apple M2", 100), ("Apple M2 Pro", 200), ("Apple M2 Max", 400), ("Apple M2 Ultra", 800),
    ("Apple M3", 100), ("Apple M3 Pro", 150), ("Apple M3 Ultra", 819), ("Apple M4", 120),
    ("Apple M4 Pro", 273), ("Apple M5", 153)])
def test_exact_chip_names(chip, expected):
    assert peak_bandwidth_gbs(chip, None) == expected
    assert peak_bandwidth_gbs(chip, 10) == expected  # untiered: cores do not matter


def test_tier_is_not_prefix_matched():
    assert peak_bandwidth_gbs("Apple M3", None) == 100
    assert peak_bandwidth_gbs("Apple M3 Pro", None) == 150  # not M3's 100
    assert peak_bandwidth_gbs("Apple M3 Ultra", None) == 819


@pytest.mark.parametrize(("chip", "cores", "expected"), [
    ("Apple M3 Max", 30, 300), ("Apple M3 Max", 40, 400), ("Apple M4 Max", 32, 410), ("Apple M4 Max", 40, 546)])
def test_tiered_chips_by_gpu_cores(chip, cores, expected):
    assert peak_bandwidth_gbs(chip, cores) == expected


@pytest.mark.parametrize(("chip", "cores"), [
    ("Apple M3 Max", None), ("Apple M4 Max", None), ("Apple M4 Max", 36), ("Apple M3 Max", 38)])
def test_tiered_chip_with_unknown_cores_is_none(chip, cores):
    assert peak_bandwidth_gbs(chip, cores) is None


@pytest.mark.parametrize("chip", [
    None, "", "Apple M9", "Apple M3 Maxx", "Apple M3 Max Turbo", "M3 Max chip", "Intel(R) Core(TM) i9-9880H",
    "AMD EPYC 7763", "NVIDIA H100", "x86_64", "Apple A17 Pro"])
def test_unknown_or_non_apple_chips_are_none(chip):
    assert peak_bandwidth_gbs(chip, 40) is None


def test_names_are_normalised_case_and_space():
    assert chip_name("  apple m4 pro ") == "M4 Pro"
    assert peak_bandwidth_gbs("APPLE M2 ULTRA", 76) == 800
    assert peak_bandwidth_gbs("M3 Max", 40) == 400  # the brand string without the vendor word


def test_every_entry_names_its_source():
    assert all(entry.source for entry in CHIPS.values())
    assert all((entry.gbs is None) != (entry.by_gpu_cores is None) for entry in CHIPS.values())
