"""A review of runs collected on a busy machine (issue: an A/A review turned into 24 "regressions"): contended
worker processes leave a case's test while enough clean ones remain; a case without enough is unconfirmed
(contended), counted apart, never a regression — whichever way it moved — and `--fail-on unconfirmed` fails on
it. Figures are set here, so each expected answer is computed from these constants."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from db.compare_command import main as compare_main
from db.ingest.core import ingest_bundle
from db.review.comparison import CompareQuery, compare
from db.review.release.summary import review_answer
from db.review.review import Review
from db.stats.contention import clean_side
from db.stats.lists import SampleLists
from db.store.engine import open_store
from db.store.writers.upkeep import catch_up
from tests.bundles import make_bundle

QUIET = [0.0, 0.01, 0.02, 0.0, 0.03, 0.0, 0.01, 0.0, 0.02, 0.0]
# run A of the issue: grouped_mm's per-process medians; the two quiet processes agree with run B (~57 µs)
BUSY_LEVELS = [44104, 33309, 14644, 23969, 47, 28005, 23746, 28054, 298, 46]
BUSY_SHARES = [0.84, 0.80, 0.70, 0.77, 0.02, 0.81, 0.74, 0.79, 0.71, 0.01]
CASES = 5


def _timing(case: int, levels: list[float], shares: list[float] | None, calls: int = 4) -> dict:
    rng = np.random.default_rng(case)
    samples = [float(level * (1 + rng.uniform(-0.002, 0.002))) for level in levels for _ in range(calls)]
    out = dict(
        workload="grouped_mm",
        suite="kernels",
        params={"case": case},
        dtype="float32",
        compile="eager",
        metric="op_time",
        unit="µs",
        status="ok",
        samples=samples,
        processes=[calls] * len(levels),
    )
    return out | ({"contention": shares} if shares is not None else {})


def _quiet(case: int, scale: float = 1.0) -> list[float]:
    rng = np.random.default_rng(100 + case)
    return list(57.0 * scale * np.exp(rng.normal(0, 0.04, 10)))


def _bundle(version: str, results: list[dict], schema: int = 3) -> dict:
    build = {"torch_version": version, "channel": "release", "python_version": "3.11.7", "collector_version": "0.2.0"}
    return make_bundle(schema_version=schema, build=build, results=results)


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "s.duckdb"
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    engine = open_store(path)
    yield engine
    engine.dispose()


def _gate(base: str, cand: str, *extra: str) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = compare_main(["--baseline", base, "--candidate", cand, "--format", "json", *extra])
    return code, json.loads(out.getvalue())


def test_an_aa_review_against_a_busy_run_has_no_regression_and_names_every_contended_case(store):
    wild = [_quiet(c) for c in range(CASES)]
    wild[0][3] = 12658.0  # one wild process in the quiet run, as run B had (no contention seen)
    ingest_bundle(store, _bundle("2.14.1", [_timing(c, wild[c], QUIET) for c in range(CASES)]))
    ingest_bundle(store, _bundle("2.14.1+busy", [_timing(c, BUSY_LEVELS, BUSY_SHARES) for c in range(CASES)]))
    store.dispose()
    for base, cand in (("torch=2.14.1", "torch=2.14.1+busy"), ("torch=2.14.1+busy", "torch=2.14.1")):
        code, answer = _gate(base, cand, "--fail-on", "regression")
        assert code == 0 and answer["regressions"] == []
        assert len(answer["unconfirmed"]) == CASES and answer["summary"]["contended"] == CASES
        row = answer["unconfirmed"][0]
        assert row["doubt"].startswith("contended") and row["significance"] == "unconfirmed: contended"
        assert (
            "8 of 10 worker processes contended (70–84 % of the cores), too few clean: not tested" in row["contention"]
        )
        assert row["p_value"] is None
        group = answer["summary"]["groups"][0]
        assert (group["faster"], group["slower"], group["unchanged"], group["contended"]) == (0, 0, 0, CASES)
        assert (
            f"{CASES} worse but not confirmed ({CASES} timed while other processes took the cores)"
            in (answer["summary"]["verdict"])
        )
        # no family geomean, no detectable size from the load's figures (a 418× "slowdown" over contended cases)
        assert answer["summary"]["families"] == [] and group["detects"] == ""
        assert _gate(base, cand, "--fail-on", "unconfirmed")[0] == 1


def test_contended_processes_leave_the_test_and_a_real_slowdown_is_still_found(store):
    shares = [0.0] * 8 + [0.9, 0.85]  # two contended processes, left out: eight clean remain
    ingest_bundle(store, _bundle("2.14.1", [_timing(c, _quiet(c), QUIET) for c in range(CASES)]))
    slow = [_timing(c, _quiet(50 + c, 2.0)[:8] + [40000.0, 30000.0], shares) for c in range(CASES)]
    ingest_bundle(store, _bundle("2.15.0", slow))
    answer = review_answer(
        store, Review(CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"}))
    )
    assert len(answer["regressions"]) == CASES and answer["unconfirmed"] == []
    row = answer["regressions"][0]
    # the figures are the clean processes': a median near 2 × 57 µs, not pulled up by the 30,000 µs ones
    clean = [x for x in slow[int(json.loads(row["case_key"])["case"])]["samples"][:32]]
    assert row["candidate_median"] == pytest.approx(float(np.median(clean)))
    assert "candidate: 2 of 10 worker processes contended (85–90 % of the cores), left out" in row["caveats"]


def test_a_contended_case_that_moved_the_other_way_is_unconfirmed_not_faster(store):
    ingest_bundle(store, _bundle("2.14.1", [_timing(c, BUSY_LEVELS, BUSY_SHARES) for c in range(CASES)]))
    ingest_bundle(store, _bundle("2.15.0", [_timing(c, _quiet(c, 2.0), QUIET) for c in range(CASES)]))
    answer = review_answer(
        store, Review(CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"}))
    )
    assert answer["regressions"] == [] and len(answer["unconfirmed"]) == CASES  # 2× slower hidden by a busy side
    assert answer["summary"]["groups"][0]["faster"] == 0


def test_an_old_warning_is_read_as_its_share_for_every_process_and_nothing_else_is():
    import duckdb

    from db.store.derived.contention import STORED_SQL

    sql = f"SELECT {STORED_SQL} FROM (SELECT ?::DOUBLE[] AS contention, ?::INT[] AS processes, ? AS warnings_json)"
    said = lambda warnings, processes=(2, 2), shares=(): duckdb.execute(  # noqa: E731
        sql, [list(shares), list(processes), json.dumps(warnings)]
    ).fetchall()[0][0]
    assert said(["CPU contention: other processes used 62 % of the machine's 2 cores"]) == [0.62, 0.62]
    assert said(["noisy op_time: IQR is 12 %"]) == []
    assert said(
        ["CPU contention: other processes used 62 %", "CPU contention: other processes used 81.5 %"], processes=()
    ) == [0.815]  # one process; the largest share stated
    assert said(["CPU contention: other processes used 62 %"], shares=(0.1, 0.0)) == [0.1, 0.0]  # measured stays


def test_an_old_bundles_contention_warning_counts_every_process_as_contended(store):
    old = [
        _timing(c, _quiet(c, 3.0), None)
        | {
            "warnings": [
                "CPU contention: other processes used 62 % of the machine's 2 cores during this case; timings may be "
                "inflated"
            ]
        }
        for c in range(CASES)
    ]
    ingest_bundle(store, _bundle("2.14.1", [_timing(c, _quiet(c), QUIET) for c in range(CASES)]))
    ingest_bundle(store, _bundle("2.15.0", old, schema=2))
    answer = review_answer(
        store, Review(CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"}))
    )
    assert answer["regressions"] == [] and len(answer["unconfirmed"]) == CASES
    assert "10 of 10 worker processes contended (62 % of the cores)" in answer["unconfirmed"][0]["contention"]


def test_the_side_summaries_and_the_pivot_give_the_same_contended_answer(store):
    runs = []
    for version, levels, shares in (("2.14.1", None, QUIET), ("2.15.0", BUSY_LEVELS, BUSY_SHARES)):
        doc = _bundle(version, [_timing(c, levels or _quiet(c), shares) for c in range(CASES)])
        ingest_bundle(store, doc)
        runs.append(doc["run_id"])
    by_build = compare(store, CompareQuery("torch=2.14.1", "torch=2.15.0")).cases  # the side summaries
    by_runs = compare(store, CompareQuery(f"runs:{runs[0]}", f"runs:{runs[1]}")).cases  # the pivot of the samples
    columns = ["baseline_median", "candidate_median", "candidate_n", "significance", "contention", "caveats"]
    assert by_build[columns].equals(by_runs[columns])
    assert (by_build.significance == "unconfirmed: contended").all()


def test_clean_side_known_answer():
    """Two cases, one run each: case 0 has 1 contended process of 4 (left out), case 1 has 3 of 4 (contended:
    every sample kept)."""
    import pyarrow as pa

    samples = pa.array([[[1.0, 2.0, 30.0, 4.0]], [[5.0, 6.0, 7.0, 8.0]]], pa.list_(pa.list_(pa.float64())))
    processes = pa.array([[[1, 1, 1, 1]], [[1, 1, 1, 1]]], pa.list_(pa.list_(pa.int32())))
    contention = pa.array([[[0.0, None, 0.9, 0.1]], [[0.5, 0.6, 0.0, 0.7]]], pa.list_(pa.list_(pa.float64())))
    side = clean_side(SampleLists.from_arrow(samples), processes, contention)
    assert side.lists.values.tolist() == [1.0, 2.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    assert side.lists.offsets.tolist() == [0, 3, 7] and side.sizes.tolist() == [1, 1, 1, 1, 1, 1, 1]
    assert side.contended.tolist() == [False, True] and side.hot.tolist() == [1, 3]
    assert side.timed.tolist() == [4, 4]
    assert side.low.tolist() == [0.9, 0.5] and side.high.tolist() == [0.9, 0.7]
    taken = side.take(np.array([1]))
    assert taken.lists.values.tolist() == [5.0, 6.0, 7.0, 8.0] and taken.contended.tolist() == [True]


def test_a_v8_store_is_migrated_its_old_warnings_read_as_contention_and_its_aa_model_made_without_them(tmp_path):
    """A store from before v9: its results had no contention column, a contended record said so in a warning."""
    from sqlalchemy import text

    from db.store.derived.aa_pairs import backfill as aa_backfill
    from db.store.tables import STORE_VERSION

    path = tmp_path / "old.duckdb"
    engine = open_store(path)
    warned = {"warnings": ["CPU contention: other processes used 70 % of the machine's 2 cores during this case"]}
    for run in range(3):  # three runs of one build on one machine: A/A pairs; the last one ran contended
        busy = run == 2
        ingest_bundle(
            engine,
            _bundle(
                "2.14.1",
                [
                    _timing(c, _quiet(10 * run + c, 40.0 if busy else 1.0), None) | (warned if busy else {})
                    for c in range(CASES)
                ],
                schema=2,
            ),
        )
    with engine.begin() as conn:  # as v8 stored it: no shares, an A/A model that took every run
        conn.execute(text("UPDATE results SET contention = []"))
        for table in ("aa_pairs", "aa_cases", "aa_noise"):
            conn.execute(text(f"DELETE FROM {table}"))
        aa_backfill(conn)
        pairs_before = conn.execute(text("SELECT count(*) FROM aa_pairs")).scalar()
        conn.execute(text("UPDATE meta SET value = '8' WHERE key = 'store_version'"))
    engine.dispose()
    assert pairs_before == 3 * CASES  # the contended run paired with both others

    engine = open_store(path)
    catch_up(engine)  # the side summaries, written again after the migration (db.store.writers.upkeep)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT value FROM meta WHERE key = 'store_version'")).scalar() == str(STORE_VERSION)
        shares = conn.execute(text("SELECT DISTINCT contention FROM results WHERE metric = 'op_time'")).scalars().all()
        assert sorted(map(tuple, shares)) == [(), (0.7,) * 10]
        assert conn.execute(text("SELECT count(*) FROM aa_pairs")).scalar() == CASES  # only the clean pair
        sides = conn.execute(
            text(
                "SELECT contended, contended_processes, timed_processes FROM side_cases "
                "WHERE metric = 'op_time' AND kind = 'machine'"
            )
        ).all()
    engine.dispose()
    # the three runs are one group (a build on a machine): 10 of its 30 processes contended, 20 clean remain
    assert sides == [(False, 10, 30)] * CASES


def test_a_sampled_memory_peak_read_in_a_contended_process_is_unconfirmed_an_exact_one_is_judged(store):
    gib = 2.0**30

    def peaks(driver: float, reserved: float, share: float) -> list[dict]:
        common = dict(
            workload="constant_pad",
            suite="kernels",
            params={"case": 0},
            dtype="float32",
            compile="eager",
            status="ok",
            contention=[share],
        )
        return [
            dict(common, metric="memory_driver_peak", unit="B", samples=[driver]),
            dict(common, metric="memory_reserved_peak", unit="B", samples=[reserved]),
        ]

    ingest_bundle(store, _bundle("2.14.1", peaks(1.0 * gib, 1.0 * gib, 0.0)))
    ingest_bundle(store, _bundle("2.15.0", peaks(1.25 * gib, 1.25 * gib, 0.5)))  # both 25 % and 256 MiB more
    answer = review_answer(
        store, Review(CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"}))
    )
    assert [r["metric"] for r in answer["regressions"]] == ["memory_reserved_peak"]  # an allocator count: exact
    [doubt] = answer["unconfirmed"]
    assert doubt["metric"] == "memory_driver_peak" and doubt["doubt"].startswith("contended")


def test_a_sampled_peak_with_a_run_spread_is_tested_a_move_within_it_is_no_regression(store):
    """Three runs of the baseline whose CPU driver peaks spread ±20 % (A/A pairs and runs to test on): a candidate
    peak 18 % (and 80 MiB) above their mean is within that spread, one 3× above is not."""
    mib = 2.0**20

    def peak(case: int, value: float) -> dict:
        return dict(
            workload="constant_pad",
            suite="kernels",
            params={"case": case},
            dtype="float32",
            compile="eager",
            status="ok",
            metric="memory_driver_peak",
            unit="B",
            samples=[value * mib],
        )

    for level in (350.0, 450.0, 550.0):
        ingest_bundle(store, _bundle("2.14.1", [peak(0, level), peak(1, level)]))
    for level in (500.0, 560.0):
        ingest_bundle(store, _bundle("2.15.0", [peak(0, level), peak(1, 3 * level)]))
    answer = review_answer(
        store, Review(CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"}))
    )
    assert [json.loads(r["case_key"])["case"] for r in answer["regressions"]] == [1]
    assert answer["regressions"][0]["significance"] == "significant"


def test_trends_point_is_the_figure_compare_gives_its_build_contended_processes_left_out(store):
    """Issue 44: Trends pooled every ok sample (the busy run's 14,644–44,104 µs processes included) while Compare
    left the contended ones out: one build, two medians. Now both read db.stats.significance.clean_quartiles."""
    from db.review.comparison import CompareQuery, compute_compare
    from db.views.browse.trends import trend

    busy = [_timing(c, BUSY_LEVELS, BUSY_SHARES) for c in range(CASES)]
    quiet = [_timing(c, _quiet(c), QUIET) for c in range(CASES)]
    ingest_bundle(store, _bundle("2.14.1", busy))
    ingest_bundle(store, _bundle("2.14.1", quiet))
    ingest_bundle(store, _bundle("2.15.0", [_timing(c, _quiet(c, 1.01), QUIET) for c in range(CASES)]))
    query = CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0", "scope": "chip"})
    cases = compute_compare(store, query).cases.set_index("case_key")
    for case in range(CASES):
        key = json.dumps({"case": case}, separators=(",", ":"))
        points = trend(store, "grouped_mm", key, "float32", "eager", "op_time").set_index("torch_version")
        base, cand = points.loc["2.14.1"], points.loc["2.15.0"]
        assert (
            base["median"] == cases.loc[key, "baseline_median"] and cand["median"] == cases.loc[key, "candidate_median"]
        )
        assert base["chip"] == cases.loc[key, "scope"]  # the chip named as chip-scope Compare names it
        # 8 of the busy run's 10 processes ran contended; the quiet run's 10 and its 2 quiet ones remain (12 × 4)
        assert (base["contended_processes"], base["timed_processes"], base["n"]) == (8, 20, 48)
        assert base["p75"] - base["p25"] == pytest.approx(cases.loc[key, "baseline_iqr"], rel=1e-12)
        everything = [s for r in (busy[case], quiet[case]) for s in r["samples"]]
        assert base["p75"] < 100 < float(np.percentile(everything, 75))  # the naive pool's band is the busy hour's
