"""Image quality per image: PSNR (optionally on a region, e.g. the unobserved pixels) and SSIM (scikit-image)."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["psnr", "ssim"]


def psnr(x: torch.Tensor, ref: torch.Tensor, data_range: float = 2.0, region: torch.Tensor | None = None) -> np.ndarray:
    """Per-image PSNR in dB of x against ref ([B, C, H, W]); ``region`` (0/1, broadcastable) restricts the pixels."""
    x, ref = _images(x, ref)
    err = (x - ref).double().square()
    if region is None:
        mse = err.reshape(len(x), -1).mean(1)
    else:
        w = torch.broadcast_to(torch.as_tensor(region).double(), err.shape).reshape(len(x), -1)
        mse = (err.reshape(len(x), -1) * w).sum(1) / w.sum(1).clamp_min(1.0)
    return (10.0 * torch.log10(data_range**2 / mse.clamp_min(1e-12))).numpy()


def ssim(x: torch.Tensor, ref: torch.Tensor, data_range: float = 2.0) -> np.ndarray:
    """Per-image SSIM (``skimage.metrics.structural_similarity``, 7x7 window, first channel)."""
    from skimage.metrics import structural_similarity

    a, b = (t.double().numpy() for t in _images(x, ref))
    return np.array(
        [structural_similarity(p[0], q[0], data_range=data_range, win_size=7) for p, q in zip(a, b, strict=True)]
    )


def _images(x: torch.Tensor | np.ndarray, ref: torch.Tensor | np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """Both as detached tensors (numpy accepted) of one shape, finite: one clear error otherwise."""
    x, ref = (torch.as_tensor(t).detach() for t in (x, ref))
    if x.shape != ref.shape:
        raise ValueError(f"shapes differ: {tuple(x.shape)} vs {tuple(ref.shape)}")
    if not (torch.isfinite(x).all() and torch.isfinite(ref).all()):
        raise ValueError("images contain NaN or infinite values (a diverged reconstruction?)")
    return x, ref
