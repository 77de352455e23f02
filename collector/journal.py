"""The run journal: one JSON line per finished case in one worker process, appended and fsynced at once, next to
the bundle. A run times each case in several worker processes (collector.session); a case is finished when every
process has measured it (or one crashed on it).

A crash or Ctrl-C keeps every finished case; `run --resume` reads the journal back (a torn last line from a
SIGKILL mid-write is dropped and cut off) and continues the same run_id. A case whose worker crashed or timed
out (collector.isolation) is journaled with its `outcome`: finished, so --resume does not run it again (it
would crash again), unless --retry-crashed; a later line for the same case replaces the earlier one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from collector.errors import CollectorError
from collector.processes import RunState

SUFFIX = ".journal.jsonl"


def read_records(path: Path, what: str, repair: bool = True) -> list[dict[str, Any]]:
    """The JSON records of a journal (`what`: which kind, for errors), one a line, as every journal here writes
    them (appended and fsynced a line at a time): a last line torn by a kill mid-write is dropped and, with
    `repair`, cut off the file, so the next append starts on a clean line. A bad line before the last is damage,
    not a torn write: a CollectorError naming the file and the line. The run, sweep and confirm journals' one
    reader."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CollectorError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    lines = raw.split(b"\n")
    records, good_bytes = [], 0
    for i, line in enumerate(lines):
        if line.strip():
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not an object")
            except ValueError:  # a UnicodeDecodeError too
                if i == len(lines) - 1 or not any(x.strip() for x in lines[i + 1 :]):
                    break  # torn by a kill mid-write: that write never finished
                raise CollectorError(f"{what} {path} line {i + 1} is not a JSON record: the file is damaged") from None
            records.append(record)
        good_bytes += len(line) + 1
    if repair and good_bytes < len(raw):
        with path.open("r+b") as f:
            f.truncate(good_bytes)
    return records


def case_id(workload: str, key: str, dtype: str, compile_mode: str) -> str:
    return f"{workload}|{key}|{dtype}|{compile_mode}"


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def path_for(out_dir: Path, run_id: str) -> Path:
        return out_dir / f"{run_id}{SUFFIX}"

    def _append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def start(self, header: dict[str, Any]) -> None:
        if self.path.exists():
            raise CollectorError(f"journal {self.path} already exists; use --resume to continue it")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._append({"type": "run", **header})

    def finish_case(
        self, cid: str, results: list[dict[str, Any]], outcome: str | None = None, process: int = 0
    ) -> None:
        self._append(
            {
                "type": "case",
                "case": cid,
                "process": process,
                "results": results,
                **({"outcome": outcome} if outcome else {}),
            }
        )

    def finish_kernels(self, cid: str, kernels: dict[str, Any]) -> None:
        """A case's breakdown from the kernel pass (collector.kernel_pass)."""
        self._append({"type": "kernels", "case": cid, "kernels": kernels})

    def mark_resume(self) -> None:
        self._append({"type": "resume"})

    def load(self, repair: bool = True) -> RunState:
        """Read back the journal; a torn trailing line is cut off (repair) so appends continue on a clean line."""
        return _state(read_records(self.path, "journal", repair), self.path)


def _state(records: list[dict[str, Any]], path: Path) -> RunState:
    if not records or records[0].get("type") != "run":
        raise CollectorError(f"{path} is not a collector journal (no run header on its first line)")
    state = RunState(header=records[0])
    for r in records[1:]:
        if r.get("type") == "case":
            state.record(r["case"], r["results"], r.get("outcome"), int(r.get("process", 0)))
        elif r.get("type") == "kernels":
            state.kernels[r["case"]] = r["kernels"]
        elif r.get("type") == "resume":
            state.resumes += 1
    return state
