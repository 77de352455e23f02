"""NVIDIA GPUs: the chip name a CUDA run records and the specified peak memory bandwidth (GB/s) of known models,
the denominator of bandwidth_fraction on CUDA as collector.fingerprint.chips is on Apple silicon.

The name is the GPU's own, as torch.cuda.get_device_name() (or nvidia-smi) reports it: "NVIDIA H200",
"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla T4". Bandwidth is looked up by that exact name (spaces
and case normalised): one model name can hide boards of different bandwidth ("NVIDIA H100" alone could be the
3.35 TB/s SXM or the 2 TB/s PCIe card), so an unlisted or ambiguous name gives None and the figure is
"unavailable", never a guess.

Figures are NVIDIA's datasheets (memory bandwidth row), checked 2026-12:
  H200 SXM and H200 NVL: 4.8 TB/s (NVIDIA H200 Tensor Core GPU datasheet)
  H100 SXM 3.35 TB/s, H100 PCIe 2 TB/s, H100 NVL 3.9 TB/s (NVIDIA H100 Tensor Core GPU datasheet)
  A100 40GB SXM/PCIe 1,555 GB/s, A100 80GB SXM 2,039 GB/s, A100 80GB PCIe 1,935 GB/s (NVIDIA A100 datasheet)
  L4 300 GB/s (NVIDIA L4 datasheet); L40S 864 GB/s (NVIDIA L40S datasheet); A10 600 GB/s (NVIDIA A10 datasheet)
  T4 320 GB/s (NVIDIA T4 datasheet); V100 SXM2/PCIe 16 and 32 GB 900 GB/s (NVIDIA V100 datasheet)
"""

from __future__ import annotations

PEAK_GBS: dict[str, float] = {  # the device name as torch.cuda.get_device_name() gives it, upper-cased
    "NVIDIA H200": 4800,
    "NVIDIA H200 NVL": 4800,
    "NVIDIA H100 80GB HBM3": 3350,
    "NVIDIA H100 PCIE": 2000,
    "NVIDIA H100 NVL": 3900,
    "NVIDIA A100-SXM4-40GB": 1555,
    "NVIDIA A100-PCIE-40GB": 1555,
    "NVIDIA A100-SXM4-80GB": 2039,
    "NVIDIA A100 80GB PCIE": 1935,
    "NVIDIA L4": 300,
    "NVIDIA L40S": 864,
    "NVIDIA A10": 600,
    "TESLA T4": 320,
    "TESLA V100-SXM2-16GB": 900,
    "TESLA V100-SXM2-32GB": 900,
    "TESLA V100-PCIE-16GB": 900,
    "TESLA V100-PCIE-32GB": 900,
}


def _key(name: str) -> str:
    return " ".join(name.split()).upper()


def gpu_chip(device_name: str | None) -> str | None:
    """The chip a CUDA run records: the GPU's reported name with its spacing tidied ("NVIDIA H200"), or None
    when the device gave no name (then the run says its chip is unknown, as before)."""
    name = " ".join((device_name or "").split())
    return name or None


def gpu_peak_bandwidth_gbs(chip: str | None) -> float | None:
    """The GPU's specified peak memory bandwidth in GB/s, or None for a GPU not in PEAK_GBS."""
    return PEAK_GBS.get(_key(chip)) if chip else None
