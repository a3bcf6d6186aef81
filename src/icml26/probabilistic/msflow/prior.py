"""A small flow-matching prior: a velocity field v(x, t) that carries N(0, I) at t = 0 to images at t = 1.

Trained by conditional flow matching on the straight path x_t = (1 - t) z + t x_1 with target x_1 - z (rectified
flow / OT-CFM with sigma_min = 0). The network is an MLP on flattened images with sinusoidal time features: enough
for 8x8 digits. Trained priors are cached on disk (``icml26._core.paths.cache_dir() / "msflow"``) keyed by their
config, so a second call with the same images, steps and seed loads in milliseconds and is bit-identical.
"""

from __future__ import annotations

import fcntl
import hashlib
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

__all__ = ["FlowPrior", "train_flow_prior"]


class FlowPrior(nn.Module):
    """Velocity field v(x, t) on images of shape ``image_shape``; ``x`` is [B, *image_shape], ``t`` a float or [B].

    ``nfe`` counts velocity evaluations (one per batched call), so solvers can be compared at equal compute.
    """

    def __init__(self, image_shape: Sequence[int] = (1, 8, 8), hidden: int = 256, depth: int = 3, n_freq: int = 8):
        super().__init__()
        self.image_shape = tuple(int(s) for s in image_shape)
        self.dim = int(np.prod(self.image_shape))
        self.register_buffer("freqs", math.pi * 2.0 ** torch.arange(n_freq, dtype=torch.float32), persistent=False)
        layers: list[nn.Module] = []
        width = self.dim + 2 * n_freq
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.SiLU()]
            width = hidden
        layers.append(nn.Linear(width, self.dim))
        self.net = nn.Sequential(*layers)
        self.nfe = 0

    def forward(self, x: torch.Tensor, t: float | torch.Tensor) -> torch.Tensor:
        self.nfe += 1
        b = x.shape[0]
        t = torch.as_tensor(t, dtype=x.dtype).reshape(-1).expand(b)
        phase = t[:, None] * self.freqs
        h = torch.cat([x.reshape(b, self.dim), torch.sin(phase), torch.cos(phase)], dim=1)
        return self.net(h).reshape(x.shape)

    def flow(self, x: torch.Tensor, t0: float = 0.0, t1: float = 1.0, steps: int = 8) -> torch.Tensor:
        """Euler integration of dx/dt = v(x, t) from t0 to t1 in ``steps`` equal steps (t1 < t0 runs backwards)."""
        dt = (t1 - t0) / steps
        for i in range(steps):
            x = x + dt * self(x, t0 + i * dt)
        return x

    @torch.no_grad()
    def sample(self, n: int, steps: int = 32, generator: torch.Generator | None = None) -> torch.Tensor:
        z = torch.randn((n, *self.image_shape), generator=generator)
        return self.flow(z, 0.0, 1.0, steps)


def _cache_path(images: np.ndarray, config: dict) -> Path:
    from icml26._core.paths import cache_dir

    h = hashlib.sha256(np.ascontiguousarray(images).tobytes())
    h.update(repr(sorted(config.items())).encode())
    return cache_dir() / "msflow" / f"prior-{h.hexdigest()[:16]}.pt"


def train_flow_prior(
    images: np.ndarray | torch.Tensor,
    steps: int = 3000,
    seed: int = 0,
    *,
    hidden: int = 256,
    depth: int = 3,
    batch_size: int = 256,
    lr: float = 2e-3,
    cache: bool = True,
) -> FlowPrior:
    """Fit a :class:`FlowPrior` to ``images`` [n, C, H, W] by conditional flow matching (Adam, cosine decay).

    Deterministic given (images, steps, seed, sizes); cached on disk unless ``cache=False``. Images should be
    roughly centred and scaled (the digits loader gives [-1, 1]); the prior models whatever domain it is given.
    """
    x = torch.as_tensor(np.asarray(images, dtype=np.float32))
    if x.ndim != 4 or x.shape[0] < 2:
        raise ValueError(f"images must be [n >= 2, C, H, W], got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError("images contain NaN or inf")
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    config = dict(steps=steps, seed=seed, hidden=hidden, depth=depth, batch_size=batch_size, lr=lr, v=1)
    if not cache:
        return _fit(x, config)
    path = _cache_path(x.numpy(), config)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel workers wait for one training run instead of repeating it
        if not path.exists():
            prior = _fit(x, config)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            torch.save(prior.state_dict(), tmp)
            os.replace(tmp, path)
    prior = FlowPrior(x.shape[1:], hidden=hidden, depth=depth)
    prior.load_state_dict(torch.load(path, weights_only=True))
    return prior.eval().requires_grad_(False)


def _fit(x: torch.Tensor, config: dict) -> FlowPrior:
    seed, steps, batch_size = config["seed"], config["steps"], config["batch_size"]
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # the initial weights, without touching the caller's global RNG
        torch.manual_seed(seed)
        prior = FlowPrior(x.shape[1:], hidden=config["hidden"], depth=config["depth"])
    opt = torch.optim.Adam(prior.parameters(), lr=config["lr"])
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    for _ in range(steps):
        x1 = x[torch.randint(len(x), (batch_size,), generator=gen)]
        z = torch.randn(x1.shape, generator=gen)
        t = torch.rand(batch_size, generator=gen)
        tt = t[:, None, None, None]
        loss = (prior(((1 - tt) * z + tt * x1), t) - (x1 - z)).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    prior.nfe = 0
    return prior.eval().requires_grad_(False)
