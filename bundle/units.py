"""Units and their dimensions. Conversion happens only inside one dimension."""

from __future__ import annotations

from dataclasses import dataclass


class UnitError(ValueError):
    """A unit is unknown or a conversion crosses dimensions."""


@dataclass(frozen=True)
class Unit:
    symbol: str
    dimension: str
    scale: float  # multiply by this to get the dimension's base unit


_UNITS = [
    Unit("ns", "time", 1e-9),
    Unit("µs", "time", 1e-6),
    Unit("ms", "time", 1e-3),
    Unit("s", "time", 1.0),
    Unit("B", "bytes", 1.0),
    Unit("KiB", "bytes", 1024.0),
    Unit("MiB", "bytes", 1024.0**2),
    Unit("GiB", "bytes", 1024.0**3),
    Unit("B/s", "bandwidth", 1.0),
    Unit("GB/s", "bandwidth", 1e9),
    Unit("tokens/s", "token_rate", 1.0),
    Unit("dB", "decibel", 1.0),
    Unit("%", "fraction", 0.01),
    Unit("1", "fraction", 1.0),
    Unit("calls", "count", 1.0),
]
UNITS: dict[str, Unit] = {u.symbol: u for u in _UNITS}
# Spellings people type; each maps to exactly one canonical symbol.
ALIASES = {"us": "µs", "μs": "µs", "usec": "µs", "sec": "s", "bytes": "B", "tok/s": "tokens/s"}


def unit(symbol: str) -> Unit:
    """Look a unit up by symbol or alias; an unknown one names what is allowed."""
    found = UNITS.get(ALIASES.get(symbol, symbol))
    if found is None:
        allowed = ", ".join(UNITS)
        raise UnitError(f"unknown unit {symbol!r}; allowed: {allowed}")
    return found


def canonical_symbol(symbol: str) -> str:
    return unit(symbol).symbol


def convert(value: float, source: str, target: str) -> float:
    """Convert a value between two units of the same dimension."""
    src, dst = unit(source), unit(target)
    if src.dimension != dst.dimension:
        raise UnitError(f"cannot convert {src.symbol} ({src.dimension}) to {dst.symbol} ({dst.dimension})")
    return value * (src.scale / dst.scale)


def conversion_factor(source: str, target: str) -> float:
    return convert(1.0, source, target)


def binary_bytes(value: float) -> tuple[float, str]:
    """A byte count in the largest binary unit it reaches (GiB, MiB, KiB), else in B: (the value in it, its
    symbol). What every table and message that shows bytes reads (the collector's and the dashboard's)."""
    for symbol in ("GiB", "MiB", "KiB"):
        if abs(value) >= UNITS[symbol].scale:
            return value / UNITS[symbol].scale, symbol
    return value, "B"
