"""benchmarks/sweep_overhead.py at its tiny size: one round over two builds, by hand and as a sweep."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_sweep_overhead_benchmark_runs_tiny():
    spec = importlib.util.spec_from_file_location("bench_sweep", ROOT / "benchmarks" / "sweep_overhead.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    found = bench.measure(rounds=1)
    assert found["builds"] == 2 and found["rounds"] == 1
    # a run imports the collector (torch included), whether a sweep starts it or a person does
    assert found["by_hand_run_s"] > found["import_collector_s"] * 0.5
    assert found["sweep_slot_s"] > found["import_collector_s"] * 0.5
    # the sweep adds polling and journal lines to a slot, not a second process: well under one more run
    assert found["overhead_per_build_round_s"] < found["by_hand_run_s"]
    assert found["sweep_fixed_s"] > 0  # its own start and one probe per build
    assert found["overhead_per_build_round_s"] == found["sweep_slot_s"] - found["by_hand_run_s"]
