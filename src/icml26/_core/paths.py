"""Where icml26 keeps things outside the repository: the user cache (converted model weights)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["MODEL_CACHES", "cache_dir"]


def cache_dir() -> Path:
    """``$ICML26_CACHE``, else ``$XDG_CACHE_HOME/icml26``, else ``~/.cache/icml26`` (not created here)."""
    if env := os.environ.get("ICML26_CACHE"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "icml26"


# Offline model caches that `icml26 doctor` reports on: {model name: folder under cache_dir()}.
MODEL_CACHES: dict[str, str] = {"SmolLM2-135M-Instruct (Q4_1-dequantised)": "smollm2-135m-instruct-f32"}
