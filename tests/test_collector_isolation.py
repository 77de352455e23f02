"""Crash-isolated cases (collector/isolation/isolator.py): a segfault, an os._exit and a hang past the hard limit each
become that case's `error` record with the signal / limit while the run completes; --resume does not run
them again, --retry-crashed does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bundle.schema import Bundle, Status
from collector.isolation.isolator import exit_text, hard_deadline_s

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 0.5  # hard deadline 0.5 + 2 = 2.5 s: an ok case on a loaded box takes ~ms, the hang 120 s


@pytest.fixture(autouse=True)
def crash_catalog(monkeypatch, tmp_path):
    monkeypatch.setenv("MPSBENCH_CATALOG", "tests.crash_workloads")
    monkeypatch.setenv("MPSBENCH_CRASH_LOG", str(tmp_path / "ran.log"))
    monkeypatch.setenv("MPSBENCH_CRASH", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv(
        "MPSBENCH_PROCESSES", "1"
    )  # per-case crash semantics; several processes: test_collector_processes


def main(capsys, *args: str) -> tuple[int, str]:
    from collector.cli.main import main as cli_main

    code = cli_main(list(args))
    return code, capsys.readouterr().out


def ran(tmp_path: Path) -> list[str]:
    """The case names that started, in order (each case logs itself before acting)."""
    log = tmp_path / "ran.log"
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def workers(tmp_path: Path) -> list[int]:
    """The distinct worker pids, in order of first use."""
    pids = [int(line.split()[1]) for line in (tmp_path / "ran.log").read_text().splitlines()]
    return list(dict.fromkeys(pids))


def by_case(bundle: Bundle) -> dict[str, object]:
    return {r.params["how"]: r for r in bundle.results}


def only_bundle(out: Path) -> Bundle:
    [path] = out.glob("*.json")
    return Bundle.model_validate_json(path.read_text())


def run_crashing(capsys, out: Path) -> tuple[int, str]:
    return main(
        capsys,
        "run",
        "--out",
        str(out),
        "--workload",
        "fake_crash",
        "--case-time-limit",
        str(LIMIT_S),
        "--idle-wait",
        "0",
    )


def test_the_hard_deadline_is_the_limit_plus_2_s_or_25_percent():
    assert hard_deadline_s(None) is None
    assert hard_deadline_s(0.5) == 2.5 and hard_deadline_s(8) == 10 and hard_deadline_s(40) == 50
    assert exit_text(-11) == "SIGSEGV (signal 11)" and exit_text(-6) == "SIGABRT (signal 6)"
    assert exit_text(3) == "the worker exited with status 3"


def _crashing_run_completes_with_error_records(tmp_path: Path, capsys) -> Path:
    out = tmp_path / "runs"
    code, text = run_crashing(capsys, out)
    assert code == 0, text
    b = only_bundle(out)
    assert b.complete and len(b.results) == 5
    r = by_case(b)
    assert r["ok"].status == Status.ok and r["ok2"].status == Status.ok and len(r["ok2"].samples) == 2
    assert r["segv"].status == Status.error and r["segv"].message == f"crashed: SIGSEGV (signal {signal.SIGSEGV})"
    assert r["exit"].status == Status.error and r["exit"].message == "crashed: the worker exited with status 3"
    assert r["hang"].status == Status.error
    assert r["hang"].message.startswith("timed out after 2.5 s (limit 0.5 s)")
    assert ran(tmp_path) == ["ok", "segv", "exit", "hang", "ok2"]
    # ok and segv share the first worker; exit, hang and ok2 each start in a fresh one
    assert len(workers(tmp_path)) == 4
    journal = next(out.glob("*.journal.jsonl"))
    outcomes = {
        json.loads(line)["case"].split("|")[1]: json.loads(line).get("outcome")
        for line in journal.read_text().splitlines()[1:]
    }
    assert outcomes == {
        '{"how":"ok"}': None,
        '{"how":"segv"}': "crashed",
        '{"how":"exit"}': "crashed",
        '{"how":"hang"}': "timed_out",
        '{"how":"ok2"}': None,
    }
    assert "3 case(s) crashed or timed out" in text and "--retry-crashed" in text
    return out


def _cut_last_case(out: Path) -> None:
    """As if the collector itself was killed before the last case: journal without it, no bundle."""
    journal = next(out.glob("*.journal.jsonl"))
    lines = journal.read_text().splitlines(keepends=True)
    assert '"ok2"' in lines[-1]
    journal.write_text("".join(lines[:-1]))
    for bundle in out.glob("*.json"):
        bundle.unlink()


def test_crashes_and_hangs_are_error_records_resume_skips_them_and_retry_crashed_reruns_them(
    tmp_path, capsys, monkeypatch
):
    # One test, as each worker start imports torch (seconds on a loaded box).
    out = _crashing_run_completes_with_error_records(tmp_path, capsys)
    first = by_case(only_bundle(out))
    _cut_last_case(out)
    code, text = main(capsys, "run", "--out", str(out), "--resume")  # idle-wait: the journal's (0)
    assert code == 0, text
    assert ran(tmp_path)[5:] == ["ok2"]  # segv, exit and hang are not run again (they would crash again)
    resumed = by_case(only_bundle(out))
    assert resumed["segv"] == first["segv"] and resumed["hang"] == first["hang"] and resumed["ok2"].status == Status.ok
    monkeypatch.setenv("MPSBENCH_CRASH", "0")  # the cause fixed (say, a new build): they now run through
    code, text = main(capsys, "run", "--out", str(out), "--resume", "--retry-crashed")  # idle-wait: the journal's
    assert code == 0, text
    assert sorted(ran(tmp_path)[6:]) == ["exit", "hang", "segv"]
    retried = only_bundle(out)
    assert retried.complete and len(retried.results) == 5
    assert all(r.status == Status.ok for r in retried.results)
    assert by_case(retried)["ok"] == first["ok"]  # cases that were fine are kept as measured
    # nothing crashed any more: a further --retry-crashed finds no run to retry
    assert main(capsys, "run", "--out", str(out), "--retry-crashed")[0] == 1  # idle-wait: refused, nothing to retry


def test_in_process_runs_without_a_worker(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MPSBENCH_CRASH", "0")
    code, text = main(
        capsys, "run", "--out", str(tmp_path / "runs"), "--workload", "fake_crash", "--in-process", "--idle-wait", "0"
    )
    assert code == 0, text
    assert workers(tmp_path) == [os.getpid()]  # every case ran in the test's own process


def test_a_workload_that_cannot_be_sent_to_the_worker_is_its_own_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MPSBENCH_TRIVIAL_CASES", "2")
    out = tmp_path / "runs"
    code, text = main(
        capsys,
        "run",
        "--out",
        str(out),
        "--workload",
        "fake_unpicklable",
        "--workload",
        "fake_trivial",
        "--idle-wait",
        "0",
    )
    assert code == 0, text
    b = only_bundle(out)
    statuses = {(r.workload, r.params["i"]): (r.status, r.message) for r in b.results}
    assert statuses[("fake_trivial", 0)][0] == statuses[("fake_trivial", 1)][0] == Status.ok
    status, message = statuses[("fake_unpicklable", 0)]
    assert status == Status.error and message.startswith("cannot be sent to the case worker:")
    journal = next(out.glob("*.journal.jsonl"))
    assert '"outcome"' not in journal.read_text()  # an ordinary error: not a crash to retry


@pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="PR_SET_PDEATHSIG is Linux-only; elsewhere the "
    "worker ends after its case, at its next read of the closed pipe",
)
def test_a_worker_in_a_hanging_case_dies_with_its_killed_collector(tmp_path):
    env = {**os.environ, "MPSBENCH_CATALOG": "tests.crash_workloads", "MPSBENCH_CRASH_LOG": str(tmp_path / "ran.log")}
    env.pop("MPSBENCH_TOKEN", None)
    parent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "collector",
            "run",
            "--out",
            str(tmp_path / "runs"),
            "--workload",
            "fake_crash",
            "--idle-wait",
            "0",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 120
        while "hang" not in ran(tmp_path) and time.monotonic() < end:  # no time limit: it would hang 120 s
            time.sleep(0.05)
        assert "hang" in ran(tmp_path)
        worker = workers(tmp_path)[-1]
        parent.kill()
        parent.wait(30)
        end = time.monotonic() + 20
        while _alive(worker) and time.monotonic() < end:
            time.sleep(0.05)
        assert not _alive(worker)
    finally:
        if parent.poll() is None:
            parent.kill()


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
