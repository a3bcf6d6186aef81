"""Small I/O helpers: canonical JSON, stable hashes and atomic writes.

Every file the runner writes goes through :func:`atomic_write_bytes`, so an interrupted run never leaves a
half-written card or cell behind: readers see either the old file or the new one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_UMASK = os.umask(0)
os.umask(_UMASK)  # read the process umask once (os.umask can only be read by setting it)

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "canonical_json",
    "read_json",
    "stable_hash",
    "to_jsonable",
    "write_json",
]


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples, paths and non-finite floats into plain JSON values.

    NaN and infinities become ``None`` (JSON has no spelling for them); a card must not carry values that a
    strict parser rejects.
    """
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, bool | int | str) or obj is None:
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    tolist = getattr(obj, "tolist", None)  # numpy scalars and arrays, torch tensors
    if callable(tolist):
        return to_jsonable(tolist())
    raise TypeError(f"cannot convert {type(obj).__name__} to JSON: {obj!r}")


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal strings (the basis of hashes)."""
    return json.dumps(to_jsonable(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)


def stable_hash(obj: Any, length: int = 16) -> str:
    """A short SHA-256 hex digest of ``canonical_json(obj)``; independent of dict order and process."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, fsync, ``os.replace``)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (an existing file keeps its own).
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_UMASK
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Pretty, sorted, strict JSON written atomically (cards are meant to be diffed in git)."""
    text = json.dumps(to_jsonable(obj), sort_keys=True, indent=2, allow_nan=False) + "\n"
    return atomic_write_text(path, text)


def read_json(path: str | os.PathLike[str]) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
