"""Read the statistics tables PyTorch's MPSProfiler prints to stderr when a process ends.

With `PYTORCH_MPS_LOG_PROFILE_INFO=8` (LogOptions::ALL_STATS, aten/src/ATen/mps/MPSProfiler.h `enum LogOptions`;
read once with strtol(…, 0): MPSProfiler.mm line 96; ALL_STATS turns on OPERATION_STATS | COPY_STATS |
CPU_FALLBACK_STATS: line 158) the process prints, at exit (the profiler's destructor, line 130, or SIGINT), up to
three tables (line numbers of MPSProfiler.mm at pytorch/pytorch 05b8ccb70d590d7b279346797c7a10cda92c135d):

- operations (logOperationsProfilingStats, lines 493–532): a title `MPS Operations Profiling: G graphs, K kernels`
  centred in 200 dashes (line 513), a header row, 200 dashes, then one row per graph or kernel
  (`{:^7}{:^8}{:^16}{:^15}{:^16} {}`, line 524): ID (`G3` a graph, `K1` a native Metal kernel), #Runs,
  Mean KRNL(ms), Mean GPU(ms), Total GPU(ms), the operation's key. GPU time is the command buffers'
  GPUEndTime − GPUStartTime (line 481), in ms with 3 decimals. "There are no MPS operations logged…" (line 497)
  when none ran.
- CPU fallbacks (logCPUFallbackProfilingStats, lines 534–585): title `CPU Fallback Profiling: Total N Runs, T ms,
  S Copies` in 150 dashes (line 563); rows `{:^6}{:^8}{:^15}{:^16}{:^16} {}` (line 577): ID, #Runs, Mean CPU(ms),
  Total CPU(ms), copy overhead (a formatted size), the op's name.
- copies (logCopyProfilingStats, lines 587–643): title `MPS Copy Profiling: N total copies (S), M scalar copies`
  in 160 dashes (line 608); rows `{:^13}{:^11}{:^18}{:^17}{:^16}{:^10}{:^14}{:^11}{:^9}` (line 628): the kind
  (`MPS to MPS`, `MPS to CPU`, `CPU to MPS`), Total#, Total Size, Total KRNL(ms), Total GPU(ms), Scalars,
  Scalars GPU (`12.50 %`), Blocking, memcpy.

Sizes are the allocator's format_size: `N bytes`, else two decimals and KB/MB/GB (older MPSAllocator.mm) or
KiB/MiB/GiB (c10::CachingDeviceAllocator::format_size), both powers of 1024. Rows are read by pattern, not by column
position (the widths are fmt's centring), and a table ends at its first line that is not a row. Other output
(warnings, tracebacks) may sit between the tables. tests/fixtures/mps_profiler/ holds text in this format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ALL_STATS = 8  # LogOptions::ALL_STATS (1 << 3)
VARIABLE = "PYTORCH_MPS_LOG_PROFILE_INFO"

_SIZE = r"(?P<size>\d+(?:\.\d+)?) (?P<size_unit>bytes|KB|MB|GB|KiB|MiB|GiB)"
_SCALE = {"bytes": 1, "KB": 1024, "KiB": 1024, "MB": 1024**2, "MiB": 1024**2, "GB": 1024**3, "GiB": 1024**3}
_MS = r"\d+\.\d+"

_OPS_TITLE = re.compile(r"^-+ MPS Operations Profiling: (\d+) graphs, (\d+) kernels -+$")
_OP_ROW = re.compile(
    rf"^\s*(?P<type>[GK])(?P<id>\d+)\s+(?P<runs>\d+)\s+(?P<krnl>{_MS})\s+(?P<mean>{_MS})\s+(?P<total>{_MS})\s+(?P<name>\S.*?)\s*$"
)
_FALLBACK_TITLE = re.compile(r"^-+ CPU Fallback Profiling: Total (\d+) Runs, .* Copies -+$")
_FALLBACK_ROW = re.compile(
    rf"^\s*(?P<id>\d+)\s+(?P<runs>\d+)\s+(?P<mean>{_MS})\s+(?P<total>{_MS})\s+{_SIZE}\s+(?P<name>\S.*?)\s*$"
)
_COPY_TITLE = re.compile(r"^-+ MPS Copy Profiling: (\d+) total copies \(.*\), (\d+) scalar copies -+$")
_COPY_ROW = re.compile(
    rf"^\s*(?P<name>MPS to MPS|MPS to CPU|CPU to MPS)\s+(?P<runs>\d+)\s+{_SIZE}\s+(?P<krnl>{_MS})\s+(?P<total>{_MS})"
    rf"\s+(?P<scalars>\d+)\s+(?P<scalar_share>\d+\.\d+) %\s+(?P<blocking>\d+)\s+(?P<memcpy>\d+)\s*$"
)
_RULE = re.compile(r"^-+$")


@dataclass(frozen=True)
class Logged:
    """One row of a table: what ran, how often in the whole process, its total time in µs (GPU time; a CPU
    fallback's CPU time) and, for copies and fallbacks, the bytes moved in all."""

    kind: str  # graph | kernel | copy | cpu_fallback (bundle.kernels.KernelKind)
    name: str
    runs: int
    total_us: float
    bytes: int | None = None


@dataclass(frozen=True)
class Stats:
    """The tables found: which were printed, and their rows in order."""

    tables: tuple[str, ...]  # "operations", "cpu_fallbacks", "copies": printed (a table or its "no …" line)
    rows: tuple[Logged, ...]


def _bytes(found: re.Match) -> int:
    return round(float(found["size"]) * _SCALE[found["size_unit"]])


def _us(ms: str) -> float:
    return float(ms) * 1000.0


def _rows(lines: list[str], start: int, pattern: re.Pattern) -> list[re.Match]:
    """The rows of the table whose title is lines[start]: after its header row and rule, until a non-row."""
    i = start + 1
    while i < len(lines) and not _RULE.match(lines[i].strip()):  # the header row, up to the rule under it
        i += 1
    out = []
    for line in lines[i + 1 :]:
        found = pattern.match(line)
        if found is None:
            break
        out.append(found)
    return out


def parse(text: str) -> Stats:
    """The MPSProfiler statistics in a process's output (module docstring). Text without them gives no tables."""
    lines = text.splitlines()
    tables: list[str] = []
    rows: list[Logged] = []
    for i, raw in enumerate(lines):
        line = raw.strip()
        if _OPS_TITLE.match(line):
            tables.append("operations")
            for r in _rows(lines, i, _OP_ROW):
                kind = "graph" if r["type"] == "G" else "kernel"
                rows.append(Logged(kind, r["name"], int(r["runs"]), _us(r["total"])))
        elif _FALLBACK_TITLE.match(line):
            tables.append("cpu_fallbacks")
            for r in _rows(lines, i, _FALLBACK_ROW):
                rows.append(Logged("cpu_fallback", r["name"], int(r["runs"]), _us(r["total"]), _bytes(r)))
        elif _COPY_TITLE.match(line):
            tables.append("copies")
            for r in _rows(lines, i, _COPY_ROW):
                rows.append(Logged("copy", r["name"], int(r["runs"]), _us(r["total"]), _bytes(r)))
        elif line == "There are no MPS operations logged for profiling":
            tables.append("operations")
        elif line == "There are no CPU Fallbacks logged for profiling":
            tables.append("cpu_fallbacks")
        elif line == "There are no copies logged for profiling":
            tables.append("copies")
    return Stats(tuple(tables), tuple(rows))
