"""The default comparison a page opens with: the release question — the latest stable build against the newest
release candidate after it. A nightly is never silently the default where an rc exists: it is the second,
labelled comparison (`preview_pair`), and the default only when no rc is newer than the stable build. A default
always reads older → newer: with nothing after the latest stable build, it is the candidate and the build before
it (the stable one before it, where there is one) the baseline. Pure: takes builds already in version order."""

from __future__ import annotations

from typing import Callable, Sequence

STABLE = ("stable", "release")  # "release": what bundle.builds infers for a plain version; "stable": older bundles
PREVIEW = ("rc", "nightly")


def default_pair(builds: Sequence[str], channels: Sequence[str]) -> tuple[str, str]:
    """(baseline, candidate) among `builds` (oldest version first, each with its channel).

    Baseline: the newest stable build (else the oldest build). Candidate: the newest rc after the baseline, else
    the newest nightly after it, else the newest build after it. With no build after the newest stable one, that
    one is the candidate and the baseline the newest stable build before it, else the newest build before it:
    never a newer release against an older one. One build gives (it, it): the page then says there is nothing to
    compare it with. No builds: ("", "")."""
    if not builds:
        return "", ""
    base = _baseline(channels)
    later = list(range(base + 1, len(builds)))
    rc = [i for i in later if channels[i] == "rc"]
    nightly = [i for i in later if channels[i] == "nightly"]
    if rc or nightly or later:
        return builds[base], builds[(rc or nightly or later)[-1]]
    before = list(range(base))
    stable = [i for i in before if channels[i] in STABLE]
    return builds[(stable or before or [base])[-1]], builds[base]


def preview_pair(builds: Sequence[str], channels: Sequence[str]) -> tuple[str, str] | None:
    """The second comparison: the newest nightly after the stable baseline, where the default candidate is an rc
    (the nightly is then shown apart, labelled); None otherwise."""
    if not builds:
        return None
    base = _baseline(channels)
    nightly = [i for i in range(base + 1, len(builds)) if channels[i] == "nightly"]
    _, cand = default_pair(builds, channels)
    if not nightly or builds[nightly[-1]] == cand:
        return None
    return builds[base], builds[nightly[-1]]


def _baseline(channels: Sequence[str]) -> int:
    stable = [i for i, c in enumerate(channels) if c in STABLE]
    return stable[-1] if stable else 0


def default_sides(selectors) -> tuple[str, str]:
    """(baseline, candidate) selector texts for every page with a comparison, from
    db.query.selectors.available_selectors (builds in build order, then tags): default_pair over the builds."""
    builds = selectors[selectors.kind == "build"]
    return default_pair(builds.selector.tolist(), builds.channel.tolist())


def preview_sides(selectors) -> tuple[str, str] | None:
    """The labelled second comparison (stable against the newest nightly) beside an rc default, or None."""
    builds = selectors[selectors.kind == "build"]
    return preview_pair(builds.selector.tolist(), builds.channel.tolist())


def side_labels(selectors) -> Callable[[str], str]:
    """A picker's labels for the selectors: "torch 2.15.0rc1 (rc, 1a2b3c4) · 6 runs"; the text itself when unknown.
    Worded once per render, looked up per option (a picker formats every option)."""
    n_runs = selectors.n_runs.astype(int).tolist()
    words = {
        text: f"{label} · {n} run{'s' if n != 1 else ''}"
        for text, label, n in zip(selectors.selector.tolist(), selectors.label.tolist(), n_runs)
    }
    return lambda text: words.get(text, text)
