"""Build ordering by version, not by string: 2.9 < 2.10, 2.15.0rc1 < 2.15.0, nightlies of one version by date."""
from __future__ import annotations

from packaging.version import InvalidVersion, Version


def build_sort_key(torch_version: str, nightly_date: str | None = None) -> tuple:
    """Sort key of a torch build. An unparsable version sorts after all parsable ones, by its text."""
    base = torch_version.split("+", 1)[0]  # "+cpu" / "+cu128" is a variant, not an order
    try:
        version: Version | None = Version(base)
    except InvalidVersion:
        version = None
    date = nightly_date or ""
    return (0, version, date, torch_version) if version is not None else (1, Version("0"), date, torch_version)
