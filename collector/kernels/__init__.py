"""The kernel suite: one Workload per op family (collector.catalog reads WORKLOADS)."""

from __future__ import annotations

from collector.kernels.constant_pad import ConstantPad
from collector.kernels.fp8 import Fp8
from collector.kernels.grouped_mm import GroupedMm
from collector.kernels.linear import Linear
from collector.kernels.sdpa import Sdpa
from collector.kernels.softmax import Softmax
from collector.workload import Workload

WORKLOADS: list[Workload] = [Softmax(), Linear(), GroupedMm(), ConstantPad(), Fp8(), Sdpa()]
