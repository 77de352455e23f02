"""Side summaries (db.store.derived.side_cases): a machine-scope Compare of two builds read from them answers exactly as
the pivot of every sample does — before and after an upload, after a retraction, after the migration that fills
them — and a side they cannot answer (several builds of one version) goes to the pivot."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from sqlalchemy import text

import db.review.side_inputs as side_inputs
import db.store.writers.upkeep as upkeep
from benchmarks.stores.seed import BASELINE, CANDIDATE, _bundle, _kernel_results, _Noise, seed_store
from db.ingest.core import ingest_bundle
from db.query.compare.pivot import KEY
from db.query.compare.side_reads import COLUMNS, _aligned, _grouped_in_order, _matched, pair_sides
from db.review.comparison import CompareQuery, clear_cache, compute_compare
from db.store.engine import open_store
from db.store.writers.retract import retract_run
from db.store.writers.upkeep import catch_up

QUERIES = [
    CompareQuery(BASELINE, CANDIDATE),
    CompareQuery(CANDIDATE, BASELINE),
    CompareQuery(
        BASELINE, CANDIDATE, filters=(("workload", ("softmax", "linear")), ("dtype", ("float32", "bfloat16")))
    ),
    CompareQuery(BASELINE, CANDIDATE, scope="chip"),
    CompareQuery(CANDIDATE, BASELINE, scope="chip"),
    CompareQuery("tag:role=baseline", "tag:role=candidate"),
]  # tags: the pivot either way


def _both_ways(engine, query: CompareQuery, monkeypatch) -> tuple:
    """The comparison from the summaries (where they answer) and from the pivot, uncached."""
    clear_cache()
    summary = compute_compare(engine, query)
    with monkeypatch.context() as patch:
        patch.setattr(side_inputs, "readable", lambda *_: False)
        pivot = compute_compare(engine, query)
    return summary, pivot


def _assert_same(engine, monkeypatch, queries=QUERIES) -> None:
    for query in queries:
        summary, pivot = _both_ways(engine, query, monkeypatch)
        assert (summary.samples is None) == query.baseline.startswith("torch=")  # which way answered
        assert len(summary.cases) > 0
        for name in ("cases", "families", "unmatched"):
            pd.testing.assert_frame_equal(getattr(summary, name), getattr(pivot, name), check_exact=True)
        assert summary.notes == pivot.notes
        for row in (0, len(summary.cases) - 1):  # the distribution chart's samples: read when asked for
            pd.testing.assert_frame_equal(summary.case_samples(row), pivot.case_samples(row), check_exact=True)


@pytest.fixture(name="store")
def _store(tmp_path):
    engine = open_store(tmp_path / "s.duckdb")
    answers = seed_store(engine)
    yield engine, answers
    engine.dispose()


def _group_runs(engine, machine: str, version: str) -> set[int]:
    with engine.connect() as conn:
        return set(
            conn.execute(
                text(
                    "SELECT DISTINCT runs FROM side_cases WHERE scope = :m AND torch_version = :v "
                    "AND workload = 'softmax' AND metric = 'op_time'"
                ),
                {"m": machine, "v": version},
            ).scalars()
        )


def test_the_summaries_answer_as_the_pivot_to_the_last_bit(store, monkeypatch):
    engine, _ = store
    _assert_same(engine, monkeypatch)


def _answered_from_summaries(engine, query: CompareQuery) -> bool:
    clear_cache()
    return compute_compare(engine, query).samples is None


def test_an_upload_and_a_retraction_mark_their_group_until_the_upkeep(store, monkeypatch):
    engine, _ = store
    assert _group_runs(engine, "studio-2", "2.15.0rc1") == {1}
    extra = _bundle(99, "studio-2", "2.15.0rc1", "rc", "candidate", _kernel_results(_Noise(7), True, "Apple M3 Ultra"))
    assert ingest_bundle(engine, extra.model_dump_json().encode(), "alice").created
    # marked: the candidate's side comes from the pivot (its new run in it), the summaries untouched meanwhile
    assert _group_runs(engine, "studio-2", "2.15.0rc1") == {1}
    assert not _answered_from_summaries(engine, QUERIES[0])
    marked, pivot = _both_ways(engine, QUERIES[0], monkeypatch)  # the pivot's answer, new run and all
    pd.testing.assert_frame_equal(marked.cases, pivot.cases, check_exact=True)
    assert catch_up(engine).side_groups == 2  # its machine's group and its chip's
    assert _group_runs(engine, "studio-2", "2.15.0rc1") == {2}  # the group's second run, pooled
    assert _answered_from_summaries(engine, QUERIES[0])
    _assert_same(engine, monkeypatch, QUERIES[:2])
    retract_run(engine, extra.run_id, "ran on battery", "admin", admin=True)
    assert not _answered_from_summaries(engine, QUERIES[1])
    assert catch_up(engine).side_groups == 2  # its machine's group and its chip's
    assert _group_runs(engine, "studio-2", "2.15.0rc1") == {1}
    _assert_same(engine, monkeypatch, QUERIES[:2])
    assert catch_up(engine).side_groups == 0  # nothing left marked


def test_a_mark_made_while_the_upkeep_summarised_stays_for_the_next(store, monkeypatch):
    """The upkeep removes the marks its snapshot saw: a run stored between its read and its write stays marked."""
    engine, _ = store
    extra = _bundle(98, "studio-2", "2.15.0rc1", "rc", "candidate", _kernel_results(_Noise(8), True, "Apple M3 Ultra"))
    late = _bundle(97, "studio-2", "2.15.0rc1", "rc", "candidate", _kernel_results(_Noise(9), True, "Apple M3 Ultra"))
    assert ingest_bundle(engine, extra.model_dump_json().encode(), "alice").created
    real = upkeep.side_cases.summarise

    def summarise_then_upload(conn, kind, groups, parts=1):
        rows = real(conn, kind, groups, parts)
        if kind == "machine":  # lands mid-upkeep
            assert ingest_bundle(engine, late.model_dump_json().encode(), "alice").created
        return rows

    monkeypatch.setattr(upkeep.side_cases, "summarise", summarise_then_upload)
    assert catch_up(engine).side_groups == 2  # its machine's group and its chip's
    monkeypatch.setattr(upkeep.side_cases, "summarise", real)
    assert _group_runs(engine, "studio-2", "2.15.0rc1") == {2}  # the snapshot's two runs
    assert not _answered_from_summaries(engine, QUERIES[0])  # the late run's mark stayed
    # only its machine group's: the chip kind was summarised after it landed, from a snapshot that held it
    assert catch_up(engine).side_groups == 1
    assert _group_runs(engine, "studio-2", "2.15.0rc1") == {3}
    _assert_same(engine, monkeypatch, QUERIES[:2])


def test_a_store_from_before_the_summaries_gets_them_when_opened(tmp_path, monkeypatch):
    path = tmp_path / "v7.duckdb"
    engine = open_store(path)
    seed_store(engine)
    before = _summaries(engine)
    engine.dispose()
    with duckdb.connect(str(path)) as raw:  # as store v7 left it: no summaries
        raw.execute("DROP TABLE side_cases")
        raw.execute("UPDATE meta SET value = '7' WHERE key = 'store_version'")
    engine = open_store(path)
    try:
        assert len(_summaries(engine)) == 0  # every group marked: the first upkeep writes them
        assert catch_up(engine).side_groups > 0
        pd.testing.assert_frame_equal(_summaries(engine), before, check_exact=True)
        _assert_same(engine, monkeypatch, QUERIES[:1])
    finally:
        engine.dispose()


def _summaries(engine) -> pd.DataFrame:
    with engine.connect() as conn:
        return conn.connection.driver_connection.sql("SELECT * FROM side_cases ORDER BY ALL").df()


def test_a_side_with_two_builds_of_a_case_is_left_to_the_pivot():
    side = pa.table(
        {
            "group_seq": [1, 2],
            "scope": ["m", "m"],
            "device": ["mps"] * 2,
            "workload": ["w"] * 2,
            "case_key": ["{}"] * 2,
            "dtype": ["float16"] * 2,
            "compile": ["eager"] * 2,
            "metric": ["op_time"] * 2,
            **{name: pa.nulls(2, pa.float64()) for name in COLUMNS},
        }
    )
    one = side.slice(0, 1)
    assert pair_sides(side, one) is None and pair_sides(one, side) is None
    assert pair_sides(side, side) is None  # alike sides, but a case twice: not row for row
    paired = pair_sides(one, one.slice(0, 0))  # a case on the baseline only: counts 0 on the candidate
    assert paired.num_rows == 1 and paired["c_n"].to_pylist() == [0] and paired["c_median"].to_pylist() == [None]
    assert paired["c_pooled"].to_pylist() == [0] and paired["c_passed"].to_pylist() == [None]


def _side(engine, version: str) -> pa.Table:
    with engine.connect() as conn:
        return conn.connection.driver_connection.sql(
            f"SELECT group_seq, {', '.join(KEY + COLUMNS)} FROM side_cases WHERE torch_version = ?", params=[version]
        ).to_arrow_table()


def _blocks_reversed(side: pa.Table) -> pa.Table:
    seq = side["group_seq"].to_numpy()
    starts = list(np.flatnonzero(np.r_[True, seq[1:] != seq[:-1]])) + [len(seq)]
    return side.take(pa.array(np.concatenate([np.arange(a, b) for a, b in zip(starts[:-1], starts[1:])][::-1])))


def test_sides_stored_alike_pair_without_matching_and_as_matching_pairs_them(store):
    """Two builds on the same machines with the same cases (the usual review) pair row for row: each group's rows
    are stored in key order, its blocks put in machine order. Whatever the stored order, the answer is the one
    matching every key gives (_matched)."""
    engine, _ = store
    base, cand = _side(engine, "2.14.1"), _side(engine, "2.15.0rc1")
    assert base.num_rows != cand.num_rows  # the seed's sides differ (cases on one side only) ...

    def both(side, other):
        return side.filter(pc.is_in(_joined_key(side), _joined_key(other)))

    base, cand = both(base, cand), both(cand, base)  # ... their common cases are a review of alike sides
    assert base.num_rows == cand.num_rows > 0 and _aligned(*map(_grouped_in_order, (base, cand))) is not None
    shuffled = _blocks_reversed(cand)
    assert not shuffled["group_seq"].equals(cand["group_seq"])  # more than one group: the order really changed
    dropped = cand.filter(pa.array(np.arange(cand.num_rows) != cand.num_rows // 2))
    for b, c in ((base, cand), (base, shuffled), (_blocks_reversed(base), cand), (base, dropped), (dropped, base)):
        paired, matched = pair_sides(b, c), _matched(b, c)
        pd.testing.assert_frame_equal(paired.to_pandas(), matched.to_pandas(), check_exact=True)
    keys = pair_sides(base, cand).select(KEY).to_pandas()
    pd.testing.assert_frame_equal(keys, keys.sort_values(KEY, ignore_index=True))  # key order
    assert pair_sides(base, dropped).num_rows == base.num_rows  # the dropped case: on the baseline only


def _joined_key(side: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(*(side[name] for name in KEY), "\x1f")
