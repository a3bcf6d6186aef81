"""A G-invariant Gaussian mixture over (x, y) with exact conditional mean, density and CDF of y given x.

Base components N(mu_k, Sigma_k) on R^(dx + 1) are moved by every group element g acting as
rho(g) = rho_X(g) (+) rho_Y(g); the equal-weight mixture of all |G| K moved components is G-invariant,
p(rho(g) w) = p(w). Given x, y is a mixture of normals with weights proportional to N(x; mu_x, Sigma_xx) and
component means mu_y + Sigma_yx Sigma_xx^-1 (x - mu_x), variances Sigma_yy - Sigma_yx Sigma_xx^-1 Sigma_xy.

The base components are drawn once from ``structure_seed`` (fixed per benchmark); samples come from the caller's rng.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import special, stats

from icml26.stats.equivariant_spectral.groups import Representation

__all__ = ["SymmetricGMM", "benchmark_problem"]


@dataclass(frozen=True, eq=False)
class SymmetricGMM:
    """The G-invariant mixture; ``rep_y`` must be one-dimensional (scalar targets)."""

    rep_x: Representation
    rep_y: Representation
    n_components: int = 2
    mean_scale: float = 1.5
    structure_seed: int = 0
    means: np.ndarray = field(init=False, repr=False)
    covs: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.rep_y.dim != 1:
            raise ValueError(f"SymmetricGMM models a scalar target: rep_y must be 1-dimensional, got {self.rep_y.dim}")
        rng = np.random.default_rng(self.structure_seed)
        d = self.rep_x.dim + 1
        base_means = rng.normal(0.0, self.mean_scale, (self.n_components, d))
        A = rng.normal(0.0, 1.0, (self.n_components, d, d)) / np.sqrt(d)
        base_covs = 0.15 * np.eye(d) + 0.35 * A @ A.transpose(0, 2, 1)  # correlated x-y: a non-trivial E[y | x]
        rho = np.zeros((self.rep_x.group.order, d, d))
        rho[:, :-1, :-1], rho[:, -1:, -1:] = self.rep_x.matrices, self.rep_y.matrices
        means = np.einsum("gij,kj->gki", rho, base_means).reshape(-1, d)
        covs = np.einsum("gij,kjl,gml->gkim", rho, base_covs, rho).reshape(-1, d, d)
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "covs", covs)

    @property
    def dx(self) -> int:
        return self.rep_x.dim

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n draws (x [n, dx], y [n])."""
        k = rng.integers(0, len(self.means), n)
        L = np.linalg.cholesky(self.covs)
        w = self.means[k] + np.einsum("nij,nj->ni", L[k], rng.standard_normal((n, self.dx + 1)))
        return w[:, :-1], w[:, -1]

    def _conditional(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per point and component: weights [n, K], means [n, K], sds [K]."""
        x = np.asarray(x, dtype=np.float64)
        mx, my = self.means[:, :-1], self.means[:, -1]
        Sxx, Sxy, Syy = self.covs[:, :-1, :-1], self.covs[:, :-1, -1], self.covs[:, -1, -1]
        gain = np.linalg.solve(Sxx, Sxy[..., None])[..., 0]  # [K, dx]
        diff = x[:, None, :] - mx[None]
        mean = my[None] + np.einsum("nkd,kd->nk", diff, gain)
        var = Syy - np.einsum("kd,kd->k", gain, Sxy)
        logw = np.stack([stats.multivariate_normal(mx[k], Sxx[k]).logpdf(x) for k in range(len(mx))], axis=-1)
        logw = logw.reshape(len(x), -1)
        w = np.exp(logw - special.logsumexp(logw, axis=1, keepdims=True))
        return w, mean, np.sqrt(var)

    def conditional_mean(self, x: np.ndarray) -> np.ndarray:
        """E[y | x] exactly: [n]."""
        w, mean, _ = self._conditional(x)
        return (w * mean).sum(1)

    def conditional_cdf_at(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """F(y_i | x_i) for paired rows: [n] (the probability integral transform of a sample)."""
        w, mean, sd = self._conditional(x)
        return (w * special.ndtr((np.asarray(y, dtype=np.float64)[:, None] - mean) / sd[None])).sum(1)

    def conditional_cdf(self, x: np.ndarray, t: np.ndarray) -> np.ndarray:
        """F(t | x) exactly for every x and every threshold t: [n, len(t)]."""
        w, mean, sd = self._conditional(x)
        z = (np.asarray(t, dtype=np.float64)[None, None, :] - mean[:, :, None]) / sd[None, :, None]
        return np.einsum("nk,nkt->nt", w, special.ndtr(z))


def benchmark_problem(name: str) -> SymmetricGMM:
    """The three synthetic problems: ``"C2"`` (x -> -x, y -> -y on R^2 x R), ``"C2xC2"`` (coordinate reflections
    of R^2, y flips with the first), ``"D3"`` (the triangle's symmetries of R^2, y flips with reflections)."""
    from icml26.stats.equivariant_spectral.groups import Representation, cyclic, dihedral, klein4

    if name == "C2":
        G = cyclic(2)
        rep_y = Representation(G, G.elements[:, :1, :1], name="sign")
    elif name == "C2xC2":
        G = klein4()
        rep_y = Representation(G, G.elements[:, :1, :1], name="sign(first)")
    elif name == "D3":
        G = dihedral(3)
        rep_y = Representation(G, np.linalg.det(G.elements), name="det")
    else:
        raise ValueError(f"unknown problem {name!r}; choose from 'C2', 'C2xC2', 'D3'")
    return SymmetricGMM(Representation.standard(G), rep_y, structure_seed={"C2": 1, "C2xC2": 2, "D3": 3}[name])
