"""What a table column is called on a page: one vocabulary for every page's tables, so no raw key (baseline_value,
started_at, noise_bound_percent) reaches a person. Each name gets a human label with its unit where the unit is
fixed, and a kind that says how its numbers are written (a percentage rounded with "%", a fraction shown as a
percentage, a time in UTC). The data keeps its keys: the JSON twins and exports read the same frame; only the
page's header and number format change (pages.parts.table). Missing values are written "—" there, never None;
a figure written out in words (a chart's label) reads as the review writes it (format_value)."""

from __future__ import annotations

from typing import NamedTuple

from db.review.cases import wording

TEXT, PERCENT, FRACTION, TIME = "text", "percent", "fraction", "time"  # the kinds of a column


class Column(NamedTuple):
    label: str
    kind: str = TEXT


LABELS: dict[str, Column] = {
    "run_id": Column("run id"),
    "started_at": Column("started (UTC)", TIME),
    "retracted_at": Column("retracted (UTC)", TIME),
    "first_run": Column("first run (UTC)", TIME),
    "last_run": Column("last run (UTC)", TIME),
    "nightly_date": Column("nightly date"),
    "torch_version": Column("torch version"),
    "git_hash": Column("git hash"),
    "machine_name": Column("machine"),
    "gpu_cores": Column("GPU cores"),
    "os_version": Column("OS version"),
    "os": Column("OS"),
    "device_type": Column("device type"),
    "memory_GiB": Column("memory (GiB)"),
    "n_results": Column("results"),
    "case_key": Column("case key (JSON)"),
    "n_cases": Column("cases"),
    "n_samples": Column("samples"),
    "n": Column("samples"),
    "n_better": Column("better"),
    "n_worse": Column("worse"),
    "n_unchanged": Column("unchanged"),
    "iqr": Column("IQR"),
    "p25": Column("25th percentile"),
    "p75": Column("75th percentile"),
    "baseline_iqr": Column("baseline IQR"),
    "candidate_iqr": Column("candidate IQR"),
    "baseline_n": Column("baseline samples"),
    "candidate_n": Column("candidate samples"),
    "p_value": Column("p-value"),
    "ci_low": Column("95 % CI low"),
    "ci_high": Column("95 % CI high"),
    "ci": Column("95 % CI (×)"),
    "geomean": Column("geomean (× better)"),
    "oriented_ratio": Column("× better (oriented ratio)"),
    "ratio": Column("ratio (candidate / baseline)"),
    "change_unit": Column("change unit"),
    "worse_by": Column("worse by (%)", FRACTION),
    "bound": Column("rule's bound (%)", FRACTION),
    "se": Column("standard error"),
    "se_unit": Column("standard error unit"),
    "df": Column("degrees of freedom"),
    "noise_bound_percent": Column("noise bound (%)", PERCENT),
    "spread_percent": Column("run-to-run spread (%)", PERCENT),
    "pairs_pending": Column("pairs pending"),
    "runs_per_side": Column("runs per side"),
    "figure_status": Column("figure status"),
    "figure_measured": Column("figure measured"),
    "claimed_cases": Column("claimed cases"),
    "change_point": Column("change point"),
    "op_time_µs": Column("op time (µs)"),
    "previous_µs": Column("previous op time (µs)"),
    "previous_build": Column("previous build"),
    "speedup_vs_previous": Column("speed-up vs previous (×)"),
    "baseline_runs": Column("baseline runs"),
    "candidate_runs": Column("candidate runs"),
    "failed_metrics": Column("failed metrics"),
    "failed_figures": Column("failed figures"),
    "uploaded_by": Column("uploaded by"),
    "retracted_by": Column("retracted by"),
    "retraction_reason": Column("retraction reason"),
}
SUFFIXES = (("_percent", " (%)", PERCENT), ("_GiB", " (GiB)", TEXT), ("_µs", " (µs)", TEXT), ("_at", " (UTC)", TIME))


def column(name: object) -> Column:
    """The label and kind of a column key: the vocabulary's, else its words ("baseline_value" → "baseline value")
    with a unit suffix read as its unit ("peak_GiB" → "peak (GiB)", "load_percent" → "load (%)")."""
    key = str(name)
    if key in LABELS:
        return LABELS[key]
    for suffix, unit, kind in SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            return Column(key[: -len(suffix)].replace("_", " ") + unit, kind)
    return Column(key.replace("_", " "))


def format_value(value: float | None, unit: str) -> str:
    """A figure with its unit, as the review writes it (db.review.cases.wording): bytes in binary units, "—" if missing."""
    return wording.format_value(value, unit)
