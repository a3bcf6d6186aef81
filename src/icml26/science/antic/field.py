"""Neural fields on the periodic square: integer random Fourier features, an MLP (LayerNorm, SiLU), and LoRA on the
hidden layers for continual residual updates between snapshots."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

__all__ = ["FourierFeatures", "LoRALinear", "NeuralField", "fit", "grid_coordinates"]


def grid_coordinates(n: int) -> torch.Tensor:
    """The (n*n, 2) coordinates (x, y) in [0, 2 pi) of an ``omega[y, x]`` grid, row-major."""
    x = 2 * math.pi * torch.arange(n, dtype=torch.float32) / n
    yy, xx = torch.meshgrid(x, x, indexing="ij")
    return torch.stack([xx.reshape(-1), yy.reshape(-1)], dim=1)


class FourierFeatures(nn.Module):
    """[sin(B x), cos(B x)] with B an (m, 2) matrix of INTEGER wavenumbers drawn as round(scale * N(0, 1)).

    Integer rows keep the features 2 pi-periodic (non-integer frequencies put a seam at the domain edge). B is a
    buffer, stored as int8 with the field (it is part of the bytes)."""

    def __init__(self, n_frequencies: int = 32, scale: float = 7.0, seed: int = 0) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        b = torch.round(scale * torch.randn(n_frequencies, 2, generator=gen))
        zero = (b == 0).all(dim=1)
        b[zero] = torch.tensor([1.0, 0.0])  # a zero row would give a constant feature
        self.register_buffer("B", b.clamp(-127, 127))

    @property
    def out_features(self) -> int:
        return 2 * self.B.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        proj = x @ self.B.T
        return torch.cat([torch.sin(proj), torch.cos(proj)], dim=-1)


class LoRALinear(nn.Module):
    """``base(x) + x A^T B^T``: a frozen-by-default linear layer with a rank-r residual (A he-uniform, B zero, so the
    output is unchanged at initialisation). ``merge()`` folds B A into the base weight and restarts A, B."""

    def __init__(self, base: nn.Linear, rank: int, seed: int = 0) -> None:
        super().__init__()
        if rank < 1:
            raise ValueError(f"LoRA rank must be >= 1, got {rank!r}")
        self.base, self.rank = base, rank
        self.A = nn.Parameter(torch.empty(rank, base.in_features))
        self.B = nn.Parameter(torch.zeros(base.out_features, rank))
        self._gen = torch.Generator().manual_seed(seed)
        self.reset_lora()

    def reset_lora(self) -> None:
        bound = math.sqrt(6.0 / self.base.in_features)  # he-uniform
        with torch.no_grad():
            self.A.copy_((torch.rand(self.A.shape, generator=self._gen) * 2 - 1) * bound)
            self.B.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.A.T) @ self.B.T

    @torch.no_grad()
    def merge(self) -> nn.Linear:
        self.base.weight += self.B @ self.A
        self.reset_lora()
        return self.base


class NeuralField(nn.Module):
    """f_theta: (x, y) -> omega, Fourier features -> Linear -> [LayerNorm, SiLU, Linear] x depth -> scalar.

    ``depth`` hidden layers of width ``hidden``; the hidden-to-hidden layers (``depth - 1`` of them) are the ones
    that carry LoRA (``add_lora``)."""

    def __init__(
        self, n_frequencies: int = 32, hidden: int = 48, depth: int = 3, scale: float = 7.0, seed: int = 0
    ) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.config = dict(n_frequencies=n_frequencies, hidden=hidden, depth=depth, scale=scale, seed=seed)
        self.features = FourierFeatures(n_frequencies, scale, seed)
        layers: list[nn.Module] = [nn.Linear(self.features.out_features, hidden)]
        for _ in range(depth - 1):
            layers += [nn.LayerNorm(hidden), nn.SiLU(), nn.Linear(hidden, hidden)]
        layers += [nn.LayerNorm(hidden), nn.SiLU(), nn.Linear(hidden, 1)]
        self.net = nn.Sequential(*layers)

    def hidden_indices(self) -> list[int]:
        lin = [i for i, m in enumerate(self.net) if isinstance(m, nn.Linear | LoRALinear)]
        return lin[1:-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(self.features(x)).squeeze(-1)

    def add_lora(self, rank: int, seed: int = 0) -> list[LoRALinear]:
        """Wrap every hidden linear layer in a LoRALinear (no-op where already wrapped); returns them."""
        out = []
        for j, i in enumerate(self.hidden_indices()):
            if not isinstance(self.net[i], LoRALinear):
                self.net[i] = LoRALinear(self.net[i], rank, seed=seed + 1000 * j)
            out.append(self.net[i])
        return out

    def lora_layers(self) -> list[LoRALinear]:
        return [m for m in self.net if isinstance(m, LoRALinear)]

    def merge_lora(self) -> None:
        for m in self.lora_layers():
            m.merge()

    def base_parameters(self) -> list[nn.Parameter]:
        """All weights except LoRA's A and B (what a keyframe stores)."""
        lora = {id(p) for m in self.lora_layers() for p in (m.A, m.B)}
        return [p for p in self.parameters() if id(p) not in lora]

    def lora_parameters(self) -> list[nn.Parameter]:
        return [p for m in self.lora_layers() for p in (m.A, m.B)]

    def n_base_parameters(self) -> int:
        return sum(p.numel() for p in self.base_parameters())

    def get_flat(self, params: list[nn.Parameter]) -> np.ndarray:
        return torch.cat([p.detach().reshape(-1) for p in params]).numpy().astype(np.float32)

    @torch.no_grad()
    def set_flat(self, params: list[nn.Parameter], flat: np.ndarray) -> None:
        flat_t = torch.as_tensor(np.asarray(flat, np.float32))
        if flat_t.numel() != sum(p.numel() for p in params):
            raise ValueError(f"{flat_t.numel()} values for {sum(p.numel() for p in params)} parameters")
        i = 0
        for p in params:
            p.copy_(flat_t[i : i + p.numel()].reshape(p.shape))
            i += p.numel()


def fit(
    field: NeuralField,
    features: torch.Tensor,
    target: torch.Tensor,
    params: list[nn.Parameter],
    steps: int,
    lr: float,
    weight_decay: float = 0.0,
) -> float:
    """Full-batch AdamW with cosine decay on the MSE of ``field.net(features)`` (the Fourier features of the grid,
    computed once: they are fixed); only ``params`` move. Returns the last loss."""
    if steps <= 0:
        with torch.no_grad():
            return float(((field.net(features).squeeze(-1) - target) ** 2).mean())
    for p in field.parameters():
        p.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    # the layers before the first trained one are fixed during this fit: evaluate them once
    trained = {id(p) for p in params}
    first = next(i for i, m in enumerate(field.net) if any(id(p) in trained for p in m.parameters()))
    with torch.no_grad():
        features = field.net[:first](features)
    head = field.net[first:]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=True)
    group = opt.param_groups[0]
    loss = torch.tensor(0.0)
    for i in range(steps):  # cosine decay from lr to lr / 20
        group["lr"] = lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * i / steps)))
        opt.zero_grad(set_to_none=True)
        loss = ((head(features).squeeze(-1) - target) ** 2).mean()
        loss.backward()
        opt.step()
    for p in params:
        p.requires_grad_(False)
    if not torch.isfinite(loss):
        raise FloatingPointError("the neural field's loss became NaN/inf (learning rate too high?)")
    return float(loss.detach())
