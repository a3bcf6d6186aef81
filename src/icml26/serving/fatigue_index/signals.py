"""The three fatigue signals (torch), their bounded normalisers, the index, smoothing and the hysteresis alert.

Signals read tensors of one forward step; normalisers and the index work on anything numpy can read and return
float64 arrays, so that the online monitor and an offline recomputation run the same arithmetic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from icml26.serving.fatigue_index.config import FatigueConfig

__all__ = [
    "embedding_drift",
    "fatigue_index",
    "fatigue_trajectory",
    "hysteresis_alert",
    "phi_attention",
    "phi_drift",
    "phi_entropy",
    "predictive_entropy",
    "prompt_attention",
    "smooth",
]


# ------------------------------------------------------------------------------------------------- signals
def prompt_attention(
    weights: Any, prompt_start: Any = None, prompt_length: Any = None, k: int = 64, reduce: str = "mean"
) -> Any:
    """A_t: attention of the current query to the first ``k`` prompt positions, averaged over heads.

    ``weights``: (batch, heads, keys) attention probabilities of the newest query (or (batch, heads, queries,
    keys), whose last query is used). With left padding, row b's prompt occupies keys ``prompt_start[b]`` onwards
    (default 0) and has ``prompt_length[b]`` tokens (default: every key from the start); the slice is the first
    min(k, prompt_length) of them, so padding never shifts it. ``reduce="mean"`` (the paper) averages the weight
    over the slice (uniform attention over L keys gives 1/L); ``"mass"`` (ours) sums it.
    """
    import torch

    w = torch.as_tensor(weights)
    if w.dim() == 4:
        w = w[:, :, -1]
    if w.dim() != 3:
        raise ValueError(
            f"attention weights must be (batch, heads, keys) or (batch, heads, queries, keys), got {tuple(w.shape)}"
        )
    if reduce not in ("mean", "mass"):
        raise ValueError(f"reduce must be 'mean' or 'mass', got {reduce!r}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    b, _, keys = w.shape
    start = torch.zeros(b, dtype=torch.long) if prompt_start is None else torch.as_tensor(prompt_start).long()
    length = keys - start if prompt_length is None else torch.as_tensor(prompt_length).long()
    if (length < 1).any():
        raise ValueError("every prompt needs at least one token (an empty prompt has no positions to attend to)")
    span = torch.clamp(length, max=k)
    pos = torch.arange(keys)
    inside = (pos >= start[:, None]) & (pos < (start + span)[:, None])
    mass = (w.float().mean(dim=1) * inside).sum(dim=-1)
    return mass if reduce == "mass" else mass / span


def embedding_drift(hidden: Any, reference: Any) -> Any:
    """D_t = ||h_t - h_0||_2 over the last dimension (h_0: the top hidden state of the last prompt token)."""
    import torch

    h, h0 = torch.as_tensor(hidden), torch.as_tensor(reference)
    if h.shape != h0.shape:
        raise ValueError(f"hidden states {tuple(h.shape)} and reference {tuple(h0.shape)} differ in shape")
    return torch.linalg.vector_norm((h.float() - h0.float()), dim=-1)


def predictive_entropy(logits: Any) -> Any:
    """E_t: entropy (nats) of softmax(logits) over the last dimension, from the *raw* logits (no temperature,
    no top-p: post-processed scores hold -inf and give NaN)."""
    import torch

    z = torch.as_tensor(logits).float()
    if not torch.isfinite(z).all():
        raise ValueError(
            "logits contain NaN or infinity: pass the raw logits (generate(..., output_logits=True) or the "
            "lm_head output), not post-processed scores (top-p/top-k set them to -inf)"
        )
    return entropy_of_log_probs(torch.log_softmax(z, dim=-1))


def entropy_of_log_probs(logp: Any) -> Any:
    """-sum exp(logp) logp over the last dimension (the probe reuses the log-softmax it needs anyway)."""
    return -(logp.exp() * logp).sum(dim=-1)


# ---------------------------------------------------------------------------------------------- normalisers
def _array(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x, dtype=np.float64)
    if np.isnan(a).any():
        raise ValueError(f"{name} contains NaN")
    return a


def phi_attention(a: Any) -> np.ndarray:
    """phi_A = 1 - clip(A, 0, 1): less attention to the prompt, more fatigue."""
    return 1.0 - np.clip(_array(a, "attention"), 0.0, 1.0)


def phi_entropy(e: Any, band: tuple[float, float] = (3.8, 5.0), beta: float = 5.0) -> np.ndarray:
    """phi_E: (H_low - E) / H_low below the band, 0 inside [H_low, H_high], (E - H_high) / beta above; in [0, 1]."""
    low, high = band
    e = _array(e, "entropy")
    below = (low - e) / low
    above = (e - high) / beta
    return np.clip(np.where(e < low, below, np.where(e > high, above, 0.0)), 0.0, 1.0)


def phi_drift(d: Any, kappa: float = 20.0) -> np.ndarray:
    """phi_D = clip(D / kappa, 0, 1)."""
    return np.clip(_array(d, "drift") / kappa, 0.0, 1.0)


def fatigue_index(a: Any, e: Any, d: Any, config: FatigueConfig | None = None) -> np.ndarray:
    """FI = w_A phi_A + w_E phi_E + w_D phi_D, in [0, 1] (weights sum to 1)."""
    from icml26.serving.fatigue_index.config import FatigueConfig

    cfg = config or FatigueConfig()
    w_a, w_e, w_d = cfg.weights
    parts = (
        phi_attention(a),
        phi_entropy(e, cfg.entropy_band, cfg.entropy_beta),
        phi_drift(d, cfg.drift_kappa),
    )
    if len({p.shape for p in parts}) != 1:
        raise ValueError(f"signals differ in shape: {[p.shape for p in parts]}")
    return w_a * parts[0] + w_e * parts[1] + w_d * parts[2]


# ------------------------------------------------------------------------------------- smoothing and alerts
def smooth(fi: Any, window: int = 5) -> np.ndarray:
    """Trailing moving average over the last axis: the mean of the last ``window`` probes (fewer at the start)."""
    x = _array(fi, "fatigue index")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    if x.shape[-1] == 0:
        return x.copy()
    padded = np.concatenate([np.zeros((*x.shape[:-1], window - 1)), x], axis=-1)
    sums = np.lib.stride_tricks.sliding_window_view(padded, window, axis=-1).sum(axis=-1)  # no drift from a cumsum
    return sums / np.minimum(np.arange(1, x.shape[-1] + 1), window)


def hysteresis_alert(smoothed: Any, on: float = 0.50, off: float = 0.40) -> np.ndarray:
    """Boolean alert over the last axis: turns on when smoothed FI >= ``on``, off when <= ``off``, else holds."""
    s = _array(smoothed, "smoothed fatigue index")
    if not off < on:
        raise ValueError(f"hysteresis needs off < on, got on={on}, off={off}")
    state = np.zeros(s.shape[:-1], dtype=bool)
    out = np.zeros(s.shape, dtype=bool)
    for t in range(s.shape[-1]):  # a two-state machine: sequential in time, vectorised over the batch
        state = np.where(s[..., t] >= on, True, np.where(s[..., t] <= off, False, state))
        out[..., t] = state
    return out


def fatigue_trajectory(a: Any, e: Any, d: Any, config: FatigueConfig | None = None) -> dict[str, np.ndarray]:
    """Offline FI of probe series (last axis = probes): raw index, smoothed index and the alert."""
    from icml26.serving.fatigue_index.config import FatigueConfig

    cfg = config or FatigueConfig()
    fi = fatigue_index(a, e, d, cfg)
    s = smooth(fi, cfg.smooth_window)
    return {"fi": fi, "smoothed": s, "alert": hysteresis_alert(s, *cfg.hysteresis)}
