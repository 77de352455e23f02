"""Machine and Build, declared once: bundle.schema's models say what each field is (its type and rule); STORED says
which the store keeps, under which `runs` column, and how the dashboard shows it (label, unit, what a missing value
reads as). The runs table's provenance columns (db.store.tables), the ingest's mapping (db.ingest.core), the runs list
of the Runs page and GET /api/v1/runs (db.query.runs, pages.runs), the run's page and the export (db.query.run_bundles)
are all derived from it: a field added to a model and here is stored, shown and exported without another edit.
Every field of both models is in STORED or in NOT_STORED with the reason (tests/test_provenance.py)."""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import BaseModel

from bundle.schema import Build, Bundle, Machine

UNAVAILABLE = "unavailable"  # what the dashboard shows for a figure the machine could not tell (or an older store)


@dataclass(frozen=True)
class Stored:
    model: type[BaseModel]  # Machine or Build (or a model derived from one)
    field: str  # the field's name in the bundle
    column: str  # its column in `runs`
    label: str  # how the dashboard names it
    unit: str | None = None  # the unit of a number (shown beside the label)
    listed: bool = False  # a column of the runs list (Runs page, GET /api/v1/runs)
    absent: str = ""  # what the dashboard shows where the stored value is NULL

    @property
    def shown(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label

    @property
    def part(self) -> str:
        """The bundle's key holding the field: "machine" or "build"."""
        return "machine" if issubclass(self.model, Machine) else "build"


def _machine(field: str, column: str, label: str, unit: str | None = None, listed: bool = False) -> Stored:
    return Stored(Machine, field, column, label, unit, listed, absent=UNAVAILABLE)  # measured: unknown = unavailable


def _build(field: str, label: str, listed: bool = False, absent: str = "", column: str | None = None) -> Stored:
    return Stored(Build, field, column or field, label, None, listed, absent)


MACHINE = (
    _machine("name", "machine_name", "machine", listed=True),
    _machine("chip", "chip", "chip", listed=True),
    _machine("hw_model", "hw_model", "hardware model"),
    _machine("gpu_name", "gpu_name", "GPU"),
    _machine("gpu_cores", "gpu_cores", "GPU cores", "cores", listed=True),
    _machine("cpu_model", "cpu_model", "CPU"),
    _machine("cpu_p_cores", "cpu_p_cores", "CPU performance cores", "cores", listed=True),
    _machine("cpu_e_cores", "cpu_e_cores", "CPU efficiency cores", "cores", listed=True),
    _machine("memory_bytes", "memory_bytes", "memory", "B"),
    _machine("os", "os", "OS"),
    _machine("os_version", "os_version", "OS version", listed=True),
    _machine("arch", "arch", "architecture"),
    _machine("power_source", "power_source", "power source"),
    _machine("low_power_mode", "low_power_mode", "Low Power Mode"),
    _machine("thermal_state", "thermal_state", "thermal state"),
)
BUILD = (
    _build("torch_version", "torch", listed=True),
    _build("git_hash", "git hash", listed=True, absent=UNAVAILABLE),
    _build("channel", "channel", listed=True),
    _build("nightly_date", "nightly date", listed=True),  # NULL: not a nightly
    _build("local_variant", "local variant"),
    _build("debug", "debug build", absent=UNAVAILABLE),
    _build("python_version", "Python"),
    _build("env", "PYTORCH_* environment", column="env_json"),
    _build("libraries", "libraries", listed=True, column="libraries_json"),
    _build("collector_version", "collector"),
    _build("command_line", "command line"),
    _build("install_source", "install source"),  # NULL: not installed by a sweep
)
STORED = MACHINE + BUILD
# the model fields the store does not keep, and why (none today: the P/E cores and the install source were dropped
# at ingest until store v11)
NOT_STORED: dict[tuple[type[BaseModel], str], str] = {}


@dataclass(frozen=True)
class Kind:
    """A field's value as the store keeps it: its Python type (dict and Enum fields are kept as text: JSON, the
    enum's value), whether it may be missing, and the largest integer it may hold (an int column's width)."""

    type: type
    nullable: bool
    int_limit: int | None = None
    json: bool = False


def _parts(annotation: Any) -> tuple[list[Any], bool]:
    """The non-None members of a (possibly Optional) annotation, and whether None was one of them."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = typing.get_args(annotation)
        return [m for m in members if m is not type(None)], type(None) in members
    return [annotation], False


def _int_limit(annotation: Any, metadata: list[Any]) -> int | None:
    found = list(metadata)
    while typing.get_origin(annotation) is typing.Annotated:
        annotation, *more = typing.get_args(annotation)
        for m in more:
            found += [m, *getattr(m, "metadata", [])]
    limits = [getattr(m, "lt", None) or getattr(m, "le", None) for m in found]
    return max((x for x in limits if x is not None), default=None)


def kind(entry: Stored) -> Kind:
    info = entry.model.model_fields[entry.field]
    members, nullable = _parts(info.annotation)
    (annotation,) = members  # one type per stored field: a union of several would need a column for each
    base = annotation
    while typing.get_origin(base) is typing.Annotated:
        base = typing.get_args(base)[0]
    if typing.get_origin(base) is dict:
        return Kind(str, False, json=True)
    if isinstance(base, type) and issubclass(base, Enum):
        return Kind(str, nullable)
    if base is int:
        return Kind(int, nullable, _int_limit(annotation, info.metadata))
    if base in (str, bool):
        return Kind(base, nullable)
    raise TypeError(f"{entry.model.__name__}.{entry.field}: no stored form for {annotation!r}")


def stored_value(entry: Stored, bundle: Bundle) -> Any:
    """The value of `entry` in `bundle`, as its column keeps it."""
    value = getattr(getattr(bundle, entry.part), entry.field)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return value


def bundle_value(entry: Stored, stored: Any) -> Any:
    """A stored value back in the bundle's shape (the export): JSON text decoded; None stays None."""
    return json.loads(stored) if kind(entry).json and stored is not None else stored
