"""Processes end with what started them, and a killed sweep resumes whole (collector/isolation/lifeline.py, isolation.py,
sweep/runner.py, sweep/delivery.py, sweep/options.py):

- a sweep SIGKILLed mid-run leaves no `collector run` and no case worker behind; `--resume` (no --push given
  again) delivers every remaining bundle to the server the sweep was started with, each exactly once, and a
  resume with a conflicting option is refused with an ERROR naming it, changing nothing;
- a `collector run --processes 2` SIGKILLed mid-case leaves no worker, nor the child process the case started;
- a case killed at its hard deadline takes its own child process with it;
- the portable tie (macOS has no PR_SET_PDEATHSIG): a child polling its parent ends when the parent is SIGKILLed.

Every wait polls with a generous timeout (a loaded 2-core machine); processes are found by pid and process group
(psutil), and any left over is killed by pid at the end, so a failure leaves nothing running either.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from collector.cli.main import main as cli_main
from tests.test_collector_push import Server
from tests.test_sweep_run import ENV, events, wait_until, wrapper

ROOT = Path(__file__).resolve().parents[1]


def _gone(p: psutil.Process) -> bool:
    try:
        return not p.is_running() or p.status() == psutil.STATUS_ZOMBIE  # a zombie runs nothing
    except psutil.NoSuchProcess:
        return True


def _in_groups(pgids: set[int]) -> list[psutil.Process]:
    """Live processes whose process group is one of pgids."""
    found = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) in pgids and not _gone(p):
                found.append(p)
        except (ProcessLookupError, PermissionError, psutil.Error):
            pass
    return found


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _kill_left(procs: list[psutil.Process]) -> None:
    for p in procs:  # only processes this test started (descendants of its own children), by pid
        try:
            if p.is_running():
                p.kill()
        except psutil.NoSuchProcess:
            pass


def _groups(procs: list[psutil.Process]) -> set[int]:
    out = set()
    for p in procs:
        try:
            out.add(os.getpgid(p.pid))
        except ProcessLookupError:
            pass
    return out


def test_sweep_sigkill_then_resume_delivers_every_bundle_once_and_leaves_nothing_running(tmp_path, monkeypatch, capsys):
    a, b = wrapper(tmp_path / "env-a" / "bin"), wrapper(tmp_path / "env-b" / "bin")
    out = tmp_path / "out"
    server = Server([])
    env = {
        **os.environ,
        **ENV,
        "MPSBENCH_FAKE_SLEEP_S": "0.5",
        "MPSBENCH_OUTBOX": str(tmp_path / "outbox"),
        "MPSBENCH_TOKEN": "s3cret",
    }
    args = [
        sys.executable,
        "-m",
        "collector",
        "sweep",
        "--build",
        f"python={a}",
        "--build",
        f"python={b}",
        "--rounds",
        "2",
        "--workload",
        "fake_sleep",
        "--compile",
        "eager",
        "--processes",
        "1",
        "--idle-wait",
        "0",
        "--out",
        str(out),
        "--envs",
        str(tmp_path / "envs"),
        "--push",
        server.url,
    ]
    log = tmp_path / "sweep.log"  # a file, not a pipe: a process left behind cannot hold the test up
    first = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    seen: list[psutil.Process] = []
    try:
        wait_until(lambda: list(out.glob("sweep-*.sweep.jsonl")), 180)
        journal = next(out.glob("sweep-*.sweep.jsonl"))

        def second_slot_has_a_worker() -> bool:
            assert first.poll() is None, log.read_text()  # ended before the kill: say why
            record = events(journal)
            started = [e for e in record if e["type"] == "slot_start"]
            if sum(e["type"] == "slot_end" for e in record) != 1 or len(started) != 2:
                return False
            return any("spawn_main" in " ".join(p.cmdline()) for p in _descendants(first.pid))

        wait_until(second_slot_has_a_worker, 300)  # its worker is starting: seconds of work left in that run
        seen = _descendants(first.pid)  # the slot's `collector run`, its case worker (and mp's resource tracker)
        assert any(p.cmdline()[1:4] == ["-m", "collector", "run"] for p in seen), [p.cmdline() for p in seen]
        groups = _groups(seen) - {os.getpgid(0)}
        assert len(server.requests) == 1  # the first run, delivered as it finished
        os.kill(first.pid, signal.SIGKILL)  # the sweep alone, as a crash or `kill -9 PID` would
        first.wait()
        wait_until(lambda: all(_gone(p) for p in seen), 120)
        assert _in_groups(groups) == []  # nothing left in the run's or a worker's process group
        killed = Path([e for e in events(journal) if e["type"] == "slot_start"][1]["folder"])
        left = [json.loads(p.read_text()) for p in killed.glob("*.json")]
        assert not any(b.get("complete") for b in left)  # stopped with the sweep, not left to finish alone

        # a resume with another option than the journal's is refused, naming it, before anything changes
        for k, v in ENV.items():
            monkeypatch.setenv(k, v)
        before = journal.read_bytes()
        for extra, named in (  # idle-wait: each resume is refused before it runs
            (["--profile", "full"], "--profile 'full'"),
            (["--rounds", "5"], "--rounds '5'"),
            (["--push", "http://127.0.0.1:9/"], "--push 'http://127.0.0.1:9/'"),
        ):
            code = cli_main(["sweep", "--resume", str(journal), *extra])  # idle-wait: refused (above)
            said = capsys.readouterr().out.replace("\n", " ")
            assert code == 1 and said.startswith("ERROR:") and named in said and "journal" in said, said
        assert journal.read_bytes() == before

        resumed = subprocess.run(
            [sys.executable, "-m", "collector", "sweep", "--resume", "--out", str(out)],  # idle-wait: the journal's (0)
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "4 of 4 finished runs delivered" in resumed.stdout, resumed.stdout
    finally:
        server.close()
        _kill_left(seen)
    sweep_id = events(journal)[0]["sweep_id"]
    bundles = {json.loads(p.read_text())["run_id"] for p in (out / f"sweep-{sweep_id}").glob("*/*.json")}
    delivered = [json.loads(body)["run_id"] for _, _, body in server.requests]
    assert len(bundles) == 4 and sorted(delivered) == sorted(bundles)  # each of the 4 exactly once
    assert all(auth == "Bearer s3cret" for _, auth, _ in server.requests)
    pushes = [e for e in events(journal) if e["type"] == "push"]
    assert sorted(e["run_id"] for e in pushes) == sorted(bundles) and {e["state"] for e in pushes} == {"sent"}


def _run_with_child(tmp_path: Path, *extra: str, sleep_s: str) -> tuple[subprocess.Popen, Path]:
    pids = tmp_path / "pids.txt"
    env = {
        **os.environ,
        "MPSBENCH_CATALOG": "tests.fake_workloads",
        "MPSBENCH_FAKE_SLEEP_S": sleep_s,
        "MPSBENCH_FAKE_PIDS": str(pids),
    }
    # output to a file, not a pipe: a child left behind would hold a pipe open and the test up
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "collector",
            "run",
            "--workload",
            "fake_child",
            "--compile",
            "eager",
            "--out",
            str(tmp_path / "out"),
            "--idle-wait",
            "0",
            *extra,
        ],
        cwd=ROOT,
        env=env,
        stdout=(tmp_path / "run.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    return run, pids


def _case_pids(pids: Path) -> list[tuple[int, int]]:
    text = pids.read_text() if pids.exists() else ""
    return [tuple(int(x) for x in line.split()) for line in text.splitlines() if len(line.split()) == 2]


def test_run_sigkilled_mid_case_leaves_no_worker_nor_the_cases_child(tmp_path):
    run, pids = _run_with_child(tmp_path, "--processes", "2", sleep_s="60")
    seen: list[psutil.Process] = []
    try:
        wait_until(lambda: _case_pids(pids), 300)  # the first worker is in its case, the case's child started
        [(worker, child)] = _case_pids(pids)
        seen = _descendants(run.pid)
        assert {worker, child} <= {p.pid for p in seen}
        groups = _groups(seen)
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
        wait_until(lambda: all(_gone(p) for p in seen), 120)
        assert _in_groups(groups - {os.getpgid(0)}) == []
    finally:
        _kill_left(seen)


def test_case_killed_at_its_deadline_takes_its_child_with_it(tmp_path):
    run, pids = _run_with_child(tmp_path, "--processes", "1", "--case-time-limit", "0.5", sleep_s="60")
    seen: list[psutil.Process] = []
    try:
        wait_until(lambda: _case_pids(pids), 300)
        seen = _descendants(run.pid)
        [(worker, child)] = _case_pids(pids)
        run.wait(timeout=300)
        said = (tmp_path / "run.log").read_text()
        assert "timed out" in said, said
        doomed = [p for p in seen if p.pid in (worker, child)]
        assert len(doomed) == 2
        wait_until(lambda: all(_gone(p) for p in doomed), 60)
    finally:
        _kill_left(seen)


_TIE = """
import os, signal, subprocess, sys, time
mode = sys.argv[1]
if mode == "parent":
    child = subprocess.Popen([sys.executable, __file__, "child", sys.argv[2]])
    print(child.pid, flush=True)
    time.sleep(600)
else:
    from collector.isolation import lifeline
    def handled(*_):  # the handler runs in the main thread, its sleep interrupted
        open(sys.argv[2] + ".handled", "w").close()
        sys.exit(0)
    signal.signal(signal.SIGTERM, handled)
    lifeline.watch(os.getppid(), signal.SIGTERM)
    open(sys.argv[2], "w").close()  # tied: the test may kill the parent now
    time.sleep(600)
"""


@pytest.mark.parametrize("how", ["poll", "gone-before"])
def test_portable_tie_ends_a_child_whose_parent_was_sigkilled(tmp_path, how):
    script = tmp_path / "tie.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if how == "gone-before":  # tied to a pid that is not its parent and no longer runs: it ends at once
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import signal, time; from collector.isolation import lifeline; "
                f"lifeline.tie_to_parent({dead.pid}, signal.SIGTERM); time.sleep(600)",
            ],
            env=env,
        )
        try:
            child.wait(timeout=60)
        finally:
            child.kill()
        assert child.returncode == -signal.SIGTERM
        return
    script.write_text(_TIE)
    ready = tmp_path / "tied"
    parent = subprocess.Popen(
        [sys.executable, str(script), "parent", str(ready)], env=env, stdout=subprocess.PIPE, text=True
    )
    child = psutil.Process(int(parent.stdout.readline()))
    try:
        wait_until(ready.exists, 60)
        assert not _gone(child)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        wait_until(lambda: _gone(child), 60)
        assert (tmp_path / "tied.handled").exists()
    finally:
        _kill_left([child])
