"""Provenance: what produced a card (package, git commit, interpreter, numeric stack, threads, data packages).

Nothing here imports torch: versions are read from installed package metadata, and torch's thread count is
reported only if torch is already loaded by the run.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import icml26

__all__ = ["git_revision", "package_version", "provenance", "thread_settings"]

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS")


def package_version(name: str) -> str | None:
    """Installed version of a distribution, or None (never imports it)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def git_revision() -> dict[str, Any] | None:
    """The commit of the source tree this package runs from, and whether its code (src/, pyproject.toml) has
    uncommitted changes."""
    root = Path(icml26.__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            # only the code counts: rewriting tracked result cards must not mark a run "dirty"
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "src", "pyproject.toml"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"sha": sha, "dirty": bool(dirty)}


def thread_settings() -> dict[str, Any]:
    info: dict[str, Any] = {"cpu_count": os.cpu_count()}
    info.update({v.lower(): os.environ.get(v) for v in _THREAD_VARS})
    torch = sys.modules.get("torch")
    if torch is not None:
        info["torch_threads"] = torch.get_num_threads()
    return info


def provenance(data_packages: Iterable[str] = ()) -> dict[str, Any]:
    """Everything a reader needs to know where a card's numbers came from."""
    return {
        "icml26": icml26.__version__,
        "git": git_revision(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": package_version("numpy"),
        "scipy": package_version("scipy"),
        "torch": package_version("torch"),
        "threads": thread_settings(),
        "data_packages": {name: package_version(name) for name in data_packages},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
