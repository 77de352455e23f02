"""benchmarks/collecting/sweep_overhead.py at its tiny size: one round over two builds, by hand and as a sweep."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_sweep_overhead_benchmark_runs_tiny():
    spec = importlib.util.spec_from_file_location(
        "bench_sweep", ROOT / "benchmarks" / "collecting" / "sweep_overhead.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    found = bench.measure(rounds=1)
    assert found["builds"] == 2 and found["rounds"] == 1 and found["n_slots"] == 2  # one slot per build
    for name in ("import_collector_s", "by_hand_run_s", "sweep_slot_s", "sweep_fixed_s"):
        assert found[name] > 0, name  # seconds; their sizes on a loaded 2-core box say nothing, so none is bounded
    assert found["overhead_per_build_round_s"] == found["sweep_slot_s"] - found["by_hand_run_s"]
    assert found["ratio_slot_to_by_hand"] == found["sweep_slot_s"] / found["by_hand_run_s"]
