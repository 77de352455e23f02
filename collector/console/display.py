"""Rich rendering: the run's progress bar, the run summary (one row per case) and the bundle table (one row per
record); every figure with its unit."""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Column, Table

from bundle.kernels import CaseKernels
from bundle.metrics import metric as metric_info
from bundle.schema import Result, Status
from bundle.units import binary_bytes, conversion_factor

STATUS_STYLE = {
    Status.ok: "green",
    Status.fallback: "yellow",
    Status.unsupported: "magenta",
    Status.unavailable: "dim",
    Status.error: "red",
}
# A case's status is its worst record's; `unavailable` (a figure this device cannot give) is not a failure.
CASE_ORDER = (Status.error, Status.fallback, Status.unsupported, Status.ok)
DESCRIPTION_WIDTH = 70  # the current case's label is cut here, so the bar, count, elapsed and ETA stay readable


def progress_bar(console: Console) -> Progress:
    label = TextColumn(
        "[bold]{task.description}", table_column=Column(max_width=DESCRIPTION_WIDTH, no_wrap=True, overflow="ellipsis")
    )
    return Progress(
        label,
        BarColumn(bar_width=30),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def with_unit(value: float, unit: str) -> str:
    """'96.28 µs'; bytes in KiB/MiB/GiB ('252.8 MiB'); a dimensionless figure (unit "1") without a unit."""
    if unit == "1":
        return f"{value:.4g}"
    if unit == "B":
        scaled, name = binary_bytes(value)
        return f"{scaled:.4g} {name}"
    return f"{value:.4g} {unit}"


def _figure(r: Result) -> str:
    if r.summary is None:
        return "—"
    s = r.summary
    spread = f" (IQR {with_unit(s.iqr, r.unit)})" if s.n > 1 else ""
    return with_unit(s.median, r.unit) + spread


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _note(r: Result, width: int) -> str:
    parts = ([r.message] if r.status != Status.ok and r.message else []) + list(r.warnings)
    return _shorten("; ".join(parts), width)


def case_label(r: Result) -> str:
    params = ",".join(f"{k}={v}" for k, v in sorted(r.params.items()))
    return f"{r.workload}[{params}] {r.dtype} {r.compile}"


def _styled(status: Status) -> str:
    return f"[{STATUS_STYLE.get(status, '')}]{status.value}[/]"


def results_table(results: Iterable[Result], title: str, note_width: int = 90) -> Table:
    """One row per record: case, metric, median with unit (IQR), n, status, what went wrong (shortened)."""
    table = Table(title=title, show_lines=False)
    for col in ("case", "metric", "median", "n", "status", "warnings / why"):
        table.add_column(col, overflow="fold")
    for r in results:
        table.add_row(
            escape(case_label(r)),
            r.metric,
            escape(_figure(r)),
            str(r.summary.n if r.summary else 0),
            _styled(r.status),
            escape(_note(r, note_width)),
        )
    return table


def by_case(results: Iterable[Result]) -> dict[str, list[Result]]:
    cases: dict[str, list[Result]] = {}
    for r in results:
        cases.setdefault(case_label(r), []).append(r)
    return cases


def case_status(records: list[Result]) -> Status:
    present = {r.status for r in records}
    return next((s for s in CASE_ORDER if s in present), Status.unavailable)


def _figures(records: list[Result]) -> str:
    shown = [
        f"{r.metric} {with_unit(r.summary.median, r.unit)}"
        for r in records
        if r.summary is not None and r.metric != "first_call_time"
    ]
    failed = [r.metric for r in records if r.passed is False]
    return "; ".join(shown + ([f"FAILED tolerance: {', '.join(failed)}"] if failed else []))


def _case_note(records: list[Result], width: int) -> str:
    why = [r.message for r in records if r.status in (Status.error, Status.unsupported) and r.message][:1]
    warnings = list(dict.fromkeys(w for r in records for w in r.warnings))
    missing = [r.metric for r in records if r.status == Status.unavailable]
    parts = why + warnings + ([f"unavailable here: {', '.join(missing)}"] if missing else [])
    return _shorten("; ".join(parts), width)


def run_summary(results: Iterable[Result], title: str, note_width: int = 70) -> Table:
    """One row per case: status, its figures with units (medians), why it failed / its warnings."""
    cases = by_case(results)
    counts = Counter(case_status(records).value for records in cases.values())
    caption = f"{len(cases)} cases: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    table = Table(title=title, caption=caption)
    for col in ("case", "status", "figures (median)", "warnings / why"):
        table.add_column(col, overflow="fold")
    for label, records in cases.items():
        table.add_row(
            escape(label),
            _styled(case_status(records)),
            escape(_figures(records)),
            escape(_case_note(records, note_width)),
        )
    return table


def kernels_table(kernels: Iterable[CaseKernels], results: Iterable[Result], title: str, top: int = 4) -> Table:
    """One row per broken-down case: the timed figure it explains (median), the breakdown's device time per op call
    beside it, and its largest entries with their time per op call, share and calls per op call."""
    medians = {(r.workload, r.case_key, r.dtype, r.compile, r.metric): r.summary.median for r in results if r.summary}
    table = Table(title=title)
    for col in ("case", "timed (median)", "breakdown", "largest entries (per op call)"):
        table.add_column(col, overflow="fold")
    for k in kernels:
        label = f"{k.workload}[{','.join(f'{a}={v}' for a, v in sorted(k.params.items()))}] {k.dtype} {k.compile}"
        unit = metric_info(k.metric).unit
        timed = medians.get((k.workload, k.case_key, k.dtype, k.compile, k.metric))
        shown = f"{k.metric} {with_unit(timed, unit)}" if timed is not None else f"{k.metric}: none"
        if k.status != Status.ok:
            table.add_row(escape(label), escape(shown), _styled(k.status), escape(_shorten(k.message or "", 90)))
            continue
        total = k.device_time_us * conversion_factor("µs", unit)
        ratio = f" ({total / timed:.2f}× timed)" if timed else ""
        entries = "; ".join(
            f"{e.name} [{e.kind.value}] {e.device_time_us:.4g} µs ({e.share * 100:.0f} %) ×{e.calls_per_call:g}"
            for e in k.entries[:top]
        )
        table.add_row(escape(label), escape(shown), escape(f"{with_unit(total, unit)}{ratio}"), escape(entries))
    return table
