"""What a run measures: the selection options, kept in the journal header so --resume rebuilds the same cases."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from collector.catalog import Catalog
from collector.errors import CollectorError
from collector.journal.run_journal import case_id
from collector.workload import PROFILES, Case, Workload

COMPILE_MODES = ("eager", "inductor")
# Worker processes per case by default: the replicates a review tests on (README, "Processes": chosen from the
# false-alarm / power / collection-time measurements of benchmarks/false_alarms/)
DEFAULT_PROCESSES = 10
MAX_PROCESSES = 100
DEFAULT_IDLE_WAIT_S, MAX_IDLE_WAIT_S = 30.0, 3600.0
PROCESSES_VARIABLE = "MPSBENCH_PROCESSES"  # a machine's own default (e.g. a CI Mac that runs more), else the above


def default_processes() -> int:
    import os

    text = os.environ.get(PROCESSES_VARIABLE, "").strip()
    if not text:
        return DEFAULT_PROCESSES
    if not text.isdigit() or not 1 <= int(text) <= MAX_PROCESSES:
        raise CollectorError(
            f"{PROCESSES_VARIABLE} must be a whole number from 1 to {MAX_PROCESSES} (got {text[:20]!r})"
        )
    return int(text)


def _is_dtype(name: str) -> bool:
    import torch

    return name == "tf32" or isinstance(getattr(torch, name, None), torch.dtype)


@dataclass(frozen=True)
class Plan:
    workloads: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    dtypes: tuple[str, ...] | None = None
    compile_modes: tuple[str, ...] = ("eager",)
    profile: str = "quick"
    case_time_limit_s: float | None = None
    # worker processes that each time every case (collector.isolation.processes); the CLI's default is default_processes()
    processes: int = 1
    cases: tuple[str, ...] = ()  # only these case ids (workload|case_key|dtype|compile): what `confirm` reruns
    # --idle-wait: the longest a run waits for other processes to leave the cores before it times a case (0:
    # never wait, never re-time a contended process); collector.timing.contention.IdlePolicy
    idle_wait_s: float = DEFAULT_IDLE_WAIT_S
    # --kernels (on in --profile full; confirm and bisect runs always): after the timing processes, each case's call
    # under the backend's profiler in a worker of its own (collector.run.kernel_pass)
    kernels: bool = False

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise CollectorError(f"--profile must be one of {', '.join(PROFILES)} (got {self.profile!r})")
        bad = [m for m in self.compile_modes if m not in COMPILE_MODES]
        if bad or not self.compile_modes:
            raise CollectorError(f"--compile must be a comma list of {', '.join(COMPILE_MODES)} (got {bad or 'none'})")
        bad_dtypes = [d for d in self.dtypes or () if not _is_dtype(d)]
        if bad_dtypes:
            raise CollectorError(
                f"--dtype {', '.join(bad_dtypes)}: not a torch dtype name (e.g. float32, bfloat16, "
                "float16, float8_e4m3fn) or tf32"
            )
        if not isinstance(self.processes, int) or not 1 <= self.processes <= MAX_PROCESSES:
            raise CollectorError(
                f"--processes must be a whole number from 1 to {MAX_PROCESSES} (got {self.processes!r})"
            )
        if self.case_time_limit_s is not None and self.case_time_limit_s <= 0:
            raise CollectorError("--case-time-limit must be a positive number of seconds")
        if not 0 <= self.idle_wait_s <= MAX_IDLE_WAIT_S:
            raise CollectorError(
                f"--idle-wait must be from 0 to {MAX_IDLE_WAIT_S:g} seconds (got {self.idle_wait_s!r})"
            )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Plan":
        dtypes = data.get("dtypes")
        return cls(
            workloads=tuple(data.get("workloads", ())),
            suites=tuple(data.get("suites", ())),
            dtypes=tuple(dtypes) if dtypes else None,
            compile_modes=tuple(data.get("compile_modes", ("eager",))),
            profile=data.get("profile", "quick"),
            case_time_limit_s=data.get("case_time_limit_s"),
            processes=int(data.get("processes", 1)),  # journals from before processes: one
            cases=tuple(data.get("cases", ())),
            idle_wait_s=float(data.get("idle_wait_s", 0.0)),  # journals from before the wait: none
            kernels=bool(data.get("kernels", False)),  # journals from before the kernel pass: none
        )


@dataclass
class PlannedCase:
    workload: Workload
    case: Case

    @property
    def id(self) -> str:
        return case_id(self.case.workload, self.case.key, self.case.dtype, self.case.compile)


@dataclass
class CaseList:
    cases: list[PlannedCase] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # workload -> why cases() failed


def expand(plan: Plan, catalog: Catalog) -> CaseList:
    out = CaseList()
    for w in catalog.select(list(plan.workloads) or None, list(plan.suites) or None):
        try:
            cases = w.cases(plan.profile, plan.dtypes, plan.compile_modes)
        except Exception as exc:  # noqa: BLE001 - one broken workload must not stop the others
            out.failed[w.name] = f"cases() failed: {type(exc).__name__}: {exc}"
            continue
        _add_unique(out, w, cases)
    if plan.cases:
        wanted = set(plan.cases)
        missing = wanted - {c.id for c in out.cases}
        if missing:
            raise CollectorError(
                f"--case {sorted(missing)[0]!r}: no such case in the plan (a case id is "
                "workload|case_key|dtype|compile, as `mpsbench confirm` writes it)"
            )
        out.cases = [c for c in out.cases if c.id in wanted]
    return out


def _add_unique(out: CaseList, workload: Workload, cases: list[Case]) -> None:
    """A case listed twice would be measured and journaled twice: keep the first, say so."""
    seen = {c.id for c in out.cases}
    for case in cases:
        planned = PlannedCase(workload, case)
        if planned.id in seen:
            out.failed[workload.name] = f"lists case {case.label()} more than once (kept the first)"
            continue
        seen.add(planned.id)
        out.cases.append(planned)
