"""Fingerprint of the machine and build: runs the commands / reads the files, then the pure parsers. The chips' specified
bandwidth (chips, nvidia) is here too: the denominator of bandwidth_fraction."""

from __future__ import annotations

import platform
import socket
import subprocess
from pathlib import Path

from bundle.schema import Machine
from collector.fingerprint import linux, macos
from collector.fingerprint.nvidia import gpu_chip


def _run(cmd: list[str], timeout_s: float = 20.0) -> str:
    """Output of a command, '' when it is missing or fails (an unknown field stays None, never a guess)."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _macos_fields() -> dict[str, object]:
    return macos.parse_machine({key: _run(cmd) for key, cmd in macos.COMMANDS.items()})


def _linux_fields(device_type: str) -> dict[str, object]:
    gpu = linux.parse_nvidia_smi(_run(linux.NVIDIA_SMI)) if device_type == "cuda" else None
    if gpu is None and device_type == "cuda":
        import torch

        try:
            gpu = torch.cuda.get_device_name()
        except Exception:  # noqa: BLE001 - unknown stays None
            gpu = None
    # a CUDA run's chip is its GPU ("NVIDIA H200"): the name its pages group by and its bandwidth is looked up by
    return {
        "cpu_model": linux.parse_cpuinfo(_read("/proc/cpuinfo")),
        "gpu_name": gpu,
        "chip": gpu_chip(gpu),
        "memory_bytes": linux.parse_meminfo(_read("/proc/meminfo")),
        "os_version": linux.parse_os_release(_read("/etc/os-release")) or platform.release(),
    }


def current_machine(name: str | None, device_type: str) -> Machine:
    system = platform.system()
    if system == "Darwin":
        fields = _macos_fields()
    elif system == "Linux":
        fields = _linux_fields(device_type)
    else:
        fields = {"cpu_model": platform.processor() or None, "os_version": platform.version()}
    os_name = {"Darwin": "macOS"}.get(system, system or "unknown")
    return Machine(
        name=name or socket.gethostname() or "unnamed", os=os_name, arch=platform.machine() or None, **fields
    )


def run_warnings(machine: Machine) -> list[str]:
    """Run-level quality warnings the machine state implies (battery, Low Power Mode, thermal pressure)."""
    out = []
    if machine.power_source == "battery":
        out.append("running on battery power: the OS may throttle CPU/GPU clocks; figures may be lower than on AC")
    if machine.low_power_mode:
        out.append("Low Power Mode is on: CPU/GPU clocks are capped; figures are not comparable with normal mode")
    if machine.thermal_state not in (None, "nominal"):
        out.append(f"thermal state at start: {machine.thermal_state}")
    return out
