"""The order of a review's regressions (db/review/release/listing.py severity): a case failing its tolerance first, then
every regression by how much worse, and a PSNR drop that leaves the case ≥ 10 dB above its tolerance after them
all, saying its margin; a PSNR drop near its tolerance keeps its rank by size."""

from __future__ import annotations

from db.ingest.core import ingest_bundle
from db.review.comparison import CompareQuery
from db.review.release.listing import regressions
from db.store.engine import open_store
from tests.bundles import make_bundle, make_result

STABLE = {"torch_version": "2.14.1", "channel": "stable", "python_version": "3.11.7", "collector_version": "0.1.0"}


def _results(slow: float, psnr: dict[str, float]) -> list[dict]:
    timing = [make_result(samples=[slow * (7.1 + 0.01 * i) for i in range(20)], processes=[2] * 10)]
    figures = [
        make_result(
            workload="vae",
            suite="models",
            params={"px": int(px)},
            dtype="bfloat16",
            metric="psnr_vs_cpu",
            unit="dB",
            samples=[value],
            passed=value >= 30.0,
            tolerance=30.0,
        )
        for px, value in psnr.items()
    ]
    return timing + figures


def test_a_psnr_drop_far_above_its_tolerance_ranks_below_a_slowdown_one_near_it_does_not(tmp_path):
    engine = open_store(tmp_path / "s.duckdb")
    ingest_bundle(
        engine,
        make_bundle(schema_version=2, build=STABLE, results=_results(1.0, {"512": 53.94, "1024": 35.0, "2048": 31.0})),
    )
    ingest_bundle(
        engine, make_bundle(schema_version=2, results=_results(1.21, {"512": 50.81, "1024": 31.9, "2048": 29.0}))
    )
    found = regressions(engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}))
    engine.dispose()
    order = [(r.workload, r.case_key, r.metric) for r in found.itertuples()]
    assert order == [
        ("vae", '{"px":2048}', "correctness"),  # passed → failed
        ("vae", '{"px":1024}', "correctness"),  # -3.1 dB, 1.9 dB above its tolerance: MSE ×2.04
        ("softmax", '{"rows":1,"vocab":128256}', "op_time"),  # 1.21× slower
        ("vae", '{"px":512}', "correctness"),
    ]  # -3.13 dB, still 20.8 dB above its tolerance
    assert list(found.severity) == [0, 1, 1, 2]
    assert found.why.iloc[3].endswith("(still 20.8 dB above its 30 dB tolerance)")
    assert "tolerance)" not in found.why.iloc[1]


def test_the_markdown_export_names_cases_carries_caveats_wins_and_status_changes(tmp_path):
    from db.compare_command import render
    from db.review.release.summary import review_answer
    from db.review.review import Review

    engine = open_store(tmp_path / "s.duckdb")
    gib = 2.0**30

    def bundle(slow: float, build: dict | None, warned: list[str], peak: float, new_case: str) -> dict:
        results = _results(slow, {})
        results[0]["warnings"] = warned
        results.append(
            make_result(
                workload="vae",
                suite="models",
                params={"px": 512},
                metric="memory_driver_peak",
                unit="B",
                samples=[peak],
            )
        )
        results.append(
            make_result(
                workload="fp8",
                params={"m": 256},
                status=new_case,
                samples=[] if new_case != "ok" else [3.0, 3.1],
                message=None if new_case == "ok" else "not implemented for 'MPS'",
            )
        )
        return make_bundle(schema_version=2, results=results, **({"build": build} if build else {}))

    ingest_bundle(engine, bundle(1.0, STABLE, [], 33 * gib, "unsupported"))
    ingest_bundle(engine, bundle(1.21, None, ["noisy op_time: IQR is 12.5 % of the median (> 10 %)"], gib, "ok"))
    answer = review_answer(
        engine, Review(CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}))
    )
    engine.dispose()
    md = render(answer, "md-full").replace("\\_", "_")
    [row] = [line for line in md.splitlines() if line.startswith("| m3u | softmax |")]
    assert "| softmax · rows=1 vocab=128256 · fp32 |" in row  # the case's name, not its JSON key
    assert row.rstrip(" |").endswith("candidate warned: noisy op_time")
    assert "1 smaller: vae memory_driver_peak 33" in md  # a win by its rule, in the summary table
    assert "Status changes (1 case):" in md and "fp8" in md and "newly supported (unsupported → ok; op_time)" in md
    group = answer["summary"]["groups"][0]
    assert group["evidence"].endswith("; 1 of 1 warned (see their caveats)")
