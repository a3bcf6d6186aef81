"""Variational families q_phi(theta) over R^d with reparameterised sampling.

- ``DiagonalGaussian``: theta = mu + exp(log_s) * eps.
- ``FullRankGaussian``: theta = mu + L eps, L lower triangular with a positive (exp) diagonal.
- ``Flow``: a neural spline flow from ``zuko`` (Durkan et al., 2019), for posteriors that are not Gaussian (in PVI
  they often are not: the predictively optimal q is a mixing distribution, not a Laplace-like posterior).

Every family exposes ``rsample(K) -> [K, d]`` (differentiable), ``log_prob(theta) -> [K]``, ``entropy()`` when it has a
closed form (used to lower the variance of the KL term) and ``moments(n)`` (mean and sd, exact or Monte Carlo).

``Affine`` carries any family from standardised coordinates u to the model's parameters, theta = shift + scale @ u
(the estimators fit q over u; see ``model.Frame``). A diagonal Gaussian over u is then a Gaussian over theta whose
covariance scale diag(s^2) scale^T is not diagonal where the map mixes coordinates (the regression intercept).
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
        mean, cov = self.mean_and_covariance(n)
        return mean, torch.sqrt(torch.diagonal(cov))

    @torch.no_grad()
    def mean_and_covariance(self, n: int = 20_000) -> tuple[Tensor, Tensor]:
        """Mean [d] and covariance [d, d] (Monte Carlo from n draws unless overridden)."""
        draws = self.rsample(n)
        return draws.mean(0), torch.cov(draws.T).reshape(self.dim, self.dim)


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
    def mean_and_covariance(self, n: int = 0) -> tuple[Tensor, Tensor]:
        return self.loc.clone(), torch.diag(torch.exp(2 * self.log_scale))


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
    def mean_and_covariance(self, n: int = 0) -> tuple[Tensor, Tensor]:
        L = self.scale_tril()
        return self.loc.clone(), L @ L.T


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


class Affine(VariationalFamily):
    """theta = shift + scale @ u with u ~ ``base``: a family over standardised coordinates, in the model's units.

    Its parameters are the base family's (shift and scale are fixed buffers). log q(theta) = log q_u(u) -
    log|det scale| and the entropy gains log|det scale|, a constant: the objective's gradients are the base's.
    """

    def __init__(self, base: VariationalFamily, shift: Tensor, scale: Tensor) -> None:
        super().__init__()
        self.dim = base.dim
        if shift.shape != (self.dim,) or scale.shape != (self.dim, self.dim):
            raise ValueError(f"shift must be [{self.dim}] and scale [{self.dim}, {self.dim}]")
        self.base = base
        self.register_buffer("shift", shift.detach().to(torch.float32).clone())
        self.register_buffer("scale", scale.detach().to(torch.float32).clone())
        self.log_abs_det = float(torch.linalg.slogdet(scale.double())[1])

    def rsample(self, n: int) -> Tensor:
        return self.shift + self.base.rsample(n) @ self.scale.T

    def log_prob(self, theta: Tensor) -> Tensor:
        u = torch.linalg.solve(self.scale.to(theta.dtype), (theta - self.shift.to(theta.dtype)).T).T
        return self.base.log_prob(u) - self.log_abs_det

    def entropy(self) -> Tensor | None:
        h = self.base.entropy()
        return None if h is None else h + self.log_abs_det

    @torch.no_grad()
    def mean_and_covariance(self, n: int = 20_000) -> tuple[Tensor, Tensor]:
        mean, cov = self.base.mean_and_covariance(n)
        return self.shift + self.scale @ mean, self.scale @ cov @ self.scale.T


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
