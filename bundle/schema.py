"""The result bundle: one JSON document per collector run. The single source of truth for its format.

The collector builds these models, the ingest validates with them (strict JSON mode: a JSON value's type must be
the field's own), and docs/bundle.schema.json is exported from them (`python -m bundle.schema`). Every rule is
stated once here: as a field's annotation (type, bounds, finiteness, lengths) or as one of the *_rule functions
Result's model check calls. db.ingest.schema_checks turns them into set-based checks for large bundles: annotations
mechanically, the *_rule functions by calling them on each distinct input they get (their inputs are small). The
JSON Schema states the checks too, where it can (bundle.json_rules).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from enum import Enum
from typing import Annotated, Any

from pydantic import ConfigDict, Field, StrictInt, StringConstraints, field_validator, model_validator
from pydantic_core import PydanticCustomError

from bundle.contention import Share
from bundle.fields import Name, ParamValue, Status, Text, case_key_rule
from bundle.fields import Strict as _Strict
from bundle.fields import case_key as case_key  # the canonical case key: defined in bundle.fields, named here too
from bundle.fields import field_error as _field_error
from bundle.json_rules import bundle_schema, result_schema
from bundle.kernels import CaseKernels, first_repeated_breakdown
from bundle.metrics import check_unit, metric
from bundle.stats import FiniteFloat, Summary, summarize

# 5: `kernels`, each case's breakdown of what ran (bundle.kernels); 4: results carry no `summary` (the samples are
# the only fact: a reader derives it); 3: results carry `contention` (per worker process) and correctness records
# `rounding`; 2: `processes` (samples per worker process); 1: one process. All five read (an older bundle's stated
# summary must still agree with its samples).
SCHEMA_VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)
MAX_TAGS = 1000  # a run's tags are labels (role, machine group), not data
YEARS = (2000, 2100)  # a timestamp outside these is a broken clock or a probe, not a run

Int32 = Annotated[int, Field(ge=0, lt=2**31)]  # DuckDB INTEGER columns
Int64 = Annotated[int, Field(ge=0, lt=2**63)]  # DuckDB BIGINT columns
ProcessSize = Annotated[int, Field(ge=1, lt=2**31)]  # samples one worker process gave (DuckDB INTEGER)
MAX_PROCESSES = 10_000


class Channel(str, Enum):
    """Inferred by bundle.builds.infer_channel. A plain release string (RCs carry the final's) is "release": the
    git hash tells an RC's binaries from the final's. "stable" is what older bundles said; it still reads."""

    release = "release"
    rc = "rc"
    nightly = "nightly"
    local = "local"  # built from source / unknown suffix
    unknown = "unknown"
    stable = "stable"


class Machine(_Strict):
    name: Name
    chip: Name | None = None
    hw_model: str | None = None
    gpu_name: str | None = None
    gpu_cores: Int32 | None = None
    cpu_model: str | None = None
    cpu_p_cores: Int32 | None = None
    cpu_e_cores: Int32 | None = None
    memory_bytes: Int64 | None = None
    os: Name
    os_version: str | None = None
    arch: str | None = None
    power_source: str | None = None  # "ac" | "battery" | None when not known
    low_power_mode: bool | None = None
    thermal_state: str | None = None


class Build(_Strict):
    torch_version: Name
    git_hash: str | None = None
    channel: Channel
    nightly_date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    local_variant: str | None = None  # "+cpu", "+cu128", "+git…"
    debug: bool | None = None
    python_version: Name
    env: dict[Name, Text] = Field(default_factory=dict)  # the PYTORCH_* variables
    # versions of the packages the workloads run through besides torch (transformers, diffusers, triton, …):
    # a decode speed-up can come from a transformers upgrade, so they are part of the build's identity
    libraries: dict[Name, Name] = Field(default_factory=dict)
    collector_version: Name
    command_line: Text = ""
    install_source: Text | None = None  # the index a sweep installed torch from, or "python=<path>"


class DeviceInfo(_Strict):
    type: Annotated[str, StringConstraints(pattern=r"^(mps|cuda|cpu)$")]
    name: Name


def unit_rule(metric_name: str, unit: str) -> str:
    """The unit's canonical symbol, if the metric is known and the unit measures its dimension."""
    try:
        metric(metric_name)
    except ValueError as exc:
        raise _field_error("metric", str(exc)) from None
    try:
        return check_unit(metric_name, unit)
    except ValueError as exc:  # name the field: the check needs metric and unit together
        raise _field_error("unit", str(exc)) from None


# what makes a result one case of a run: a bundle holds each at most once (a repeat would be paired with every
# copy of itself in another run's A/A data: 6,000 copies of one case made a 36 M-row join, db.store.derived.aa_pairs)
CASE_FIELDS = ("workload", "case_key", "dtype", "compile", "metric")


def repeated_case_rule(first: int, again: int) -> str:
    return (
        f"results[{again}] repeats the case of results[{first}] (same {', '.join(CASE_FIELDS)}); a bundle "
        "holds each case once (fold repeated measurements into one result's samples)"
    )


def first_repeat(results: list["Result"]) -> tuple[int, int] | None:
    """(first position, its repeat's position) of the first repeated case, else None."""
    seen: dict[tuple, int] = {}
    for i, r in enumerate(results):
        key = tuple(getattr(r, f) for f in CASE_FIELDS)
        if key in seen:
            return seen[key], i
        seen[key] = i
    return None


def status_rule(status: Status, has_samples: bool, has_message: bool) -> None:
    has_value = status in (Status.ok, Status.fallback)
    if has_value and not has_samples:
        raise ValueError(f"status {status.value!r} needs at least one sample")
    if not has_value and has_samples:
        raise ValueError(f"status {status.value!r} must carry no samples (its figure does not exist)")
    if not has_value and not has_message:
        raise ValueError(f"status {status.value!r} needs a message saying why")


def processes_rule(processes: list[int], n_samples: int) -> None:
    """`processes` splits the samples by the worker process that measured them, in order: its sizes add up to the
    sample count (none: the samples are one process's, as every schema-1 bundle's)."""
    if processes and sum(processes) != n_samples:
        raise _field_error(
            "processes",
            f"the processes' sample counts add up to {sum(processes)}, but the result "
            f"has {n_samples} samples (they must split the samples exactly)",
        )


def contention_rule(n_contention: int, n_processes: int) -> None:
    """`contention` has one share per worker process (one, for a result of one process), or none at all."""
    entries = max(1, n_processes)
    if n_contention and n_contention != entries:
        raise _field_error(
            "contention",
            f"{n_contention} contention shares for {entries} worker process"
            f"{'es' * (entries != 1)} (one share per entry of `processes`, or none)",
        )


def sign_rule(metric_name: str, smallest: float) -> None:
    """The metric registry says which samples a metric allows (bundle.metrics.Sign), judged on the smallest."""
    sign = metric(metric_name).sign
    if not sign.allows(smallest):
        normal = f"a normal float (>= {sys.float_info.min:.4g})"  # a subnormal one breaks every ratio
        bound = f"> 0, {normal}" if sign.value == "positive" else f">= 0, and {normal} when above 0"
        raise _field_error(
            "samples",
            f"samples of {metric_name} must be {bound} (got {smallest!r}); "
            "record status 'error' with a message instead",
        )


class Result(_Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=result_schema)  # its checks, stated

    workload: Name
    suite: Name  # "kernels" | "models"
    params: dict[Name, ParamValue]
    case_key: str = ""  # derived from params; a bundle that states another is refused
    dtype: Name
    compile: Name = "eager"
    metric: Name
    unit: Name
    status: Status
    message: Text | None = None
    warnings: list[Text] = Field(default_factory=list)
    samples: list[FiniteFloat] = Field(default_factory=list, max_length=1_000_000)
    # schema 2: how many of `samples` each worker process gave, in order (the replicates a review tests on:
    # process state moves timings more than calls within a process do); empty: one process
    processes: list[ProcessSize] = Field(default_factory=list, max_length=MAX_PROCESSES)
    # schema 3: per worker process (aligned with `processes`; one for a one-process result), the share of the
    # machine's cores other processes took while it ran the case (bundle.contention); null: not measurable
    contention: list[Share | None] = Field(default_factory=list, max_length=MAX_PROCESSES)
    # derived from the samples (bundle.stats.summarize) for whoever shows a figure; never written (schema 4): a
    # summary read from a schema 1–3 bundle must agree with the samples, then is replaced by the derived one
    summary: Summary | None = Field(default=None, exclude=True)
    passed: bool | None = None  # correctness records: within the dtype's tolerance?
    tolerance: FiniteFloat | None = None
    # schema 3, correctness records: the same figure for the CPU reference rounded once to the output's dtype,
    # what rounding alone gives (PSNR dB, max abs / max rel error): the scale a change is judged on
    rounding: FiniteFloat | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "Result":
        object.__setattr__(self, "unit", unit_rule(self.metric, self.unit))
        object.__setattr__(self, "case_key", case_key_rule(self.params, self.case_key))
        status_rule(self.status, bool(self.samples), bool(self.message))
        processes_rule(self.processes, len(self.samples))
        contention_rule(len(self.contention), len(self.processes))
        if self.samples:
            sign_rule(self.metric, min(self.samples))
        try:
            derived = summarize(self.samples) if self.samples else None
        except ValueError as exc:  # a sum or spread that overflows a double
            raise _field_error("samples", str(exc).splitlines()[-1].strip()) from None
        if self.summary is not None and derived is not None and not self.summary.agrees(derived):
            raise _field_error("summary", "summary does not match the samples (summaries are derived from samples)")
        object.__setattr__(self, "summary", derived)
        return self


class Bundle(_Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=bundle_schema)

    # required: a reader must know which format it reads; the versions read are stated in the JSON Schema too
    schema_version: Annotated[StrictInt, Field(json_schema_extra={"enum": list(READABLE_VERSIONS)})]
    run_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]  # uuid4().hex, made by the collector
    started_at: datetime  # strict JSON (the ingest): an ISO 8601 string, never an integer epoch
    ended_at: datetime | None = None
    complete: bool
    machine: Machine
    build: Build
    device: DeviceInfo
    tags: dict[Name, Text] = Field(default_factory=dict, max_length=MAX_TAGS)
    warnings: list[Text] = Field(default_factory=list)  # run-level quality problems (battery, low power, …)
    # schema 5: each case's kernels breakdown (bundle.kernels), from the kernel pass (`run --kernels`); before
    # `results`, which stays the document's last key
    kernels: list[CaseKernels] = Field(default_factory=list)
    results: list[Result] = Field(default_factory=list)

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, v: int) -> int:
        if v not in READABLE_VERSIONS:
            raise ValueError(
                f"schema_version {v} is not supported; this server reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))}"
            )
        return v

    @field_validator("started_at", "ended_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        if v is None:
            return v
        if v.utcoffset() is None:
            raise ValueError("timestamps must carry a UTC offset (e.g. 2026-12-02T10:00:00Z)")
        # compared as naive local time first: converting year 9999 with a negative offset to UTC overflows
        if not YEARS[0] <= v.year <= YEARS[1] or not YEARS[0] <= v.astimezone(timezone.utc).year <= YEARS[1]:
            raise ValueError(f"timestamps must fall within the years {YEARS[0]}..{YEARS[1]} (got {v.isoformat()})")
        return v

    @model_validator(mode="after")
    def _ordered(self) -> "Bundle":
        if self.ended_at is not None and self.ended_at < self.started_at:
            raise _field_error("ended_at", "ended_at must not be before started_at")
        repeat = first_repeat(self.results)
        if repeat is not None:
            raise PydanticCustomError(
                "repeated_case", "{rule}", {"field": f"results[{repeat[1]}]", "rule": repeated_case_rule(*repeat)}
            )
        again = first_repeated_breakdown(self.kernels)
        if again is not None:
            rule = f"kernels[{again[1]}] repeats the case of kernels[{again[0]}]: a bundle breaks each case down once"
            raise PydanticCustomError("repeated_case", "{rule}", {"field": f"kernels[{again[1]}]", "rule": rule})
        return self


def json_schema() -> dict[str, Any]:
    return Bundle.model_json_schema()


if __name__ == "__main__":
    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
