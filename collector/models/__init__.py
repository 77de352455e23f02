"""The model suite: end-to-end workloads whose figures users see (collector.catalog reads WORKLOADS).

Heavy libraries (torch, transformers, diffusers) load when a case runs or lists, not at import.
"""

from __future__ import annotations

from collector.models.decode import Decode
from collector.models.vae_roundtrip import VaeRoundtrip
from collector.models.vae_tiled_decode import VaeTiledDecode
from collector.workload import Workload

WORKLOADS: list[Workload] = [Decode(), VaeTiledDecode(), VaeRoundtrip()]
