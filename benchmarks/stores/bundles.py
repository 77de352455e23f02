"""A typed bundle (bundle.schema.Bundle): the envelope every seeded store's runs share (benchmarks/stores/seed.py,
and the tests' verdict_store.py, decode_store.py, dashboard_bundles.py, release_bundles.py, release_walk.py), their
results their own."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bundle.schema import SCHEMA_VERSION, Build, Bundle, DeviceInfo, Machine, Result

# an Apple-silicon Mac on AC power, Low Power Mode off, unless the machine given says otherwise
MAC = {"os": "macOS", "os_version": "26.1", "arch": "arm64", "power_source": "ac", "low_power_mode": False}


def typed_bundle(
    run_id: str,
    start: datetime,
    minutes: float,
    machine: dict[str, Any],
    build: dict[str, Any],
    results: list[Result],
    tags: dict[str, str] | None = None,
    device: str = "mps",
) -> Bundle:
    """A complete run of `minutes` from `start` on `machine` (over MAC) of `build` (collector 0.1.0 unless given),
    its device named after the machine's chip."""
    machine = MAC | machine
    return Bundle(
        schema_version=SCHEMA_VERSION,
        run_id=run_id,
        started_at=start,
        ended_at=start + timedelta(minutes=minutes),
        complete=True,
        machine=Machine(**machine),
        build=Build(**{"collector_version": "0.1.0"} | build),
        device=DeviceInfo(type=device, name=machine["chip"]),
        tags=tags or {},
        results=results,
    )
