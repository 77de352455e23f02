"""`python -m db` as a user runs it: a subprocess against a temporary store."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from db.cli import USAGE
from db.store.tables import STORE_VERSION
from tests.bundles import make_bundle, make_result

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cli(tmp_path):
    env = {**os.environ, "MPSBENCH_DB": str(tmp_path / "cli.duckdb"), "PYTHONPATH": str(ROOT)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "db", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )

    return run


def _write(tmp_path: Path, name: str, bundle: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(bundle), encoding="utf-8")
    return str(path)


def test_ingest_new_then_already_present_then_info_counts(cli, tmp_path):
    good = _write(tmp_path, "good.json", make_bundle(run_id="a" * 32))
    first = cli("ingest", good)
    again = cli("ingest", good)
    info = cli("info")
    assert (first.returncode, first.stdout) == (0, f"{good}: {'a' * 32} new, 6 results\n")
    assert (again.returncode, again.stdout) == (0, f"{good}: {'a' * 32} already present, 6 results\n")
    assert info.returncode == 0 and info.stderr == ""
    assert info.stdout.splitlines()[1:] == [
        f"store version: {STORE_VERSION}",
        "runs: 1",
        "run_tags: 1",
        "results: 6",
        "review_notes: 0",
        "aa_pairs: 0",
    ]


def test_bad_file_prints_error_and_field_lines_exits_1_and_still_ingests_the_good_one(cli, tmp_path):
    bad = _write(tmp_path, "bad.json", make_bundle(results=[make_result(unit="GiB")]))
    good = _write(tmp_path, "good.json", make_bundle(run_id="b" * 32))
    out = cli("ingest", bad, good)
    lines = out.stdout.splitlines()
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert lines[0] == f"{bad}: ERROR: invalid bundle"
    assert any(line.startswith("  results[0].unit: ") for line in lines[1:-1])
    assert lines[-1] == f"{good}: {'b' * 32} new, 6 results"
    assert cli("info").stdout.splitlines()[2] == "runs: 1"


@pytest.mark.parametrize("kind", ["missing", "directory", "not json"])
def test_unreadable_input_is_an_error_line_not_a_traceback(cli, tmp_path, kind):
    path = {"missing": tmp_path / "nope.json", "directory": tmp_path}.get(kind, tmp_path / "x.json")
    if kind == "not json":
        path.write_text("{not json", encoding="utf-8")
    out = cli("ingest", str(path))
    assert out.returncode == 1 and out.stderr == ""
    assert out.stdout.startswith(f"{path}: ERROR: ")
    expected = {
        "missing": "No such file or directory",
        "directory": "no bundle (*.json) in this folder",
        "not json": "JSON",
    }
    assert expected[kind] in out.stdout


@pytest.mark.parametrize("args", [[], ["ingest"], ["frobnicate"], ["info", "extra"]])
def test_wrong_arguments_print_usage_and_fail(cli, args):
    out = cli(*args)
    assert out.returncode != 0 and out.stdout == ""
    assert out.stderr.strip() == USAGE


def test_store_path_that_cannot_be_a_store_is_an_error_line(tmp_path):
    env = {**os.environ, "MPSBENCH_DB": str(tmp_path), "PYTHONPATH": str(ROOT)}  # a directory
    out = subprocess.run(
        [sys.executable, "-m", "db", "info"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stdout.startswith(f"ERROR: cannot open the store {tmp_path}: ")


def test_a_store_a_server_holds_says_to_read_through_the_server(tmp_path):
    store = tmp_path / "held.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, time; c = duckdb.connect({str(store)!r}); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        env = {**os.environ, "MPSBENCH_DB": str(store), "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, "-m", "db", "compare", "--baseline", "torch=2.14.1", "--candidate", "torch=2.15.0"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        holder.kill()
        holder.wait()
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stdout.startswith(f"ERROR: cannot open the store {store}: ") and "--url" in out.stdout


def test_a_folder_ingests_every_bundle_under_it_and_an_empty_one_is_an_error(cli, tmp_path):
    sweep = tmp_path / "sweep"
    (sweep / "r1-b0").mkdir(parents=True)
    (sweep / "r1-b1").mkdir()
    first, second = make_bundle(results=[make_result()]), make_bundle(results=[make_result()])
    _write(sweep / "r1-b0", "a.json", first)
    _write(sweep / "r1-b1", "b.json", second)
    (sweep / "r1-b0" / "a.journal.jsonl").write_text("{}\n")  # a journal is not a bundle
    out = cli("ingest", str(sweep))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{first['run_id']} new" in out.stdout and f"{second['run_id']} new" in out.stdout
    assert "journal" not in out.stdout
    (tmp_path / "empty").mkdir()
    empty = cli("ingest", str(tmp_path / "empty"))
    assert empty.returncode == 1 and "ERROR: no bundle (*.json) in this folder" in empty.stdout


@pytest.mark.parametrize(
    "command",
    [
        ["info"],
        ["compare", "--baseline", "torch=2.14.1", "--candidate", "torch=2.15.0"],
        ["retract", "a" * 32, "--reason", "battery"],
        ["backup", "BACKUP"],
    ],
)
def test_a_read_of_a_store_that_is_not_there_is_an_error_and_makes_no_store(cli, tmp_path, command):
    """`MPSBENCH_DB=nothere.duckdb mpsbench info` made an 800 KB empty store where the typo pointed."""
    args = [str(tmp_path / "backup") if a == "BACKUP" else a for a in command]
    out = cli(*args)
    store = tmp_path / "cli.duckdb"
    assert (out.returncode, out.stdout.splitlines()[0]) == (
        1,
        f"ERROR: no store at {store} (MPSBENCH_STORE or "
        "MPSBENCH_DB names it; `mpsbench ingest` or the server "
        "makes one) (MPSBENCH_STORE: must name an existing store "
        "file)",
    )
    assert "Traceback" not in out.stderr and not store.exists() and not (tmp_path / "backup").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
