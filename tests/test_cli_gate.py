"""`mpsbench compare` / `python -m db compare`: the exit code and output of each --fail-on mode, errors as
"ERROR: …" + exit 1, and the same figures locally, from a real server (--url, uvicorn on 127.0.0.1) and on the
Regressions page, on the known-verdict store (tests/verdict_store.py)."""

from __future__ import annotations

import csv
import io
import json
import re
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
import streamlit as st
import uvicorn
from starlette.applications import Starlette
from streamlit.testing.v1 import AppTest

import db.store.engine
from db.cli import main
from db.store.writers.triage import NOTE_KEY, save_note
from tests import verdict_store as v
from tests.store_fixtures import cli_store_file
from tests.test_page_twins import ROOT_SCRIPT, _same

SIDES = ["--baseline", v.BASELINE, "--candidate", v.CANDIDATE]
EXPECTED = 5  # driver peak, reserved peak, two correctness cases (one row each), linear op_time: see verdict_store


@pytest.fixture
def store_file(tmp_path, monkeypatch):
    return cli_store_file(tmp_path, monkeypatch, v.verdict_store)


def _run(capsys, *args):
    code = main(["compare", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_fail_on_regression_exits_1_and_untriaged_follows_triage(store_file, capsys):
    code, out, err = _run(capsys, *SIDES, "--fail-on", "regression")
    assert code == 1 and f"FAIL: {EXPECTED} regression(s) in 3 case(s)" in err and "3 cases regressed on 1" in out
    code, out, err = _run(capsys, *SIDES, "--fail-on", "untriaged", "--format", "json")
    answer = json.loads(out)
    assert code == 1 and len(answer["regressions"]) == EXPECTED and "untriaged" in err
    engine = db.store.engine.open_store(store_file)
    for row in answer["regressions"]:  # every regression triaged: untriaged no longer fails, regression still does
        save_note(engine, v.BASELINE, v.CANDIDATE, {k: row[k] for k in NOTE_KEY}, "confirmed", "ci-bot")
    engine.dispose()
    code, _, err = _run(capsys, *SIDES, "--fail-on", "untriaged")
    assert code == 0 and "PASS" in err
    assert _run(capsys, *SIDES, "--fail-on", "regression")[0] == 1
    # triaged away (issue 44): noise on the linear slowdown takes it out of every count and the gate says so
    engine = db.store.engine.open_store(store_file)
    [linear] = [r for r in answer["regressions"] if r["workload"] == "linear"]
    save_note(engine, v.BASELINE, v.CANDIDATE, {k: linear[k] for k in NOTE_KEY}, "noise", "ci-bot", "a cold run")
    engine.dispose()
    code, out, err = _run(capsys, *SIDES, "--fail-on", "regression")
    assert code == 1 and f"FAIL: {EXPECTED - 1} regression(s) in 2 case(s)" in err
    assert "not counted: 1 regression(s) triaged away — linear" in err and "noise (ci-bot)" in err
    assert out.splitlines()[0].endswith("2 cases regressed on 1 of 1 machine; 1 triaged")
    code, out, err = _run(capsys, *SIDES)  # no --fail-on: report only
    assert code == 0 and err == ""


def test_no_regression_passes_the_gate(store_file, capsys):
    # the linear slowdown is 50 %: a 60 % threshold, and rules sparing memory and PSNR, leave the two
    # passed → failed correctness case (always a regression) only
    rules = "memory_driver_peak.percent=1000,memory_reserved_peak.percent=1000,psnr_vs_cpu.drop=100"
    code, out, _ = _run(
        capsys, *SIDES, "--threshold", "60", "--rules", rules, "--format", "json", "--fail-on", "regression"
    )
    found = json.loads(out)["regressions"]
    assert code == 1 and [(r["workload"], r["metric"]) for r in found] == [("softmax", "correctness")]
    code, out, err = _run(capsys, "--baseline", v.BASELINE, "--candidate", v.BASELINE, "--fail-on", "regression")
    assert code == 0 and "PASS" in err and "no regressions" in out


@pytest.mark.parametrize(
    "args,named",
    [
        (["--rules", "speed.percent=1"], "rules"),
        (["--threshold", "0.05"], "threshold"),
        (["--format", "xml"], "argument --format"),
        (["--scope", "galaxy"], "scope"),
        (["--fail-on", "anything"], "argument --fail-on"),
    ],
)
def test_bad_arguments_are_one_error_line(store_file, capsys, args, named):
    code, out, _ = _run(capsys, *SIDES, *args)
    assert code == 1 and out.startswith("ERROR: ") and named in out and "Traceback" not in out


def test_csv_and_markdown_carry_every_regression(store_file, capsys):
    _, out, _ = _run(capsys, *SIDES, "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][0] == "case" and len(rows) == 1 + EXPECTED
    _, out, _ = _run(capsys, *SIDES, "--format", "md-full")
    assert "## Release summary" in out and out.count("| mac-a |") == 2 + EXPECTED  # 2 summary groups


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(store_file, monkeypatch):
    """The API (app.api_routes: the server's own guard and routes) served by uvicorn on 127.0.0.1."""
    from app import api_routes

    monkeypatch.setattr(db.store.engine, "_shared", {})
    port = _free_port()
    srv = uvicorn.Server(
        uvicorn.Config(Starlette(routes=api_routes()), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(url + "/api/v1/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    yield url
    srv.should_exit = True
    thread.join(timeout=30)
    for engine in db.store.engine._shared.values():
        engine.dispose()


def test_url_page_api_and_local_agree_on_every_figure(server, store_file, capsys):
    code_remote, remote, _ = _run(capsys, *SIDES, "--format", "json", "--url", server, "--fail-on", "regression")
    body = httpx.get(
        server + "/api/v1/regressions", params={"baseline": v.BASELINE, "candidate": v.CANDIDATE}, timeout=60
    ).json()
    body.pop("ok")
    assert code_remote == 1 and json.loads(remote) == body
    code_local, local, _ = _run(capsys, *SIDES, "--format", "json", "--fail-on", "regression")
    assert code_local == 1 and json.loads(local) == body  # same code path: identical answers
    code, out, _ = _run(capsys, *SIDES, "--url", server, "--rules", "nope.drop=1")
    assert code == 1 and out.startswith("ERROR: rules")  # refused before the server is asked
    code, out, _ = _run(capsys, *SIDES, "--url", "http://127.0.0.1:9")  # nothing listens on port 9
    assert code == 1 and out.startswith("ERROR: cannot reach")
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(ROOT_SCRIPT, default_timeout=120)
    at.run()
    at.switch_page("regressions.py")
    at.query_params.clear()  # as a browser's page change does
    at.query_params.update({"baseline": v.BASELINE, "candidate": v.CANDIDATE, "threshold": "5"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    _same(at.dataframe[0].value, body["summary"]["groups"], "page summary vs CLI")
    _same(at.dataframe[1].value, body["regressions"], "page regressions vs CLI")


def test_python_m_db_compare_runs_as_a_command(store_file):
    done = subprocess.run(
        [sys.executable, "-m", "db", "compare", *SIDES, "--fail-on", "regression"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1 and "FAIL: 5 regression(s)" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "mpsbench", "compare", *SIDES, "--format", "xml"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1 and done.stdout.startswith("ERROR: ")


def test_the_job_summary_from_a_server_links_pages_that_show_the_same_review(server, capsys):
    from urllib.parse import parse_qsl, urlsplit

    code, out, _ = _run(capsys, *SIDES, "--threshold", "7", "--format", "md", "--url", server)
    assert code == 0 and out.startswith("### mpsbench: 3 cases regressed")
    [link] = [u for t, u in re.findall(r"\[([^\]]+)\]\(([^)]+)\)", out) if t == "Regressions page"]
    assert link.startswith(server + "/regressions?")
    # the page's twin, asked with the link's own parameters, gives the review the summary was made from
    twin = httpx.get(server + "/api/v1/regressions", params=parse_qsl(urlsplit(link).query), timeout=60).json()
    assert twin["threshold"] == 7 and len(twin["regressions"]) == EXPECTED
    assert out.count("\n| mac-a | ") == EXPECTED + 2  # the regression rows + the 2 groups in the folded table
