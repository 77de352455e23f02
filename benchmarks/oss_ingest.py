"""Peak memory of `mpsbench ingest` of one large PyTorch OSS record file: the file is written as `mpsbench export
--format pytorch-oss` writes one run (bundle/pytorch_oss/writing.py: every record carries the run's header, its samples
and its runner), as a JSON list or JSON-each-row, then ingested by the real CLI in a fresh process under
/usr/bin/time; its peak RSS is compared with the file's size.

Usage: python -m benchmarks.oss_ingest [--mb 200] [--samples 100] [--format list|rows] [--tiny] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bundle.pytorch_oss.writing import to_records

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cpu-quick.json"


def write_records(path: Path, mb: float, samples: int, fmt: str) -> int:
    """A run of op_time results (one case each, `samples` samples) as records, until the file holds `mb` MB."""
    header = {k: v for k, v in json.loads(EXAMPLE.read_text(encoding="utf-8")).items() if k != "results"}
    header["run_id"] = "0" * 32
    target, n = mb * 1e6, 0
    with path.open("w", encoding="utf-8") as f:
        f.write("[" if fmt == "list" else "")
        while f.tell() < target:
            result = {
                "workload": "softmax",
                "suite": "kernels",
                "params": {"rows": n, "vocab": 151936},
                "dtype": "float32",
                "compile": "eager",
                "metric": "op_time",
                "unit": "µs",
                "status": "ok",
                "samples": [100.0 + (n * 7 + i) % 13 / 10 for i in range(samples)],
            }
            (record,) = to_records({**header, "results": [result]})
            text = json.dumps(record, ensure_ascii=False)
            f.write((",\n" if n else "") + text if fmt == "list" else text + "\n")
            n += 1
        f.write("]\n" if fmt == "list" else "")
    return n


def measure(path: Path, store: Path) -> dict:
    env = {**os.environ, "MPSBENCH_DB": str(store), "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "maxrss_kb=%M", sys.executable, "-m", "mpsbench", "ingest", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    found = re.search(r"maxrss_kb=(\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"ingest failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return {"peak_rss_mb": int(found.group(1)) / 1024, "seconds": round(seconds, 1), "said": done.stdout.strip()[:300]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=200.0)
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--format", choices=["list", "rows"], default="list")
    p.add_argument("--tiny", action="store_true", help="a 2 MB file: checks the script, measures nothing")
    p.add_argument("--json", action="store_true")
    o = p.parse_args()
    mb = 2.0 if o.tiny else o.mb
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"records.{o.format}.json"
        n = write_records(path, mb, o.samples, o.format)
        size_mb = path.stat().st_size / 2**20
        out = {"format": o.format, "records": n, "file_mb": round(size_mb, 1), **measure(path, Path(tmp) / "s.duckdb")}
    out["peak_over_file"] = round(out["peak_rss_mb"] / out["file_mb"], 2)
    print(json.dumps(out) if o.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
