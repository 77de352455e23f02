"""The default comparison a page opens with: the latest stable build against the newest release candidate or
nightly after it, the question an upgrade decision asks. Pure: takes builds already in version order."""
from __future__ import annotations

from typing import Sequence

STABLE = ("stable", "release")  # "release": what bundle.builds infers for a plain version; "stable": older bundles
PREVIEW = ("rc", "nightly")


def default_pair(builds: Sequence[str], channels: Sequence[str]) -> tuple[str, str]:
    """(baseline, candidate) among `builds` (oldest version first, each with its channel).

    Baseline: the newest stable build (else the oldest build). Candidate: the newest rc or nightly after the
    baseline, else the newest build after it, else the newest other build. One build gives (it, it): the page
    then says there is nothing to compare it with. No builds: ("", "")."""
    if not builds:
        return "", ""
    stable = [i for i, c in enumerate(channels) if c in STABLE]
    base = stable[-1] if stable else 0
    later = list(range(base + 1, len(builds)))
    preview = [i for i in later if channels[i] in PREVIEW]
    others = [i for i in range(len(builds)) if i != base]
    cand = preview[-1] if preview else later[-1] if later else others[-1] if others else base
    return builds[base], builds[cand]


def default_sides(selectors) -> tuple[str, str]:
    """(baseline, candidate) selector texts for Compare and Regressions from db.query.selectors.available_selectors
    (builds in build order, then tags): default_pair over the builds."""
    builds = selectors[selectors.kind == "build"]
    return default_pair(builds.selector.tolist(), builds.channel.tolist())


def side_label(selectors, text: str) -> str:
    """A picker's label for a selector: "torch 2.15.0rc1 (rc, 1a2b3c4) · 6 runs"; the text itself when unknown."""
    found = selectors[selectors.selector == text]
    if found.empty:
        return text
    row = found.iloc[0]
    return f"{row.label} · {int(row.n_runs)} run{'s' if row.n_runs != 1 else ''}"
