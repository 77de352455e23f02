"""The A/A noise model with known answers: pairs stored at ingest (only within one build on one machine), the
model learned from synthetic runs of a known run-to-run spread gives that spread back, fewer than 2 pairs is
insufficient data, the migration's backfill finds the pairs ingest found, a deleted run stops feeding the model,
the repetition planner, and the view's parameters."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from sqlalchemy import text

from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.query.noise import noise_groups
from db.stats import noise as model
from db.stats.planner import Components, optimal_samples, runs_needed, variance_components
from db.store.derived.aa_pairs import PARTNERS, forget_run
from db.store.engine import open_store
from db.store.tables import STORE_VERSION
from db.store.writers.upkeep import catch_up
from db.views.browse.noise import EMPTY, noise_view
from tests.bundles import make_bundle, make_result

Z975 = 1.959963984540054


def stored(engine, raw):
    """An upload as the server leaves it once its uploads pause: stored, then the A/A figures brought up to date
    (db.store.writers.upkeep)."""
    out = ingest_bundle(engine, raw)
    catch_up(engine)
    return out


def _pairs(engine) -> list[tuple]:
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT a.run_id, b.run_id, g.workload, p.case_key, g.metric, p.log_ratio FROM aa_pairs p"
                    " JOIN aa_noise g USING (group_id) JOIN runs a ON a.run_seq = p.seq_a JOIN runs b ON b.run_seq = p.seq_b"
                    " ORDER BY ALL"
                )
            )
        ]


@dataclass(frozen=True)
class NoiseFigure:
    """The model's figures of one group, computed here independently in numpy (the store takes them in SQL)."""

    pairs: int
    status: str
    quantile_log: float | None
    sigma_log: float | None

    @property
    def bound_percent(self) -> float | None:
        return None if self.quantile_log is None else model.bound_percent(self.quantile_log)


def noise_figure(log_ratio: np.ndarray, quantile: float = model.QUANTILE) -> NoiseFigure:
    x = np.asarray(log_ratio, float)
    x = x[np.isfinite(x)]
    if len(x) < model.MIN_PAIRS:
        return NoiseFigure(len(x), model.INSUFFICIENT, None, None)
    q, sigma = float(np.quantile(np.abs(x), quantile)), float(np.sqrt(np.mean(x * x) / 2))
    return NoiseFigure(len(x), model.MEASURED, q, sigma)


# -- pure functions ------------------------------------------------------------------------------------------
def test_the_model_gives_a_known_spread_back():
    sigma, n = 0.03, 4000  # run log medians N(0, sigma²): a pair's log ratio is N(0, 2 sigma²)
    lr = np.random.default_rng(7).normal(0.0, math.sqrt(2) * sigma, n)
    fig = noise_figure(lr)
    scale = math.sqrt(2) * sigma  # |log ratio| is half-normal with this scale
    true_q = Z975 * scale
    density = 2 * norm.pdf(true_q / scale) / scale
    se_q = math.sqrt(0.95 * 0.05 / n) / density  # the asymptotic standard error of a sample quantile
    assert fig.status == model.MEASURED and fig.pairs == n
    assert abs(fig.quantile_log - true_q) < 4 * se_q
    assert abs(fig.sigma_log - sigma) < 4 * sigma / math.sqrt(2 * n)  # se of a sd from n normal draws
    assert fig.bound_percent == pytest.approx(100 * (math.exp(fig.quantile_log) - 1))


@pytest.mark.parametrize("values", [[], [0.01], [float("nan"), 0.02]])
def test_fewer_than_two_pairs_is_insufficient_data_never_a_figure(values):
    fig = noise_figure(np.array(values))
    assert fig.status == model.INSUFFICIENT == "insufficient data"
    assert fig.quantile_log is None and fig.sigma_log is None and fig.bound_percent is None
    assert list(model.status_of([0, 1, 2])) == [model.INSUFFICIENT, model.INSUFFICIENT, model.MEASURED]


def test_planner_runs_per_side_against_a_t_table_value():
    # t(0.975, 14) = 2.1448 (printed t tables): 8 runs per side give a half-width of 2.1448 * sigma * sqrt(2/8)
    sigma = 0.02
    h8 = 2.144787 * sigma * 0.5
    assert runs_needed(sigma, 100 * math.expm1(h8) * 1.001) == 8
    assert runs_needed(sigma, 100 * math.expm1(h8) * 0.999) == 9
    assert runs_needed(None, 2.0) is None and runs_needed(1.0, 0.1) is None  # no data; more than 1000 runs


def test_planner_optimal_samples_per_run_kalibera_jones():
    # 3 runs of 2 samples: run means 0, 1, 2 (T2² = 1), each sample ±0.5 from its mean (T1² = 0.5)
    y = np.array([[-0.5, 0.5], [0.5, 1.5], [1.5, 2.5]])
    c = variance_components(y)
    assert (c.t1_sq, c.t2_sq, c.s2_sq) == pytest.approx((0.5, 1.0, 0.75))
    assert optimal_samples(c, cost_sample=1.0, cost_run=100.0) == math.ceil(math.sqrt(100 * 0.5 / 0.75)) == 9
    assert optimal_samples(Components(0.5, 0.1, -0.15, 2), 1.0, 100.0) is None  # no between-run variance


# -- the store -----------------------------------------------------------------------------------------------
def _run(
    run_id: str,
    machine: str = "m1",
    version: str = "2.15.0",
    git_hash: str | None = "abc1234",
    scale: float = 1.0,
    results: list[dict] | None = None,
) -> dict:
    build = {"torch_version": version, "channel": "release", "python_version": "3.11.7", "collector_version": "0.1.0"}
    if git_hash:
        build["git_hash"] = git_hash
    return make_bundle(
        run_id=run_id,
        machine={"name": machine, "os": "macOS", "chip": "Apple M3 Ultra"},
        build=build,
        results=results
        or [
            make_result(samples=[10.0 * scale, 10.0 * scale, 10.0 * scale]),
            make_result(params={"rows": 4, "vocab": 128256}, samples=[20.0 * scale] * 3),
            make_result(
                metric="psnr_vs_cpu", unit="dB", samples=[60.0 * scale], passed=True, tolerance=40.0
            ),  # a difference metric: no ratio, no pair
            make_result(params={"rows": 8, "vocab": 128256}, status="error", samples=[], message="boom"),
        ],
    )


def test_ingest_stores_pairs_only_within_one_build_on_one_machine(engine):
    same = [("a1", 1.0), ("a2", 1.1), ("a3", 0.9)]
    for run_id, scale in same:
        stored(engine, _run(f"{run_id:0>32}", scale=scale))
    stored(engine, _run("b1".rjust(32, "0"), version="2.16.0"))  # another build
    stored(engine, _run("c1".rjust(32, "0"), git_hash="def5678"))  # same version, another git hash
    stored(engine, _run("d1".rjust(32, "0"), machine="m2"))  # same build, another machine
    stored(engine, _run("a1".rjust(32, "0"), scale=1.0))  # the same bundle again: stored once, no new pairs
    got = _pairs(engine)
    scales = dict(same)
    expected = sorted(
        (f"{a:0>32}", f"{b:0>32}", "softmax", key, "op_time", math.log(scales[b] / scales[a]))
        for a, b in (("a1", "a2"), ("a1", "a3"), ("a2", "a3"))
        for key in ('{"rows":1,"vocab":128256}', '{"rows":4,"vocab":128256}')
    )
    assert sorted(g[:5] for g in got) == [e[:5] for e in expected]
    for g, e in zip(sorted(got), expected):
        assert g[5] == pytest.approx(e[5], abs=1e-12)


def test_a_model_learned_from_synthetic_runs_gives_their_spread_back(engine):
    runs, cases, sigma = 24, 6, 0.04
    rng = np.random.default_rng(11)
    effects = rng.normal(0.0, sigma, (runs, cases))  # each run's log median per case: true value + N(0, sigma²)
    for r in range(runs):
        results = [
            make_result(params={"rows": c + 1, "vocab": 1024}, samples=[50.0 * math.exp(effects[r, c])] * 3)
            for c in range(cases)
        ]
        stored(engine, _run(f"{r:032x}", results=results))
    groups = noise_groups(engine)
    assert len(groups) == 1
    g = groups.iloc[0]
    assert g.pairs == cases * sum(min(r, PARTNERS) for r in range(runs))  # each run: its PARTNERS predecessors
    # SQL's figures are the pure function's on the same pairs
    fig = noise_figure(np.array([p[5] for p in _pairs(engine)]))
    assert g.quantile_log == pytest.approx(fig.quantile_log, rel=1e-12)
    assert g.sigma_log == pytest.approx(fig.sigma_log, rel=1e-12)
    # and the spread comes back: pairs share runs, so the tolerance counts only disjoint pairs as independent
    scale = math.sqrt(2) * sigma
    independent = cases * runs // 2
    density = 2 * norm.pdf(Z975) / scale
    assert abs(g.quantile_log - Z975 * scale) < 4 * math.sqrt(0.95 * 0.05 / independent) / density
    assert abs(g.sigma_log - sigma) < 4 * sigma / math.sqrt(2 * independent)


def test_the_migration_backfills_the_pairs_ingest_found(tmp_path):
    path = tmp_path / "v3.duckdb"
    e = open_store(path)
    for run_id, scale in (("a1", 1.0), ("a2", 1.2), ("a3", 0.8)):
        stored(e, _run(f"{run_id:0>32}", scale=scale))
    stored(e, _run("b1".rjust(32, "0"), machine="m2"))
    at_ingest = _pairs(e)
    with e.begin() as conn:  # back to a v3 store: no pairs table
        conn.execute(text("DROP TABLE aa_pairs"))
        conn.execute(text("DROP TABLE aa_noise"))
        conn.execute(text("UPDATE meta SET value = '3' WHERE key = 'store_version'"))
    e.dispose()
    e = open_store(path)
    try:
        assert _pairs(e) == at_ingest and len(at_ingest) == 6
        with e.connect() as conn:
            assert conn.execute(text("SELECT value FROM meta WHERE key='store_version'")).scalar() == str(STORE_VERSION)
        assert noise_groups(e).pairs.tolist() == [6]
    finally:
        e.dispose()


def test_a_groups_figures_are_recomputed_once_its_new_pairs_reach_5_percent(engine):
    def cases(n, scale):
        return [
            make_result(params={"rows": c + 1, "vocab": 64}, samples=[10.0 * scale * (1 + 0.01 * c)] * 3)
            for c in range(n)
        ]

    stored(engine, _run("f1".rjust(32, "0"), results=cases(100, 1.0)))
    stored(engine, _run("f2".rjust(32, "0"), results=cases(100, 1.1)))  # 100 pairs, all ln 1.1
    first = noise_groups(engine).iloc[0]
    assert (first.pairs, first.pending) == (100, 0) and first.quantile_log == pytest.approx(math.log(1.1))
    stored(engine, _run("f3".rjust(32, "0"), results=cases(1, 1.5)))  # 2 new pairs: under 5 % of 100
    held = noise_groups(engine).iloc[0]
    assert (held.pairs, held.pending) == (100, 2) and held.quantile_log == first.quantile_log
    stored(engine, _run("f4".rjust(32, "0"), results=cases(2, 1.5)))  # 2 + 2 + 1 more: 7 >= 5, recomputed
    done = noise_groups(engine).iloc[0]
    values = [math.log(1.1)] * 99 + [
        math.log(1.1),
        math.log(1.5),
        math.log(1.5 / 1.1),  # case 1: r1-r2, r1-r3, r2-r3
        0.0,
        math.log(1.5),
        math.log(1.5 / 1.1),  # case 1 with r4: r3-r4, r1-r4, r2-r4
        math.log(1.5),
        math.log(1.5 / 1.1),
    ]  # case 2 with r4: r1-r4, r2-r4
    assert (done.pairs, done.pending) == (107, 0)
    assert done.quantile_log == pytest.approx(np.quantile(np.abs(values), 0.95), rel=1e-12)


def test_a_deleted_run_stops_feeding_the_model(engine):
    for run_id, scale in (("a1", 1.0), ("a2", 1.1), ("a3", 0.9)):
        stored(engine, _run(f"{run_id:0>32}", scale=scale))
    before = noise_groups(engine).iloc[0]
    assert before.pairs == 6
    with engine.begin() as conn:  # a run leaving the store: its pairs go, its groups are recomputed
        forget_run(conn, "a3".rjust(32, "0"))
        conn.execute(text("DELETE FROM results WHERE run_id = :r"), {"r": "a3".rjust(32, "0")})
        conn.execute(text("DELETE FROM runs WHERE run_id = :r"), {"r": "a3".rjust(32, "0")})
    after = noise_groups(engine).iloc[0]
    assert after.pairs == 2 and after.quantile_log == pytest.approx(math.log(1.1))  # only a1-a2 is left
    with engine.begin() as conn:
        forget_run(conn, "a2".rjust(32, "0"))
    assert noise_groups(engine).empty


# -- the view ------------------------------------------------------------------------------------------------
def test_the_view_says_how_to_make_aa_data_on_an_empty_store(engine):
    stored(engine, _run("a1".rjust(32, "0")))  # one run: no pair
    answer = noise_view(engine, {})
    assert answer.groups.empty and answer.message == EMPTY and "mpsbench sweep --aa" in EMPTY
    assert answer.pairs_total == 0


def test_the_view_marks_insufficient_data_and_noisy_groups_and_plans_runs(engine):
    for run_id, scale in (("a1", 1.0), ("a2", 1.3)):  # one pair per case: insufficient (2 cases: 2 pairs)
        stored(engine, _run(f"{run_id:0>32}", scale=scale))
    decode = [
        make_result(
            workload="decode",
            suite="models",
            params={"model": "tiny"},
            metric="decode_throughput",
            unit="tokens/s",
            samples=[40.0],
        )
    ]
    stored(engine, _run("d1".rjust(32, "0"), results=decode))
    stored(engine, _run("d2".rjust(32, "0"), results=decode))  # one pair only
    answer = noise_view(engine, {"precision": "5", "threshold": "5"})
    by = {w: row for w, row in zip(answer.groups.workload, answer.groups.to_dict("records"))}
    soft, dec = by["softmax"], by["decode"]
    assert soft["status"] == "measured" and soft["pairs"] == 2
    assert soft["noise_bound_percent"] == pytest.approx(30.0)  # both pairs differ by exactly 30 %
    assert soft["noisy"]  # 30 % > the 5 % threshold
    assert soft["runs_per_side"] == runs_needed(math.log(1.3) / math.sqrt(2), 5.0)
    assert dec["status"] == "insufficient data" and dec["pairs"] == 1
    assert math.isnan(dec["noise_bound_percent"]) and not dec["noisy"] and pd.isna(dec["runs_per_side"])


@pytest.mark.parametrize(
    "params,field",
    [
        ({"precision": "abc"}, "precision"),
        ({"precision": "0"}, "precision"),
        ({"metric": "psnr_vs_cpu"}, "metric"),
        ({"threshold": "0.05"}, "threshold"),
        ({"colour": "red"}, "colour"),
        ({"chip": "x" * 300}, "chip"),
    ],
)
def test_the_view_refuses_bad_parameters_naming_them(engine, params, field):
    with pytest.raises(StoreError) as err:
        noise_view(engine, params)
    assert err.value.status == 400 and err.value.problems[0].field == field


# -- the wiring: the A/A pairs carry the run-to-run variance into each case's test ------------------------------
def _slowdown_store(engine, aa_scales: tuple[float, ...]) -> None:
    """2.15.0 → 2.16.0 on m1: softmax 10 % slower with tight samples of one process; A/A runs of 2.14.0 on the
    same machine with the given medians' scales (none: no A/A data)."""
    tight = [1 + 0.0001 * k for k in range(10)]
    for i, scale in enumerate(aa_scales):
        stored(
            engine,
            _run(
                f"aa{i}".rjust(32, "0"),
                version="2.14.0",
                results=[make_result(samples=[10.0 * scale * t for t in tight])],
            ),
        )
    stored(engine, _run("b0".rjust(32, "0"), results=[make_result(samples=[10.0 * t for t in tight])]))
    stored(
        engine, _run("c0".rjust(32, "0"), version="2.16.0", results=[make_result(samples=[11.0 * t for t in tight])])
    )


REVIEW = {"baseline": "torch=2.15.0", "candidate": "torch=2.16.0", "threshold": "5"}


def _review(engine):
    from db.review.release.listing import regressions
    from db.review.review import Review

    return regressions(engine, Review.from_params(REVIEW))


def _doubts(engine):
    from db.review.release.listing import doubtful
    from db.review.review import Review

    return doubtful(engine, Review.from_params(REVIEW))


def test_without_replicates_or_aa_data_a_slowdown_is_unconfirmed_not_a_regression(engine):
    _slowdown_store(engine, ())
    assert _review(engine).empty
    doubts = _doubts(engine)
    assert list(doubts.workload) == ["softmax"] and list(doubts.verdict) == ["unconfirmed"]
    assert doubts.noise.iloc[0] == "no A/A data" and doubts.bound.iloc[0] == pytest.approx(0.05)


def test_noise_larger_than_the_change_keeps_it_from_being_a_regression(engine):
    _slowdown_store(engine, (1.0, 1.2, 0.8))  # A/A runs differ by 20 %, 25 % and 50 %: a 10 % change is inside
    assert _review(engine).empty and _doubts(engine).empty
    from db.review.review import Review, cached_review

    cases = cached_review(engine, Review.from_params(REVIEW)).cases
    row = cases[cases.metric == "op_time"].iloc[0]
    aa = [math.log(1.2), math.log(0.8), math.log(0.8 / 1.2)]
    # one run a side, one process each: Var(d) = 2 × the run variance, Σx²/2 over the 3 pairs (df 3)
    se = math.sqrt(2 * sum(x * x for x in aa) / 2 / 3)
    assert row.se == pytest.approx(se, rel=1e-6) and row.df == pytest.approx(3)
    assert row.significance == "not significant" and row.noise.startswith("A/A: its softmax group")
    assert noise_view(engine, {}).groups.iloc[0].noisy


def test_small_noise_lets_a_real_slowdown_through_and_the_case_says_where_its_noise_comes_from(engine):
    _slowdown_store(engine, (1.0, 1.01, 0.995))  # A/A differ by at most ~1.5 %
    found = _review(engine)
    assert list(found.workload) == ["softmax"] and found.bound.iloc[0] == pytest.approx(0.05)
    assert found.noise.iloc[0].startswith("A/A: its softmax group on this chip, 3 pairs")


def test_a_case_with_enough_pairs_of_its_own_uses_them(engine):
    _slowdown_store(engine, (1.0, 1.01, 0.995, 1.005))  # 4 A/A runs: 6 pairs of this case (≥ 5)
    found = _review(engine)
    assert list(found.workload) == ["softmax"] and found.noise.iloc[0].startswith("A/A: this case, 6 pairs")


def test_a_first_v4_store_without_pending_counts_is_migrated(tmp_path):
    path = tmp_path / "v4.duckdb"
    e = open_store(path)
    for run_id, scale in (("a1", 1.0), ("a2", 1.2)):
        stored(e, _run(f"{run_id:0>32}", scale=scale))
    with e.begin() as conn:
        conn.execute(text("ALTER TABLE aa_noise DROP COLUMN pending"))
        conn.execute(text("UPDATE meta SET value = '4' WHERE key = 'store_version'"))
    e.dispose()
    e = open_store(path)
    try:
        stored(e, _run("a3".rjust(32, "0"), scale=0.8))
        got = noise_groups(e).iloc[0]
        assert (got.pairs, got.pending) == (6, 0)
    finally:
        e.dispose()


def test_a_retracted_run_leaves_the_model_and_pairs_with_no_later_run(engine):
    from db.store.writers.retract import retract_run

    for run_id, scale in (("a1", 1.0), ("a2", 1.5), ("a3", 1.02)):
        stored(engine, _run(f"{run_id:0>32}", scale=scale))
    retract_run(engine, "a2".rjust(32, "0"), "a bad run (thermal throttling)", "admin", admin=True)
    g = noise_groups(engine).iloc[0]
    assert g.pairs == 2 and g.quantile_log == pytest.approx(math.log(1.02))  # only a1-a3 is left
    stored(engine, _run("a4".rjust(32, "0"), scale=1.0))  # pairs with a1 and a3, never a2
    assert {p[:2] for p in _pairs(engine)} == {
        (f"{a:0>32}", f"{b:0>32}") for a, b in (("a1", "a3"), ("a1", "a4"), ("a3", "a4"))
    }


def test_a_groups_sum_of_squares_is_the_same_whatever_order_the_rows_come_in():
    # DuckDB's sum() adds in the order its threads met the rows: the A/A figures of two stores built from the same
    # uploads differed in the last bits. The sums the store keeps (aa_pairs) add in one fixed order.
    import duckdb

    from db.stats.lists import exact_sum_sql

    x = np.random.default_rng(3).lognormal(0, 4, 2000) * np.where(np.arange(2000) % 2, 1, -1)
    con = duckdb.connect()
    sums = {}
    for name, order in {
        "as drawn": x,
        "reversed": x[::-1],
        "shuffled": np.random.default_rng(4).permutation(x),
    }.items():
        con.execute("CREATE OR REPLACE TABLE t AS SELECT unnest(?::DOUBLE[]) AS v", [order.tolist()])
        sums[name] = con.execute(f"SELECT {exact_sum_sql('v')}, sum(v) FROM (SELECT v FROM t)").fetchone()
    exact, plain = {s[0] for s in sums.values()}, {s[1] for s in sums.values()}
    assert len(exact) == 1 and math.isclose(exact.pop(), math.fsum(x), rel_tol=1e-9)
    assert len(plain) > 1  # the order mattered to a plain sum: the test tells the two apart
