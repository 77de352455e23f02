"""Linux machine identity from /proc/cpuinfo, /proc/meminfo and nvidia-smi output (pure functions)."""

from __future__ import annotations

import re

NVIDIA_SMI = ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"]


def parse_cpuinfo(text: str) -> str | None:
    """ "model name" (x86) or "Model"/"Hardware" (Arm boards) of /proc/cpuinfo."""
    for key in ("model name", "Model", "Hardware"):
        m = re.search(rf"^{key}\s*:\s*(.+?)\s*$", text, re.MULTILINE)
        if m:
            return m[1]
    return None


def parse_meminfo(text: str) -> int | None:
    m = re.search(r"^MemTotal:\s*(\d+)\s*kB", text, re.MULTILINE)
    return int(m[1]) * 1024 if m else None


def parse_nvidia_smi(text: str) -> str | None:
    """First GPU name of `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader`."""
    for line in text.splitlines():
        name = line.split(",")[0].strip()
        if name:
            return name
    return None


def parse_os_release(text: str) -> str | None:
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', text, re.MULTILINE)
    return m[1] if m else None
