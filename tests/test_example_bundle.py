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
