"""`python -m collector` end to end with stand-in workloads: run, list, show, SIGKILL + --resume, Ctrl-C."""

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

ROOT = Path(__file__).resolve().parents[1]


def env(**extra: str) -> dict[str, str]:
    e = {**os.environ, "MPSBENCH_CATALOG": "tests.fake_workloads", "COLUMNS": "200", "MPSBENCH_PROCESSES": "1", **extra}
    e.pop("MPSBENCH_TOKEN", None)
    return e


def collector(*args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "collector", *args],
        cwd=ROOT,
        env=env(**extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def main(capsys, *args: str) -> tuple[int, str]:
    """The CLI in-process (no torch import per call): exit code and stdout."""
    from collector.cli.main import main as cli_main

    code = cli_main(list(args))
    return code, capsys.readouterr().out


@pytest.fixture(autouse=True)
def fake_catalog(monkeypatch):
    monkeypatch.setenv("MPSBENCH_CATALOG", "tests.fake_workloads")
    monkeypatch.setenv("COLUMNS", "200")
    # one worker process: these tests are about the journal and the bundle per case (tests/test_process_lifetimes.py
    # covers several processes)
    monkeypatch.setenv("MPSBENCH_PROCESSES", "1")


def bundles(out: Path) -> list[Bundle]:
    return [Bundle.model_validate_json(p.read_text()) for p in out.glob("*.json")]


def wait_for_cases(journal_dir: Path, n: int, timeout: float = 60) -> Path:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for j in journal_dir.glob("*.journal.jsonl"):
            if sum(1 for line in j.read_text().splitlines() if '"type":"case"' in line) >= n:
                return j
        time.sleep(0.05)
    raise AssertionError(f"no journal with {n} finished cases in {timeout} s")


def test_run_writes_a_valid_bundle_with_tags_and_statuses(tmp_path, capsys):
    code, out = main(
        capsys,
        "run",
        "--out",
        str(tmp_path),
        "--tag",
        "role=candidate",
        "--machine-name",
        "ci-box",
        "--workload",
        "fake_add",
        "--workload",
        "fake_fp8",
        "--idle-wait",
        "0",
    )
    assert code == 0, out
    [b] = bundles(tmp_path)
    assert b.complete and b.tags == {"role": "candidate"} and b.machine.name == "ci-box"
    assert b.device.type == "cpu" and b.build.torch_version
    statuses = {(r.workload, r.params.get("how"), r.metric): r.status for r in b.results}
    assert statuses[("fake_fp8", "typeerror", "op_time")] == Status.unsupported
    assert statuses[("fake_fp8", "crash", "op_time")] == Status.error
    assert statuses[("fake_add", None, "memory_reserved_peak")] == Status.unavailable
    assert "op_time" in out and "µs" in out  # the summary table
    code, shown = main(capsys, "show", str(next(tmp_path.glob("*.json"))))
    assert code == 0 and "fake_add[n=1024]" in shown and "µs" in shown


def test_list_shows_cases_per_profile_and_units(capsys):
    code, out = main(capsys, "list")
    assert code == 0 and "fake_add" in out and "op_time (µs)" in out


def test_expected_errors_print_one_line_and_exit_1(tmp_path, capsys):
    for args in (  # idle-wait: each is refused before a run starts
        ["run", "--workload", "nope"],
        ["run", "--tag", "novalue"],
        ["show", str(tmp_path / "x.json")],
        ["run", "--compile", "jit"],
        ["run", "--case-time-limit", "-1"],
        ["run", "--resume"],
        ["run", "--push", "localhost:8501"],
    ):
        code, out = main(capsys, *args, "--out", str(tmp_path)) if args[0] == "run" else main(capsys, *args)
        assert code == 1, args
        assert out.startswith("ERROR: ") and out.count("ERROR") == 1 and "Traceback" not in out, out
    done = collector("run", "--workload", "nope", "--idle-wait", "0")  # the real entry point: exit 1, no traceback
    assert done.returncode == 1 and done.stdout.startswith("ERROR: ") and "Traceback" not in done.stderr


def test_unavailable_catalog_source_is_listed_not_fatal(capsys, monkeypatch):
    monkeypatch.setenv("MPSBENCH_CATALOG", "tests.fake_workloads,no_such_module_xyz")
    code, out = main(capsys, "list")
    assert code == 0 and "unavailable" in out and "no_such_module_xyz" in out


def journaled_samples(journal: Path) -> dict[int, list[float]]:
    """Case index -> decode_time samples of every case the journal holds as finished."""
    out = {}
    for line in journal.read_text().splitlines():
        record = json.loads(line) if line.startswith('{"type":"case"') and line.endswith("}") else None
        if record:
            [result] = record["results"]
            out[result["params"]["i"]] = result["samples"]
    return out


def _ctrl_c_default() -> None:
    """In the child: Ctrl-C as a terminal gives it. A suite started in the background (`cmd &`) ignores SIGINT,
    its children inherit that, and Python then installs no KeyboardInterrupt handler: the run never heard it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _slow_run(tmp_path: Path, slow: dict[str, str], out: int) -> subprocess.Popen:
    """A fake_sleep run in the background, to be stopped; no idle wait, so no retakes: on a busy machine a resumed
    run would re-time a finished case's contended process beside its first samples, not what these tests check."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "collector",
            "run",
            "--out",
            str(tmp_path),
            "--workload",
            "fake_sleep",
            "--idle-wait",
            "0",
        ],
        cwd=ROOT,
        env=env(**slow),
        preexec_fn=_ctrl_c_default,
        stdout=out,
        stderr=out,
        text=True,
    )


def test_sigkill_then_resume_keeps_finished_cases_and_runs_the_rest_once(tmp_path, capsys, monkeypatch):
    slow = {"MPSBENCH_FAKE_SLEEP_S": "0.15", "MPSBENCH_FAKE_CASES": "6"}
    proc = _slow_run(tmp_path, slow, subprocess.DEVNULL)
    journal = wait_for_cases(tmp_path, 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert not list(tmp_path.glob("*.json"))  # killed: no bundle yet, only the journal
    kept = journaled_samples(journal)
    assert 2 <= len(kept) < 6 and all(min(s) >= 0.15 for s in kept.values())
    with journal.open("a") as f:
        f.write('{"type":"case","case":"torn')  # a write the kill cut in half
    monkeypatch.setenv("MPSBENCH_FAKE_SLEEP_S", "0.01")  # cases run after the resume are told apart by this
    monkeypatch.setenv("MPSBENCH_FAKE_CASES", "6")
    code, out = main(capsys, "run", "--out", str(tmp_path), "--resume")  # idle-wait: the journal's (0)
    assert code == 0, out
    [b] = bundles(tmp_path)
    assert b.run_id == journal.name.split(".")[0] and b.complete
    samples = {r.params["i"]: r.samples for r in b.results}
    assert sorted(samples) == list(range(6)) and len(b.results) == 6
    assert {i: samples[i] for i in kept} == kept  # finished before the kill: kept as measured, not re-run
    assert all(max(samples[i]) < 0.15 for i in set(samples) - set(kept))
    assert any("resumed 1 time" in w for w in b.warnings)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_writes_a_valid_incomplete_bundle_and_resume_completes_it(tmp_path, capsys, monkeypatch, sig):
    slow = {"MPSBENCH_FAKE_SLEEP_S": "0.15", "MPSBENCH_FAKE_CASES": "8"}
    proc = _slow_run(tmp_path, slow, subprocess.PIPE)
    wait_for_cases(tmp_path, 1)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    [b] = bundles(tmp_path)
    assert b.complete is False and b.ended_at is not None
    done = {r.params["i"]: r.samples for r in b.results}
    assert 1 <= len(done) < 8
    assert any(w.startswith("incomplete:") for w in b.warnings)
    assert "--resume" in out
    monkeypatch.setenv("MPSBENCH_FAKE_CASES", "8")
    assert main(capsys, "run", "--out", str(tmp_path), "--resume")[0] == 0  # idle-wait: the journal's (0)
    [b2] = bundles(tmp_path)
    assert b2.run_id == b.run_id and b2.complete and not any(w.startswith("incomplete:") for w in b2.warnings)
    assert sorted(r.params["i"] for r in b2.results) == list(range(8))
    assert {r.params["i"]: r.samples for r in b2.results if r.params["i"] in done} == done


def test_resume_without_a_journal_is_an_error(tmp_path, capsys):
    code, out = main(capsys, "run", "--out", str(tmp_path), "--resume")  # idle-wait: refused, no journal
    assert code == 1 and "no unfinished run journal" in out


def test_journal_lines_are_valid_json_per_case(tmp_path, capsys):
    assert main(capsys, "run", "--out", str(tmp_path), "--workload", "fake_sleep", "--idle-wait", "0")[0] == 0
    [journal] = tmp_path.glob("*.journal.jsonl")
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert records[0]["type"] == "run" and {r["type"] for r in records[1:]} == {"case"}
    # one line per case and process; a loaded box adds a retake's line for a contended process (collector.run.session)
    assert len({r["case"] for r in records[1:]}) == 4 and len(records) - 1 >= 4


def test_a_case_journaled_just_before_ctrl_c_is_in_the_incomplete_bundle(tmp_path, capsys, monkeypatch):
    from collector.journal.run_journal import Journal

    write = Journal.finish_case

    def journal_then_interrupt(self, cid, results, outcome=None, process=0):  # Ctrl-C after the fsync, before memory
        write(self, cid, results, outcome, process)
        raise KeyboardInterrupt

    monkeypatch.setattr(Journal, "finish_case", journal_then_interrupt)
    code, _ = main(capsys, "run", "--out", str(tmp_path), "--workload", "fake_sleep", "--idle-wait", "0")
    [b] = bundles(tmp_path)
    assert code == 130 and b.complete is False and [r.params["i"] for r in b.results] == [0]


def test_battery_and_low_power_mode_are_warnings_on_screen_and_in_the_bundle(tmp_path, capsys, monkeypatch):
    from bundle.schema import Machine
    from collector.run import session

    on_battery = Machine(name="laptop", os="macOS", chip="Apple M3 Max", power_source="battery", low_power_mode=True)
    monkeypatch.setattr(session, "current_machine", lambda name, device: on_battery)
    code, out = main(capsys, "run", "--out", str(tmp_path), "--workload", "fake_sleep", "--idle-wait", "0")
    [b] = bundles(tmp_path)
    assert code == 0 and sum("battery" in w for w in b.warnings) == 1 and sum("Low Power" in w for w in b.warnings) == 1
    assert "WARNING: running on battery" in out and "WARNING: Low Power Mode is on" in out
