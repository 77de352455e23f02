"""Vendor-specified unified-memory bandwidth of Apple-silicon chips (GB/s), the denominator of bandwidth_fraction.

Figures are Apple's own (newsroom announcements and Mac tech-spec pages, "up to … GB/s of unified memory
bandwidth"). Where a chip's bandwidth depends on its GPU core count (M3 Max, M4 Max) the table is keyed by
cores, and an unknown core count gives None rather than a guess. Any chip not listed (or not Apple) -> None:
a fraction of an unknown peak would be a made-up number. NVIDIA GPUs: collector/fingerprint/nvidia.py.

Checked 2026-12 against press coverage quoting Apple's spec pages (MacRumors, Ars Technica, TechPowerUp,
AnandTech, Engadget). Not confirmed beyond rounding: M1 68.25 (sources say "68 GB/s"; 68.25 is LPDDR4X-4266
on a 128-bit bus); M3 Ultra 819 (Apple says "over 800 GB/s", spec sheet 819 GB/s). M5 Pro 307 and M5 Max
614 (40-core GPU) come from secondary coverage of Apple's 2026 spec pages; the M5 Max with fewer GPU cores is
left out (its figure was not found).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from collector.fingerprint.nvidia import gpu_peak_bandwidth_gbs


@dataclass(frozen=True)
class ChipBandwidth:
    gbs: float | None  # one figure for every configuration of the chip
    by_gpu_cores: dict[int, float] | None = None  # tiered chips
    source: str = "Apple newsroom / Mac tech specs"


_NEWSROOM = "Apple newsroom announcement and Mac tech specs"
CHIPS: dict[str, ChipBandwidth] = {
    "M1": ChipBandwidth(68.25, source=f"{_NEWSROOM} (2020-11)"),
    "M1 Pro": ChipBandwidth(200, source=f"{_NEWSROOM} (2021-10)"),
    "M1 Max": ChipBandwidth(400, source=f"{_NEWSROOM} (2021-10)"),
    "M1 Ultra": ChipBandwidth(800, source=f"{_NEWSROOM} (2022-03)"),
    "M2": ChipBandwidth(100, source=f"{_NEWSROOM} (2022-06)"),
    "M2 Pro": ChipBandwidth(200, source=f"{_NEWSROOM} (2023-01)"),
    "M2 Max": ChipBandwidth(400, source=f"{_NEWSROOM} (2023-01)"),
    "M2 Ultra": ChipBandwidth(800, source=f"{_NEWSROOM} (2023-06)"),
    "M3": ChipBandwidth(100, source=f"{_NEWSROOM} (2023-10)"),
    "M3 Pro": ChipBandwidth(150, source=f"{_NEWSROOM} (2023-10)"),
    "M3 Max": ChipBandwidth(None, {30: 300, 40: 400}, source="MacBook Pro (M3) tech specs (2023-10)"),
    "M3 Ultra": ChipBandwidth(819, source="Mac Studio (2025) tech specs"),
    "M4": ChipBandwidth(120, source=f"{_NEWSROOM} (2024-05)"),
    "M4 Pro": ChipBandwidth(273, source=f"{_NEWSROOM} (2024-10)"),
    "M4 Max": ChipBandwidth(None, {32: 410, 40: 546}, source="MacBook Pro (M4) tech specs (2024-10)"),
    "M5": ChipBandwidth(153, source=f"{_NEWSROOM} (2025-10)"),
    "M5 Pro": ChipBandwidth(307, source="MacBook Pro (M5 Pro/Max) tech specs (2026-03), via press coverage"),
    "M5 Max": ChipBandwidth(None, {40: 614}, source="MacBook Pro (M5 Pro/Max) tech specs (2026-03), via press"),
}

_APPLE_CHIP = re.compile(r"^\s*(?:apple\s+)?(m\d+)(?:\s+(pro|max|ultra))?\s*$", re.IGNORECASE)


def chip_name(chip: str | None) -> str | None:
    """'Apple M3 Max' (or 'M3 Max') -> 'M3 Max'; anything else -> None."""
    if not chip:
        return None
    found = _APPLE_CHIP.match(chip)
    if found is None:
        return None
    family, tier = found.group(1).upper(), found.group(2)
    return f"{family} {tier.capitalize()}" if tier else family


def peak_bandwidth_gbs(chip: str | None, gpu_cores: int | None) -> float | None:
    """The chip's specified peak memory bandwidth in GB/s (Apple's unified memory, or an NVIDIA GPU's from
    collector.fingerprint.nvidia), or None where it is not known."""
    name = chip_name(chip)
    if name is None:
        return gpu_peak_bandwidth_gbs(chip)
    entry = CHIPS.get(name)
    if entry is None:
        return None
    if entry.by_gpu_cores is not None:
        return entry.by_gpu_cores.get(gpu_cores) if gpu_cores is not None else None
    return entry.gbs
