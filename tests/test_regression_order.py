"""The order of a review's regressions (db/review/listing.py severity): a case failing its tolerance first, then
every regression by how much worse, and a PSNR drop that leaves the case ≥ 10 dB above its tolerance after them
all, saying its margin; a PSNR drop near its tolerance keeps its rank by size."""
from __future__ import annotations

from db.ingest.core import ingest_bundle
from db.review.comparison import CompareQuery
from db.review.listing import regressions
from db.store.engine import open_store
from tests.bundles import make_bundle, make_result

STABLE = {"torch_version": "2.14.1", "channel": "stable", "python_version": "3.11.7", "collector_version": "0.1.0"}


def _results(slow: float, psnr: dict[str, float]) -> list[dict]:
    timing = [make_result(samples=[slow * (7.1 + 0.01 * i) for i in range(20)], processes=[2] * 10)]
    figures = [make_result(workload="vae", suite="models", params={"px": int(px)}, dtype="bfloat16",
                           metric="psnr_vs_cpu", unit="dB", samples=[value], passed=value >= 30.0, tolerance=30.0)
               for px, value in psnr.items()]
    return timing + figures


def test_a_psnr_drop_far_above_its_tolerance_ranks_below_a_slowdown_one_near_it_does_not(tmp_path):
    engine = open_store(tmp_path / "s.duckdb")
    ingest_bundle(engine, make_bundle(schema_version=2, build=STABLE,
                                      results=_results(1.0, {"512": 53.94, "1024": 35.0, "2048": 31.0})))
    ingest_bundle(engine, make_bundle(schema_version=2,
                                      results=_results(1.21, {"512": 50.81, "1024": 31.9, "2048": 29.0})))
    found = regressions(engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}))
    engine.dispose()
    order = [(r.workload, r.case_key, r.metric) for r in found.itertuples()]
    assert order == [("vae", '{"px":2048}', "correctness"),  # passed → failed
                     ("vae", '{"px":1024}', "correctness"),  # -3.1 dB, 1.9 dB above its tolerance: MSE ×2.04
                     ("softmax", '{"rows":1,"vocab":128256}', "op_time"),  # 1.21× slower
                     ("vae", '{"px":512}', "correctness")]  # -3.13 dB, still 20.8 dB above its tolerance
    assert list(found.severity) == [0, 1, 1, 2]
    assert found.why.iloc[3].endswith("(still 20.8 dB above its 30 dB tolerance)")
    assert "tolerance)" not in found.why.iloc[1]
