"""The edges of the busy-machine work that its main tests do not cross: bad contention or rounding in an upload is
a 422 naming the field and the rule (nothing stored); --idle-wait is refused out of range and travels with a
sweep's runs and a run's journal; an A/A pair compares the medians of the clean processes; the gate, the cards and
the Markdown export say how many cases were contended."""

from __future__ import annotations

import contextlib
import io

import pytest
from sqlalchemy import text

from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.store.engine import open_store
from tests.bundles import make_bundle, make_result


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("contention", [1.5, 0.0], "less than or equal to 1"),
        ("contention", [-0.1, 0.0], "greater than or equal to 0"),
        ("contention", ["busy", 0.0], "valid number"),
        ("contention", [0.1], "1 contention shares for 2 worker processes"),
        ("contention", {"p": 0.1}, "valid array"),
        ("rounding", "60 dB", "valid number"),
    ],
)
def test_bad_contention_or_rounding_is_a_422_naming_the_field_and_nothing_is_stored(tmp_path, field, value, rule):
    engine = open_store(tmp_path / "s.duckdb")
    bad = make_result(samples=[1.0, 2.0], processes=[1, 1]) | {field: value}
    with pytest.raises(StoreError) as refused:
        ingest_bundle(engine, make_bundle(schema_version=3, results=[make_result(), bad]))
    assert refused.value.status == 422
    [problem] = refused.value.problems
    assert problem.field.startswith(f"results[1].{field}") and rule in problem.rule
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM runs")).scalar() == 0
    engine.dispose()


def test_idle_wait_out_of_range_is_refused_and_a_sweep_and_a_journal_carry_it(tmp_path, capsys):
    from collector.cli.main import main
    from collector.run.plan import Plan
    from collector.sweep.options import run_args

    for wait in ("-1", "nan", "4000"):
        assert main(["run", "--idle-wait", wait, "--out", str(tmp_path)]) == 1
        out = capsys.readouterr().out
        assert out.startswith("ERROR: --idle-wait must be from 0 to 3600 seconds") and "Traceback" not in out
    options = {"profile": "quick", "device": "cpu", "compile": "eager", "idle_wait": 5.0}
    assert run_args(options)[-2:] == ["--idle-wait", "5.0"]
    assert Plan.from_json(Plan(idle_wait_s=12.0).to_json()).idle_wait_s == 12.0
    assert Plan.from_json({}).idle_wait_s == 0.0  # a journal from before the wait: it never waited


def _run(version: str, levels: list[float], shares: list[float]) -> dict:
    samples = [v for v in levels for _ in range(3)]
    return make_bundle(
        schema_version=3,
        build={
            "torch_version": version,
            "channel": "release",
            "python_version": "3.11.7",
            "collector_version": "0.2.0",
        },
        results=[make_result(samples=samples, processes=[3] * len(levels), contention=shares)],
    )


def test_an_aa_pair_compares_the_medians_of_the_clean_processes(tmp_path):
    """Two runs of one build: the second had 3 of 10 processes contended at 100× (enough clean remain, so it
    pairs). Its median over every sample would be 10.5 µs against 10, a 5 % "run-to-run" move; its clean
    processes' median is 10, as the first run's: the pair's log ratio is 0."""
    engine = open_store(tmp_path / "s.duckdb")
    ingest_bundle(engine, _run("2.14.1", [10.0] * 10, [0.0] * 10))
    ingest_bundle(engine, _run("2.14.1", [10.0] * 5 + [11.0] * 2 + [1000.0] * 3, [0.0] * 7 + [0.9] * 3))
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT median FROM results ORDER BY run_seq")).scalars().all()
        [ratio] = conn.execute(text("SELECT log_ratio FROM aa_pairs")).scalars().all()
    engine.dispose()
    assert stored[1] == 10.5  # the samples' own median, kept as stored
    assert ratio == pytest.approx(0.0)


def test_the_gate_the_cards_and_the_markdown_count_contended_cases(tmp_path, monkeypatch):
    from db.compare_command import main as gate
    from db.review.comparison import CompareQuery
    from db.review.release.summary import review_answer
    from db.review.review import Review
    from db.views.exports.review_export import summary_markdown
    from db.views.release.verdict_cards import verdict_cards

    path = tmp_path / "s.duckdb"
    engine = open_store(path)
    ingest_bundle(engine, _run("2.14.1", [10.0] * 10, [0.0] * 10))
    ingest_bundle(engine, _run("2.15.0", [500.0] * 8 + [10.0] * 2, [0.8] * 8 + [0.0] * 2))
    review = Review(CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"}))
    summary = review_answer(engine, review)["summary"]
    [card] = verdict_cards(engine, review).cards
    engine.dispose()
    assert card["contended"] == 1 and card["counts"].endswith("; 1 contended (not tested)")
    lines = summary_markdown(summary, str)
    at = next(i for i, line in enumerate(lines) if line.startswith("| scope |"))
    header, row = lines[at].split(" | "), lines[at + 2].split(" | ")
    assert row[header.index("contended")] == "1"
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = gate(["--baseline", "torch=2.14.1", "--candidate", "torch=2.15.0", "--fail-on", "regression"])
    assert code == 0 and "PASS with 1 unconfirmed (1 contended): no regression" in err.getvalue()
