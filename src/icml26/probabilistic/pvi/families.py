"""Variational families q_phi(theta) over R^d with reparameterised sampling.

- ``DiagonalGaussian``: theta = mu + exp(log_s) * eps.
- ``FullRankGaussian``: theta = mu + L eps, L lower triangular with a positive (exp) diagonal.
- ``Flow``: a neural spline flow from ``zuko`` (Durkan et al., 2019), for posteriors that are not Gaussian (in PVI
  they often are not: the predictively optimal q is a mixing distribution, not a Laplace-like posterior).

Every family exposes ``rsample(K) -> [K, d]`` (differentiable), ``log_prob(theta) -> [K]``, ``entropy()`` when it has a
closed form (used to lower the variance of the KL term) and ``moments(n)`` (mean and sd, exact or Monte Carlo).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class VariationalFamily(nn.Module):
    """Base class: a reparameterisable distribution over R^d."""

    dim: int

    def rsample(self, n: int) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def log_prob(self, theta: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def entropy(self) -> Tensor | None:
        """Closed-form entropy, or None (then the KL term uses -log q of the particles)."""
        return None

    @torch.no_grad()
    def moments(self, n: int = 20_000) -> tuple[Tensor, Tensor]:
        """Mean and standard deviation of each coordinate (Monte Carlo unless overridden)."""
        draws = self.rsample(n)
        return draws.mean(0), draws.std(0)


class DiagonalGaussian(VariationalFamily):
    """N(mu, diag(s^2)); parameters mu and log s."""

    def __init__(self, dim: int, loc: Tensor | None = None, log_scale: float = 0.0) -> None:
        super().__init__()
        self.dim = dim
        self.loc = nn.Parameter(torch.zeros(dim) if loc is None else loc.clone().float())
        self.log_scale = nn.Parameter(torch.full((dim,), float(log_scale)))

    def rsample(self, n: int) -> Tensor:
        return self.loc + torch.exp(self.log_scale) * torch.randn(n, self.dim, dtype=self.loc.dtype)

    def log_prob(self, theta: Tensor) -> Tensor:
        z = (theta - self.loc) * torch.exp(-self.log_scale)
        return (-0.5 * z**2 - self.log_scale).sum(-1) - 0.5 * self.dim * math.log(2 * math.pi)

    def entropy(self) -> Tensor:
        return self.log_scale.sum() + 0.5 * self.dim * (1 + math.log(2 * math.pi))

    @torch.no_grad()
    def moments(self, n: int = 0) -> tuple[Tensor, Tensor]:
        return self.loc.clone(), torch.exp(self.log_scale)


class FullRankGaussian(VariationalFamily):
    """N(mu, L L^T); L lower triangular, its diagonal exp(log_diag)."""

    def __init__(self, dim: int, loc: Tensor | None = None, log_scale: float = 0.0) -> None:
        super().__init__()
        self.dim = dim
        self.loc = nn.Parameter(torch.zeros(dim) if loc is None else loc.clone().float())
        self.log_diag = nn.Parameter(torch.full((dim,), float(log_scale)))
        self.off_diag = nn.Parameter(torch.zeros(dim, dim))

    def scale_tril(self) -> Tensor:
        return torch.tril(self.off_diag, -1) + torch.diag(torch.exp(self.log_diag))

    def rsample(self, n: int) -> Tensor:
        return self.loc + torch.randn(n, self.dim, dtype=self.loc.dtype) @ self.scale_tril().T

    def log_prob(self, theta: Tensor) -> Tensor:
        z = torch.linalg.solve_triangular(self.scale_tril(), (theta - self.loc).T, upper=False)
        return -0.5 * (z**2).sum(0) - self.log_diag.sum() - 0.5 * self.dim * math.log(2 * math.pi)

    def entropy(self) -> Tensor:
        return self.log_diag.sum() + 0.5 * self.dim * (1 + math.log(2 * math.pi))

    @torch.no_grad()
    def moments(self, n: int = 0) -> tuple[Tensor, Tensor]:
        L = self.scale_tril()
        return self.loc.clone(), torch.sqrt((L**2).sum(1))


class Flow(VariationalFamily):
    """A neural spline flow (``zuko.flows.NSF``) on R^d, shifted to start at ``loc`` with scale exp(log_scale).

    The affine base shift keeps the flow's own layers near the identity at the start, as for the Gaussians.
    """

    def __init__(
        self,
        dim: int,
        loc: Tensor | None = None,
        log_scale: float = 0.0,
        transforms: int = 3,
        hidden_features: tuple[int, ...] = (32, 32),
    ) -> None:
        super().__init__()
        try:
            import zuko
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("family='flow' needs zuko: pip install 'icml26[probabilistic]'") from exc
        self.dim = dim
        self.flow = zuko.flows.NSF(features=dim, context=0, transforms=transforms, hidden_features=hidden_features)
        self.loc = nn.Parameter(torch.zeros(dim) if loc is None else loc.clone().float())
        self.log_scale = nn.Parameter(torch.full((dim,), float(log_scale)))

    def rsample(self, n: int) -> Tensor:
        z = self.flow().rsample((n,))
        return self.loc + torch.exp(self.log_scale) * z

    def log_prob(self, theta: Tensor) -> Tensor:
        z = (theta - self.loc) * torch.exp(-self.log_scale)
        return self.flow().log_prob(z) - self.log_scale.sum()


FAMILIES: dict[str, type[VariationalFamily]] = {
    "gaussian": DiagonalGaussian,
    "diagonal": DiagonalGaussian,
    "fullrank": FullRankGaussian,
    "flow": Flow,
}


def make_family(
    family: str | VariationalFamily, dim: int, loc: Tensor | None = None, log_scale: float = 0.0
) -> VariationalFamily:
    """A family by name ('gaussian'/'diagonal', 'fullrank', 'flow'), or a given instance (checked for its dim)."""
    if isinstance(family, VariationalFamily):
        if family.dim != dim:
            raise ValueError(f"the variational family has dim {family.dim}, the model {dim}")
        return family
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {sorted(FAMILIES)} or pass a VariationalFamily")
    return FAMILIES[family](dim, loc=loc, log_scale=log_scale)
