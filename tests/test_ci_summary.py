"""`mpsbench compare --format md`: a CI job summary (db/views/exports/ci_summary.py) — the verdict line first, the worst
regressions and doubtful cases with their figures in their units, each list bounded with "N more", the confirm
line, links to the dashboard's pages carrying the review's own parameters (only with --url); on
tests/verdict_store.py (known regressions) and tests/release_walk.py (known doubtful cases)."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from db.cli import main
from db.review.release.summary import review_answer
from db.review.review import Review
from db.store.engine import open_store
from db.views.exports.ci_summary import ROWS_SHOWN, job_summary
from db.views.exports.review_markdown import md_escape
from tests import release_walk as w
from tests import verdict_store as v
from tests.store_fixtures import cli_store_file

LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


@pytest.fixture(scope="module")
def engine(verdict_engine):
    """The verdict store (tests/conftest.py) for every test here."""
    return verdict_engine


def _rows(md: str, header: str) -> list[list[str]]:
    lines = md.splitlines()
    start = lines.index(header) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("| "):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


REG_HEADER = "| scope | case | metric | baseline | candidate | change | why |"
DOUBT_HEADER = "| scope | case | metric | baseline | candidate | change | doubt |"


def _review(**extra) -> Review:
    return Review.from_params({"baseline": v.BASELINE, "candidate": v.CANDIDATE, **extra})


def test_the_verdict_comes_first_then_every_regression_with_its_units(engine):
    review = _review()
    answer = review_answer(engine, review)
    md = job_summary(answer, review.params())
    assert md.splitlines()[0] == "### mpsbench: 3 cases regressed on 1 of 1 machine"
    rows = {(r[1].replace("\\_", "_"), r[2].replace("\\_", "_")): r for r in _rows(md, REG_HEADER)}
    assert len(rows) == 5  # verdict_store's five: driver peak, reserved peak, two correctness cases, linear op_time
    driver = rows["vae · tiny-vae · fp32", "memory_driver_peak"]
    assert driver[3:6] == ["1.000 GiB", "10.000 GiB", "10.00× more memory"]
    assert rows["linear · k=1024 m=1 n=3072 · bf16", "op_time"][3:6] == ["20 µs", "30 µs", "1.50× slower"]
    assert rows["vae · tiny-vae · fp32", "correctness"][3:5] == ["70 dB", "50 dB"]
    assert "http" not in md and "more regressions" not in md  # no --url: no links; 5 ≤ 10: nothing counted apart
    assert "Doubtful" not in md and "doubtful" not in md


def test_each_list_is_bounded_and_says_how_many_more(engine):
    review = _review()
    answer = review_answer(engine, review)
    md = job_summary(answer, review.params(), limit=2)
    assert len(_rows(md, REG_HEADER)) == 2 and "… and 3 more regressions (`mpsbench compare --format md-full`)." in md
    many = {**answer, "regressions": answer["regressions"] * 3}  # 15 rows
    md = job_summary(many, review.params())
    assert len(_rows(md, REG_HEADER)) == ROWS_SHOWN == 10 and "… and 5 more regressions" in md
    assert md.splitlines()[0].startswith("### mpsbench: 3 cases regressed")  # the verdict is the summary's own


def test_the_doubtful_cases_are_listed_worst_first_with_the_line_that_decides_them(tmp_path):
    engine = open_store(tmp_path / "w.duckdb")
    w.walk_store(engine, processes=1, runs=1)  # nothing to test the planted slowdowns on: each unconfirmed
    review = Review.from_params({"baseline": w.BASELINE, "candidate": w.CANDIDATE})
    answer = review_answer(engine, review)
    engine.dispose()
    md = job_summary(answer, review.params()).replace("\\_", "_")
    assert md.splitlines()[0].startswith("### mpsbench: no confirmed regression") and REG_HEADER not in md
    assert "3 worse but not confirmed" in md.splitlines()[0]
    rows = _rows(md, DOUBT_HEADER)
    sdpa = "sdpa · batch=1 head_dim=128 heads=16 kv_len=4096 phase=decode · fp16"
    linear = "linear · M=4 K=2048 N=6144 · bf16"
    # the planted slowdowns: sdpa on the M4 Pro only, linear M=4 on both Macs
    assert sorted((r[0], r[1]) for r in rows) == [("mbp-m4pro", linear), ("mbp-m4pro", sdpa), ("studio-m3u", linear)]
    slower = [float(r[5].split("×")[0]) for r in rows]
    assert slower == sorted(slower, reverse=True) and all(r[3].endswith(" µs") and r[4].endswith(" µs") for r in rows)
    assert all(r[6].startswith("nothing to test on") for r in rows)
    confirm = answer["summary"]["confirm"]
    assert f"```\n{confirm}\n```" in md and confirm.startswith("mpsbench confirm")
    assert "**2 status changes:**" in md and "fp8_matmul" in md  # newly supported but failing on both Macs


def test_links_carry_the_review_and_each_case_links_its_trend(engine):
    review = _review(threshold="7", workload="linear,vae", scope="machine")
    answer = review_answer(engine, review)
    md = job_summary(answer, review.params(), "https://bench.example/team/")
    links = dict(LINK.findall(md))
    regressions, compare = urlsplit(links["Regressions page"]), urlsplit(links["Compare page"])
    where = (regressions.scheme, regressions.netloc, regressions.path)
    assert where == ("https", "bench.example", "/team/regressions")
    assert {k: q[0] for k, q in parse_qs(regressions.query).items()} == {
        "baseline": v.BASELINE,
        "candidate": v.CANDIDATE,
        "scope": "machine",
        "threshold": "7",
        "workload": "linear,vae",
    }
    assert compare.path == "/team/compare" and {k: q[0] for k, q in parse_qs(compare.query).items()} == {
        "baseline": v.BASELINE,
        "candidate": v.CANDIDATE,
        "scope": "machine",
        "workload": "linear,vae",
    }
    trend = urlsplit(links[md_escape("linear · k=1024 m=1 n=3072 · bf16")])
    assert trend.path == "/team/trends" and {k: q[0] for k, q in parse_qs(trend.query).items()} == {
        "workload": "linear",
        "case_key": '{"k":1024,"m":1,"n":3072}',
        "dtype": "bfloat16",
        "compile": "eager",
        "metric": "op_time",
    }
    rows = _rows(md, REG_HEADER)
    # a correctness row is three figures: no trend of its own
    assert [r[1] for r in rows if r[2] == "correctness"] == [md_escape("vae · tiny-vae · fp32")]
    shut = job_summary(answer, review.params(), "https://bench.example/a (b)")
    assert "](https://bench.example/a%20%28b%29/regressions?" in shut  # an address cannot close its link early


def test_the_cli_prints_the_summary_and_keeps_the_full_export_as_md_full(tmp_path, monkeypatch, capsys):
    cli_store_file(tmp_path, monkeypatch, v.verdict_store)
    assert (
        main(
            [
                "compare",
                "--baseline",
                v.BASELINE,
                "--candidate",
                v.CANDIDATE,
                "--format",
                "md",
                "--fail-on",
                "regression",
            ]
        )
        == 1
    )
    out, err = capsys.readouterr()
    assert out.startswith("### mpsbench: 3 cases regressed") and "FAIL: 5 regression(s) in 3 case(s)" in err
    assert main(["compare", "--baseline", v.BASELINE, "--candidate", v.CANDIDATE, "--format", "md-full"]) == 0
    assert "## Release summary" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["markdown", "MD"])
def test_an_unknown_format_names_the_choices(tmp_path, monkeypatch, capsys, fmt):
    cli_store_file(tmp_path, monkeypatch, v.verdict_store)
    assert main(["compare", "--baseline", v.BASELINE, "--candidate", v.CANDIDATE, "--format", fmt]) == 1
    out = capsys.readouterr().out
    assert out.startswith("ERROR: argument --format") and "'md-full'" in out
