"""Test configuration: markers, a derandomised hypothesis profile for CI, and an autouse seed fixture."""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(autouse=True)
def _seed_everything() -> None:
    """Every test starts from the same global RNG state (tests must still seed their own generators)."""
    random.seed(0)
    np.random.seed(0)  # noqa: NPY002 - the legacy global state is what the fixture resets
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(0)


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Torch on one thread for the test; a module opts in with ``pytestmark = pytest.mark.usefixtures(
    "one_torch_thread")`` (the suite shares two cores, and small tensors only lose time to thread start-up)."""
    from icml26._core import single_torch_thread

    with single_torch_thread():
        yield


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="needs CUDA")
        for item in gpu_items:
            item.add_marker(skip)
