"""One intra-op thread for torch work inside a cell.

Cells here run small tensors (K x n ~ 1e4-1e5 elements, tiny models): an OpenMP pool buys nothing and, beside another
busy process on a 2-core machine, its spinning made cells 10-90x slower (measured on PVI's radon cell). The process
executor already limits each worker to one thread; this covers the serial executor and direct calls.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def single_torch_thread() -> Iterator[None]:
    """``torch.set_num_threads(1)`` for the duration, then the previous value (torch is imported lazily)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
