"""The one error type of the collector boundary: raised deep, printed once by the CLI as `ERROR: …` (exit 1)."""

from __future__ import annotations


class CollectorError(Exception):
    """An expected failure the user can act on (bad option, unreadable journal, unknown device…)."""
