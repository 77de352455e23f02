"""Selectors: what one side of a comparison is. A torch version (`torch=2.15.0rc1`), an exact build
(`build=2.15.0@1a2b3c4`: version + git hash prefix), a tag value (`tag:role=candidate`) or an explicit set of runs
(`runs:<id>,<id>`). Parsed from text (a query parameter), so a link reproduces a view.

Every selector resolves to builds (version + git hash, bundle.builds): a side spanning several builds (an RC and
the final share a version string) is refused unless the user asks to pool them."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd
from sqlalchemy import Engine

from bundle.builds import build_label, build_selector, build_sort_key
from db.errors import Problem, StoreError
from db.query.read import read_frame, reader

SYNTAX = "torch=<version>, build=<version>@<git hash>, tag:<key>=<value> or runs:<run_id>,<run_id>"
_VERSION_TEXT, _RUN_ID_TEXT, _HASH_TEXT = r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,99}", "[0-9a-f]{32}", "[0-9a-f]{7,40}"
_VERSION = re.compile(f"^{_VERSION_TEXT}$")
_RUN_ID = re.compile(f"^{_RUN_ID_TEXT}$")
_HASH = re.compile(f"^{_HASH_TEXT}$")
# a tag key's or value's character: neither JSON Schema's \s nor one Python's strip() takes (which would leave it empty)
_TAG_CHAR = r"[^=\s\u001c-\u001f\u0085]"
# every selector parse_selector takes, written for the OpenAPI document (ECMA-262 and Python read it alike); the
# parser also takes what this leaves out (white space around parts, upper-case hex digits)
SELECTOR_PATTERN = (
    f"^(?:torch={_VERSION_TEXT}|build={_VERSION_TEXT}(?:@{_HASH_TEXT})?|tag:{_TAG_CHAR}{{1,200}}={_TAG_CHAR}{{1,2000}}"
    f"|runs:{_RUN_ID_TEXT}(?:,{_RUN_ID_TEXT})*)$"
)


@dataclass(frozen=True)
class Selector:
    kind: str  # "build" | "tag" | "runs"
    key: str  # torch version, tag key, or "" for runs
    value: str  # a build's git hash prefix ("" for any), the tag value, or the comma-joined run ids
    text: str  # canonical text: what a link carries and a ratio names as its baseline

    def run_ids_sql(self) -> tuple[str, list[str]]:
        """SQL selecting the run_ids this selector means, with its parameters; never a retracted run."""
        where, params = self.runs_where()
        return f"SELECT run_id FROM runs WHERE {where}", params

    def runs_where(self) -> tuple[str, list[str]]:
        """The condition on `runs` (its own column names) picking this selector's runs; never a retracted run. A
        direct condition, not `run_id IN (…)`: each review reads a side's builds and libraries with it."""
        if self.kind == "build":
            where, params = self.build_where()
        elif self.kind == "tag":
            where = "run_id IN (SELECT run_id FROM run_tags WHERE key = ? AND value = ?)"
            params = [self.key, self.value]
        elif self.kind == "runs-all":  # every stored run (the pickers' build list)
            where, params = "true", []
        else:
            ids = self.value.split(",")
            where, params = f"run_id IN ({', '.join('?' * len(ids))})", ids
        return f"retracted_at IS NULL AND {where}", params

    def build_where(self) -> tuple[str, list[str]]:
        """A build selector's condition on any table with torch_version and git_hash (runs, side_cases)."""
        if self.value:
            return "torch_version = ? AND starts_with(git_hash, ?)", [self.key, self.value]
        return "torch_version = ?", [self.key]


def _bad(field: str, rule: str, got: str) -> StoreError:
    return StoreError(400, f"{field}: {rule} (got {got[:80]!r})", [Problem(field, rule)])


def parse_selector(text: str | None, field: str) -> Selector:
    """Parse a selector; bad input is a 400 naming the query parameter `field` and the rule broken."""
    raw = (text or "").strip()
    if not raw:
        raise _bad(field, f"a selector is required: {SYNTAX}", raw)
    if raw.startswith("torch="):
        return _build(raw[len("torch=") :].strip(), field)
    if raw.startswith("build="):
        return _exact_build(raw[len("build=") :].strip(), field)
    if raw.startswith("tag:"):
        return _tag(raw[len("tag:") :], field)
    if raw.startswith("runs:"):
        return _runs(raw[len("runs:") :], field)
    raise _bad(field, f"must be one of {SYNTAX}", raw)


def _build(version: str, field: str) -> Selector:
    if not _VERSION.match(version):
        raise _bad(field, "torch=<version> needs a version like 2.15.0rc1 (letters, digits, . + _ -)", version)
    return Selector("build", version, "", f"torch={version}")


def parse_pool(text: str | None) -> bool:
    """The `pool` parameter: 1/true/yes pools a side's builds on purpose; absent/0/false does not."""
    raw = (text or "").strip().lower()
    if raw in ("", "0", "false", "no"):
        return False
    if raw in ("1", "true", "yes"):
        return True
    raise _bad("pool", "must be 1 (pool the builds a side spans) or 0", raw)


def _exact_build(body: str, field: str) -> Selector:
    version, sep, git_hash = body.partition("@")
    version, git_hash = version.strip(), git_hash.strip().lower()
    if not _VERSION.match(version) or (sep and not _HASH.match(git_hash)):
        raise _bad(
            field,
            "build=<version>@<git hash> needs a version like 2.15.0 and 7-40 hex digits of the "
            "git hash (torch.version.git_version), e.g. build=2.15.0@1a2b3c4",
            body,
        )
    return Selector("build", version, git_hash, f"build={version}@{git_hash}" if git_hash else f"build={version}")


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


_BUILDS = (
    "SELECT {side} AS side, torch_version, git_hash, coalesce(debug, false) AS debug, any_value(channel) AS"
    " channel, min(nightly_date) AS nightly_date, count(*) AS n_runs, list(DISTINCT libraries_json) AS libraries,"
    " bit_xor(hash(run_id)) AS runs_hash FROM runs WHERE {where} GROUP BY torch_version, git_hash,"
    " coalesce(debug, false)"
)
BUILD_COLUMNS = ["torch_version", "git_hash", "debug", "channel", "label", "selector", "n_runs"]


@dataclass(frozen=True)
class SideRuns:
    """What a side's runs are: its builds (side_builds' frame) and the library versions they recorded (the
    distinct build.libraries JSON texts, None for a run that recorded none: db.query.libraries)."""

    builds: pd.DataFrame
    libraries: frozenset[str | None]
    runs_hash: int = 0  # the runs' ids hashed together (XOR: order-free), to tell two selectors of one run set

    def same_runs(self, other: "SideRuns") -> bool:
        """Both select exactly the same runs (n and hash equal)."""
        return (
            int(self.builds.n_runs.sum()) == int(other.builds.n_runs.sum())
            and self.runs_hash == other.runs_hash
            and len(self.builds) > 0
        )

    def same_build(self, other: "SideRuns") -> bool:
        """Both sides are runs of one and the same build (version, git hash, debug)."""
        key = ["torch_version", "git_hash", "debug"]
        return len(self.builds) == 1 and self.builds[key].equals(other.builds[key])


def side_runs(engine: Engine, selectors: list[Selector]) -> list[SideRuns]:
    """Each selector's SideRuns, all read in one query (a review reads both sides' at once)."""
    parts, params = [], []
    for side, selector in enumerate(selectors):
        where, found = selector.runs_where()
        parts.append(_BUILDS.format(side=side, where=where))
        params += found
    with reader(engine) as duck:  # rows, not a frame: a few rows
        rows = duck.sql(" UNION ALL ".join(parts), params=params).fetchall()
    out = []
    for side in range(len(selectors)):
        mine = sorted(
            (r for r in rows if r[0] == side),  # version, nightly date, channel, hash
            key=lambda r: build_sort_key(r[1], r[5], r[4], r[2]),
        )
        builds = pd.DataFrame(
            [(v, h, d, c, build_label(v, c, h, d), build_selector(v, h), n) for _, v, h, d, c, _, n, _, _ in mine],
            columns=BUILD_COLUMNS,
        )
        runs_hash = 0
        for r in mine:
            runs_hash ^= int(r[8])
        out.append(SideRuns(builds, frozenset(text for r in mine for text in r[7]), runs_hash))
    return out


def side_builds(engine: Engine, selector: Selector) -> pd.DataFrame:
    """The builds the selector's runs come from, in build order: torch_version, git_hash, debug, channel, label,
    selector (the text picking that build alone), n_runs."""
    return side_runs(engine, [selector])[0].builds


def builds_text(builds: pd.DataFrame) -> str:
    """`2.14.0 (release, 1a2b3c4): 3 runs; 2.14.1 (release, 9f8e7d6): 2 runs`."""
    return "; ".join(f"{r.label}: {int(r.n_runs)} run{'s' if r.n_runs != 1 else ''}" for r in builds.itertuples())


def check_builds(builds: pd.DataFrame, selector: Selector, field: str, pool: bool = False) -> pd.DataFrame:
    """A side's builds (side_runs), checked: no stored run is a 404 naming the parameter; runs of more than one
    build are a 400 naming the builds and how to pick one, unless `pool` (the caller then says what was pooled)."""
    if builds.empty:
        raise StoreError(
            404,
            f"{field}: no stored run matches {selector.text}",
            [Problem(field, "must select at least one stored run")],
        )
    if len(builds) > 1 and not pool:
        rule = "must select runs of one build (torch version + git hash), or pool=1 to pool builds"
        raise StoreError(
            400,
            f"{field}: {selector.text} matches {len(builds)} builds: {builds_text(builds)}. Pick "
            f"one ({field}={builds.selector.iloc[0]}) or pool them on purpose with pool=1",
            [Problem(field, rule)],
        )
    return builds


def pooled_note(field: str, selector: Selector, builds: pd.DataFrame) -> str | None:
    """The note a pooled side carries: which builds, with run counts (None when the side is one build)."""
    if len(builds) < 2:
        return None
    return f"The {field} ({selector.text}) pools {len(builds)} builds, as asked (pool=1): {builds_text(builds)}."


def available_selectors(engine: Engine) -> pd.DataFrame:
    """Selectors for the pickers: builds (build order) then tag values, with how many runs each selects. A
    version with one build is picked by `torch=<version>`; one with several (an RC and the final) by each build."""
    builds = side_builds(engine, Selector("runs-all", "", "", ""))
    per_version = builds.groupby("torch_version").torch_version.transform("size") if len(builds) else []
    rows = [
        {
            "selector": f"torch={r.torch_version}" if n == 1 else r.selector,
            "kind": "build",
            "label": f"torch {r.label}",
            "n_runs": int(r.n_runs),
            "channel": r.channel,
        }
        for r, n in zip(builds.itertuples(), per_version)
    ]
    tags = read_frame(
        engine,
        "SELECT key, value, count(DISTINCT run_id) AS n_runs FROM run_tags GROUP BY key, value ORDER BY key, value",
    )
    rows += [
        {
            "selector": f"tag:{r.key}={r.value}",
            "kind": "tag",
            "label": f"tag {r.key} = {r.value}",
            "n_runs": int(r.n_runs),
            "channel": "",
        }
        for r in tags.itertuples()
    ]
    return pd.DataFrame(rows, columns=["selector", "kind", "label", "n_runs", "channel"])
