"""Selectors: what one side of a comparison is. A build (`torch=2.15.0rc1`), a tag value (`tag:role=candidate`)
or an explicit set of runs (`runs:<id>,<id>`). Parsed from text (a query parameter), so a link reproduces a view."""
from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd
from sqlalchemy import Engine

from db.errors import Problem, StoreError
from db.store.read import read_frame
from bundle.builds import build_sort_key

SYNTAX = "torch=<version>, tag:<key>=<value> or runs:<run_id>,<run_id>"
_VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+_-]{0,99}$")
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class Selector:
    kind: str  # "build" | "tag" | "runs"
    key: str  # torch version, tag key, or "" for runs
    value: str  # "" for builds, the tag value, or the comma-joined run ids
    text: str  # canonical text: what a link carries and a ratio names as its baseline

    def run_ids_sql(self) -> tuple[str, list[str]]:
        """SQL selecting the run_ids this selector means, with its parameters."""
        if self.kind == "build":
            return "SELECT run_id FROM runs WHERE torch_version = ?", [self.key]
        if self.kind == "tag":
            return "SELECT run_id FROM run_tags WHERE key = ? AND value = ?", [self.key, self.value]
        ids = self.value.split(",")
        return f"SELECT run_id FROM runs WHERE run_id IN ({', '.join('?' * len(ids))})", ids


def _bad(field: str, rule: str, got: str) -> StoreError:
    return StoreError(400, f"{field}: {rule} (got {got[:80]!r})", [Problem(field, rule)])


def parse_selector(text: str | None, field: str) -> Selector:
    """Parse a selector; bad input is a 400 naming the query parameter `field` and the rule broken."""
    raw = (text or "").strip()
    if not raw:
        raise _bad(field, f"a selector is required: {SYNTAX}", raw)
    if raw.startswith("torch="):
        return _build(raw[len("torch="):].strip(), field)
    if raw.startswith("tag:"):
        return _tag(raw[len("tag:"):], field)
    if raw.startswith("runs:"):
        return _runs(raw[len("runs:"):], field)
    raise _bad(field, f"must be one of {SYNTAX}", raw)


def _build(version: str, field: str) -> Selector:
    if not _VERSION.match(version):
        raise _bad(field, "torch=<version> needs a version like 2.15.0rc1 (letters, digits, . + _ -)", version)
    return Selector("build", version, "", f"torch={version}")


def _tag(body: str, field: str) -> Selector:
    key, sep, value = body.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key or not value or len(key) > 200 or len(value) > 2000:
        raise _bad(field, "tag:<key>=<value> needs a non-empty key and value", body)
    return Selector("tag", key, value, f"tag:{key}={value}")


def _runs(body: str, field: str) -> Selector:
    ids = [part.strip().lower() for part in body.split(",") if part.strip()]
    bad = [i for i in ids if not _RUN_ID.match(i)]
    if not ids or bad:
        raise _bad(field, "runs:<id>,<id> needs one or more 32-hex-digit run ids", ",".join(bad) or body)
    unique = sorted(set(ids))
    return Selector("runs", "", ",".join(unique), "runs:" + ",".join(unique))


def require_runs(engine: Engine, selector: Selector, field: str) -> int:
    """How many stored runs the selector means; none is a 404 naming the parameter."""
    sql, params = selector.run_ids_sql()
    count = int(read_frame(engine, f"SELECT count(DISTINCT run_id) AS n FROM ({sql})", params)["n"].iloc[0])
    if count == 0:
        raise StoreError(404, f"{field}: no stored run matches {selector.text}",
                         [Problem(field, "must select at least one stored run")])
    return count


def available_selectors(engine: Engine) -> pd.DataFrame:
    """Selectors for the pickers: builds (version order) then tag values, with how many runs each selects."""
    builds = read_frame(engine, "SELECT torch_version, any_value(channel) AS channel, min(nightly_date) AS nightly_date,"
                                " count(*) AS n_runs FROM runs GROUP BY torch_version")
    tags = read_frame(engine, "SELECT key, value, count(DISTINCT run_id) AS n_runs FROM run_tags GROUP BY key, value"
                              " ORDER BY key, value")
    builds = builds.assign(order=[build_sort_key(v, d) for v, d in zip(builds.torch_version, builds.nightly_date)])
    rows = [{"selector": f"torch={r.torch_version}", "kind": "build", "label": f"torch {r.torch_version} ({r.channel})",
             "n_runs": int(r.n_runs)} for r in builds.sort_values("order").itertuples()]
    rows += [{"selector": f"tag:{r.key}={r.value}", "kind": "tag", "label": f"tag {r.key} = {r.value}",
              "n_runs": int(r.n_runs)} for r in tags.itertuples()]
    return pd.DataFrame(rows, columns=["selector", "kind", "label", "n_runs"])


def recent_runs(engine: Engine, limit: int = 500) -> pd.DataFrame:
    """Runs for a run-set picker, newest first."""
    return read_frame(engine, "SELECT run_id, machine_name, chip, device_type, torch_version, started_at FROM runs"
                              " ORDER BY started_at DESC LIMIT ?", [limit])
