"""What the model workloads share: suite "models", cases = specs × compile modes × dtypes, seeded weights.

A spec is the case's identity (model, sizes, counts); `compile_modes_for` says which of the run's
--compile modes a spec is measured in (the VAE workloads are eager only; decode offers torch.compile).
Weights are drawn from the CPU RNG under a seed derived from the case's params only, so the same case gets
the same random model on every device, dtype, compile mode and machine.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, ClassVar, Iterator, Mapping

from collector.kernels.family import FLOAT_DTYPES, seed_for
from collector.workload import PROFILES, Case, Workload

MEMORY_METRICS = ("memory_driver_peak", "memory_reserved_peak", "memory_allocated_peak", "memory_outside_allocator")


class ModelWorkload(Workload):
    suite: ClassVar[str] = "models"
    supported_dtypes: ClassVar[tuple[str, ...]] = FLOAT_DTYPES

    def specs(self, profile: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    def compile_modes_for(self, params: Mapping[str, Any], profile: str) -> tuple[str, ...]:
        return ("eager",)

    def cases(
        self, profile: str, dtypes: tuple[str, ...] | None = None, compile_modes: tuple[str, ...] = ("eager",)
    ) -> list[Case]:
        if profile not in PROFILES:
            raise ValueError(f"profile {profile!r}: must be one of {', '.join(PROFILES)}")
        chosen = self.default_dtypes if dtypes is None else tuple(d for d in dtypes if d in self.supported_dtypes)
        out: list[Case] = []
        for params in self.specs(profile):
            offered = self.compile_modes_for(params, profile)
            out.extend(Case(self.name, params, d, mode) for mode in compile_modes if mode in offered for d in chosen)
        return out


@contextmanager
def seeded_weights(case: Case) -> Iterator[None]:
    """Seed the CPU RNG that from_config / a diffusers constructor initialises weights with, without
    disturbing the process's own RNG state."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_for(case))
        yield
