"""Rich rendering: the run's progress bar and the summary / bundle tables (every figure with its unit)."""
from __future__ import annotations

from typing import Iterable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.markup import escape
from rich.table import Table

from bundle.schema import Result, Status

STATUS_STYLE = {Status.ok: "green", Status.fallback: "yellow", Status.unsupported: "magenta",
                Status.unavailable: "dim", Status.error: "red"}


def progress_bar(console: Console) -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False)


def _figure(r: Result) -> str:
    if r.summary is None:
        return "—"
    s = r.summary
    spread = f" (IQR {s.iqr:.3g} {r.unit})" if s.n > 1 else ""
    return f"{s.median:.4g} {r.unit}{spread}"


def _note(r: Result, width: int) -> str:
    parts = ([r.message] if r.status != Status.ok and r.message else []) + list(r.warnings)
    text = "; ".join(parts)
    return text if len(text) <= width else text[: width - 1] + "…"


def results_table(results: Iterable[Result], title: str, note_width: int = 90) -> Table:
    """One row per record: case, metric, median with unit (IQR), n, status, what went wrong (shortened)."""
    table = Table(title=title, show_lines=False)
    for col in ("case", "metric", "median", "n", "status", "warnings / why"):
        table.add_column(col, overflow="fold")
    for r in results:
        params = ",".join(f"{k}={v}" for k, v in sorted(r.params.items()))
        case = f"{r.workload}[{params}] {r.dtype} {r.compile}"
        style = STATUS_STYLE.get(r.status, "")
        table.add_row(escape(case), r.metric, escape(_figure(r)), str(r.summary.n if r.summary else 0),
                      f"[{style}]{r.status.value}[/]", escape(_note(r, note_width)))
    return table
