"""One case measured in several worker processes, as one Result per metric.

A run times every case in `processes` worker processes, one after another, each running the whole case list
(collector.run.session): process state (allocator, address-space layout, CPU placement, clocks) moves timings more
than calls within one process do, so the processes are the replicates a review tests on (pyperf's reasoning).
Process 0 runs every pass; the others only the timing passes (collector.timing.bench: `full`), so a memory peak or a
correctness figure is one process's figure, and a timing has the samples of every process, concatenated in
process order, with `processes` saying how many each gave and `contention` the share of the cores other
processes took while each ran (bundle.contention). A process that ran contended is re-timed in a fresh worker
process after the run's processes (index ≥ the plan's count: collector.run.session's retakes): both are kept, the
retake after them, and the record's warning names both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bundle.contention import MIN_CLEAN_PROCESSES, contended, enough_clean, share_range
from bundle.metrics import TIMINGS
from bundle.schema import Result, Status
from collector.timing.contention import cores

VALUE = (Status.ok.value, Status.fallback.value)


@dataclass
class RunState:
    """The run's cases as measured so far: each case's records from each worker process, as they came (kept here
    until merged_results; collector.journal.run_journal persists each part and reads them back into one on --resume)."""

    header: dict[str, Any]
    # case id -> worker process index -> that process's result dicts (journals before processes: all index 0)
    parts: dict[str, dict[int, list[dict[str, Any]]]] = field(default_factory=dict)
    resumes: int = 0
    crashed: dict[str, str] = field(default_factory=dict)  # case id -> "crashed" | "timed_out"
    kernels: dict[str, dict[str, Any]] = field(default_factory=dict)  # case id -> its breakdown (kernel pass)

    def record(self, cid: str, results: list[dict[str, Any]], outcome: str | None = None, process: int = 0) -> None:
        if outcome or cid in self.crashed:  # a crash makes the case its error records; a retry starts it over
            self.parts.pop(cid, None)
            self.kernels.pop(cid, None)
        self.parts.setdefault(cid, {})[process] = results
        if outcome:
            self.crashed[cid] = outcome
        else:
            self.crashed.pop(cid, None)

    def finished(self, cid: str, processes: int) -> bool:
        """Measured by every process, or crashed in one (a case that crashes a worker would crash the next).
        Parts from later indices are retakes of contended processes (collector.run.session), not processes."""
        return cid in self.crashed or sum(p < processes for p in self.parts.get(cid, {})) >= processes


def process_share(results: list[dict[str, Any]]) -> float | None:
    """The share one process's part of a case ran under (every measured record of it carries the same)."""
    return next((r["contention"][0] for r in results if r.get("contention")), None)


def merge(parts: dict[int, list[dict[str, Any]]], planned: int | None = None) -> list[dict[str, Any]]:
    """Per metric, in process 0's order (then any a later process alone recorded): the merged result dict.
    `planned`: the run's process count (parts from later indices are retakes); None: every part is planned."""
    by_metric: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for process in sorted(parts):
        for result in parts[process]:
            by_metric.setdefault(result["metric"], []).append((process, result))
    return [_merge_metric(found, planned) for found in by_metric.values()]


def _merge_metric(found: list[tuple[int, dict[str, Any]]], planned: int | None) -> dict[str, Any]:
    # a journal of an older collector has each record's summary: the Result derives it from the merged samples
    found = [(p, {k: v for k, v in r.items() if k != "summary"}) for p, r in found]
    if len(found) == 1:
        return _worded(found[0][1], [found[0][0]], planned)
    measured = [(p, r) for p, r in found if r["status"] in VALUE and r["samples"]]
    if not measured:  # no process gave a figure: the first one's record says why
        return found[0][1]
    first = dict(measured[0][1])
    warnings = list(first.get("warnings") or [])
    for _, r in measured[1:]:
        warnings += [w for w in r.get("warnings") or [] if w not in warnings]
    for p, r in found:
        if (p, r) not in measured:
            note = f"worker process {p + 1}: {r['status']}: {r.get('message') or 'no figure'} (left out)"
            warnings.append(note[:2000])
    first["samples"] = [x for _, r in measured for x in r["samples"]]
    first["processes"] = [len(r["samples"]) for _, r in measured]
    shares = [(r.get("contention") or [None])[0] for _, r in measured]
    first["contention"] = shares if any(s is not None for s in shares) else []
    first["warnings"] = warnings
    if any(r["status"] == Status.fallback.value for _, r in measured):
        first["status"] = Status.fallback.value
    note = f"{len(measured)} worker processes"
    first["message"] = f"{first['message']}; {note}" if first.get("message") else note
    return _worded(first, [p for p, _ in measured], planned)


def _worded(result: dict[str, Any], processes: list[int], planned: int | None) -> dict[str, Any]:
    """A timing record with a warning naming its contended processes and their retakes, where it has any."""
    shares = (result.get("contention") or []) if result["metric"] in TIMINGS else []
    hot = [s for s in shares if contended(s)]
    if not hot:
        return result
    total = len(shares)
    retakes = [p for p in processes if planned is not None and p >= planned]
    clean = total - len(hot)
    what = (
        f"CPU contention: {len(hot)} of {total} worker process{'es' * (total != 1)} ran while other processes "
        f"took {share_range(hot)} of the machine's {cores()} cores"
    )
    if retakes:
        what += f"; {len(retakes)} of the {total} are retakes in fresh processes after the run's {planned}"
    what += (
        "; a review leaves the contended out of its test"
        if enough_clean(clean, total)
        else f"; only {clean} ran clean: these timings are not evidence (rerun on an idle machine)"
    )
    result["warnings"] = [*(result.get("warnings") or []), what]
    return result


def merged_results(parts: dict[int, list[dict[str, Any]]], planned: int | None = None) -> list[Result]:
    """The case's Results: each built and validated once, here, from its processes' merged records (the worker's
    records are collector.isolation.runner.records, journaled as they came)."""
    return [Result.model_validate(r) for r in merge(parts, planned)]


def run_note(results: list[Result]) -> str | None:
    """The run's line on contention (a bundle warning, and what `mpsbench run` ends with): how many cases ran
    contended beyond evidence, or how many processes were contended and left out. None on an idle machine."""
    widest: dict[tuple, list[float | None]] = {}  # case -> the shares of its most replicated timing record
    for r in results:
        key = (r.workload, r.case_key, r.dtype, r.compile)
        shares = list(r.contention) or [None] * max(1, len(r.processes))  # none measured: clean, as a review reads
        if r.metric in TIMINGS and r.samples and len(shares) > len(widest.get(key, [])):
            widest[key] = shares
    cases = {key: (sum(not contended(s) for s in shares), len(shares)) for key, shares in widest.items()}
    hot = [s for shares in widest.values() for s in shares if contended(s)]
    if not hot:
        return None
    busy = [key for key, (clean, total) in cases.items() if not enough_clean(clean, total)]
    if busy:
        return (
            f"CPU contention: {len(busy)} of {len(cases)} cases ran while other processes took "
            f"{share_range(hot)} of the machine's {cores()} cores; their timings are not evidence (fewer than "
            f"{MIN_CLEAN_PROCESSES} clean worker processes; rerun them on an idle machine: `mpsbench confirm`)"
        )
    some = sum(1 for clean, total in cases.values() if clean < total)
    timings = f"{len(hot)} worker-process timing{'s' * (len(hot) != 1)}"
    return (
        f"CPU contention: {timings} ({some} of {len(cases)} cases) ran while other processes took "
        f"{share_range(hot)} of the machine's {cores()} cores; a review leaves {'them' if len(hot) > 1 else 'it'} "
        f"out (every case kept at least {MIN_CLEAN_PROCESSES} clean processes)"
    )
