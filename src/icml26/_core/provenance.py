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

__all__ = ["cpu_isa", "cpu_model", "git_revision", "package_version", "provenance", "thread_settings"]

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


# x86 instruction-set levels, best first: the level decides which vectorised kernels numpy and torch pick, and so
# the last bits of float results (a card's numbers may differ in rounding between an AVX2 and an AVX-512 machine).
_ISA_LEVELS = (("avx512f", "AVX512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse4_2", "SSE4.2"), ("asimd", "NEON"))


def _cpuinfo_field(name: str) -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == name:
            return value.strip()
    return None


@lru_cache(maxsize=1)
def cpu_model() -> str | None:
    """The CPU's model name (Linux /proc/cpuinfo, else the platform's processor string), or None."""
    return _cpuinfo_field("model name") or platform.processor() or None


def cpu_isa() -> str | None:
    """The best vector instruction set the CPU offers, and the one torch's kernels use when they differ.

    torch's choice is read only if torch is already loaded (this module never imports it); ``ATEN_CPU_CAPABILITY``
    lowers it on purpose, e.g. to reproduce a card made on an AVX2 machine.
    """
    flags = set((_cpuinfo_field("flags") or _cpuinfo_field("features") or "").split())
    level = next((label for flag, label in _ISA_LEVELS if flag in flags), None)
    torch = sys.modules.get("torch")
    kernels = None
    if torch is not None:
        try:
            kernels = str(torch.backends.cpu.get_cpu_capability())
        except (AttributeError, RuntimeError):
            kernels = None
    # a forced capability reaches torch in worker processes even when this process has not loaded torch
    kernels = kernels or os.environ.get("ATEN_CPU_CAPABILITY", "").upper() or None
    if kernels and level and kernels.upper() != level:
        return f"{level} (torch kernels: {kernels})"
    return level or (f"torch kernels: {kernels}" if kernels else None)


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
        "cpu": cpu_model(),
        "cpu_isa": cpu_isa(),
        "numpy": package_version("numpy"),
        "scipy": package_version("scipy"),
        "torch": package_version("torch"),
        "threads": thread_settings(),
        "data_packages": {name: package_version(name) for name in data_packages},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
