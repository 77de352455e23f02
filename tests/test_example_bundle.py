"""The committed example bundle (a real `collector run --suite kernels --profile quick --device cpu`) ingests."""

import json
from pathlib import Path

from sqlalchemy import text

from db.ingest.core import ingest_bundle
from db.store.engine import open_store

EXAMPLE = Path(__file__).parent.parent / "examples" / "cpu-quick.json"


def test_example_bundle_ingests_with_every_result():
    doc = json.loads(EXAMPLE.read_text())
    engine = open_store(":memory:")
    outcome = ingest_bundle(engine, EXAMPLE.read_bytes())
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT count(*) FROM results WHERE run_id=:r"), {"r": doc["run_id"]}).scalar()
    assert outcome.created and stored == len(doc["results"]) > 0
    assert ingest_bundle(engine, EXAMPLE.read_bytes()).created is False  # idempotent


def _stored(engine) -> list[tuple]:
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT result_id, metric, unit, status, samples, processes, contention, n, median, mean, min, max, p25, "
                    "p75, stdev FROM results ORDER BY result_id"
                )
            ).fetchall()
        ]


def test_a_schema_3_bundle_and_its_schema_4_twin_store_the_same_samples_and_summaries():
    """Schema 4 drops the carried summary (the store derives it from the samples either way): the example (schema
    3, with summaries) and the same run without them store bit-identical samples and summaries."""
    doc = json.loads(EXAMPLE.read_text())
    assert doc["schema_version"] == 3 and any("summary" in r for r in doc["results"])
    twin = doc | {
        "schema_version": 4,
        "results": [{k: v for k, v in r.items() if k != "summary"} for r in doc["results"]],
    }
    old, new = open_store(":memory:"), open_store(":memory:")
    ingest_bundle(old, EXAMPLE.read_bytes())
    ingest_bundle(new, json.dumps(twin).encode())
    assert _stored(old) == _stored(new) and len(_stored(new)) == len(doc["results"])
