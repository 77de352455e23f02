"""Workload discovery: collector.kernels.WORKLOADS and collector.models.WORKLOADS (lists of Workload instances).

A source that fails to import (a missing optional dependency) is listed as unavailable with the reason
instead of crashing the collector. MPSBENCH_CATALOG="module[:ATTR],…" replaces the sources (used by tests).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field

from collector.errors import CollectorError
from collector.workload import Workload

DEFAULT_SOURCES = ("collector.kernels:WORKLOADS", "collector.models:WORKLOADS")
SUITES = ("kernels", "models")


@dataclass
class Catalog:
    workloads: dict[str, Workload] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # source -> reason

    def select(self, names: list[str] | None = None, suites: list[str] | None = None) -> list[Workload]:
        """Workloads by name and/or suite (none given: all); an unknown name is an error naming the known ones."""
        for suite in suites or []:
            if suite not in SUITES:
                raise CollectorError(f"--suite must be one of {', '.join(SUITES)} (got {suite!r})")
        unknown = [n for n in names or [] if n not in self.workloads]
        if unknown:
            known = ", ".join(sorted(self.workloads)) or "none"
            raise CollectorError(f"--workload {', '.join(unknown)}: unknown workload; known: {known}")
        chosen = [
            w for w in self.workloads.values() if (not names or w.name in names) and (not suites or w.suite in suites)
        ]
        if not chosen:
            raise CollectorError("no workload matches the selection" + self._why_empty())
        return chosen

    def _why_empty(self) -> str:
        if not self.unavailable:
            return ""
        return "; unavailable sources: " + "; ".join(f"{s} ({r})" for s, r in self.unavailable.items())


def sources() -> list[str]:
    configured = os.environ.get("MPSBENCH_CATALOG", "").strip()
    return [s.strip() for s in configured.split(",") if s.strip()] if configured else list(DEFAULT_SOURCES)


def _load_source(spec: str) -> list[Workload]:
    module_name, _, attr = spec.partition(":")
    module = importlib.import_module(module_name)
    found = getattr(module, attr or "WORKLOADS", None)
    if found is None:
        raise AttributeError(f"{module_name} defines no {attr or 'WORKLOADS'}")
    bad = [repr(w) for w in found if not isinstance(w, Workload)]
    if bad:
        raise TypeError(f"{spec} holds non-Workload entries: {', '.join(bad[:3])}")
    return list(found)


def load_catalog() -> Catalog:
    catalog = Catalog()
    for spec in sources():
        try:
            workloads = _load_source(spec)
        except Exception as exc:  # noqa: BLE001 - an optional dependency missing: listed, not fatal
            catalog.unavailable[spec] = f"{type(exc).__name__}: {exc}"
            continue
        for w in workloads:
            if w.name in catalog.workloads:
                catalog.unavailable[f"{spec} ({w.name})"] = f"workload {w.name!r} is defined twice"
                continue
            catalog.workloads[w.name] = w
    return catalog
