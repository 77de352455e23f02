"""`mpsbench confirm` (mpsbench/workflows/confirm.py): its decisions on known review answers, and a real loop — a planted 3×
slowdown that one run a side of one process leaves unconfirmed is confirmed by rerunning only the doubtful cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from db.review.decisions import CLEARED, CONFIRMED, UNDECIDED, case_id, decide, doubtful_cases
from mpsbench.workflows.confirm import interleaved, main
from tests.quiet_machine import quiet_site

ROOT = Path(__file__).resolve().parent.parent


def _row(i: int, scope: str = "m1") -> dict:
    return {
        "workload": "fake_spin",
        "case_key": json.dumps({"i": i}, separators=(",", ":")),
        "dtype": "float32",
        "compile": "eager",
        "scope": scope,
    }


def test_decisions_follow_the_review():
    answer = {"regressions": [_row(0)], "unconfirmed": [_row(1)], "suspected": [_row(2, "other-mac")]}
    ids = [case_id(_row(i)) for i in range(4)]
    assert (
        ids[0] == 'fake_spin|{"i":0}|float32|eager'
    )  # the collector's case id (collector.journal.run_journal.case_id)
    assert doubtful_cases(answer, "m1") == [ids[1]]  # another machine's doubt is not rerun here
    assert doubtful_cases(answer, None) == sorted(ids[1:3])
    assert decide(ids, answer, "m1") == {ids[0]: CONFIRMED, ids[1]: UNDECIDED, ids[2]: CLEARED, ids[3]: CLEARED}


def test_builds_alternate_which_goes_first():
    assert interleaved(3) == [
        (1, "baseline"),
        (1, "candidate"),
        (2, "candidate"),
        (2, "baseline"),
        (3, "baseline"),
        (3, "candidate"),
    ]


def test_bad_arguments_are_one_error_line(tmp_path, capsys):
    assert main(["--baseline", "torch=2.14.1", "--candidate", "torch=2.15.0"]) == 1
    assert "ERROR: --baseline-python is required" in capsys.readouterr().err
    assert (
        main(
            [
                "--baseline",
                "torch=2.14.1",
                "--candidate",
                "torch=2.15.0",
                "--baseline-python",
                str(tmp_path / "none"),
                "--candidate-python",
                sys.executable,
            ]
        )
        == 1
    )
    assert "not an executable file" in capsys.readouterr().err
    assert main(["--resume", "--out", str(tmp_path)]) == 1
    assert "no confirm journal" in capsys.readouterr().err


def test_a_malformed_flag_is_the_same_error_line_not_argparse_usage(capsys):
    assert main(["--rounds", "x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ERROR: argument --rounds: invalid int value: 'x'") and "usage:" not in err


def _wrapper(folder: Path, factor: str, version_suffix: str = "") -> Path:
    """An environment of this Python on a machine that reads as idle (tests/quiet_machine.py); with a suffix its
    torch reports another version (one torch wheel here, two builds needed: else the two sides' runs would pair as
    A/A runs of one build and the planted slowdown would read as that build's noise)."""
    folder.mkdir(parents=True)
    if version_suffix:
        (folder / "site").mkdir()
        (folder / "site" / "sitecustomize.py").write_text(
            f"import torch\ntorch.__version__ = torch.__version__ + {version_suffix!r}\n"
        )
    site = f'PYTHONPATH="{quiet_site(folder / "site")}:$PYTHONPATH" '
    path = folder / "python"
    path.write_text(f'#!/bin/sh\n{site}MPSBENCH_FAKE_FACTOR={factor} exec "{sys.executable}" "$@"\n')
    path.chmod(0o755)
    return path


@pytest.mark.skipif(sys.platform != "linux", reason="the wrapper environments are POSIX shell scripts")
def test_a_planted_slowdown_left_unconfirmed_is_confirmed_by_rerunning_it(tmp_path):
    env = {
        **os.environ,
        "MPSBENCH_DB": str(tmp_path / "store.duckdb"),
        "MPSBENCH_CATALOG": "tests.fake_workloads",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("MPSBENCH_TOKEN", None)
    pythons = {"base": _wrapper(tmp_path / "a" / "bin", "1"), "cand": _wrapper(tmp_path / "b" / "bin", "3", ".planted")}
    for role, python in pythons.items():  # one run a side, one process each: nothing to test them on
        subprocess.run(
            [
                str(python),
                "-m",
                "collector",
                "run",
                "--workload",
                "fake_spin",
                "--device",
                "cpu",
                "--processes",
                "1",
                "--machine-name",
                "m1",
                "--idle-wait",
                "0",
                "--tag",
                f"role={role}",
                "--out",
                str(tmp_path / "runs"),
            ],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [sys.executable, "-m", "mpsbench", "ingest", str(tmp_path / "runs")],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
    review = ["--baseline", "tag:role=base", "--candidate", "tag:role=cand"]
    before = subprocess.run(
        [sys.executable, "-m", "mpsbench", "compare", *review, "--format", "json", "--fail-on", "unconfirmed"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    answer = json.loads(before.stdout)
    slowed = case_id(_row(0))
    assert before.returncode == 1 and not answer["regressions"]
    assert slowed in {case_id(r) for r in answer["unconfirmed"]}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mpsbench",
            "confirm",
            *review,
            "--baseline-python",
            str(pythons["base"]),
            "--candidate-python",
            str(pythons["cand"]),
            "--rounds",
            "1",
            "--processes",
            "3",
            "--device",
            "cpu",
            "--machine-name",
            "m1",
            "--idle-wait",
            "0",
            "--out",
            str(tmp_path / "confirm"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{CONFIRMED:>10}  {slowed}" in done.stdout
    reruns = [json.loads(b.read_text()) for b in (tmp_path / "confirm").glob("confirm-*/*.json")]
    said = [b["build"]["command_line"].split() for b in reruns]  # confirm passes its --idle-wait on to each run
    assert len(said) == 2 and all(words[words.index("--idle-wait") + 1] == "0" for words in said), said
    after = subprocess.run(
        [sys.executable, "-m", "mpsbench", "compare", *review, "--format", "json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert slowed in {case_id(r) for r in json.loads(after.stdout)["regressions"]}
    journal = next((tmp_path / "confirm").glob("*.confirm.jsonl")).read_text().splitlines()
    assert [json.loads(x)["side"] for x in journal[1:]] == ["baseline", "candidate"]


def test_resume_reads_a_journal_torn_by_a_kill_and_names_a_damaged_one(tmp_path, capsys):
    """A kill mid-write leaves half a line last: --resume drops it (as sweep's resume does, by the same reader) and
    cuts it off, so the next append starts a clean line; a bad line before the last is damage: one ERROR line."""
    from mpsbench.workflows.confirm import Journal

    options = {
        "baseline": "torch=2.14.1",
        "candidate": "torch=2.15.0",
        "baseline_python": "/envs/a/bin/python",
        "candidate_python": "/envs/b/bin/python",
        "rounds": 3,
        "device": "cpu",
        "out": str(tmp_path),
    }
    header = {"type": "confirm", "options": options, "targets": ["a"], "scope": None}
    run = {"type": "run", "round": 1, "side": "baseline", "bundle": "b.json", "run_id": "r1"}
    path = tmp_path / "confirm-abc.confirm.jsonl"
    whole = json.dumps(header) + "\n" + json.dumps(run) + "\n"
    path.write_text(whole + '{"type": "run", "round": 1, "si')  # torn
    journal = Journal.load(path)
    assert (journal.header, journal.runs) == (header, [run])
    assert path.read_text() == whole  # the torn write cut off
    journal.append({**run, "side": "candidate", "run_id": "r2"})
    assert [r["run_id"] for r in Journal.load(path).runs] == ["r1", "r2"]

    path.write_text(json.dumps(header) + "\n" + "{not json\n" + json.dumps(run) + "\n")  # damaged mid-file
    assert main(["--resume", str(path)]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith(f"ERROR: --resume: confirm journal {path} line 2 is not a JSON record")
        and "Traceback" not in err
    )
    assert path.read_text().count("\n") == 3  # a damaged file is left as it was
