"""Autouse fixture for model-workload tests: torch on one thread."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    """The shared 2-core box: an oversubscribed OpenMP pool makes small models 10× slower, not wrong."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
