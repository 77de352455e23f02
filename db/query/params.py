"""A view's query parameters, read the same way for a page (its widgets' values) and its JSON twin (the URL):
unknown names and values outside a fixed set are a 400 naming the parameter and the rule."""

from __future__ import annotations

import math
import re
from typing import Iterable, Mapping

from db.errors import Problem, StoreError

Params = Mapping[str, str | None]


def only(params: Params, allowed: Iterable[str]) -> dict[str, str]:
    """The parameters as plain strings (missing and None as ""), refusing a name the view does not take."""
    allowed = tuple(allowed)
    unknown = [k for k in params if k not in allowed]
    if unknown:
        raise StoreError(
            400, f"{unknown[0][:60]}: unknown parameter", [Problem(unknown[0][:60], f"allowed: {', '.join(allowed)}")]
        )
    return {name: (params.get(name) or "").strip() for name in allowed}


def one_of(name: str, value: str, allowed: Iterable[str]) -> str:
    allowed = tuple(allowed)
    if value not in allowed:
        raise StoreError(
            400,
            f"{name}: must be one of {', '.join(allowed)} (got {value[:40]!r})",
            [Problem(name, f"must be one of {', '.join(allowed)}")],
        )
    return value


THRESHOLD_PERCENT = (1.0, 100.0)  # a regression threshold, in percent worse


def bad(name: str, rule: str, got: str | None) -> StoreError:
    return StoreError(400, f"{name}: {rule} (got {str(got)[:60]!r})", [Problem(name, rule)])


def threshold_percent(text: str | None, default: float = 5.0) -> float:
    """`threshold` in percent worse, the same on the Regressions page and in its API: 5 means 5 %. A value
    below 1 is refused rather than guessed (0.05 could be a fraction meant as 5 %: read as 0.05 % it would flag
    noise, read as 5 % it would change a script's meaning without a word)."""
    low, high = THRESHOLD_PERCENT
    rule = f"a percentage from {low:g} to {high:g} (5 = 5 % worse; fractions such as 0.05 are not accepted)"
    if text is None or str(text).strip() == "":
        return default
    return decimal("threshold", text, rule, low, high)


# ASCII digits only: Python's int()/float() also take other scripts' digits, "1_0", "nan" and "infinity"
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_WHOLE = re.compile(r"[+-]?[0-9]+", re.ASCII)


def decimal(name: str, text: str, rule: str, low: float, high: float) -> float:
    """A finite decimal number (ASCII, as written in a URL) from `low` to `high`, else a 400 naming `name`."""
    text = str(text).strip()
    value = float(text) if _DECIMAL.fullmatch(text) else math.nan
    if not math.isfinite(value) or not low <= value <= high:
        raise bad(name, rule, text)
    return value


def int_param(name: str, text: str | None, default: int, low: int, high: int) -> int:
    """A whole number from `low` to `high`; absent or empty gives `default`."""
    if text is None or str(text).strip() == "":
        return default
    text = str(text).strip()
    value = int(text) if _WHOLE.fullmatch(text) and len(text) < 20 else None
    if value is None or not low <= value <= high:
        raise bad(name, f"a whole number from {low} to {high}", text)
    return value


def as_build(builds: list[str], value: str) -> str:
    """A build as Compare and Overview write it ("torch=2.15.0rc1") as Memory and Correctness name it ("2.15.0rc1
    (rc)"), so one URL's baseline and candidate mean the same builds on every page; any other value as it is."""
    version = value.removeprefix("torch=")
    same = [b for b in builds if b.split(" ")[0] == version] if version != value else []
    return same[0] if len(same) == 1 else value


def stored_choice(name: str, value: str, stored: Iterable[str], what: str = "build") -> str:
    """`value` when the store holds it, else a 404 naming `name`: a well-formed value that names nothing stored
    (a link made on another store) is "nothing stored matches", not a malformed request."""
    stored = tuple(stored)
    if value not in stored:
        listed = ", ".join(stored[:20]) + (f" … ({len(stored)} in all)" if len(stored) > 20 else "")
        raise StoreError(
            404,
            f"{name}: no stored {what} {value[:60]!r}; stored: {listed or 'none'}",
            [Problem(name, f"must be a stored {what}: {listed or 'none yet'}")],
        )
    return value


def build_choice(name: str, value: str, builds: list[str]) -> str:
    """One of `builds` (as_build applied), else a 404 naming `name`."""
    return stored_choice(name, as_build(builds, value), builds)
