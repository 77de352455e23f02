"""Every GET /api/v1 answer on the seeded store (tests/seed.py), as one JSON document, to check that a refactor
leaves the API's answers byte-identical: run it before and after, then `diff` the two files.

    python -m tests.api_dump > before.json   # … change the code …
    python -m tests.api_dump > after.json && diff before.json after.json

Each answer is kept as the exact body text the server sent (status code beside it), so a change in number
formatting or key order shows too. A route that does not exist yet answers 404 and is recorded as such.
"""

from __future__ import annotations

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
]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MPSBENCH_DB"] = str(Path(tmp) / "seeded.duckdb")
        from starlette.applications import Starlette
        from starlette.testclient import TestClient

        from app import api_routes
        from db.store.engine import shared_store
        from tests.seed import seed_store

        seed_store(shared_store())
        client = TestClient(Starlette(routes=api_routes()), client=("127.0.0.1", 50000), base_url="http://127.0.0.1")
        answers = {}
        for url in URLS:
            got = client.get(url)
            answers[url] = {"status": got.status_code, "body": got.text}
    json.dump(answers, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
