"""Convex functionals F(mu) of the entropy-regularised problem L(mu) = F(mu) + lam * Ent(mu).

Every objective evaluates its first variation (delta F / delta mu)(mu)(x) and its x-gradient (the MFLD drift)
for a *weighted point measure* mu = sum_j w_j delta_(s_j): particles (w_j = 1/N, the default: ``support=None``
means the evaluation points themselves), or a quadrature grid (w_j = density x cell volume; the reference
solution). Shapes: points (..., M, d), support (..., N, d), weights (..., N); leading dims are independent replicas.

- ``InteractionEnergy(V, K)``: F = int V dmu + 1/2 iint K dmu dmu; delta F/delta mu = V + K * mu. Convex when K is
  positive definite (the Gaussian kernel is).
- ``MMDObjective(target, K)``: F = 1/2 MMD_K^2(mu, nu) for a target nu given by samples (or weighted points):
  the interaction energy with V = -K * nu, plus the constant 1/2 iint K dnu dnu.
- ``KnownOptimumDensity(box, rate, lam, K)``: F = 1/2 MMD_K^2(mu, rho*) - lam int log rho* dmu with rho* the truncated
  exponential density on the box, so L(mu) = 1/2 MMD^2(mu, rho*) + lam KL(mu || rho*): optimum rho*, L* = 0. Its kernel
  mean embedding is closed form (erf), so nothing here is approximated.
- ``MeanFieldTwoLayerNet(X, y)``: F = 1/(2n) sum_i (f_mu(x_i) - y_i)^2 + l2/2 int |theta|^2 dmu with
  f_mu(x) = int a tanh(w . x) dmu(a, w): a mean-field two-layer network (convex in mu, quadratic loss of a linear map).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from icml26.probabilistic.mmfld.domains import DTYPE, Box, Domain, Grid

__all__ = [
    "FunctionPotential",
    "GaussianKernel",
    "InteractionEnergy",
    "KnownOptimumDensity",
    "LinearPotential",
    "MMDObjective",
    "MeanFieldTwoLayerNet",
    "Objective",
    "QuadraticPotential",
    "TruncatedExponential",
]

CHUNK = 2_000_000  # elements of a pairwise block: O(N^2) interactions are evaluated in row chunks of this size


def _uniform_weights(support: torch.Tensor) -> torch.Tensor:
    n = support.shape[-2]
    return torch.full(support.shape[:-1], 1.0 / n, dtype=support.dtype)


class Objective:
    """Protocol of a convex functional F on measures (subclass it, or duck-type these methods)."""

    def first_variation(
        self, x: torch.Tensor, support: torch.Tensor | None = None, weights: torch.Tensor | None = None
    ) -> torch.Tensor:
        raise NotImplementedError

    def first_variation_grad(
        self, x: torch.Tensor, support: torch.Tensor | None = None, weights: torch.Tensor | None = None
    ) -> torch.Tensor:
        raise NotImplementedError

    def value(self, support: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        raise NotImplementedError

    def grid_first_variation(self, grid: Grid, masses: torch.Tensor) -> torch.Tensor:
        """delta F / delta mu on the grid points for mu = sum masses_i delta_(grid_i) (a fast path may override)."""
        keep = masses > 0
        return self.first_variation(grid.points, grid.points[keep], masses[keep])


# --------------------------------------------------------------------------------------------------- kernels
class GaussianKernel:
    """K(x, y) = weight * exp(-|x - y|^2 / (2 bandwidth^2)): positive definite and separable across coordinates.

    ``compute_dtype=torch.float32`` evaluates the O(N^2) exponentials in single precision (squared distances are
    formed in float64 first, so the kernel's relative error is ~1e-7): about twice as fast, and far below the
    Langevin noise. Positions and the mirror map stay in float64 either way."""

    def __init__(self, bandwidth: float = 0.2, weight: float = 1.0, compute_dtype: torch.dtype = DTYPE):
        if not (bandwidth > 0 and math.isfinite(bandwidth)):
            raise ValueError(f"bandwidth must be positive and finite, got {bandwidth!r}")
        if not (weight > 0 and math.isfinite(weight)):
            raise ValueError(f"weight must be > 0 (a positive definite kernel keeps F convex), got {weight!r}")
        if compute_dtype not in (torch.float32, torch.float64):
            raise ValueError(f"compute_dtype must be torch.float32 or torch.float64, got {compute_dtype!r}")
        self.bandwidth, self.weight, self.compute_dtype = float(bandwidth), float(weight), compute_dtype
        self._axis_cache: dict[tuple[int, int], torch.Tensor] = {}

    def __repr__(self) -> str:
        return f"GaussianKernel(bandwidth={self.bandwidth:g}, weight={self.weight:g})"

    def matrix(self, x: torch.Tensor, s: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        """scale * K(x_i, s_j), shape (..., M, N) (coordinate by coordinate: no (M, N, d) temporary)."""
        sq = (x[..., :, None, 0] - s[..., None, :, 0]).square_()
        for k in range(1, x.shape[-1]):
            sq.add_((x[..., :, None, k] - s[..., None, :, k]).square_())
        sq = sq.to(self.compute_dtype)
        return sq.mul_(-0.5 / self.bandwidth**2).add_(math.log(self.weight * scale)).exp_()

    def _weighted(self, x: torch.Tensor, s: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
        if w is None:  # uniform weights 1/N folded into the exponent
            return self.matrix(x, s, 1.0 / s.shape[-2])
        return self.matrix(x, s) * w.to(self.compute_dtype).unsqueeze(-2)

    def mean(self, x: torch.Tensor, s: torch.Tensor, w: torch.Tensor | None = None) -> torch.Tensor:
        """sum_j w_j K(x_i, s_j) (uniform w = 1/N if None), shape (..., M)."""
        return _chunked(lambda xc: self._weighted(xc, s, w).sum(dim=-1).to(x.dtype), x)

    def mean_grad(self, x: torch.Tensor, s: torch.Tensor, w: torch.Tensor | None = None) -> torch.Tensor:
        """sum_j w_j grad_1 K(x_i, s_j) = -(x_i sum_j w_j K_ij - sum_j w_j K_ij s_j) / h^2, shape (..., M, d)."""
        s_c = s.to(self.compute_dtype)

        def block(xc: torch.Tensor) -> torch.Tensor:
            kw = self._weighted(xc, s, w)
            out = kw @ s_c - xc.to(self.compute_dtype) * kw.sum(dim=-1, keepdim=True)
            return out.to(x.dtype) / self.bandwidth**2

        return _chunked(block, x)

    def grid_mean(self, grid: Grid, masses: torch.Tensor) -> torch.Tensor:
        """sum_j masses_j K(grid_i, grid_j) for all grid points, one axis at a time (O(n^(d+1)), not O(n^(2d)))."""
        field = masses.reshape(grid.shape)
        for k, axis in enumerate(grid.axes):
            key = (id(grid), k)
            if key not in self._axis_cache:  # one grid is reused for hundreds of iterations
                self._axis_cache = {kk: v for kk, v in self._axis_cache.items() if kk[0] == id(grid)}
                self._axis_cache[key] = torch.exp((axis[:, None] - axis[None, :]) ** 2 / (-2 * self.bandwidth**2))
            g = self._axis_cache[key]
            field = torch.movedim(torch.tensordot(g, field, dims=([1], [k])), 0, k)
        return self.weight * field.reshape(-1)


def _chunked(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    rows = max(1, CHUNK // max(1, x.shape[-2]))
    if x.shape[-2] <= rows:
        return fn(x)
    return torch.cat([fn(x[..., i : i + rows, :]) for i in range(0, x.shape[-2], rows)], dim=x.ndim - 2)


# ------------------------------------------------------------------------------------------------ potentials
class LinearPotential:
    """V(x) = coef . x (coef of length d; V = -c x on [0, 1] drives mass to 1 with mu* ~ exp(c x / lam))."""

    def __init__(self, coef: float | Sequence[float]):
        self.coef = torch.as_tensor(coef, dtype=DTYPE).reshape(-1)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return (x * self.coef).sum(dim=-1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return self.coef.expand_as(x)


class QuadraticPotential:
    """V(x) = curvature / 2 * |x - center|^2 (with no interaction, mu* is a truncated Gaussian)."""

    def __init__(self, center: float | Sequence[float], curvature: float):
        self.center, self.curvature = torch.as_tensor(center, dtype=DTYPE).reshape(-1), float(curvature)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * self.curvature * ((x - self.center) ** 2).sum(dim=-1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return self.curvature * (x - self.center)


class FunctionPotential:
    """Any differentiable V: (..., d) -> (...) given as a torch function; its gradient comes from autograd."""

    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]):
        self.fn = fn

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        with torch.enable_grad():
            xg = x.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(self.fn(xg).sum(), xg)
        return g


class _KernelMeanPotential:
    """V(x) = -sum_j nu_j K(x, t_j): the cross term of MMD^2 towards a target given by points."""

    def __init__(self, kernel: GaussianKernel, target: torch.Tensor, weights: torch.Tensor):
        self.kernel, self.target, self.weights = kernel, target, weights

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return -self.kernel.mean(x, self.target, self.weights)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return -self.kernel.mean_grad(x, self.target, self.weights)


# --------------------------------------------------------------------------------------------- interaction
class InteractionEnergy(Objective):
    """F(mu) = int V dmu + 1/2 iint K dmu dmu (+ constant). ``potential``: an object with ``__call__`` and ``grad``
    (``LinearPotential``...) or a plain torch function (autograd); ``kernel``: a ``GaussianKernel`` or None."""

    def __init__(self, potential: object | None = None, kernel: GaussianKernel | None = None, constant: float = 0.0):
        if potential is not None and not hasattr(potential, "grad"):
            if not callable(potential):
                raise TypeError(f"potential must be callable, got {type(potential).__name__}")
            potential = FunctionPotential(potential)  # type: ignore[arg-type]
        if kernel is not None and not isinstance(kernel, GaussianKernel):
            raise TypeError(f"kernel must be a GaussianKernel, got {type(kernel).__name__}")
        self.potential, self.kernel, self.constant = potential, kernel, float(constant)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(potential={type(self.potential).__name__}, kernel={self.kernel!r})"

    def first_variation(
        self, x: torch.Tensor, support: torch.Tensor | None = None, weights: torch.Tensor | None = None
    ) -> torch.Tensor:
        out = torch.zeros(x.shape[:-1], dtype=x.dtype)
        if self.potential is not None:
            out = out + self.potential(x)  # type: ignore[operator]
        if self.kernel is not None:
            out = out + self.kernel.mean(x, x if support is None else support, weights)
        return out

    def first_variation_grad(
        self, x: torch.Tensor, support: torch.Tensor | None = None, weights: torch.Tensor | None = None
    ) -> torch.Tensor:
        out = torch.zeros_like(x)
        if self.potential is not None:
            out = out + self.potential.grad(x)  # type: ignore[union-attr]
        if self.kernel is not None:
            out = out + self.kernel.mean_grad(x, x if support is None else support, weights)
        return out

    def value(self, support: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        w = _uniform_weights(support) if weights is None else weights
        total = torch.full(support.shape[:-2], self.constant, dtype=support.dtype)
        if self.potential is not None:
            total = total + (w * self.potential(support)).sum(dim=-1)  # type: ignore[operator]
        if self.kernel is not None:
            total = total + 0.5 * (w * self.kernel.mean(support, support, w)).sum(dim=-1)
        return total

    def grid_first_variation(self, grid: Grid, masses: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(len(grid.points), dtype=DTYPE)
        if self.potential is not None:
            cached = getattr(self, "_grid_potential", None)
            if cached is None or cached[0] is not grid:  # the potential on a grid is fixed across iterations
                cached = (grid, self.potential(grid.points))  # type: ignore[operator]
                self._grid_potential = cached
            out = out + cached[1]
        if self.kernel is not None:
            out = out + self.kernel.grid_mean(grid, masses)
        return out


class MMDObjective(InteractionEnergy):
    """F(mu) = 1/2 MMD_K^2(mu, nu) for nu = sum_j target_weights_j delta_(target_j) (uniform weights by default)."""

    def __init__(self, target: object, kernel: GaussianKernel, target_weights: object | None = None):
        t = torch.as_tensor(target, dtype=DTYPE)
        if t.ndim == 1:
            t = t.unsqueeze(-1)
        if t.ndim != 2 or len(t) == 0 or not torch.isfinite(t).all():
            raise ValueError(f"target must be a non-empty finite array of shape (M, d), got shape {tuple(t.shape)}")
        w = _uniform_weights(t) if target_weights is None else torch.as_tensor(target_weights, dtype=DTYPE)
        if w.shape != t.shape[:1] or (w < 0).any() or not math.isclose(float(w.sum()), 1.0, rel_tol=1e-9):
            raise ValueError("target_weights must be M non-negative numbers summing to 1")
        self.target, self.target_weights = t, w
        const = 0.5 * float((w * kernel.mean(t, t, w)).sum())
        super().__init__(_KernelMeanPotential(kernel, t, w), kernel, const)


# -------------------------------------------------------------------------------------- known optimum (box)
def _log_norm(a: torch.Tensor, width: torch.Tensor) -> torch.Tensor:
    """log int_0^w exp(a u) du, stable for large |a| w."""
    aw = a * width
    safe = torch.where(a == 0, torch.ones_like(a), a)
    pos = aw + torch.log(-torch.expm1(-aw.abs())) - torch.log(safe.abs())
    neg = torch.log(-torch.expm1(-aw.abs())) - torch.log(safe.abs())
    return torch.where(a == 0, torch.log(width), torch.where(a > 0, pos, neg))


class TruncatedExponential:
    """The product density rho*(x) proportional to exp(rate . (x - lo)) on a box: exact mean, cdf, sampling,
    log-density and bin probabilities (the known optimum of ``KnownOptimumDensity``)."""

    def __init__(self, box: Box, rate: float | Sequence[float]):
        self.box = box
        self.rate = torch.as_tensor(rate, dtype=DTYPE).reshape(-1).expand(box.dim).clone()
        self.log_z = _log_norm(self.rate, box.width)  # per coordinate

    def log_density(self, x: torch.Tensor) -> torch.Tensor:
        return (self.rate * (x - self.box.lo) - self.log_z).sum(dim=-1)

    @property
    def mean(self) -> torch.Tensor:
        a, w = self.rate, self.box.width
        safe = torch.where(a == 0, torch.ones_like(a), a)
        m = w / -torch.expm1(-safe * w) - 1 / safe
        return self.box.lo + torch.where(a == 0, w / 2, m)

    def cdf(self, x: torch.Tensor) -> torch.Tensor:
        """Per-coordinate cdf (..., d)."""
        u = (x - self.box.lo).clamp(min=torch.zeros(1, dtype=DTYPE), max=self.box.width)
        a = self.rate
        safe = torch.where(a == 0, torch.ones_like(a), a)
        return torch.where(a == 0, u / self.box.width, torch.expm1(safe * u) / torch.expm1(safe * self.box.width))

    def sample(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        p = torch.rand(*shape, self.box.dim, generator=generator, dtype=DTYPE)
        a = self.rate
        safe = torch.where(a == 0, torch.ones_like(a), a)
        u = torch.where(a == 0, p * self.box.width, torch.log1p(p * torch.expm1(safe * self.box.width)) / safe)
        return self.box.lo + u

    def embedding_1d(self, x: torch.Tensor, bandwidth: float) -> tuple[torch.Tensor, torch.Tensor]:
        """Per coordinate: m_k(x_k) = int exp(-(x_k - y)^2 / 2h^2) rho*_k(y) dy and its derivative (closed form)."""
        a, h, lo, hi = self.rate, bandwidth, self.box.lo, self.box.hi
        shift = x + a * h * h  # complete the square: the Gaussian in y is centred at x + a h^2
        b, c = (hi - shift) / h, (lo - shift) / h
        log_pref = a * (x - lo) + 0.5 * (a * h) ** 2 - self.log_z
        diff = torch.where(
            c > 0, torch.special.ndtr(-c) - torch.special.ndtr(-b), torch.special.ndtr(b) - torch.special.ndtr(c)
        )
        m = torch.exp(log_pref + math.log(h * math.sqrt(2 * math.pi)) + torch.log(diff))
        dm = a * m + torch.exp(log_pref - 0.5 * c * c) - torch.exp(log_pref - 0.5 * b * b)
        return m, dm

    def bin_probabilities(self, edges: Sequence[torch.Tensor]) -> torch.Tensor:
        """Probabilities of the product bins given per-axis edges (shape: number of bins per axis)."""
        out = None
        for k, e in enumerate(edges):
            pts = torch.zeros(len(e), self.box.dim, dtype=DTYPE) + self.box.lo
            pts[:, k] = e
            p = torch.diff(self.cdf(pts)[:, k])
            out = p if out is None else torch.einsum("...i,j->...ij", out, p)
        assert out is not None
        return out


class _EmbeddingPotential:
    """V(x) = -w prod_k m_k(x_k) - lam log rho*(x): MMD cross term towards rho* plus the Gibbs tilt."""

    def __init__(self, rho: TruncatedExponential, kernel: GaussianKernel, lam: float):
        self.rho, self.kernel, self.lam = rho, kernel, lam

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        m, _ = self.rho.embedding_1d(x, self.kernel.bandwidth)
        return -self.kernel.weight * m.prod(dim=-1) - self.lam * self.rho.log_density(x)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        m, dm = self.rho.embedding_1d(x, self.kernel.bandwidth)
        others = torch.stack(
            [torch.cat([m[..., :k], m[..., k + 1 :]], dim=-1).prod(dim=-1) for k in range(x.shape[-1])], -1
        )
        return -self.kernel.weight * others * dm - self.lam * self.rho.rate


class KnownOptimumDensity(InteractionEnergy):
    """Entropy-regularised MMD fitting of a truncated exponential density rho* on a box, with rho* as the Gibbs
    reference: L(mu) = F(mu) + lam Ent(mu) = 1/2 MMD_K^2(mu, rho*) + lam KL(mu || rho*). Both terms vanish only at
    mu = rho*, so the optimum and L* = 0 are known exactly, while F stays nonlinear (an interaction energy).

    ``lam`` is part of the problem: run the dynamics with the same lam (``optimum`` is the minimiser only then)."""

    def __init__(self, box: Box, rate: float | Sequence[float], lam: float, kernel: GaussianKernel):
        if not isinstance(box, Box):
            raise TypeError(f"KnownOptimumDensity is defined on a Box, got {type(box).__name__}")
        if not lam > 0:
            raise ValueError(f"lam must be positive, got {lam!r}")
        self.lam, self.optimum = float(lam), TruncatedExponential(box, rate)
        nodes, wts = _gauss_legendre(200)
        const = 0.5 * kernel.weight
        for k in range(box.dim):  # 1/2 iint K drho* drho* = 1/2 w prod_k int m_k rho*_k
            y = box.lo[k] + box.width[k] * (nodes + 1) / 2
            pts = torch.zeros(len(y), box.dim, dtype=DTYPE) + box.lo
            pts[:, k] = y
            m, _ = self.optimum.embedding_1d(pts, kernel.bandwidth)
            dens = torch.exp(self.optimum.rate[k] * (y - box.lo[k]) - self.optimum.log_z[k])
            const *= float((wts * m[:, k] * dens).sum() * box.width[k] / 2)
        super().__init__(_EmbeddingPotential(self.optimum, kernel, self.lam), kernel, const)

    optimal_value = 0.0


def _gauss_legendre(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    import numpy as np

    x, w = np.polynomial.legendre.leggauss(n)
    return torch.as_tensor(x, dtype=DTYPE), torch.as_tensor(w, dtype=DTYPE)


# ------------------------------------------------------------------------------------------ two-layer network
class MeanFieldTwoLayerNet(Objective):
    """Mean-field two-layer network f_mu(x) = int a tanh(w . x) dmu(a, w), theta = (a, w) in R^(1+p), trained on
    (X, y) by the squared loss: F(mu) = 1/(2n) sum_i (f_mu(x_i) - y_i)^2 + l2/2 int |theta|^2 dmu."""

    def __init__(self, X: object, y: object, l2: float = 0.0):
        X_t = torch.as_tensor(X, dtype=DTYPE)
        if X_t.ndim == 1:
            X_t = X_t.unsqueeze(-1)
        y_t = torch.as_tensor(y, dtype=DTYPE).reshape(-1)
        if X_t.ndim != 2 or len(X_t) == 0 or len(X_t) != len(y_t):
            raise ValueError(f"X must be (n, p) and y (n,) with n >= 1, got {tuple(X_t.shape)} and {tuple(y_t.shape)}")
        if not (torch.isfinite(X_t).all() and torch.isfinite(y_t).all()):
            raise ValueError("X and y must be finite")
        self.X, self.y, self.l2 = X_t, y_t, float(l2)
        self.dim = 1 + X_t.shape[1]

    def __repr__(self) -> str:
        return f"MeanFieldTwoLayerNet(n={len(self.y)}, p={self.X.shape[1]}, l2={self.l2:g})"

    def _features(self, theta: torch.Tensor) -> torch.Tensor:
        return torch.tanh(theta[..., 1:] @ self.X.T)  # (..., N, n)

    def predict(self, support: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        w = _uniform_weights(support) if weights is None else weights
        return ((w * support[..., 0]).unsqueeze(-1) * self._features(support)).sum(dim=-2)

    def _residual(self, support: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
        return self.predict(support, weights) - self.y

    def first_variation(
        self, x: torch.Tensor, support: torch.Tensor | None = None, weights: torch.Tensor | None = None
    ) -> torch.Tensor:
        r = self._residual(x if support is None else support, weights)
        return x[..., 0] * (self._features(x) @ r.unsqueeze(-1)).squeeze(-1) / len(self.y) + 0.5 * self.l2 * (
            x * x
        ).sum(dim=-1)

    def first_variation_grad(
        self, x: torch.Tensor, support: torch.Tensor | None = None, weights: torch.Tensor | None = None
    ) -> torch.Tensor:
        r = self._residual(x if support is None else support, weights) / len(self.y)  # (..., n)
        feats = self._features(x)  # (..., N, n)
        grad_a = feats @ r.unsqueeze(-1)  # (..., N, 1)
        grad_w = x[..., :1] * (((1 - feats * feats) * r.unsqueeze(-2)) @ self.X)  # (..., N, p)
        return torch.cat([grad_a, grad_w], dim=-1) + self.l2 * x

    def value(self, support: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        w = _uniform_weights(support) if weights is None else weights
        loss = 0.5 * (self._residual(support, weights) ** 2).mean(dim=-1)
        return loss + 0.5 * self.l2 * (w * (support * support).sum(dim=-1)).sum(dim=-1)


def domain_of(objective: object) -> Domain | None:
    """The domain an objective is tied to, if any (KnownOptimumDensity lives on its box)."""
    opt = getattr(objective, "optimum", None)
    return getattr(opt, "box", None)
