"""What changed in what ran: one case's kernels breakdowns (bundle.kernels, as db.query.what_ran reads them) on the
baseline's runs against the candidate's. Pure: breakdowns in, a judgement out, nothing read.

A side is its runs' `ok` breakdowns merged: per entry (kind, name) the median over the runs of its calls and its
device time per op call (a run where it did not run counts 0). An entry is part of a side's path when it ran at
least RAN times per op call (a name seen in the odd call is not a path). The path changed when:

- graph ↔ kernel: the case's MPSGraph graphs and native Metal kernels are of other kinds ("softmax ran as a Metal
  kernel instead of an MPSGraph graph");
- a CPU fallback is new or gone;
- copies were added or removed (a copy's calls per op call moved by RAN or more);
- a different set of aten ops, device kernels (or, with the same kinds, graphs / kernels) ran.

Beside it, the entries whose device time per op call moved most (µs), among the entries that time the device (the
aten ops where there are none: bundle.kernels.timed).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Iterable

from bundle.kernels import DEVICE_KINDS, KernelKind

RAN = 0.5  # calls per op call from which an entry is part of a side's path
TOP = 3  # entries named as the ones that moved most
NAME_WIDTH = 60  # a name in words is cut here (CUDA kernels' template names run to hundreds of characters)
NO_BREAKDOWN = "no breakdown on either side (`mpsbench run --kernels` records one)"
_KIND_WORDS = {KernelKind.graph: "an MPSGraph graph", KernelKind.kernel: "a Metal kernel"}


@dataclass(frozen=True)
class Entry:
    kind: KernelKind
    name: str
    calls_per_call: float  # the median over the side's runs
    device_time_us: float  # µs per op call, the median over the side's runs


@dataclass(frozen=True)
class Side:
    """One side's breakdown, merged over its runs."""

    entries: dict[tuple[KernelKind, str], Entry]
    runs: int
    metric: str
    profiler: str

    def ran(self, kinds: Iterable[KernelKind]) -> set[str]:
        wanted = set(kinds)
        return {e.name for e in self.entries.values() if e.kind in wanted and e.calls_per_call >= RAN}

    @property
    def device_time_us(self) -> float:
        return sum(e.device_time_us for e in self.timed())

    def timed(self) -> list[Entry]:
        device = [e for e in self.entries.values() if e.kind in DEVICE_KINDS]
        return device or [e for e in self.entries.values() if e.kind == KernelKind.aten_op]


def merge_side(breakdowns: list[dict[str, Any]]) -> Side | None:
    """The side's ok breakdowns merged (module docstring); None when it has none."""
    ok = [b for b in breakdowns if b.get("status") == "ok" and b.get("entries")]
    if not ok:
        return None
    keys = {(KernelKind(e["kind"]), e["name"]) for b in ok for e in b["entries"]}
    found = {(KernelKind(e["kind"]), e["name"]): e for b in ok for e in b["entries"]}  # any run's, for its kind
    entries = {}
    for key in keys:
        per_run = [next((e for e in b["entries"] if (KernelKind(e["kind"]), e["name"]) == key), None) for b in ok]
        calls = statistics.median([e["calls_per_call"] if e else 0.0 for e in per_run])
        time = statistics.median([e["device_time_us"] if e else 0.0 for e in per_run])
        entries[key] = Entry(key[0], found[key]["name"], calls, time)
    return Side(entries, len(ok), ok[0].get("metric", "op_time"), ok[0].get("profiler", ""))


@dataclass(frozen=True)
class Move:
    """One entry's device time per op call on each side (µs; 0 where it did not run)."""

    kind: KernelKind
    name: str
    baseline_us: float
    candidate_us: float

    @property
    def change_us(self) -> float:
        return self.candidate_us - self.baseline_us

    def words(self) -> str:
        name = _short(self.name)
        if self.baseline_us == 0:
            return f"{name}: new, {self.candidate_us:.4g} µs per op call"
        if self.candidate_us == 0:
            return f"{name}: gone (was {self.baseline_us:.4g} µs per op call)"
        return (
            f"{name}: {self.baseline_us:.4g} → {self.candidate_us:.4g} µs per op call ({self.change_us:+.4g} µs, "
            f"{self.candidate_us / self.baseline_us:.2f}×)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "name": self.name,
            "baseline_us": self.baseline_us,
            "candidate_us": self.candidate_us,
            "change_us": self.change_us,
            "unit": "µs",
        }


@dataclass(frozen=True)
class WhatRan:
    """What changed in what ran between the two sides of one case."""

    compared: bool
    reason: str | None = None  # why not compared
    changes: tuple[str, ...] = ()  # each path change, in words
    moved: tuple[Move, ...] = ()  # largest |change| first
    baseline_us: float | None = None  # each side's device time per op call (µs)
    candidate_us: float | None = None

    @property
    def path_changed(self) -> bool:
        return bool(self.changes)

    def headline(self) -> str | None:
        """A regression's first line where the path changed: "path changed: softmax ran as a Metal kernel …"."""
        return f"path changed: {'; '.join(self.changes)}" if self.changes else None

    def line(self) -> str:
        """One line for any compared case: the path change, else what moved most, else why not compared."""
        if not self.compared:
            return f"what ran: not compared: {self.reason}"
        if self.changes:
            return self.headline() or ""
        if self.moved:
            return f"same path; moved most: {self.moved[0].words()}"
        return "same path; no entry's device time moved"

    def words(self) -> str:
        """line(), and where the path changed the entry that moved most after it: what a listed regression says."""
        if self.changes and self.moved:
            return f"{self.line()}; moved most: {self.moved[0].words()}"
        return self.line()

    def to_json(self) -> dict[str, Any]:
        return {
            "compared": self.compared,
            "reason": self.reason,
            "path_changed": self.path_changed,
            "changes": list(self.changes),
            "moved": [m.to_json() for m in self.moved],
            "baseline_us": self.baseline_us,
            "candidate_us": self.candidate_us,
            "unit": "µs per op call",
            "line": self.line(),
            "words": self.words(),
        }


def what_ran(
    baseline: list[dict[str, Any]], candidate: list[dict[str, Any]], subject: str = "the case", top: int = TOP
) -> WhatRan:
    """Compare one case's breakdowns (each a run's, as stored: status, metric, profiler, entries) on two sides.
    `subject` names the case in words (its workload: "softmax")."""
    b, c = merge_side(baseline), merge_side(candidate)
    if b is None and c is None:
        return WhatRan(False, NO_BREAKDOWN)
    if b is None or c is None:
        which = "baseline" if b is None else "candidate"
        why = "its runs were made without --kernels, or the kernel pass failed there"
        return WhatRan(False, f"the {which} has no kernels breakdown of this case ({why})")
    if (b.profiler, b.metric) != (c.profiler, c.metric):
        return WhatRan(
            False,
            f"the sides were profiled differently ({b.profiler}, {b.metric} vs {c.profiler}, {c.metric})",
        )
    return WhatRan(True, None, tuple(path_changes(b, c, subject)), tuple(moves(b, c)[:top]),
                   b.device_time_us, c.device_time_us)  # fmt: skip


def path_changes(b: Side, c: Side, subject: str) -> list[str]:
    out = []
    ops = {KernelKind.graph, KernelKind.kernel}
    was = {(e.kind, e.name) for e in b.entries.values() if e.kind in ops and e.calls_per_call >= RAN}
    now = {(e.kind, e.name) for e in c.entries.values() if e.kind in ops and e.calls_per_call >= RAN}
    gone_kinds, new_kinds = {k for k, _ in was - now}, {k for k, _ in now - was}
    switched = bool(gone_kinds and new_kinds and gone_kinds != new_kinds)
    if switched:  # the graphs and kernels that differ are of other kinds: the op changed its path
        out.append(f"{subject} ran as {_as(new_kinds)} instead of {_as(gone_kinds)}")
    gone, new = _differ(b, c, [KernelKind.cpu_fallback])
    if new:
        out.append(f"a new CPU fallback: {_names(new, c)}")
    if gone:
        out.append(f"no CPU fallback any more: {_names(gone, b)}")
    out += _copies(b, c)
    for kinds, what in (
        ([KernelKind.aten_op], ""),
        ([KernelKind.device_kernel], "kernels "),
        ([] if switched else sorted(ops), ""),
    ):
        gone, new = _differ(b, c, kinds)
        if new and gone:
            out.append(f"{subject} ran {what}{_names(new, c)} instead of {_names(gone, b)}")
        elif new:
            out.append(f"{subject} also ran {what}{_names(new, c)}")
        elif gone:
            out.append(f"{subject} no longer ran {what}{_names(gone, b)}")
    return out


def moves(b: Side, c: Side) -> list[Move]:
    """Every timing entry on either side with its change, largest |change| first (unchanged ones left out)."""
    keys = {(e.kind, e.name) for e in b.timed()} | {(e.kind, e.name) for e in c.timed()}
    found = []
    for key in keys:
        was, now = b.entries.get(key), c.entries.get(key)
        move = Move(key[0], key[1], was.device_time_us if was else 0.0, now.device_time_us if now else 0.0)
        if move.change_us != 0:
            found.append(move)
    return sorted(found, key=lambda m: (-abs(m.change_us), m.name))


def _copies(b: Side, c: Side) -> list[str]:
    out = []
    for name in sorted({e.name for e in [*b.entries.values(), *c.entries.values()] if e.kind == KernelKind.copy}):
        was = b.entries.get((KernelKind.copy, name))
        now = c.entries.get((KernelKind.copy, name))
        before, after = (was.calls_per_call if was else 0.0), (now.calls_per_call if now else 0.0)
        if after - before >= RAN:
            out.append(f"copies added: {name} {before:.3g} → {after:.3g} per op call")
        elif before - after >= RAN:
            out.append(f"copies removed: {name} {before:.3g} → {after:.3g} per op call")
    return out


def _differ(b: Side, c: Side, kinds: list[KernelKind]) -> tuple[set[str], set[str]]:
    """(names that ran only on the baseline, names that ran only on the candidate) among `kinds`."""
    was, now = b.ran(kinds), c.ran(kinds)
    return was - now, now - was


def _as(kinds: set[KernelKind]) -> str:
    if len(kinds) > 1:
        return "MPSGraph graphs and Metal kernels"
    return _KIND_WORDS[next(iter(kinds))]


def _names(names: set[str], side: Side) -> str:
    """The names, the largest device time per op call first (then by name)."""
    time = {e.name: e.device_time_us for e in side.entries.values()}
    return ", ".join(_short(n) for n in sorted(names, key=lambda n: (-time.get(n, 0.0), n)))


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """A name cut to `width` characters (…): a CUDA kernel's template name runs to hundreds."""
    return name if len(name) <= width else name[: width - 1] + "…"


_short = short_name
