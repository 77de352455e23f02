"""Every GET /api/v1 answer on the seeded store (benchmarks/stores/seed.py), as one JSON document, to check that a refactor
leaves the API's answers byte-identical: run it before and after, then `diff` the two files.

    python -m tests.api_dump > before.json   # … change the code …
    python -m tests.api_dump > after.json && diff before.json after.json

`--db STORE` reads a benchmarks/dashboard.py store instead (10 M rows: its Compare, Regressions, matrix, trends
and lists, BIG_URLS); it only reads, but copy the file first if the two runs' code could migrate it.

Each answer is kept as the exact body text the server sent (status code beside it), so a change in number
formatting or key order shows too. A route that does not exist yet answers 404 and is recorded as such.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

B, C = "torch=2.14.1", "torch=2.15.0rc1"
URLS = [
    "/api/v1/runs",
    "/api/v1/runs?chip=Apple%20M2",
    "/api/v1/runs?machine=studio-1",
    "/api/v1/runs?build=2.14.1",
    "/api/v1/runs?build=2.14.1%20(stable)",
    "/api/v1/runs?channel=rc",
    "/api/v1/runs?device=mps",
    "/api/v1/runs?dtype=bfloat16",
    "/api/v1/runs?compile=inductor",
    "/api/v1/runs?tag=role%3Dbaseline",
    "/api/v1/runs?limit=2",
    "/api/v1/runs?limit=0",
    "/api/v1/runs?tag=nope",
    "/api/v1/runs?colour=red",
    f"/api/v1/compare?baseline={B}&candidate={C}",
    f"/api/v1/compare?baseline={B}&candidate={C}&scope=chip",
    f"/api/v1/compare?baseline={B}&candidate={C}&workload=softmax,linear&metric=op_time",
    "/api/v1/compare?baseline=tag:role%3Dbaseline&candidate=tag:role%3Dcandidate",
    f"/api/v1/compare?baseline={B}&candidate=torch=9.9",
    f"/api/v1/compare?baseline={B}&candidate={C}&scope=rack",
    f"/api/v1/compare?baseline={B}&candidate={C}&metric=speed",
    "/api/v1/compare",
    f"/api/v1/regressions?baseline={B}&candidate={C}",
    f"/api/v1/regressions?baseline={B}&candidate={C}&scope=chip",
    f"/api/v1/regressions?baseline={B}&candidate={C}&threshold=0.01",
    f"/api/v1/regressions?baseline={B}&candidate={C}&threshold=x",
    "/api/v1/claims",
    f"/api/v1/claims?baseline={B}&candidate={C}",
    "/api/v1/claims?baseline=%3D%3D",
    "/api/v1/overview",
    "/api/v1/trends?workload=softmax&case_key=%7B%22rows%22%3A1%2C%22vocab%22%3A128256%7D&dtype=float32"
    "&compile=eager&metric=op_time",
    "/api/v1/matrix?metric=op_time&baseline=2.14.1&rows=chip&dtype=float32&compile=eager",
    "/api/v1/matrix?metric=op_time&baseline=2.14.1&rows=dtype&compile=eager",
    "/api/v1/sweeps",
    "/api/v1/memory",
    "/api/v1/memory?split_tag=role",
    "/api/v1/memory?workload=vae_tiled_decode",
    "/api/v1/correctness",
    "/api/v1/correctness?metric=psnr_vs_cpu&split_tag=role",
    "/api/v1/noise",
    "/api/v1/openapi.json",
]

# benchmarks/dashboard.py's store: builds 2.10.0, 2.11.0, …; machines mac-0…; chips "Apple M1 Max"…
BB, BC = "torch=2.10.0", "torch=2.11.0"
BIG_URLS = [
    "/api/v1/runs?limit=50",
    "/api/v1/runs?machine=mac-3&limit=20",
    f"/api/v1/compare?baseline={BB}&candidate={BC}",
    f"/api/v1/compare?baseline={BB}&candidate={BC}&scope=chip",
    f"/api/v1/compare?baseline={BB}&candidate={BC}&workload=softmax&dtype=float16",
    f"/api/v1/compare?baseline={BB}&candidate=torch=2.12.0&metric=achieved_bandwidth",
    f"/api/v1/regressions?baseline={BB}&candidate={BC}",
    f"/api/v1/regressions?baseline={BB}&candidate={BC}&scope=chip",
    f"/api/v1/regressions?baseline={BB}&candidate={BC}&threshold=1",
    f"/api/v1/claims?baseline={BB}&candidate={BC}",
    "/api/v1/overview",
    "/api/v1/trends?workload=softmax&case_key=%7B%22n%22%3A3%7D&dtype=float32&compile=eager&metric=op_time",
    "/api/v1/matrix?metric=op_time&baseline=2.10.0&rows=chip&dtype=float32&compile=eager",
    "/api/v1/sweeps",
    "/api/v1/noise",
    "/api/v1/memory",
    "/api/v1/memory?baseline=2.10.0%20(stable)&candidate=2.11.0%20(stable)&workload=llm_decode",
    "/api/v1/correctness",
    "/api/v1/correctness?metric=max_abs_error&baseline=2.10.0%20(stable)&candidate=2.12.0%20(stable)",
    f"/api/v1/compare?baseline={BB}&candidate={BC}&pool=1",
    "/api/v1/matrix",
    "/api/v1/matrix?metric=memory_driver_peak&baseline=2.11.0&rows=dtype&compile=eager",
    "/api/v1/openapi.json",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, help="a benchmarks/dashboard.py store (BIG_URLS), not the seeded one")
    args = parser.parse_args()
    if args.db is not None and not args.db.is_file():
        sys.exit(f"ERROR: --db {args.db}: no such store file")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MPSBENCH_DB"] = str(args.db or Path(tmp) / "seeded.duckdb")
        from starlette.applications import Starlette
        from starlette.testclient import TestClient

        from app import api_routes
        from benchmarks.stores.seed import seed_store
        from db.store.engine import shared_store

        if args.db is None:
            seed_store(shared_store())
        client = TestClient(Starlette(routes=api_routes()), client=("127.0.0.1", 50000), base_url="http://127.0.0.1")
        answers = {}
        for url in BIG_URLS if args.db else URLS:
            got = client.get(url)
            answers[url] = {"status": got.status_code, "body": got.text}
    json.dump(answers, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
