"""The kernel suite: one Workload per op family (collector.catalog reads WORKLOADS)."""
from __future__ import annotations

from collector.workload import Workload
from kernels.constant_pad import ConstantPad
from kernels.fp8 import Fp8
from kernels.grouped_mm import GroupedMm
from kernels.linear import Linear
from kernels.sdpa import Sdpa
from kernels.softmax import Softmax

WORKLOADS: list[Workload] = [Softmax(), Linear(), GroupedMm(), ConstantPad(), Fp8(), Sdpa()]
