"""The bundle's rules that bundle.schema checks in code (its validators), stated in its JSON Schema as well, so a
document the schema allows is one the ingest takes (docs/bundle.schema.json, and the upload's body in GET
/api/v1/openapi.json, which schemathesis fuzzes: tests/test_api_fuzz.py).

Stated here: the versions read, timestamps the ingest takes, each metric's name and units, the samples a metric
allows, and which statuses carry samples or a message. A few rules relate values JSON Schema cannot compare and
stay the ingest's 422 alone (RELATIONAL). A stated rule may be narrower than the check where the exact one has no
JSON Schema form (a timestamp's years, a sample's size); it never allows what the check refuses.
"""

from __future__ import annotations

import sys
from typing import Any

from bundle.fields import Status
from bundle.metrics import LATENCIES, METRICS, Sign
from bundle.units import ALIASES, UNITS

# local date 2001-01-01..2099-12-31 (with any offset its UTC year stays within bundle.schema.YEARS), a real day
# of its month, a time, an optional fraction (microseconds) and a UTC offset (Z or ±hh:mm)
_YEAR = "20(?:0[1-9]|[1-9][0-9])"
_LEAP = "20(?:0[48]|[2468][048]|[13579][26])"
_DATE = (
    f"(?:{_YEAR}-(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|{_YEAR}-(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    f"|{_YEAR}-02-(?:0[1-9]|1[0-9]|2[0-8])|{_LEAP}-02-29)"
)
TIMESTAMP_PATTERN = (
    f"^{_DATE}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:[.][0-9]{{1,6}})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$"
)
# a sample's size: its run's mean and spread stay finite doubles (bundle.stats.summarize) however many there are
SAMPLE_MAX = 1e150
_NORMAL = sys.float_info.min  # the smallest normal double: a subnormal sample breaks every ratio (bundle.metrics.Sign)
_SAMPLE = {
    Sign.positive: {"minimum": _NORMAL, "maximum": SAMPLE_MAX},
    Sign.nonnegative: {"anyOf": [{"const": 0}, {"minimum": _NORMAL, "maximum": SAMPLE_MAX}]},
    Sign.any: {"minimum": -SAMPLE_MAX, "maximum": SAMPLE_MAX},
}
WITH_VALUE = ("ok", "fallback")  # bundle.schema.status_rule: these carry samples; the others a message and none

# rules between values, checked by the ingest alone (a 422 naming the field)
RELATIONAL = (
    "ended_at must not be before started_at",
    "a bundle holds each case once",
    "case_key, when stated, is the params' own key",
    "`processes` splits the samples exactly",
    "`contention` has one share per worker process",
    "a schema 1-3 summary agrees with the samples",
    "a breakdown names each (kind, name) once",
    "a breakdown entry's share is its time over the breakdown's device time",
)


def units_of(metric_name: str) -> list[str]:
    """Every spelling of a unit of the metric's dimension that the ingest takes (bundle.metrics.check_unit)."""
    dimension = METRICS[metric_name].dimension
    symbols = [s for s, u in UNITS.items() if u.dimension == dimension]
    return symbols + [alias for alias, s in ALIASES.items() if s in symbols]


def result_schema(schema: dict[str, Any]) -> None:
    """Result's JSON Schema, completed in place with the rules its model check applies (bundle.schema.Result)."""
    props = schema["properties"]
    props["metric"]["enum"] = list(METRICS)
    props["samples"]["items"] = {"type": "number", "minimum": -SAMPLE_MAX, "maximum": SAMPLE_MAX}
    by_rule: dict[tuple, list[str]] = {}  # metrics with the same units and samples: one if/then each
    for name, m in METRICS.items():
        by_rule.setdefault((tuple(units_of(name)), m.sign), []).append(name)
    rules = [
        {
            "if": {"properties": {"metric": {"enum": names}}, "required": ["metric"]},
            "then": {
                "properties": {"unit": {"enum": list(units)}, "samples": {"items": {"type": "number", **_SAMPLE[sign]}}}
            },
        }
        for (units, sign), names in by_rule.items()
    ]
    rules.append(
        {
            "if": {"properties": {"status": {"enum": list(WITH_VALUE)}}, "required": ["status"]},
            "then": {"properties": {"samples": {"minItems": 1}}, "required": ["samples"]},
            "else": {
                "properties": {"samples": {"maxItems": 0}, "message": {"type": "string", "minLength": 1}},
                "required": ["message"],
            },
        }
    )
    # one process (no `processes`): at most one contention share
    rules.append(
        {"if": {"properties": {"processes": {"maxItems": 0}}}, "then": {"properties": {"contention": {"maxItems": 1}}}}
    )
    schema["allOf"] = rules


def bundle_schema(schema: dict[str, Any]) -> None:
    """Bundle's JSON Schema, completed in place with the timestamps the ingest takes (its versions read are stated
    by its field)."""
    props = schema["properties"]
    for option in [props["started_at"], *props["ended_at"].get("anyOf", [])]:
        if option.get("type") == "string":
            option["pattern"] = TIMESTAMP_PATTERN


def kernels_schema(schema: dict[str, Any]) -> None:
    """A case's breakdown's JSON Schema (bundle.kernels.CaseKernels), completed in place with its model check's
    rules: the metric is a time per call; status ok has entries and op_calls, any other status a message and no
    entries; never fallback (its CPU fallbacks are entries)."""
    props = schema["properties"]
    props["metric"]["enum"] = list(LATENCIES)
    props["status"] = {"enum": [s.value for s in Status if s is not Status.fallback]}
    schema["allOf"] = [
        {
            "if": {"properties": {"status": {"const": "ok"}}, "required": ["status"]},
            "then": {
                "properties": {"entries": {"minItems": 1}, "op_calls": {"type": "integer"}},
                "required": ["entries", "op_calls"],
            },
            "else": {
                "properties": {"entries": {"maxItems": 0}, "message": {"type": "string", "minLength": 1}},
                "required": ["message"],
            },
        }
    ]
