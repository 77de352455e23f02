"""The parameters of each GET route of /api/v1, as the OpenAPI document lists them (api/openapi.py): every name
from its view's own parameter tuple, every form rule (enums, patterns, ranges) from the checking code's constants,
so the document and the checks cannot drift."""

from __future__ import annotations

from typing import Any

from bundle.metrics import METRICS, RATIO_METRICS, RULE_LIMITS, RULES
from db.views.browse import correctness, matrix, memory, noise, trends
from db.views.browse.sweeps import SWEEP_ID_PATTERN
from db.views.inputs import (
    COMPARE_FILTERS,
    CORRECTNESS_METRICS,
    RUN_FILTERS,
    SCOPES,
    SELECTOR_PATTERN,
    SELECTOR_SYNTAX,
    THRESHOLD_PERCENT,
)


def param(
    name: str,
    description: str,
    schema: dict | None = None,
    required: bool = False,
    where: str = "query",
    example: Any = None,
) -> dict:
    out = {
        "name": name,
        "in": where,
        "required": required or where == "path",
        "description": description,
        "schema": schema or {"type": "string"},
    }
    if example is not None:
        out["example"] = example
    return out


def _side(name: str, required: bool = True) -> dict:
    return param(
        name,
        f"selector: {SELECTOR_SYNTAX}",
        {"type": "string", "pattern": SELECTOR_PATTERN},
        required=required,
        example="torch=2.14.1" if name == "baseline" else "torch=2.15.0rc1",
    )


def _enum(values) -> dict:
    return {"type": "string", "enum": list(values)}


def _comma_list(values) -> dict:
    """One or more of `values`, comma-separated (the server splits on commas, strips each and drops empties)."""
    one = "|".join(values)
    return {"type": "string", "pattern": f"^(?:{one})(?:,(?:{one}))*$"}


def _compare() -> list[dict]:
    return [
        _side("baseline"),
        _side("candidate"),
        param("scope", "pair results on the same machine or the same chip", _enum(SCOPES)),
        param("pool", "1: pool the builds a side spans, on purpose", _enum(["0", "1"])),
        *(
            param(f, f"comma-separated metrics ({', '.join(METRICS)})", _comma_list(METRICS))
            if f == "metric"
            else param(f, "comma-separated values")
            for f in COMPARE_FILTERS
        ),
    ]


def _names(names, schemas: dict | None = None, description: str = "exact value; empty or absent: any") -> list[dict]:
    """A query parameter per name: its schema from `schemas` where the view checks its form, else any string."""
    return [param(n, description, (schemas or {}).get(n)) for n in names]


def _range(low: float, high: float) -> dict:
    return {"type": "number", "minimum": low, "maximum": high}


def _threshold() -> dict:
    low, high = THRESHOLD_PERCENT
    return param("threshold", f"percent worse, {low:g}..{high:g} (5 = 5 %)", _range(low, high))


def _rule_number(low: float, high: float) -> str:
    """A decimal from low to high as a pattern (the rules' limits: db.review.review.check_rules)."""
    if low == 0:  # e.g. 0..1000: up to 999.x; no limit: up to 15 digits
        digits = 15 if high == float("inf") else len(str(int(high))) - 1
        return f"[0-9]{{1,{digits}}}(?:[.][0-9]{{1,6}})?"
    if low != 1 or high == float("inf"):
        raise ValueError(f"no pattern for a rule limit {low:g}..{high:g}: write one here")
    return f"[1-9][0-9]{{0,{len(str(int(high))) - 2}}}(?:[.][0-9]{{1,6}})?"


def _rules() -> dict:
    """rules=metric.field=value,… : each metric's own fields, each field's number in its limits."""
    items = [
        f"{name}[.]{field}={_rule_number(*RULE_LIMITS[field])}" for name, rule in RULES.items() for field in rule.fields
    ]
    one = "|".join(items)
    return param(
        "rules",
        "per-metric rules: metric.field=value,… (e.g. memory_driver_peak.percent=10)",
        {"type": "string", "pattern": f"^(?:{one})(?:,(?:{one}))*$"},
    )


_NOISE_FILTER = {"type": "string", "maxLength": 200}


# path → (summary, query/path parameters); a mounted route missing here is listed with no parameters
GETS: dict[str, tuple[str, list[dict]]] = {
    "/api/v1/health": ("the store's state, versions and run count; 503 when the store cannot be read", []),
    "/api/v1/openapi.json": ("this document", []),
    "/api/v1/overview": ("the Overview page: machines x builds, results per status, open warnings", []),
    "/api/v1/runs": (
        "the Runs page's list",
        [
            *_names(RUN_FILTERS, {"tag": {"type": "string", "pattern": "^[^=]+="}}, "exact value (tag: key=value)"),
            param("limit", "at most this many runs", {"type": "integer", "minimum": 1, "maximum": 10000}),
        ],
    ),
    "/api/v1/compare": ("per-case figures, significance and geomeans of candidate against baseline", _compare()),
    "/api/v1/regressions": (
        "the Regressions page's rows",
        [*_compare(), _threshold(), _rules()],
    ),
    "/api/v1/claims": (
        "published MPS claims beside what was measured: a row per matching case, with its figure's verdict",
        [_side("baseline", False), _side("candidate", False)],
    ),
    "/api/v1/trends": (
        "one case's points over builds, its change points and build annotations",
        _names(trends.FIELDS, {"metric": _enum(METRICS)}),
    ),
    "/api/v1/matrix": (
        "geomean cells of builds against a baseline",
        _names(matrix.PARAMS, {"metric": _enum(METRICS), "rows": _enum(matrix.ROWS)}),
    ),
    "/api/v1/memory": ("the three memory peaks per case and build", _names(memory.PARAMS)),
    "/api/v1/correctness": (
        "PSNR and max-error records against the CPU reference",
        _names(correctness.PARAMS, {"metric": _enum(CORRECTNESS_METRICS)}),
    ),
    "/api/v1/noise": (
        "A/A noise per group and the repeats a difference needs",
        _names(
            noise.PARAMS,
            {
                **{name: _NOISE_FILTER for name in noise.FILTERS},
                "metric": _enum(RATIO_METRICS),
                "precision": _range(*noise.PRECISION),
                "threshold": _range(*THRESHOLD_PERCENT),
            },
        ),
    ),
    "/api/v1/sweeps": ("sweeps", []),
    "/api/v1/sweeps/{sweep}": (
        "one sweep's builds, runs, A/A pairs and comparisons",
        [
            param(
                "sweep",
                "the sweep's id (its bundles' `sweep` tag): 6-32 hex digits",
                {"type": "string", "pattern": SWEEP_ID_PATTERN},
                where="path",
            )
        ],
    ),
}
