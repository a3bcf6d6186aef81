"""Activation memory, measured: the peak bytes of tensors autograd holds for backward.

:class:`SavedTensorMeter` hooks ``torch.autograd.graph.saved_tensors_hooks``: every tensor saved for backward is
counted once per storage (deduplicated by ``untyped_storage().data_ptr()``), released when the graph that holds it
is freed (a ``weakref.finalize`` on the packed handle; CPython's reference counting makes this deterministic), and
the running sum's maximum is the peak. Storages listed in ``exclude`` (the network's weights, which every method
holds anyway) are not counted. ``tracemalloc`` cannot do this: it does not see torch's CPU allocator.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any

import torch

__all__ = ["SavedTensorMeter", "saved_tensor_bytes"]


class _Handle:
    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor


class SavedTensorMeter:
    """Context manager: ``peak`` (bytes) and ``total`` (bytes ever saved) of activations saved for backward."""

    def __init__(self, exclude: Iterable[torch.Tensor] = ()):
        self._exclude = {p.untyped_storage().data_ptr() for p in exclude}
        self._live: dict[int, list[int]] = {}  # data_ptr -> [bytes, handles alive]
        self.current = self.peak = self.total = 0
        self._hooks: Any = None

    def _pack(self, t: torch.Tensor) -> Any:
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key in self._exclude or storage.nbytes() == 0:
            return t
        handle = _Handle(t)
        entry = self._live.get(key)
        if entry is None:
            self._live[key] = [storage.nbytes(), 1]
            self.current += storage.nbytes()
            self.total += storage.nbytes()
            self.peak = max(self.peak, self.current)
        else:
            entry[1] += 1
        weakref.finalize(handle, self._release, key)
        return handle

    def _release(self, key: int) -> None:
        entry = self._live[key]
        entry[1] -= 1
        if entry[1] == 0:
            self.current -= entry[0]
            del self._live[key]

    @staticmethod
    def _unpack(h: Any) -> torch.Tensor:
        return h.tensor if isinstance(h, _Handle) else h

    def __enter__(self) -> SavedTensorMeter:
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._hooks.__exit__(*exc)


def saved_tensor_bytes(fn: Callable[[], Any], exclude: Iterable[torch.Tensor] = ()) -> int:
    """Peak bytes of activations saved for backward while ``fn()`` runs (forward and backward inside ``fn``)."""
    with SavedTensorMeter(exclude) as meter:
        fn()
    return meter.peak
