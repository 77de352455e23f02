"""`python -m db` as a user runs it: a subprocess against a temporary store."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
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
        ["export", "--format", "pytorch-oss", "--out", "OUT", "--select", "torch=2.14.1"],
        ["retract", "a" * 32, "--reason", "battery"],
        ["backup", "BACKUP"],
    ],
)
def test_a_read_of_a_store_that_is_not_there_is_an_error_and_makes_no_store(cli, tmp_path, command):
    """`MPSBENCH_DB=nothere.duckdb mpsbench info` made an 800 KB empty store where the typo pointed."""
    args = [{"BACKUP": str(tmp_path / "backup"), "OUT": str(tmp_path / "out")}.get(a, a) for a in command]
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


EXAMPLE = ROOT / "examples" / "cpu-quick.json"


def _copied_alone(store: Path, tmp_path: Path) -> Path:
    """Only the `.duckdb` file, copied to a fresh folder (what an upload or a copy of "the store" takes)."""
    (tmp_path / "copy").mkdir()
    return Path(shutil.copy(store, tmp_path / "copy" / store.name))


def test_after_ingest_the_duckdb_file_alone_holds_every_run(cli, tmp_path):
    """The run sat in the `.wal` after a clean ingest (a 12 KB `.duckdb` beside a 309 KB `.wal`): a copy of the
    `.duckdb` alone had no runs table at all."""
    bundle = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    out = cli("ingest", str(EXAMPLE))
    assert out.returncode == 0, out.stdout + out.stderr
    store = tmp_path / "cli.duckdb"
    assert not Path(f"{store}.wal").exists()  # checkpointed: nothing left only in the log
    with duckdb.connect(str(_copied_alone(store, tmp_path)), read_only=True) as copy:
        runs = copy.execute("SELECT run_id, n_results FROM runs").fetchall()
        results = copy.execute("SELECT count(*) FROM results").fetchone()[0]
    assert runs == [(bundle["run_id"], len(bundle["results"]))] and results == len(bundle["results"])


def test_after_retract_the_duckdb_file_alone_holds_the_retraction(cli, tmp_path):
    bundle = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert cli("ingest", str(EXAMPLE)).returncode == 0
    out = cli("retract", bundle["run_id"], "--reason", "on battery")
    assert out.returncode == 0, out.stdout + out.stderr
    with duckdb.connect(str(_copied_alone(tmp_path / "cli.duckdb", tmp_path)), read_only=True) as copy:
        reason = copy.execute("SELECT retraction_reason FROM runs").fetchall()
    assert reason == [("on battery",)]


@pytest.mark.parametrize(
    "command",
    [
        ["info"],
        ["compare", "--baseline", "torch=VERSION", "--candidate", "torch=VERSION"],
        ["export", "--format", "pytorch-oss", "--out", "OUT", "--select", "torch=VERSION"],
    ],
)
def test_a_read_of_a_store_changes_not_a_byte_of_it_and_makes_no_log(cli, tmp_path, command):
    """Reads open the file read-only: the store is the same file after them, with no `.wal` beside it."""
    version = json.loads(EXAMPLE.read_text(encoding="utf-8"))["build"]["torch_version"]
    assert cli("ingest", str(EXAMPLE)).returncode == 0
    store = tmp_path / "cli.duckdb"
    before = store.read_bytes()
    out = cli(*[str(tmp_path / "out") if a == "OUT" else a.replace("VERSION", version) for a in command])
    assert out.returncode == 0, out.stdout + out.stderr
    assert store.read_bytes() == before and not Path(f"{store}.wal").exists()


@pytest.mark.parametrize(
    "command", [["info"], ["export", "--format", "pytorch-oss", "--out", "OUT", "--select", "torch=2.14.1"]]
)
def test_a_read_of_a_store_in_a_folder_that_is_not_there_makes_neither(tmp_path, command):
    """`mpsbench export` on a missing store path made the folder and an empty `none.duckdb` + `.wal`."""
    store = tmp_path / "missing" / "none.duckdb"
    env = {**os.environ, "MPSBENCH_DB": str(store), "PYTHONPATH": str(ROOT)}
    args = [str(tmp_path / "out") if a == "OUT" else a for a in command]
    out = subprocess.run(
        [sys.executable, "-m", "mpsbench", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert (
        out.returncode == 1 and out.stdout.startswith(f"ERROR: no store at {store} ") and "Traceback" not in out.stderr
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_run_confirm_or_bisect_stores_is_in_the_duckdb_file_alone(tmp_path, monkeypatch):
    """confirm and bisect store each run as they go (mpsbench.workflows.confirm.store_bundle): checkpointed as it is stored."""
    from mpsbench.workflows.confirm import store_bundle

    store = tmp_path / "runs.duckdb"
    monkeypatch.setenv("MPSBENCH_DB", str(store))
    store_bundle(EXAMPLE, {})
    with duckdb.connect(str(_copied_alone(store, tmp_path)), read_only=True) as copy:
        runs = copy.execute("SELECT run_id FROM runs").fetchall()
    assert runs == [(json.loads(EXAMPLE.read_text(encoding="utf-8"))["run_id"],)]
