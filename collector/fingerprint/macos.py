"""macOS machine identity, parsed from recorded command outputs (pure functions; the commands run elsewhere).

Commands: `sysctl -n machdep.cpu.brand_string`, `sysctl hw.model hw.memsize hw.perflevel0.physicalcpu
hw.perflevel1.physicalcpu kern.osproductversion`, `system_profiler SPDisplaysDataType -json`, `sw_vers`,
`pmset -g batt`, `pmset -g`, `pmset -g therm`.
"""

from __future__ import annotations

import json
import re

COMMANDS: dict[str, list[str]] = {
    "brand": ["sysctl", "-n", "machdep.cpu.brand_string"],
    "sysctl": [
        "sysctl",
        "hw.model",
        "hw.memsize",
        "hw.perflevel0.physicalcpu",
        "hw.perflevel1.physicalcpu",
        "kern.osproductversion",
    ],
    "displays": ["system_profiler", "SPDisplaysDataType", "-json"],
    "sw_vers": ["sw_vers"],
    "batt": ["pmset", "-g", "batt"],
    "pmset": ["pmset", "-g"],
    "therm": ["pmset", "-g", "therm"],
}


def parse_sysctl(text: str) -> dict[str, str]:
    """`sysctl a b c` prints "a: value" lines (older releases "a = value")."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([\w.]+)\s*[:=]\s*(.*?)\s*$", line)
        if m:
            out[m[1]] = m[2]
    return out


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().isdigit() else None


def parse_displays(text: str) -> tuple[str | None, int | None]:
    """(GPU name, GPU cores) of the first GPU in `system_profiler SPDisplaysDataType -json` output."""
    try:
        gpus = json.loads(text).get("SPDisplaysDataType") or []
    except (json.JSONDecodeError, AttributeError):
        return None, None
    for gpu in gpus:
        name = gpu.get("sppci_model") or gpu.get("_name")
        cores = _int(str(gpu.get("sppci_cores"))) if gpu.get("sppci_cores") is not None else None
        if name:
            return name, cores
    return None, None


def parse_sw_vers(text: str) -> str | None:
    m = re.search(r"ProductVersion:\s*(\S+)", text)
    return m[1] if m else None


def parse_power_source(text: str) -> str | None:
    """`pmset -g batt`: "Now drawing from 'AC Power'" -> "ac", 'Battery Power' -> "battery"."""
    m = re.search(r"drawing from '([^']+)'", text)
    if not m:
        return None
    return {"AC Power": "ac", "Battery Power": "battery"}.get(m[1], m[1].lower())


def parse_low_power_mode(text: str) -> bool | None:
    """`pmset -g`: " lowpowermode 1" (older macOS) or " powermode 1" (newer: 0 automatic, 1 low power,
    2 high power), read from the "Currently in use" section; neither line (no such mode) -> None."""
    in_use = text.split("Currently in use:", 1)[-1]
    m = re.search(r"^\s*(lowpowermode|powermode)\s+(\d+)", in_use, re.MULTILINE)
    return m[2] == "1" if m else None


def parse_thermal_state(text: str) -> str | None:
    """`pmset -g therm`: the reported warning levels / CPU limits, "nominal" when they show no throttling.

    On Apple silicon pmset records nothing ("No CPU power status has been recorded", see exelban/stats#749)
    even under thermal pressure, so three "No … recorded" notes are unknown (None), not "nominal"."""
    levels = re.findall(r"(?:Thermal|Performance) warning level set to (\d+)", text)
    limits = dict(re.findall(r"(CPU_Speed_Limit|CPU_Scheduler_Limit)\s*=\s*(\d+)", text))
    if any(level != "0" for level in levels):
        return "warning level " + "/".join(levels)
    if limits.get("CPU_Speed_Limit", "100") != "100" or limits.get("CPU_Scheduler_Limit", "100") != "100":
        return "cpu limited " + ", ".join(f"{k}={v}" for k, v in limits.items())
    return "nominal" if levels or limits else None


def parse_machine(outputs: dict[str, str]) -> dict[str, object]:
    """Machine fields from the outputs of COMMANDS (keys as in COMMANDS; missing outputs give None)."""
    sysctl = parse_sysctl(outputs.get("sysctl", ""))
    gpu_name, gpu_cores = parse_displays(outputs.get("displays", ""))
    brand = outputs.get("brand", "").strip() or None
    return {
        "chip": brand,
        "cpu_model": brand,
        "hw_model": sysctl.get("hw.model"),
        "gpu_name": gpu_name,
        "gpu_cores": gpu_cores,
        "memory_bytes": _int(sysctl.get("hw.memsize")),
        "cpu_p_cores": _int(sysctl.get("hw.perflevel0.physicalcpu")),
        "cpu_e_cores": _int(sysctl.get("hw.perflevel1.physicalcpu")),
        "os_version": parse_sw_vers(outputs.get("sw_vers", "")) or sysctl.get("kern.osproductversion"),
        "power_source": parse_power_source(outputs.get("batt", "")),
        "low_power_mode": parse_low_power_mode(outputs.get("pmset", "")),
        "thermal_state": parse_thermal_state(outputs.get("therm", "")),
    }
