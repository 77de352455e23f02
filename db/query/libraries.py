"""The library versions (build.libraries: transformers, diffusers, triton, …) each side of a comparison ran with,
and the note a comparison carries when they differ: a model workload's change may then come from the library,
not from torch."""

from __future__ import annotations

import json

NOT_RECORDED = "not recorded"


def recorded_libraries(texts: frozenset[str | None]) -> dict[str, frozenset[str]]:
    """Every version of each library across a side's runs, from their distinct build.libraries JSON texts
    (db.query.selectors.side_runs); a run that did not record one (a bundle from before build.libraries, or the
    package not installed: None) counts as NOT_RECORDED for it."""
    recorded = [json.loads(t or "{}") for t in texts]
    names = {name for libraries in recorded for name in libraries}
    return {name: frozenset(libraries.get(name, NOT_RECORDED) for libraries in recorded) for name in sorted(names)}


def _versions(found: frozenset[str] | None) -> str:
    return " / ".join(sorted(found)) if found else NOT_RECORDED


def differing_note(baseline: dict[str, frozenset[str]], candidate: dict[str, frozenset[str]]) -> str | None:
    """'Library versions differ …' naming each library whose versions are not the same on both sides."""
    changes = [
        f"{name} {_versions(baseline.get(name))} → {_versions(candidate.get(name))}"
        for name in sorted(set(baseline) | set(candidate))
        if baseline.get(name) != candidate.get(name)
    ]
    if not changes:
        return None
    return (
        "Library versions differ between the sides (baseline → candidate: " + "; ".join(changes) + "): a change "
        "in a workload that runs through them may come from the library, not from torch."
    )
