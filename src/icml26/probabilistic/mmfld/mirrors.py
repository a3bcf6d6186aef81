"""Mirror maps phi of Legendre type on a domain: y = grad phi(x), x = grad phi*(y), and the Hessian's square root
that scales the dual noise.

- ``BoxLogBarrier``: phi = -sum_k [log(x_k - lo_k) + log(hi_k - x_k)] (the default; self-concordant);
  grad phi*(y) = lo + w u with u = 2 / (sqrt(v^2 + 4) - v + 2), v = w y, evaluated on the side where it does not
  cancel (u and 1 - u are both computed as 2 / (sqrt(v^2 + 4) + |v| + 2)).
- ``SimplexLogBarrier``: phi = -sum_k log x_k - log(1 - sum_k x_k); grad phi_k = -1/x_k + 1/s (s the slack),
  Hessian diag(1/x^2) + 1/s^2 11^T. Its inverse solves sum_k 1/(t - y_k) + 1/t = 1 for t = 1/s by a vectorised
  Newton iteration in u = t - max(0, max_k y_k), whose root lies in [1, d + 1] and is approached monotonically.
- ``EntropicBox`` / ``EntropicSimplex``: phi = sum x log x (+ slack terms); grad phi* is the sigmoid / softmax. Not
  self-concordant: under Euler-Maruyama the dual noise 1/sqrt(x(1-x)) outgrows the dual position log(1/x) near
  the boundary and particles stick to it (in float64 they reach it). Offered for comparison, not as the default.

Noise: ``hess_sqrt_mul(x, xi)`` returns A(x) xi with A A^T = Hess phi(x); xi has ``noise_dim`` coordinates (d for
boxes; d + 1 for simplices, whose Hessian is diagonal plus rank one: A xi = diag(h) xi_(1:d) + c xi_(d+1) 1).
``local_norm_sq(x, v) = v^T Hess phi(x)^(-1) v`` measures a dual step in the Dikin metric (stability check).
"""

from __future__ import annotations

import torch

from icml26.probabilistic.mmfld.domains import Box, Domain, DomainError, Simplex

__all__ = ["BoxLogBarrier", "EntropicBox", "EntropicSimplex", "MirrorMap", "SimplexLogBarrier", "default_mirror"]


class MirrorMap:
    """phi on ``domain``: grad, grad_conj, hess (dense, for checks), hess_sqrt_mul, local_norm_sq."""

    domain: Domain
    self_concordant: bool = True

    @property
    def dim(self) -> int:
        return self.domain.dim

    @property
    def noise_dim(self) -> int:
        return self.domain.dim

    def value(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def grad_conj(self, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def hess(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def hess_sqrt_mul(self, x: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def local_norm_sq(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.domain!r})"


def _require(domain: Domain, kind: type, mirror: str) -> None:
    if not isinstance(domain, kind):
        raise DomainError(f"{mirror} is defined on a {kind.__name__}, not on {domain!r}")


# --------------------------------------------------------------------------------------------------- boxes
class _BoxMirror(MirrorMap):
    def __init__(self, lo: float | list[float] | Box = 0.0, hi: float | list[float] = 1.0, dim: int | None = None):
        if isinstance(lo, Domain):
            _require(lo, Box, type(self).__name__)
        self.domain = lo if isinstance(lo, Box) else Box(lo, hi, dim)

    def _u(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        box = self.domain
        return x - box.lo, box.hi - x

    def hess(self, x: torch.Tensor) -> torch.Tensor:
        return torch.diag_embed(self._hess_diag(x))

    def hess_sqrt_mul(self, x: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(self._hess_diag(x)) * xi

    def local_norm_sq(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return (v * v / self._hess_diag(x)).sum(dim=-1)

    def _hess_diag(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class BoxLogBarrier(_BoxMirror):
    """The log-barrier of [lo, hi]^d: BoxLogBarrier(0.0, 1.0, dim=2) or BoxLogBarrier(Box(...))."""

    def value(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self._u(x)
        return -(torch.log(a) + torch.log(b)).sum(dim=-1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self._u(x)
        return 1 / b - 1 / a

    def _hess_diag(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self._u(x)
        return 1 / (a * a) + 1 / (b * b)

    def grad_conj(self, y: torch.Tensor) -> torch.Tensor:
        box = self.domain
        v = box.width * y
        near = 2 / (torch.sqrt(v * v + 4) + v.abs() + 2)  # the smaller of u and 1 - u, without cancellation
        return torch.where(v <= 0, box.lo + box.width * near, box.hi - box.width * near)


class EntropicBox(_BoxMirror):
    """phi = sum (x - lo) log(x - lo) + (hi - x) log(hi - x): grad phi = logit, grad phi* = sigmoid."""

    self_concordant = False

    def value(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self._u(x)
        return (a * torch.log(a) + b * torch.log(b)).sum(dim=-1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self._u(x)
        return torch.log(a) - torch.log(b)

    def _hess_diag(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self._u(x)
        return 1 / a + 1 / b

    def grad_conj(self, y: torch.Tensor) -> torch.Tensor:
        box = self.domain
        return torch.where(y <= 0, box.lo + box.width * torch.sigmoid(y), box.hi - box.width * torch.sigmoid(-y))


# ------------------------------------------------------------------------------------------------ simplices
class _SimplexMirror(MirrorMap):
    def __init__(self, dim: int | Simplex = 2):
        if isinstance(dim, Domain):
            _require(dim, Simplex, type(self).__name__)
        self.domain = dim if isinstance(dim, Simplex) else Simplex(dim)

    @property
    def noise_dim(self) -> int:
        return self.domain.dim + 1

    def hess(self, x: torch.Tensor) -> torch.Tensor:
        diag, rank_one = self._hess_parts(x)
        ones = torch.ones(self.dim, dtype=x.dtype)
        return torch.diag_embed(diag) + rank_one[..., None, None] * torch.outer(ones, ones)

    def hess_sqrt_mul(self, x: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
        diag, rank_one = self._hess_parts(x)
        return torch.sqrt(diag) * xi[..., :-1] + torch.sqrt(rank_one).unsqueeze(-1) * xi[..., -1:]

    def local_norm_sq(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        diag, rank_one = self._hess_parts(x)  # Sherman-Morrison for (D + c 1 1^T)^(-1)
        dv = v / diag
        return (v * dv).sum(dim=-1) - dv.sum(dim=-1) ** 2 / (1 / rank_one + (1 / diag).sum(dim=-1))

    def _hess_parts(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError


class SimplexLogBarrier(_SimplexMirror):
    """The log-barrier of the corner simplex {x > 0, sum x < 1} in R^d."""

    def __init__(self, dim: int | Simplex = 2, *, tol: float = 1e-13, max_iter: int = 100):
        super().__init__(dim)
        self.tol, self.max_iter = tol, max_iter

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return -torch.log(x).sum(dim=-1) - torch.log(Simplex.slack(x))

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return 1 / Simplex.slack(x).unsqueeze(-1) - 1 / x

    def _hess_parts(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return 1 / (x * x), 1 / Simplex.slack(x) ** 2

    def grad_conj(self, y: torch.Tensor) -> torch.Tensor:
        # x_k = 1/(t - y_k), slack = 1/t, with sum_k 1/(t - y_k) + 1/t = 1. Write t = m + u, m = max(0, max_k y_k):
        # the gaps g_k = m - y_k >= 0 and m are exact, and g(u) = sum 1/(u + g_k) + 1/(u + m) - 1 is convex and
        # decreasing with g(1) >= 0 >= g(d + 1), so Newton from u = 1 increases monotonically to the root.
        m = y.amax(dim=-1, keepdim=True).clamp_min(0)
        gaps = torch.cat([m - y, m], dim=-1)
        u = torch.ones_like(m)
        for _ in range(self.max_iter):
            inv = 1 / (u + gaps)
            g = inv.sum(dim=-1, keepdim=True) - 1
            step = g / (inv * inv).sum(dim=-1, keepdim=True)
            u = u + step
            if bool((step.abs() <= self.tol * u).all()):
                break
        else:  # pragma: no cover - quadratic convergence makes this unreachable for finite y
            raise FloatingPointError("SimplexLogBarrier.grad_conj: Newton did not converge (non-finite dual point?)")
        return (1 / (u + gaps))[..., :-1]


class EntropicSimplex(_SimplexMirror):
    """phi = sum_{k <= d+1} x_k log x_k (negative entropy): grad phi* is the softmax of (y, 0)."""

    self_concordant = False

    def value(self, x: torch.Tensor) -> torch.Tensor:
        s = Simplex.slack(x)
        return (x * torch.log(x)).sum(dim=-1) + s * torch.log(s)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x) - torch.log(Simplex.slack(x)).unsqueeze(-1)

    def _hess_parts(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return 1 / x, 1 / Simplex.slack(x)

    def grad_conj(self, y: torch.Tensor) -> torch.Tensor:
        return self.domain.from_unconstrained(y)


def default_mirror(domain: Domain) -> MirrorMap:
    """The log-barrier of a box or a simplex; any other domain is unsupported."""
    if isinstance(domain, Box):
        return BoxLogBarrier(domain)
    if isinstance(domain, Simplex):
        return SimplexLogBarrier(domain)
    raise DomainError(f"no mirror map for {domain!r}: supported domains are Box and Simplex")
