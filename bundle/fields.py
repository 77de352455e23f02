"""The bundle's shared field types and the refusal that names a field: what bundle.schema (a run and its results)
and bundle.kernels (a case's kernels breakdown) both build on, so each rule is still stated once."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic_core import PydanticCustomError

from bundle.stats import FiniteFloat

Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Text = Annotated[str, StringConstraints(max_length=20_000)]
# params are stored as JSON text and compared as case keys: an integer outside int64 would change on the way
ParamValue = str | Annotated[int, Field(ge=-(2**63), lt=2**63)] | FiniteFloat | bool | None


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Status(str, Enum):
    ok = "ok"
    fallback = "fallback"  # ran, but some op fell back to the CPU: the figure is not the device's alone
    unsupported = "unsupported"  # the device/build/dtype cannot run this case
    unavailable = "unavailable"  # the device/build cannot give this figure (e.g. no peak-memory API)
    error = "error"


def case_key(params: dict[str, Any]) -> str:
    """Canonical, order-independent identity of a case's parameters."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def field_error(field: str, rule: str) -> PydanticCustomError:
    """A model-level check that belongs to one field: ctx.field lets the ingest report `results[i].<field>`."""
    return PydanticCustomError("field_rule", "{rule}", {"field": field, "rule": rule})


def case_key_rule(params: dict[str, Any], stated: str) -> str:
    key = case_key(params)
    if stated and stated != key:
        raise field_error("case_key", f"case_key {stated!r} does not match params (expected {key!r})")
    return key
