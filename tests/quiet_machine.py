"""A machine that reads as idle to the collector, for tests that need real collections to reach a decided answer
on a loaded box (`mpsbench confirm`, `mpsbench bisect`): a `sitecustomize` line makes every process of a build's
wrapper measure other processes' share of the cores as 0, as a fake clock would, so no worker process is left out
of the review as contended. What the collector and the review do with contention is tested on its own
(tests/test_collector_contention.py, tests/test_contended_review.py); the planted effects are large enough that
the load's noise does not hide them."""

from __future__ import annotations

from pathlib import Path

QUIET = """
# tests/quiet_machine.py: other processes' share of the cores reads as 0 (a loaded test box counts as idle)
import collector.timing.contention as _contention

_contention.other_share = lambda before, after, cores: 0.0
"""


def quiet_site(site: Path) -> Path:
    """QUIET appended to `site`/sitecustomize.py (made if absent); the folder, to go first on PYTHONPATH."""
    site.mkdir(parents=True, exist_ok=True)
    path = site / "sitecustomize.py"
    path.write_text((path.read_text() if path.exists() else "") + QUIET)
    return site
