"""Device adapters: get_adapter("auto" | "mps" | "cuda" | "cpu")."""

from __future__ import annotations

import torch

from collector.adapters.base import Adapter, Figure, MemoryReport
from collector.errors import CollectorError

DEVICES = ("auto", "mps", "cuda", "cpu")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())


def resolve(name: str) -> str:
    """The concrete device type for a --device choice; a device this machine lacks is a CollectorError."""
    if name not in DEVICES:
        raise CollectorError(f"--device must be one of {', '.join(DEVICES)} (got {name!r})")
    if name == "auto":
        return "mps" if _mps_available() else "cuda" if torch.cuda.is_available() else "cpu"
    if name == "mps" and not _mps_available():
        raise CollectorError(f"--device mps: MPS is not available with torch {torch.__version__} on this machine")
    if name == "cuda" and not torch.cuda.is_available():
        raise CollectorError(f"--device cuda: CUDA is not available with torch {torch.__version__} on this machine")
    return name


def get_adapter(name: str = "auto", *, chip: str | None = None) -> Adapter:
    device_type = resolve(name)
    if device_type == "mps":
        from collector.adapters.mps import MpsAdapter

        return MpsAdapter(chip)
    if device_type == "cuda":
        from collector.adapters.cuda import CudaAdapter

        return CudaAdapter()
    from collector.adapters.cpu import CpuAdapter

    return CpuAdapter()


__all__ = ["Adapter", "Figure", "MemoryReport", "DEVICES", "get_adapter", "resolve"]
