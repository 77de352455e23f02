"""The run journal: one JSON line per finished case in one worker process, appended and fsynced at once
(collector.journal.lines), next to the bundle. A run times each case in several worker processes (collector.run.session); a case is finished when every
process has measured it (or one crashed on it).

A crash or Ctrl-C keeps every finished case; `run --resume` reads the journal back (a torn last line from a
SIGKILL mid-write is dropped and cut off) and continues the same run_id. A case whose worker crashed or timed
out (collector.isolation.isolator) is journaled with its `outcome`: finished, so --resume does not run it again (it
would crash again), unless --retry-crashed; a later line for the same case replaces the earlier one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bundle.schema import Build, Machine
from collector.errors import CollectorError
from collector.isolation.processes import RunState
from collector.journal.lines import append_line
from collector.journal.read import (
    ANY_OBJECT,
    NUMBER,
    TEXT,
    WHOLE,
    list_of,
    model,
    obj,
    optional,
    read_journal,
)

SUFFIX = ".journal.jsonl"
TEXTS = list_of(TEXT)
# what a resume reads of each record (collector.run.session: resume, worker_spec, build_bundle; collector.isolation.processes)
KINDS = {
    "run": {
        "run_id": TEXT,
        "started_at": TEXT,
        "machine": model(Machine),
        "build": model(Build),
        "device": obj(type=TEXT, name=TEXT),
        "device_choice": optional(TEXT),
        "tags": optional(ANY_OBJECT),
        "warnings": optional(TEXTS),
        "plan": obj(
            workloads=optional(TEXTS),
            suites=optional(TEXTS),
            dtypes=optional(TEXTS),
            compile_modes=optional(TEXTS),
            profile=optional(TEXT),
            case_time_limit_s=optional(NUMBER),
            processes=optional(WHOLE),
            cases=optional(TEXTS),
            idle_wait_s=optional(NUMBER),
        ),
    },
    "case": {
        "case": TEXT,
        "results": list_of(
            obj(
                metric=TEXT,
                status=TEXT,
                samples=optional(list_of(NUMBER)),
                warnings=optional(TEXTS),
                contention=optional(list_of(optional(NUMBER))),
                message=optional(TEXT),
            )
        ),
        "process": optional(WHOLE, null=False),
        "outcome": optional(TEXT),
    },
}


def case_id(workload: str, key: str, dtype: str, compile_mode: str) -> str:
    return f"{workload}|{key}|{dtype}|{compile_mode}"


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def path_for(out_dir: Path, run_id: str) -> Path:
        return out_dir / f"{run_id}{SUFFIX}"

    def _append(self, record: dict[str, Any]) -> None:
        append_line(self.path, record)

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
        """A case's breakdown from the kernel pass (collector.run.kernel_pass)."""
        self._append({"type": "kernels", "case": cid, "kernels": kernels})

    def mark_resume(self) -> None:
        self._append({"type": "resume"})

    def load(self, repair: bool = True) -> RunState:
        """Read back the journal; a torn trailing line is cut off (repair) so appends continue on a clean line."""
        return _state(read_journal(self.path, "run journal", "run", KINDS, repair))


def _state(records: list[dict[str, Any]]) -> RunState:
    state = RunState(header=records[0])
    for r in records[1:]:
        if r.get("type") == "case":
            state.record(r["case"], r["results"], r.get("outcome"), int(r.get("process", 0)))
        elif r.get("type") == "kernels":
            state.kernels[r["case"]] = r["kernels"]
        elif r.get("type") == "resume":
            state.resumes += 1
    return state
