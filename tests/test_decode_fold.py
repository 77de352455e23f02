"""One measurement, one row: decode tokens/s is N / each decode_time sample and prefill tokens/s the prompt's tokens /
each TTFT sample, so a 1.3× slower decode is one regression (the timing's row, carrying its tokens/s) in the
regressions, the release summary and cards, the exports, the API and `mpsbench compare`, never two. Known answers
from tests/decode_store.py's constants."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

import db.store.engine
from api.errors import guard_routes
from bundle.metrics import DERIVED, RULES, MetricError, RuleKind, parse_rules
from db.cli import main
from db.review.release.listing import regressions
from db.review.release.summary import release_summary
from db.review.review import Review, cached_review
from db.views.exports.review_export import md_escape
from db.views.release.compare_chart import case_rows
from db.views.release.verdict_cards import verdict_cards
from tests import decode_store as d
from tests.store_fixtures import cli_store_file

PARAMS = {"baseline": d.BASELINE, "candidate": d.CANDIDATE}
SLOWER = d.DECODE_S[True] / d.DECODE_S[False]  # 1.3
# the three measurements that got slower: the decode, its prefill (TTFT) and the VAE's decode
EXPECTED = {("decode", "decode_time"), ("decode", "time_to_first_token"), ("vae_tiled_decode", "decode_time")}
FIGURE = re.compile(r"(\w+) ([\d.]+) → ([\d.]+) tokens/s")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = db.store.engine.open_store(tmp_path_factory.mktemp("decode") / "d.duckdb")
    d.decode_store(engine)
    yield engine
    engine.dispose()


def _figure(text: str) -> tuple[str, float, float]:
    name, before, after = FIGURE.fullmatch(text).groups()
    return name, float(before), float(after)


def _rows(engine, **params):
    found = regressions(engine, Review.from_params({**PARAMS, **params}))
    return found, {(r.workload, r.metric): r for r in found.itertuples()}


def test_the_registry_derives_each_rate_from_its_timing():
    assert DERIVED["decode_throughput"] == "decode_time" and DERIVED["prefill_throughput"] == "time_to_first_token"
    assert RULES["decode_throughput"].kind is RuleKind.derived is RULES["prefill_throughput"].kind
    assert RULES["decode_time"].kind is RuleKind.significant is RULES["time_to_first_token"].kind  # VAE's too
    with pytest.raises(MetricError, match="derived metrics have no rule to change"):
        parse_rules("decode_throughput.percent=10")  # the decode's rule is decode_time's


def test_one_regression_row_per_measurement_carrying_its_tokens_per_second(engine):
    found, rows = _rows(engine)
    assert len(found) == len(EXPECTED) and set(rows) == EXPECTED  # not five: no throughput row
    decode, ttft = rows[("decode", "decode_time")], rows[("decode", "time_to_first_token")]
    assert decode.worse_by == pytest.approx(SLOWER - 1, rel=0.01)
    assert ttft.worse_by == pytest.approx(d.TTFT_MS[True] / d.TTFT_MS[False] - 1, rel=0.01)
    name, before, after = _figure(decode.figures)
    assert name == "decode_throughput"
    assert (before, after) == pytest.approx(
        (d.NEW_TOKENS / d.DECODE_S[False], d.NEW_TOKENS / d.DECODE_S[True]), rel=2e-3
    )
    name, before, after = _figure(ttft.figures)
    assert name == "prefill_throughput"
    assert (before, after) == pytest.approx(
        (d.CONTEXT / (d.TTFT_MS[False] / 1e3), d.CONTEXT / (d.TTFT_MS[True] / 1e3)), rel=2e-3
    )
    assert rows[("vae_tiled_decode", "decode_time")].figures == ""  # a VAE decode has no rate: a plain timing


def test_the_summary_and_cards_count_each_measurement_once(engine):
    review = Review.from_params(PARAMS)
    summary = release_summary(engine, review)
    [group] = summary["groups"]
    # counted by case: the decode's decode_time and time to first token are one case, the VAE decode another
    cases = len({w for w, _ in EXPECTED})
    assert (summary["regressions"], summary["regression_rows"]) == (cases, len(EXPECTED))
    assert summary["verdict"].startswith(f"{cases} cases regressed")
    assert (group["slower"], group["faster"], group["regressed"]) == (0, 0, cases)
    assert group["unmatched"] == 1  # the long decode's OOM: its decode_time, not its tokens/s as well
    assert {(f["workload"], f["metric"]) for f in summary["families"]} == EXPECTED
    [card] = verdict_cards(engine, review).cards
    assert card["regressed"] == cases and card["counts"].startswith(f"{cases} cases: {cases} regressed")
    assert card["new_failures"] == 1


def test_compare_rows_show_the_rate_in_the_timing_row(engine):
    rows = case_rows(cached_review(engine, Review.from_params(PARAMS)))
    assert "decode_throughput" not in set(rows.metric) and "prefill_throughput" not in set(rows.metric)
    assert int(rows.regression.sum()) == len(EXPECTED)
    decode = rows[(rows.workload == "decode") & (rows.metric == "decode_time")].iloc[0]
    assert _figure(decode.derived)[0] == "decode_throughput"


def test_a_rate_compared_without_its_timing_is_judged_by_the_timing_rule(engine):
    # a review filtered to the rates has no timing row to carry them: each stands for its measurement and still gates
    found, rows = _rows(engine, metric="decode_throughput,prefill_throughput")
    assert set(rows) == {("decode", "decode_throughput"), ("decode", "prefill_throughput")}
    assert rows[("decode", "decode_throughput")].worse_by == pytest.approx(SLOWER - 1, rel=0.01)
    assert set(found.rule) == {"significant"} and set(found.figures) == {""}
    # the timing's own percent judges its rate too: 40 % spares the decode (30 % worse), not the prefill
    _, spared = _rows(engine, metric="decode_throughput,prefill_throughput", rules="decode_time.percent=40")
    assert set(spared) == {("decode", "prefill_throughput")}
    _, spared = _rows(engine, rules="decode_time.percent=40")
    assert set(spared) == {("decode", "time_to_first_token")}  # both decode_time rows spared, as written


def test_the_api_answers_one_row_per_measurement(engine, monkeypatch):
    import api.query as query_api

    monkeypatch.setattr(query_api, "_engine", lambda: engine)
    body = TestClient(Starlette(routes=guard_routes(query_api.ROUTES))).get("/api/v1/regressions", params=PARAMS).json()
    assert {(r["workload"], r["metric"]) for r in body["regressions"]} == EXPECTED
    assert body["summary"]["regression_rows"] == len(EXPECTED)


@pytest.fixture
def store_file(tmp_path, monkeypatch):
    return cli_store_file(tmp_path, monkeypatch, d.decode_store)


def _cli(capsys, *args):
    code = main(["compare", "--baseline", d.BASELINE, "--candidate", d.CANDIDATE, *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_cli_gate_and_exports_count_each_measurement_once(store_file, capsys):
    code, out, err = _cli(capsys, "--fail-on", "regression", "--format", "json")
    answer = json.loads(out)
    assert code == 1 and f"FAIL: {len(EXPECTED)} regression(s)" in err
    figures = {r["metric"]: r["figures"] for r in answer["regressions"] if r["workload"] == "decode"}
    _, out, _ = _cli(capsys, "--format", "md-full")
    assert out.count("| mac-d |") == 1 + len(EXPECTED)  # one summary group, then one line per regression
    assert md_escape(figures["decode_time"]) in out and md_escape(figures["time_to_first_token"]) in out
    _, out, _ = _cli(capsys, "--format", "csv")
    table = list(csv.DictReader(io.StringIO(out)))
    assert len(table) == len(EXPECTED)
    assert [r["figures"] for r in table if (r["workload"], r["metric"]) == ("decode", "decode_time")] == [
        figures["decode_time"]
    ]
    _, out, _ = _cli(capsys)  # the table: one line per measurement, its tokens/s on that line
    lines = out.splitlines()
    table = lines[lines.index(f"{len(EXPECTED)} regression(s), worst first:") + 2 :][: len(EXPECTED)]
    [decode] = [line for line in table if "tiny-lm" in line and " decode_time " in line]
    assert "decode_throughput" in decode and sum("decode_throughput" in line for line in table) == 1
