"""The release answer a manager acts on (issue 35), on tests/release_walk.py's two Macs × 2.14.1 / 2.15.0rc1 /
nightly with its planted effects: every doubtful case named on its card, in the gate's line, in both exports,
with the command that decides it; counts in one vocabulary (tested cases only; untested apart; families that say
they are untested; status words as Compare's; correctness by the rule Regressions uses); no green for a build
against itself, and a one-build store says what a second build would show."""

from __future__ import annotations

import csv
import io
import json
import shlex

import pytest

from db.cli import main
from db.ingest.core import ingest_bundle
from db.review.comparison import CompareQuery
from db.review.release.summary import review_answer
from db.review.review import Review, cached_review
from db.store.engine import open_store
from db.views.browse.correctness import WITHIN, correctness_view
from db.views.empty_reason import empty_reason
from db.views.release.overview import overview_of
from db.views.release.verdict_cards import verdict_cards
from mpsbench.workflows.confirm import _parser as confirm_parser
from tests import release_walk as w
from tests.store_fixtures import cli_store_file

SIDES = ["--baseline", w.BASELINE, "--candidate", w.CANDIDATE]
SDPA_NAME, LINEAR_NAME = (
    "sdpa · batch=1 head_dim=128 heads=16 kv_len=4096 phase=decode · fp16",
    "linear · M=4 K=2048 N=6144 · bf16",
)


def _walk(tmp_path_factory, processes: int, runs: int):
    engine = open_store(tmp_path_factory.mktemp(f"walk{processes}") / "w.duckdb")
    w.walk_store(engine, processes=processes, runs=runs)
    return engine


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """One process, one run a side: nothing to test the planted changes on."""
    engine = _walk(tmp_path_factory, 1, 1)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def tested(tmp_path_factory):
    """Ten processes, three runs a side: what a review can test."""
    engine = _walk(tmp_path_factory, 10, 3)
    yield engine
    engine.dispose()


def _review(scope: str = "machine", candidate: str = w.CANDIDATE) -> Review:
    return Review(CompareQuery.from_params({"baseline": w.BASELINE, "candidate": candidate, "scope": scope}))


def _group(summary: dict, machine: str, dtype: str) -> dict:
    return next(g for g in summary["groups"] if g["scope"] == machine and g["dtype"] == dtype)


def test_every_untested_planted_slowdown_is_named_on_its_group_with_the_command_that_decides_it(single):
    answer = review_answer(single, _review())
    summary = answer["summary"]
    assert answer["regressions"] == [] and summary["regressions"] == 0
    planted = {
        ("mbp-m4pro", "float16"): SDPA_NAME,
        ("mbp-m4pro", "bfloat16"): LINEAR_NAME,
        ("studio-m3u", "bfloat16"): LINEAR_NAME,
    }
    for (machine, dtype), name in planted.items():
        group = _group(summary, machine, dtype)
        [doubt] = group["doubts"]  # the one planted slowdown of the group, by name, with its figure and why
        assert doubt["case"] == name and doubt["why"] == "not testable: one figure a side"
        assert doubt["change"].endswith("× slower") and float(doubt["change"].split("×")[0]) > 1.1
        assert group["verdict"] == "not decided: no confirmed regression (1 unconfirmed: 1 with nothing to test it on)"
    # the unchanged sdpa on the M3 Ultra is untested too: not "no regressions", not "unchanged"
    m3 = _group(summary, "studio-m3u", "float16")
    assert (m3["unchanged"], m3["untested"], m3["doubts"]) == (0, 1, [])
    assert m3["verdict"] == "not decided: 1 timing figure untested (nothing to test on)"
    assert "can see nothing" in m3["detects"] and "makes them testable" in m3["detects"]
    assert (
        summary["verdict"].startswith("no confirmed regression; not decided on 2 of 2 machines")
        and "3 worse but not confirmed" in summary["verdict"]
        and "8 timing figures untested" in summary["verdict"]
    )
    # the command decides them: confirm's own parser reads it, with the review's sides
    words = shlex.split(summary["confirm"])
    assert words[:2] == ["mpsbench", "confirm"]
    opts = confirm_parser().parse_args(words[2:])
    assert (opts.baseline, opts.candidate, opts.scope) == (w.BASELINE, w.CANDIDATE, "machine")


def test_cards_name_the_doubtful_cases_and_never_read_green_over_untested_ones(single):
    cards = {(c["scope"], c["dtype"]): c for c in verdict_cards(single, _review()).cards}
    sdpa = cards["mbp-m4pro", "float16"]
    assert [d["text"].split(" · op_time")[0] for d in sdpa["doubts"]] == [SDPA_NAME]
    assert sdpa["doubts"][0]["link"].startswith("trends?workload=sdpa")
    for card in cards.values():
        # a group nothing tested never says "no regressions"; its counts say untested, never unchanged
        if card["untested"]:
            assert card["verdict"] != "no regressions" and card["unchanged"] == 0
            assert (
                f"{card['untested']} timing figure{'s' * (card['untested'] != 1)} untested (nothing to test on)"
                in (card["counts"])
            )
        # a family over untested cases says so, and takes no colour of a tested change
        assert all(f["tone"] == "" and "untested" in f["text"] for f in card["families"])
    softmax = cards["mbp-m4pro", "float32"]["families"][0]["text"]
    assert "faster" in softmax and "— untested (one figure a side)" in softmax
    # status changes worded as Compare's table words them: the fp8 matmul newly runs and fails its tolerance
    assert cards["mbp-m4pro", "float8_e4m3fn"]["status"] == "status changes: 1 newly supported, fails its tolerance"


def test_tested_runs_make_the_planted_slowdowns_regressions_and_nothing_is_left_doubtful(tested):
    answer = review_answer(tested, _review())
    summary = answer["summary"]
    found = sorted((r["scope"], r["case"]) for r in answer["regressions"])
    assert found == [("mbp-m4pro", LINEAR_NAME), ("mbp-m4pro", SDPA_NAME), ("studio-m3u", LINEAR_NAME)]
    assert (summary["unconfirmed"], summary["suspected"], summary["untested"], summary["confirm"]) == (0, 0, 0, "")
    cards = {(c["scope"], c["dtype"]): c for c in verdict_cards(tested, _review()).cards}
    [softmax] = cards["studio-m3u", "float32"]["families"]
    assert softmax["tone"] == "better" and "4.2" in softmax["text"]  # 4.25× faster, tested: coloured a win
    assert cards["studio-m3u", "float32"]["faster"] == 1


def test_the_gate_and_both_exports_carry_the_doubtful_cases(tmp_path, monkeypatch, capsys):
    cli_store_file(tmp_path, monkeypatch, lambda engine: w.walk_store(engine, processes=1, runs=1))
    assert main(["compare", *SIDES, "--fail-on", "regression"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("PASS with 3 unconfirmed, 8 untested (no replicates): no regression")  # never a bare PASS
    assert "mpsbench confirm --baseline torch=2.14.1 --candidate torch=2.15.0rc1" in err
    assert main(["compare", *SIDES, "--format", "md-full"]) == 0
    md = capsys.readouterr().out
    assert "Doubtful, not regressions (3 cases" in md and "```\nmpsbench confirm" in md
    assert md.count("| nothing to test on: one process, one run a side, no A/A data |") == 3  # each row's reason
    assert md.index("sdpa") < md.index("Status changes")
    assert main(["compare", *SIDES, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sorted((r["scope"], r["workload"], r["verdict"]) for r in rows) == [
        ("mbp-m4pro", "linear", "unconfirmed"),
        ("mbp-m4pro", "sdpa", "unconfirmed"),
        ("studio-m3u", "linear", "unconfirmed"),
    ]
    assert main(["compare", *SIDES, "--fail-on", "unconfirmed"]) == 1
    assert "FAIL: 3 regression(s) or unconfirmed case(s)" in capsys.readouterr().err
    assert main(["compare", *SIDES, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["untested"] == 8


def test_bf16_psnr_jitter_counts_within_its_rule_as_regressions_judge_it(single):
    view = correctness_view(single, {"baseline": "2.14.1 (stable, aaaaaaa)", "candidate": "2.15.0rc1 (rc, bbbbbbb)"})
    linear = view.slopes[view.slopes.workload == "linear"]
    assert len(linear) == 2 and set(linear.direction) == {WITHIN}  # ±0.8 dB at the rounding level: not 0.1 dB
    assert view.counts["worsened"] == 0  # the fp8 case has no baseline figure: no slope
    answer = review_answer(single, _review())
    assert not [r for r in answer["regressions"] if r["metric"] == "correctness"]


def test_a_build_against_itself_is_never_green_and_one_build_says_what_a_second_would_show(tmp_path):
    engine = open_store(tmp_path / "one.duckdb")
    bundles = [
        b
        for b in w.walk_bundles(processes=10, runs=2)
        if b.build.torch_version == "2.14.1" and b.machine.name == "mbp-m4pro"
    ]
    for bundle in bundles:  # one Mac, its two runs of 2.14.1
        ingest_bundle(engine, bundle.model_dump_json().encode())
    try:
        view = overview_of(engine)
        assert view.verdict is None and view.hint.startswith("One build stored (2.14.1")
        assert "mpsbench sweep --build" in view.hint
        both = Review(CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "build=2.14.1"}))
        why = empty_reason(cached_review(engine, both).comparison)
        assert why and "select the same runs" in why and "mpsbench sweep" in why
        # one build, different runs (an A/A review): said so, and the cards are not green
        aa = Review(CompareQuery.from_params({"baseline": "tag:round=0", "candidate": "tag:round=1"}))
        summary = review_answer(engine, aa)["summary"]
        assert summary["same_build"] and summary["verdict"].startswith("A/A, one build on both sides")
        cor = correctness_view(engine, {})
        assert cor.slopes.empty and cor.empty.startswith("Baseline and candidate are the same build")
    finally:
        engine.dispose()
