"""One case measured in several worker processes, as one Result per metric.

A run times every case in `processes` worker processes, one after another, each running the whole case list
(collector.session): process state (allocator, address-space layout, CPU placement, clocks) moves timings more
than calls within one process do, so the processes are the replicates a review tests on (pyperf's reasoning).
Process 0 runs every pass; the others only the timing passes (collector.bench: `full`), so a memory peak or a
correctness figure is one process's figure, and a timing has the samples of every process, concatenated in
process order, with `processes` saying how many each gave.
"""
from __future__ import annotations

from typing import Any

from bundle.schema import Result, Status

VALUE = (Status.ok.value, Status.fallback.value)


def merge(parts: dict[int, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per metric, in process 0's order (then any a later process alone recorded): the merged result dict."""
    by_metric: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for process in sorted(parts):
        for result in parts[process]:
            by_metric.setdefault(result["metric"], []).append((process, result))
    return [_merge_metric(found) for found in by_metric.values()]


def _merge_metric(found: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    if len(found) == 1:
        return found[0][1]
    measured = [(p, r) for p, r in found if r["status"] in VALUE and r["samples"]]
    if not measured:  # no process gave a figure: the first one's record says why
        return found[0][1]
    first = dict(measured[0][1])
    first.pop("summary", None)  # derived again from the merged samples
    warnings = list(first.get("warnings") or [])
    for _, r in measured[1:]:
        warnings += [w for w in r.get("warnings") or [] if w not in warnings]
    for p, r in found:
        if (p, r) not in measured:
            note = f"worker process {p + 1}: {r['status']}: {r.get('message') or 'no figure'} (left out)"
            warnings.append(note[:2000])
    first["samples"] = [x for _, r in measured for x in r["samples"]]
    first["processes"] = [len(r["samples"]) for _, r in measured]
    first["warnings"] = warnings
    if any(r["status"] == Status.fallback.value for _, r in measured):
        first["status"] = Status.fallback.value
    note = f"{len(measured)} worker processes"
    first["message"] = f"{first['message']}; {note}" if first.get("message") else note
    return first


def merged_results(parts: dict[int, list[dict[str, Any]]]) -> list[Result]:
    return [Result.model_validate(r) for r in merge(parts)]
