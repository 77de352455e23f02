"""A throwaway Postgres for the lake tests (db.store.lake): initdb + pg_ctl on a unix socket in a temp folder,
no TCP port, stopped by its postmaster's pid at the end. Skips (saying why) where the binaries or the DuckLake
extension wheels for the installed duckdb are absent. The `postgres` fixture (tests/conftest.py) runs one per module.

Postgres refuses to run as root: as root the server runs as `nobody` (setpriv), in a folder it owns."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import duckdb

BIN = Path(os.environ.get("MPSBENCH_PG_BIN", "/usr/lib/postgresql/15/bin"))
WHEELS = ("duckdb_extension_ducklake", "duckdb_extension_postgres_scanner")


def why_not() -> str | None:
    missing = [n for n in ("initdb", "pg_ctl", "postgres") if not (BIN / n).is_file()]
    if missing:
        return f"PostgreSQL binaries {', '.join(missing)} not found in {BIN} (set MPSBENCH_PG_BIN)"
    for module in WHEELS:
        spec = importlib.util.find_spec(module)
        if spec is None or not (Path(spec.origin).parent / "extensions" / f"v{duckdb.__version__}").is_dir():
            return (
                f"{module.replace('_', '-')} exists for duckdb 1.5.5 only (this is {duckdb.__version__}): "
                "scripts/test.sh runs these tests again in .venv-lake (scripts/setup_lake.sh)"
            )
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        return "running as root and no setpriv to start Postgres as an unprivileged user"
    return None


class Postgres:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.data = folder / "data"
        self.socket = folder  # the socket file lives here: .s.PGSQL.5432
        self.conninfo = f"host={folder} user=mps dbname=postgres"
        self._as = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if os.geteuid() == 0 else []
        if self._as:
            os.chown(folder, 65534, 65534)

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}): {done.stderr.strip()[-800:]}")

    def init(self) -> None:
        self._run(str(BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "mps", "--no-sync")

    def start(self) -> None:
        opts = f"-k {self.socket} -c listen_addresses='' -c fsync=off"
        self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "log"), "-o", opts, "-w", "start")

    def pid(self) -> int | None:
        pidfile = self.data / "postmaster.pid"
        return int(pidfile.read_text().split()[0]) if pidfile.is_file() else None

    def stop(self) -> None:
        """SIGINT (Postgres's "fast" shutdown) to the postmaster we started, by its pid; wait until it is gone."""
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGINT)
        for _ in range(300):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)

    def psql_args(self, dbname: str) -> list[str]:
        """psql on `dbname` (as the server's user), unaligned rows, no command tags, stopping at the first error."""
        psql = str(BIN / "psql") if (BIN / "psql").is_file() else "psql"
        return [*self._as, psql, "-h", str(self.socket), "-U", "mps", "-d", dbname, "-qAt", "-v", "ON_ERROR_STOP=1"]

    def query(self, dbname: str, sql: str) -> str:
        done = subprocess.run([*self.psql_args(dbname), "-c", sql], capture_output=True, text=True, timeout=60)
        if done.returncode:
            raise RuntimeError(f"psql failed ({done.returncode}): {done.stderr.strip()[-800:]}")
        return done.stdout.strip()

    def createdb(self, name: str) -> str:
        self.query("postgres", f'CREATE DATABASE "{name}"')
        return f"host={self.socket} user=mps dbname={name}"


def lake_store(pg: Postgres, folder: Path, name: str, monkeypatch) -> str:
    """A new catalog database `name` with its data under `folder`: the MPSBENCH_STORE value (MPSBENCH_LAKE_DATA
    set through monkeypatch)."""
    conninfo = pg.createdb(name)
    monkeypatch.setenv("MPSBENCH_LAKE_DATA", str(folder))
    return f"ducklake:postgres:{conninfo}"
