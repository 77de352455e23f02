"""`mpsbench bisect` (mpsbench/workflows/bisect.py, mpsbench/workflows/bisect_steps.py): over 16 planted builds with a fake
measurement (the runs and the review's answers stand-ins that know where the slowdown starts), every position is
found in ≤ ⌈log2 16⌉ + 2 steps, a doubtful review makes a step unclear and the search stops naming it, never a
wrong build; for real, a planted 3× softmax slowdown among 3 CPU "nightlies" (python= wrappers over this torch) is
found, and a journal cut mid-step and torn by a kill resumes running only what is missing."""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from benchmarks.bisect_builds import CASE, plant, planted_version
from mpsbench.workflows import bisect as bisect_cli
from mpsbench.workflows.bisect_steps import Journal, State, Stepper
from tests.quiet_machine import quiet_site

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD, KEY, DTYPE, COMPILE = CASE.split("|")


def _row(scope: str) -> dict:
    return {
        "workload": WORKLOAD,
        "case_key": KEY,
        "dtype": DTYPE,
        "compile": COMPILE,
        "scope": scope,
        "case": "softmax · rows=8",
        "metric": "op_time",
        "baseline_value": "240 µs",
        "candidate_value": "480 µs",
        "change": "2.00× slower",
    }


def _fake(monkeypatch, first_bad: int, doubt: float = 0.0, seed: int = 0, lie: float = 0.0) -> list[int]:
    """Runs and reviews stood in for: a run is its build's id; the review of A against B lists the case as a
    regression when B is slowed and A is not, nowhere otherwise — or, with probability `doubt`, as unconfirmed
    (a doubtful review never lies; it only fails to decide), or with probability `lie` as a regression whatever
    the builds (a false confirmation, as a loaded box's review can make). Returns the list the probed builds go
    into."""
    rng, probed = random.Random(seed), []

    def run(self, step, slot, folder):
        self.state.runs[(step, slot.round, slot.build)] = {"run_id": f"b{slot.build}s{step}r{slot.round}"}

    def ready(self, index):
        version, git = planted_version(index)
        return self.state.builds.setdefault(index, {"label": version, "git_hash": git})

    def reviewer(options):
        def review(baseline, candidate):
            a, b = (int(re.match(r"runs:b(\d+)", s)[1]) for s in (baseline, candidate))
            answer = {"regressions": [], "unconfirmed": [], "suspected": []}
            if rng.random() < doubt:
                answer["unconfirmed"] = [_row("m1")]
            elif rng.random() < lie:
                answer["regressions"] = [_row("m1")]
            elif b >= first_bad > a:
                answer["regressions"] = [_row("m1")]
            return answer

        return review

    original = Stepper.step

    def step(self, n, lo, mid, hi):
        probed.append(mid)
        return original(self, n, lo, mid, hi)

    monkeypatch.setattr(Stepper, "_run", run)
    monkeypatch.setattr(Stepper, "ready", ready)
    monkeypatch.setattr(Stepper, "step", step)
    monkeypatch.setattr(bisect_cli, "_reviewer", reviewer)
    return probed


def _args(pythons: list[Path], tmp_path: Path, *more: str) -> list[str]:
    return [
        "--good",
        f"python={pythons[0]}",
        "--bad",
        f"python={pythons[-1]}",
        *[x for p in pythons[1:-1] for x in ("--between", f"python={p}")],
        "--case",
        CASE,
        "--machine-name",
        "m1",
        "--out",
        str(tmp_path / "runs"),
        "--envs",
        str(tmp_path / "envs"),
        *more,
    ]


@pytest.fixture(scope="module")
def sixteen(tmp_path_factory) -> list[Path]:
    return plant(tmp_path_factory.mktemp("builds"), 16, 1, 1.0)  # identities only: the fake measures


def test_every_planted_position_among_16_builds_is_found_in_few_steps(monkeypatch, tmp_path, sixteen):
    bound = math.ceil(math.log2(16)) + 2
    for first_bad in range(1, 16):
        probed, lines = _fake(monkeypatch, first_bad), []
        assert bisect_cli.main(_args(sixteen, tmp_path / str(first_bad)), say=lines.append) == 0
        text = "\n".join(lines)
        assert len(probed) <= bound and len(set(probed)) == len(probed)
        assert f"first bad: build {first_bad + 1} of 16: {planted_version(first_bad)[0]}" in text
        assert f"last good: build {first_bad} of 16: {planted_version(first_bad - 1)[0]}" in text
        good, bad = planted_version(first_bad - 1)[1], planted_version(first_bad)[1]
        assert f"git log {good[:12]}..{bad[:12]}" in text
        assert "op_time: 240 µs (last good) → 480 µs (first bad): 2.00× slower than the last good build" in text
        assert re.search(r"^step 1 \(4 left at most\)", text, re.M)
        # the journal as bisect wrote it passes the check a resume reads it with (collector.journal.read)
        (journal,) = (tmp_path / str(first_bad) / "runs").glob("*.bisect.jsonl")
        assert [v["index"] for v in State.of(Journal(journal).read()).verdicts] == probed


def test_a_doubtful_review_is_more_rounds_then_a_named_unclear_step_never_a_guess(monkeypatch, tmp_path, sixteen):
    right = unclear = 0
    for first_bad in range(1, 16):
        for seed in range(3):
            _probed, lines = _fake(monkeypatch, first_bad, doubt=0.2, seed=seed), []
            code = bisect_cli.main(_args(sixteen, tmp_path / f"{first_bad}-{seed}", "--rounds", "2"), say=lines.append)
            text = "\n".join(lines)
            if code == 0:
                right += 1
                assert f"first bad: build {first_bad + 1} of 16" in text  # never another build
            else:
                unclear += 1
                assert code == bisect_cli.NOT_FOUND and "first bad:" not in text
                lo, hi = map(int, re.search(r"after build (\d+) .* at or before build (\d+)", text).groups())
                assert lo <= first_bad < hi  # the interval named holds the planted build
                assert re.search(r"unclear: step \d+, build (\d+) .* after 2 round\(s\)", text)
    assert right and unclear  # both outcomes were met at this doubt (the assertions above ran on each)


def test_a_false_confirmation_never_names_a_wrong_build(monkeypatch, tmp_path, sixteen):
    """A review that falsely confirms the last good build against a good midpoint (what stopped a 2x benchmark
    bisect) must not make it bad: the midpoint against the first bad build also confirms, the two disagree, the
    step runs another round; a bisect trusting the first review alone names a wrong build here."""
    outcomes = []
    for first_bad in range(1, 16):
        for seed in range(3):
            probed, lines = _fake(monkeypatch, first_bad, seed=seed, lie=0.3), []
            code = bisect_cli.main(_args(sixteen, tmp_path / f"{first_bad}-{seed}", "--rounds", "4"), say=lines.append)
            text = "\n".join(lines)
            found = re.search(r"^first bad: build (\d+) of 16", text, re.M)
            assert code in (0, bisect_cli.NOT_FOUND) and (code == 0) == bool(found)
            assert not found or int(found[1]) == first_bad + 1, text  # never another build
            assert len(probed) <= math.ceil(math.log2(16)) + 2
            outcomes.append(code)
    assert outcomes.count(0) >= 0.8 * len(outcomes)  # more rounds decide most steps the lies left unclear


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_list_shows_an_index_nightlies_between_the_ends_and_bad_input_is_one_error_line(tmp_path, capsys):
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    (tmp_path / "torch").mkdir()
    wheels = [f"torch-2.16.0.dev202609{d:02d}%2Bcpu-{tag}-{tag}-linux_x86_64.whl" for d in (1, 2, 3, 20)]
    (tmp_path / "torch" / "index.html").write_text("".join(f'<a href="/whl/{w}">{w}</a>\n' for w in wheels))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        lines = []
        code = bisect_cli.main(
            [
                "--good",
                "torch==2.15.0",
                "--bad",
                "--pre torch==2.16.0.dev20260910 --index-url " + url,
                "--index-url",
                url,
                "--from",
                "2026-09-02",
                "--to",
                "2026-09-09",
                "--case",
                CASE,
                "--list",
            ],
            say=lines.append,
        )
    finally:
        server.shutdown()
    assert code == 0
    assert [ln.split()[1:] for ln in lines[:4]] == [
        ["torch==2.15.0", "(good)"],
        ["--pre", "torch==2.16.0.dev20260902", "--index-url", url],
        ["--pre", "torch==2.16.0.dev20260903", "--index-url", url],
        ["--pre", "torch==2.16.0.dev20260910", "--index-url", url, "(bad)"],
    ]
    assert lines[4] == "4 builds: at most 2 steps if every step decides"
    for args, error in [
        (["--bad", "torch==2.16.0"], "ERROR: --good is required"),
        (
            ["--good", "torch==2.15.0", "--bad", "torch==2.16.0", "--from", "2026-09-01"],
            "ERROR: nightlies need --index-url, --from and --to",
        ),
        (
            [
                "--good",
                "torch==2.15.0",
                "--bad",
                "torch==2.16.0",
                "--index-url",
                url,
                "--from",
                "Sept 1",
                "--to",
                "2026-09-09",
            ],
            "ERROR: --from 'Sept 1': must be a date YYYY-MM-DD",
        ),
        (
            ["--good", "torch==2.15.0", "--bad", "torch==2.16.0", "--between", "torch==2.15.1", "--releases"],
            "ERROR: name the builds between --good and --bad one way",
        ),
        (
            ["--good", "torch==2.15.0", "--bad", "torch==2.16.0", "--between", "torch==2.15.1", "--rounds", "x"],
            "ERROR: argument --rounds: invalid int value: 'x'",
        ),
        (["--resume", "--out", str(tmp_path / "none")], "ERROR: --resume: no bisect journal"),
        (["--resume", "--rounds", "9"], "ERROR: --rounds: --resume runs with the bisect journal's own options"),
    ]:
        assert bisect_cli.main(args) == 1
        err = capsys.readouterr().err
        assert err.startswith(error) and "Traceback" not in err, err


@pytest.mark.skipif(sys.platform != "linux", reason="the planted builds are POSIX shell wrappers")
def test_a_planted_slowdown_among_real_builds_is_found_and_a_torn_journal_resumes(tmp_path):
    env = {**os.environ, "MPSBENCH_DB": str(tmp_path / "store.duckdb"), "PYTHONPATH": str(ROOT)}
    env.pop("MPSBENCH_TOKEN", None)
    # build 3 of 3 is the first slowed one, 3× (large enough to tell beside other jobs), its softmax computed as
    # exp(log_softmax) (a change of path the answer names); every build on a machine that reads as idle
    # (tests/quiet_machine.py), so a loaded box leaves no worker process out as contended
    pythons = plant(tmp_path / "builds", 3, 2, 3.0, route="log_softmax")
    for python in pythons:
        quiet_site(python.parent.parent / "site")
    args = [
        sys.executable,
        "-m",
        "mpsbench",
        "bisect",
        *_args(pythons, tmp_path),
        "--device",
        "cpu",
        "--processes",
        "3",
        "--rounds",
        "6",
        "--idle-wait",
        "0",
    ]  # no wait for an idle machine; more rounds where a loaded box leaves a step unclear
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"first bad: build 3 of 3: {planted_version(2)[0]}" in done.stdout
    assert f"last good: build 2 of 3: {planted_version(1)[0]}" in done.stdout
    # each figure the answer names: both medians with their unit and the change between them (format_value's
    # "1,234 µs", "2.441e+04 µs"); on a loaded box which figures are confirmed, and by how much past the planted
    # 3x, moves with the load (a planted spin lasts as long as the call it follows), so: at least one, each slower
    figures = re.findall(
        r" (\w+): ([\d.,e+]+) (µs|s) \(last good\) → ([\d.,e+]+) (µs|s) \(first bad\): ([\d.]+)× slower than the last "
        r"good build",
        done.stdout,
    )
    assert figures and {f[0] for f in figures} <= {"op_time", "first_call_time"}, done.stdout
    for _, before, unit, after, unit_after, ratio in figures:
        slower = float(after.replace(",", "")) / float(before.replace(",", ""))
        assert unit == unit_after and slower > 1.5 and float(ratio) == pytest.approx(slower, rel=0.02), done.stdout
    assert f"git log {planted_version(1)[1][:12]}..{planted_version(2)[1][:12]}" in done.stdout
    # what ran, first bad against last good (bisect runs break their cases down): softmax → _softmax became
    # log_softmax → _log_softmax and exp, whatever their times
    ran = re.findall(r"^    what ran: path changed: softmax ran (.+) instead of (.+?)(?:;|$)", done.stdout, re.M)
    assert ran, done.stdout
    for now, before in ran:
        assert set(now.split(", ")) == {"aten::exp", "aten::_log_softmax", "aten::log_softmax"}, done.stdout
        assert set(before.split(", ")) == {"aten::_softmax", "aten::softmax"}, done.stdout

    # the runs are in the store as their builds (what Trends reads)
    info = subprocess.run(
        [
            sys.executable,
            "-m",
            "mpsbench",
            "compare",
            "--baseline",
            f"torch={planted_version(1)[0]}",
            "--candidate",
            f"torch={planted_version(2)[0]}",
            "--format",
            "json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert info.returncode == 0, info.stderr[-2000:]
    assert CASE in {
        "|".join(str(r[k]) for k in ("workload", "case_key", "dtype", "compile"))
        for r in json.loads(info.stdout)["regressions"]
    }

    # cut the journal after the step's first run and tear its last line (a kill): resume finishes the step from
    # what its run folders hold, each run journaled once
    [journal] = (tmp_path / "runs").glob("bisect-*.bisect.jsonl")
    lines = journal.read_text().splitlines()
    first_end = next(i for i, ln in enumerate(lines) if '"type":"slot_end"' in ln)
    journal.write_text("\n".join(lines[: first_end + 1]) + "\n" + lines[first_end + 1][:25])
    resumed = subprocess.run(
        [sys.executable, "-m", "mpsbench", "bisect", "--resume", str(journal)],  # idle-wait: the journal's (0)
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"first bad: build 3 of 3: {planted_version(2)[0]}" in resumed.stdout
    records = [json.loads(ln) for ln in journal.read_text().splitlines()]
    ends = [(r["step"], r["key"]) for r in records if r["type"] == "slot_end"]
    first = json.loads(lines[first_end])
    assert len(ends) == len(set(ends)) >= 3 and ends[0] == (first["step"], first["key"])  # each run once


def test_releases_between_two_pinned_versions_are_listed_oldest_first_without_nightlies():
    from collector.sweep.nightlies import release_builds

    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    versions = ["2.15.0", "2.14.0", "2.14.2", "2.15.0.dev20260901", "2.15.0rc1", "2.14.1", "2.14.2"]
    page = "".join(f'<a href="x">torch-{v}-{tag}-none-macosx_11_0_arm64.whl</a>' for v in versions)
    page += '<a href="x">torch-2.14.3-cp27-none-macosx_11_0_arm64.whl</a>'  # another Python's wheel: not offered
    assert release_builds(page, "https://pypi.org/simple", "2.14.1", "2.15.0") == [
        "torch==2.14.2",
        "--pre torch==2.15.0rc1",
    ]
    assert release_builds(page, "https://idx.example/cpu", "2.14.0", "2.14.2", platform="macosx arm64") == [
        "torch==2.14.1 --index-url https://idx.example/cpu"
    ]
    assert release_builds(page, "https://pypi.org/simple", "2.14.1", "2.15.0", platform="linux") == []
