"""`python -m collector sweep` end to end on this machine: two existing environments (this interpreter behind two
wrapper scripts: real venvs take minutes), --rounds 2 --aa on a tiny stand-in plan, an uninstallable third build
(pip offline, fails at once) reported while the others complete, SIGKILL mid-sweep and --resume. Bad input is an
ERROR naming the argument, before anything is written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bundle.schema import Bundle
from collector.cli.main import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
ENV = {"MPSBENCH_CATALOG": "tests.fake_workloads", "MPSBENCH_FAKE_CASES": "2", "COLUMNS": "200"}


def wrapper(folder: Path, body: str | None = None) -> Path:
    """An executable standing for an environment's python: this interpreter, or `body` (a broken one)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "python"
    path.write_text("#!/bin/sh\n" + (body or f'exec "{sys.executable}" "$@"') + "\n")
    path.chmod(0o755)
    return path


def events(journal: Path) -> list[dict]:
    out = []
    for line in journal.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:  # a line torn by the kill
            pass
    return out


def wait_until(check, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"not reached in {timeout} s")


def test_sweep_rounds_aa_failed_build_kill_and_resume(tmp_path):
    a, b = wrapper(tmp_path / "env-a" / "bin"), wrapper(tmp_path / "env-b" / "bin")
    (tmp_path / "no-wheels").mkdir()
    out = tmp_path / "out"
    args = [
        sys.executable,
        "-m",
        "collector",
        "sweep",
        "--build",
        f"python={a}",
        "--build",
        f"python={b}",
        "--build",
        f"torch==0.0.0 --no-index --find-links {tmp_path / 'no-wheels'}",
        "--rounds",
        "2",
        "--aa",
        "--workload",
        "fake_sleep",
        "--compile",
        "eager",
        "--idle-wait",
        "0",
        "--out",
        str(out),
        "--envs",
        str(tmp_path / "envs"),
    ]
    env = {**os.environ, **ENV, "MPSBENCH_FAKE_SLEEP_S": "0.4"}
    env.pop("MPSBENCH_TOKEN", None)
    first = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )  # its own process group: the kill takes the slot's run too
    wait_until(lambda: list(out.glob("sweep-*.sweep.jsonl")))
    journal = next(out.glob("sweep-*.sweep.jsonl"))

    def second_slot_measuring() -> bool:
        ended = [e for e in events(journal) if e["type"] == "slot_end"]
        started = [e for e in events(journal) if e["type"] == "slot_start"]
        if len(ended) != 1 or len(started) != 2:
            return False
        runs = list(Path(started[1]["folder"]).glob("*.journal.jsonl"))
        return bool(runs) and '"type":"case"' in runs[0].read_text()

    wait_until(second_slot_measuring)
    os.killpg(first.pid, signal.SIGKILL)  # the sweep and its running slot die at once, like a crash
    first_out = first.communicate()[0]
    in_flight = [e for e in events(journal) if e["type"] == "slot_start"][1]
    killed_run = next(Path(in_flight["folder"]).glob("*.journal.jsonl")).name.split(".")[0]
    assert "cannot be installed; pip said" in first_out and "torch==0.0.0" in first_out, first_out

    resumed = subprocess.run(
        [sys.executable, "-m", "collector", "sweep", "--resume", "--out", str(out)],  # idle-wait: the journal's (0)
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 1, resumed.stdout  # 1: one build was never measured
    assert "not measured: --build 'torch==0.0.0" in resumed.stdout and "6 of 6 runs" in resumed.stdout

    record = events(journal)
    sweep_id = record[0]["sweep_id"]
    builds = [e for e in record if e["type"] == "build"]
    assert [e["ok"] for e in builds] == [True, True, False] and "pip said" in builds[2]["error"]
    order = next(e for e in record if e["type"] == "schedule")["slots"]
    assert [(s["round"], s["build"], s["aa"]) for s in order] == [
        (1, 0, 0),
        (1, 1, 0),
        (1, 0, 1),
        (2, 1, 0),
        (2, 0, 1),
        (2, 0, 0),
    ]  # rotated by one per round
    found = [Bundle.model_validate_json(p.read_text()) for p in (out / f"sweep-{sweep_id}").glob("*/*.json")]
    assert len(found) == 6 and all(bd.complete for bd in found)
    label = builds[0]["label"]
    got = sorted(
        (int(bd.tags["round"]), int(bd.tags["position"]), int(bd.tags["spec"]), int(bd.tags["aa"])) for bd in found
    )
    assert got == sorted((s["round"], s["position"], s["build"] + 1, s["aa"]) for s in order)
    assert {bd.tags["sweep"] for bd in found} == {sweep_id} and {bd.tags["build"] for bd in found} == {label}
    assert {bd.build.install_source for bd in found} == {f"python={a}", f"python={b}"}
    assert all(len(bd.results) == 2 for bd in found)  # both cases of the tiny plan in every run
    assert killed_run in {bd.run_id for bd in found}  # the killed slot's run was continued, not started over
    assert sum(e["type"] == "slot_end" for e in events(journal)) == 6
    _dashboard_shows_one_sweep(tmp_path, found, sweep_id)


def _dashboard_shows_one_sweep(tmp_path: Path, found: list[Bundle], sweep_id: str) -> None:
    from db.ingest.core import ingest_bundle
    from db.review.comparison import CompareQuery, compute_compare
    from db.store.engine import open_store
    from db.views.browse.sweeps import sweep_detail, sweeps

    engine = open_store(tmp_path / "store.duckdb")
    for bundle in found:
        ingest_bundle(engine, bundle.model_dump_json().encode())
    listed = sweeps(engine)
    assert listed.sweep.tolist() == [sweep_id] and int(listed.n_runs[0]) == 6 and int(listed.aa_pairs[0]) == 2
    detail = sweep_detail(engine, sweep_id)
    ab = detail.comparisons.iloc[0]
    result = compute_compare(engine, CompareQuery.from_params({"baseline": ab.baseline, "candidate": ab.candidate}))
    assert len(result.cases) == 2 and set(result.cases.baseline_pooled) == {2}  # two rounds, two runs a side
    engine.dispose()


@pytest.fixture
def fake_env(monkeypatch):
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)


def _sweep(capsys, *args: str) -> tuple[int, str]:
    code = cli_main(["sweep", *args, "--idle-wait", "0"])
    return code, capsys.readouterr().out


@pytest.mark.parametrize(
    "builds,message",
    [
        (["python={a}"], "--build: a sweep compares at least two builds (got 1)"),
        (["python={a}", "python={a}"], "the same build as --build"),
        (["python={a}", "python={broken}"], "is not a Python with torch and the collector's requirements"),
        (["python={a}", "torch==2.14.1 --target /x"], "unknown option '--target'"),
    ],
)
def test_bad_input_is_an_error_naming_the_argument_and_writes_nothing(tmp_path, capsys, fake_env, builds, message):
    a, broken = wrapper(tmp_path / "a"), wrapper(tmp_path / "broken", "echo 'no torch here'")
    argv = [x for spec in builds for x in ("--build", spec.format(a=a, broken=broken))]
    code, out = _sweep(capsys, *argv, "--workload", "fake_sleep", "--out", str(tmp_path / "out"))
    assert code == 1 and "ERROR:" in out and message in out.replace("\n", " "), out
    assert not (tmp_path / "out").exists()


def test_unknown_workload_and_bad_rounds_refused_before_anything_runs(tmp_path, capsys, fake_env):
    a, b = wrapper(tmp_path / "a"), wrapper(tmp_path / "b")
    builds = ["--build", f"python={a}", "--build", f"python={b}", "--out", str(tmp_path / "out")]
    code, out = _sweep(capsys, *builds, "--workload", "no_such_workload")
    assert code == 1 and "ERROR:" in out and "--workload no_such_workload: unknown workload" in out
    code, out = _sweep(capsys, *builds, "--rounds", "0")
    assert code == 1 and "--rounds must be at least 1" in out
    code, out = _sweep(capsys, *builds, "--tag", "round=3")
    assert code == 1 and "--tag 'round=3'" in out
    assert not (tmp_path / "out").exists()
