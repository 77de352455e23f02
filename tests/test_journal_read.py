"""Journals that are valid JSON but not a journal of their kind (collector.journal.read): for each of the four (a
run's, a sweep's, confirm's, bisect's), a whole journal as its writer writes it is read back as it was, and each
malformed variant — its options (a run's plan) missing or a string, a record missing a key, a value of the wrong
type — is one ERROR through the real CLI's `--resume`, naming the file, the line and the field: no traceback,
nothing run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collector.run.plan import Plan
from collector.sweep.options import recorded
from mpsbench.cli import main
from tests.bundles import make_bundle, make_result

CASE = "fake_sleep|ms=1|float32|eager"


def _run_journal(_tmp_path: Path) -> list[dict]:
    bundle = make_bundle()
    header = {
        "type": "run",
        "run_id": bundle["run_id"],
        "started_at": bundle["started_at"],
        "machine": bundle["machine"],
        "build": bundle["build"],
        "device": {"type": "cpu", "name": "cpu"},
        "device_choice": "cpu",
        "tags": {},
        "warnings": [],
        "plan": Plan(workloads=("fake_sleep",), processes=1, idle_wait_s=0.0).to_json(),
    }
    result = {k: v for k, v in make_result().items() if k != "summary"}
    return [header, {"type": "case", "case": CASE, "process": 0, "results": [result]}, {"type": "resume"}]


def _sweep_journal(tmp_path: Path) -> list[dict]:
    from collector.console.arguments import parser

    args = parser().parse_args(["sweep", "--build", "python=/nowhere/bin/python", "--idle-wait", "0"])
    header = {
        "type": "sweep",
        "sweep_id": "abc123",
        "started_at": "2026-12-01T10:00:00+00:00",
        "rounds": 1,
        "aa": False,
        "builds": ["python=/nowhere/bin/python"],
        "options": recorded(args),
        "n_cases": 1,
        "envs": str(tmp_path / "envs"),
    }
    failed = {"type": "build", "ok": False, "index": 0, "spec": "python=/nowhere/bin/python", "error": "gone"}
    return [
        header,
        failed,
        {"type": "options", "options": {"push": None}},
        {"type": "slot_end", "key": "r1-b0-aa0", "ok": False},
    ]


def _confirm_journal(tmp_path: Path) -> list[dict]:
    options = {
        "baseline": "torch=2.14.1",
        "candidate": "torch=2.15.0",
        "baseline_python": "/envs/a/bin/python",
        "candidate_python": "/envs/b/bin/python",
        "scope": "machine",
        "threshold": None,
        "rules": None,
        "rounds": 3,
        "processes": 3,
        "device": "cpu",
        "machine_name": "m1",
        "out": str(tmp_path),
        "url": None,
    }
    header = {"type": "confirm", "options": options, "targets": [CASE], "scope": "m1"}
    return [header, {"type": "run", "round": 1, "side": "baseline", "bundle": "b.json", "run_id": "r1"}]


def _bisect_journal(tmp_path: Path) -> list[dict]:
    plan = {
        "profile": "quick",
        "device": "cpu",
        "compile": "eager,inductor",
        "suite": [],
        "tag": [],
        "workload": ["fake_sleep"],
        "case": [CASE],
        "dtype": None,
        "machine_name": None,
        "case_time_limit": None,
        "processes": 3,
        "idle_wait": 0.0,
    }
    header = {
        "type": "bisect",
        "bisect_id": "def456",
        "builds": ["torch==2.14.1", "torch==2.15.0", "torch==2.16.0"],
        "targets": [CASE],
        "scope": "m1",
        "rounds": 2,
        "plan": plan,
        "options": {"db": str(tmp_path / "s.duckdb"), "push": None, "scope": "machine", "threshold": None},
        "envs": str(tmp_path / "envs"),
    }
    verdict = {
        "type": "verdict",
        "step": 1,
        "index": 1,
        "lo": 0,
        "hi": 2,
        "verdict": "bad",
        "rounds": 1,
        "why": "confirmed",
        "targets": [CASE],
        "rows": [
            {"case": CASE, "metric": "op_time", "baseline_value": "1 ms", "candidate_value": "2 ms", "change": "2×"}
        ],
    }
    return [header, verdict]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _without(record: dict, key: str) -> dict:
    return {k: v for k, v in record.items() if k != key}


KINDS = {  # idle-wait: every journal here is refused before a run starts
    "run": (_run_journal, "run-a.journal.jsonl", lambda p: ["run", "--resume", str(p), "--out", str(p.parent)]),
    "sweep": (
        _sweep_journal,
        "sweep-abc123.sweep.jsonl",
        lambda p: ["sweep", "--resume", str(p), "--out", str(p.parent)],
    ),
    "confirm": (_confirm_journal, "confirm-abc.confirm.jsonl", lambda p: ["confirm", "--resume", str(p)]),
    "bisect": (_bisect_journal, "bisect-def456.bisect.jsonl", lambda p: ["bisect", "--resume", str(p)]),
}
# (kind, how the journal is spoiled, the line named, the field and rule named)
VARIANTS = [  # idle-wait: (kind, …): the journals are refused before a run starts
    ("run", lambda j: [_without(j[0], "plan"), *j[1:]], 1, "plan: is missing"),
    ("run", lambda j: [{**j[0], "plan": "quick"}, *j[1:]], 1, "plan: must be an object"),
    ("run", lambda j: [j[0], _without(j[1], "results"), j[2]], 2, "results: is missing"),
    ("run", lambda j: [j[0], {**j[1], "process": "0"}, j[2]], 2, "process: must be a whole number"),
    ("run", lambda j: [{**j[0], "machine": {**j[0]["machine"], "gpu_cores": "ten"}}, *j[1:]], 1, "machine.gpu_cores: "),
    ("sweep", lambda j: [_without(j[0], "options"), *j[1:]], 1, "options: is missing"),
    ("sweep", lambda j: [{**j[0], "options": "--profile quick"}, *j[1:]], 1, "options: must be an object"),
    ("sweep", lambda j: [*j[:2], {"type": "options", "options": "push"}, j[3]], 3, "options: must be an object"),
    ("sweep", lambda j: [*j[:3], _without(j[3], "key")], 4, "key: is missing"),
    ("sweep", lambda j: [{**j[0], "rounds": "1"}, *j[1:]], 1, "rounds: must be a whole number"),
    (
        "sweep",
        lambda j: [{**j[0], "options": {**j[0]["options"], "profile": 1}}, *j[1:]],
        1,
        "options.profile: must be text",
    ),
    ("confirm", lambda j: [_without(j[0], "options"), j[1]], 1, "options: is missing"),
    ("confirm", lambda j: [{**j[0], "options": "x"}, j[1]], 1, "options: must be an object"),
    ("confirm", lambda j: [j[0], _without(j[1], "side")], 2, "side: is missing"),
    ("confirm", lambda j: [j[0], {**j[1], "round": "1"}], 2, "round: must be a whole number"),
    ("confirm", lambda j: [j[0], {**j[1], "side": "both"}], 2, "side: must be one of baseline, candidate"),
    ("bisect", lambda j: [_without(j[0], "options"), j[1]], 1, "options: is missing"),
    ("bisect", lambda j: [{**j[0], "options": "x"}, j[1]], 1, "options: must be an object"),
    ("bisect", lambda j: [j[0], _without(j[1], "verdict")], 2, "verdict: is missing"),
    ("bisect", lambda j: [{**j[0], "rounds": "2"}, j[1]], 1, "rounds: must be a whole number"),
    ("bisect", lambda j: [j[0], {**j[1], "rows": [{"case": CASE}]}], 2, "rows[0].metric: is missing"),
]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_journal_as_its_writer_writes_it_is_read_back_as_it_was(tmp_path, kind):
    from collector.journal.run_journal import Journal as RunJournal
    from collector.sweep.journal import SweepJournal
    from mpsbench.workflows.bisect_steps import Journal as BisectJournal
    from mpsbench.workflows.confirm import Journal as ConfirmJournal

    make, name, _ = KINDS[kind]
    records = make(tmp_path)
    path = _write(tmp_path / name, records)
    if kind == "run":
        assert RunJournal(path).load().header == json.loads(json.dumps(records[0]))
    elif kind == "sweep":
        assert SweepJournal(path).read().done == {"r1-b0-aa0": records[3]}
    elif kind == "confirm":
        assert ConfirmJournal.load(path).runs == records[1:]
    else:
        assert BisectJournal(path).read() == records


@pytest.mark.parametrize("kind,spoil,line,named", VARIANTS)
def test_a_journal_that_is_json_but_not_its_kind_is_one_error_naming_file_line_and_field(
    tmp_path, monkeypatch, capsys, kind, spoil, line, named
):
    monkeypatch.setenv("MPSBENCH_CATALOG", "tests.fake_workloads")
    monkeypatch.setenv("COLUMNS", "400")  # the collector's rich console: the error on one line
    make, name, command = KINDS[kind]
    path = _write(tmp_path / name, spoil(make(tmp_path)))
    before = path.read_bytes()
    assert main(command(path)) == 1
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert "ERROR: " in said and f"{path} line {line}: {named}" in said, said
    assert "Traceback" not in said and said.count("ERROR") == 1
    assert path.read_bytes() == before  # nothing appended (no resume marker), nothing run
