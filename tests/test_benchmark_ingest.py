"""benchmarks/ingest.py at a tiny size, so it cannot rot (its full size is a manual command)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ingest_benchmark_runs_at_a_tiny_size():
    out = subprocess.run([sys.executable, "benchmarks/ingest.py", "--rows", "300", "--upload-rows", "40",
                          "--repeats", "1", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    assert (figures["rows"], figures["upload_rows"]) == (300, 40)
    assert figures["project_s"] > 0 and figures["raw_duckdb_s"] > 0 and figures["upload_s"] > 0
    ratio = figures["project_s"] / figures["raw_duckdb_s"]  # of rounded times: a few % off the printed ratio
    assert figures["ratio_project_over_raw"] == pytest.approx(ratio, rel=0.05)
