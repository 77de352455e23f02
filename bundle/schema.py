"""The result bundle: one JSON document per collector run. The single source of truth for its format.

The collector builds these models, the ingest validates with them, and docs/bundle.schema.json is exported
from them (`python -m bundle.schema`).
"""
from __future__ import annotations

import json
import math
from datetime import datetime
from enum import Enum
from typing import Annotated, Any

from pydantic_core import PydanticCustomError
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from bundle.metrics import check_unit, metric
from bundle.stats import Summary, summarize

SCHEMA_VERSION = 1

Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Text = Annotated[str, StringConstraints(max_length=20_000)]
ParamValue = str | int | float | bool | None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Status(str, Enum):
    ok = "ok"
    fallback = "fallback"  # ran, but some op fell back to the CPU: the figure is not the device's alone
    unsupported = "unsupported"  # the device/build/dtype cannot run this case
    unavailable = "unavailable"  # the device/build cannot give this figure (e.g. no peak-memory API)
    error = "error"


class Channel(str, Enum):
    stable = "stable"
    rc = "rc"
    nightly = "nightly"
    local = "local"  # built from source / unknown suffix
    unknown = "unknown"


def case_key(params: dict[str, Any]) -> str:
    """Canonical, order-independent identity of a case's parameters."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Machine(_Strict):
    name: Name
    chip: Name | None = None
    hw_model: str | None = None
    gpu_name: str | None = None
    gpu_cores: int | None = Field(default=None, ge=0)
    cpu_model: str | None = None
    cpu_p_cores: int | None = Field(default=None, ge=0)
    cpu_e_cores: int | None = Field(default=None, ge=0)
    memory_bytes: int | None = Field(default=None, ge=0)
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


class DeviceInfo(_Strict):
    type: Annotated[str, StringConstraints(pattern=r"^(mps|cuda|cpu)$")]
    name: Name


def _field_error(field: str, rule: str) -> PydanticCustomError:
    """A model-level check that belongs to one field: ctx.field lets the ingest report `results[i].<field>`."""
    return PydanticCustomError("field_rule", "{rule}", {"field": field, "rule": rule})


class Result(_Strict):
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
    samples: list[float] = Field(default_factory=list, max_length=1_000_000)
    summary: Summary | None = None
    passed: bool | None = None  # correctness records: within the dtype's tolerance?
    tolerance: float | None = None

    @field_validator("samples")
    @classmethod
    def _finite(cls, v: list[float]) -> list[float]:
        if any(not math.isfinite(x) for x in v):
            raise ValueError("samples must be finite numbers (no NaN/inf); record status 'error' instead")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "Result":
        try:
            metric(self.metric)
        except ValueError as exc:
            raise _field_error("metric", str(exc)) from None
        try:
            object.__setattr__(self, "unit", check_unit(self.metric, self.unit))
        except ValueError as exc:  # name the field: the check needs metric and unit together
            raise _field_error("unit", str(exc)) from None
        key = case_key(self.params)
        if self.case_key and self.case_key != key:
            raise _field_error("case_key", f"case_key {self.case_key!r} does not match params (expected {key!r})")
        object.__setattr__(self, "case_key", key)
        self._check_samples()
        return self

    def _check_samples(self) -> None:
        has_value = self.status in (Status.ok, Status.fallback)
        if has_value and not self.samples:
            raise ValueError(f"status {self.status.value!r} needs at least one sample")
        if not has_value and self.samples:
            raise ValueError(f"status {self.status.value!r} must carry no samples (its figure does not exist)")
        if not has_value and not self.message:
            raise ValueError(f"status {self.status.value!r} needs a message saying why")
        derived = summarize(self.samples) if self.samples else None
        if self.summary is not None and derived is not None and not self.summary.agrees(derived):
            raise ValueError("summary does not match the samples (summaries are derived from samples)")
        object.__setattr__(self, "summary", derived)


class Bundle(_Strict):
    schema_version: int = SCHEMA_VERSION
    run_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]  # uuid4().hex, made by the collector
    started_at: datetime
    ended_at: datetime | None = None
    complete: bool
    machine: Machine
    build: Build
    device: DeviceInfo
    tags: dict[Name, Text] = Field(default_factory=dict)
    warnings: list[Text] = Field(default_factory=list)  # run-level quality problems (battery, low power, …)
    results: list[Result] = Field(default_factory=list)

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, v: int) -> int:
        if v != SCHEMA_VERSION:
            raise ValueError(f"schema_version {v} is not supported; this server reads version {SCHEMA_VERSION}")
        return v

    @field_validator("started_at", "ended_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        if v is not None and v.utcoffset() is None:
            raise ValueError("timestamps must carry a UTC offset (e.g. 2026-12-02T10:00:00Z)")
        return v


def json_schema() -> dict[str, Any]:
    return Bundle.model_json_schema()


if __name__ == "__main__":
    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
