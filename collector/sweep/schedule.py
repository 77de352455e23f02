"""The rounds: in each, every build runs the plan once (the baseline twice with --aa), in an order that rotates
by one position per round, so every build takes every position (first, warm, last…) equally often."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Slot:
    round: int  # 1-based
    position: int  # 1-based place in the round's order
    build: int  # index of the build (its --build position; 0 = the baseline)
    aa: int  # 1 for the baseline's second run of the round (the A/A pair's other half), else 0

    @property
    def key(self) -> str:
        return f"r{self.round}-b{self.build}-aa{self.aa}"


def schedule(builds: list[int], rounds: int, aa: bool) -> list[Slot]:
    """Slots in run order. `builds` are the runnable builds' indexes, baseline first."""
    lineup = [(b, 0) for b in builds] + ([(builds[0], 1)] if aa and builds else [])
    slots = []
    for r in range(rounds):
        shift = r % len(lineup) if lineup else 0
        order = lineup[shift:] + lineup[:shift]
        slots += [Slot(r + 1, i + 1, b, a) for i, (b, a) in enumerate(order)]
    return slots
