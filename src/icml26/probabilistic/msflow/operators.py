"""Linear forward operators y = A x on images [B, C, H, W], in deepinv's duck type (``A``, ``A_adjoint``).

Every operator also solves the data step of MS-Flow, the proximal problem

    prox(u, y, w) = argmin_x  w/2 ||A x - y||^2 + 1/2 ||x - u||^2  =  (w A^T A + I)^{-1} (w A^T y + u),

in closed form where A A^T is a multiple of the identity (masks, average pooling) or by an eigendecomposition of
the dense A^T A (the CT matrix). ``norm_sq`` is ||A||_2^2, the largest eigenvalue of A^T A (gradient step sizes).
Any object with ``A`` and ``A_adjoint`` works with the solvers (:func:`as_operator` wraps it, with a conjugate
gradient prox), so deepinv physics drop in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["AvgPoolSR", "Inpainting", "LinearOperator", "RadonCT", "as_operator", "random_mask"]


class LinearOperator:
    """Base class: subclasses define ``A`` and ``A_adjoint``; ``prox`` defaults to conjugate gradients."""

    image_shape: tuple[int, ...]
    norm_sq: float = 1.0

    def A(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def A_adjoint(self, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.A(x)

    def prox(self, u: torch.Tensor, y: torch.Tensor, w: float, iters: int = 50) -> torch.Tensor:
        """(w A^T A + I)^{-1} (w A^T y + u) by conjugate gradients (batched; exact for small problems)."""
        b = w * self.A_adjoint(y) + u

        def apply(x: torch.Tensor) -> torch.Tensor:
            return w * self.A_adjoint(self.A(x)) + x

        x = u.clone()
        r = b - apply(x)
        p = r.clone()
        rs = _bdot(r, r)
        for _ in range(iters):
            ap = apply(p)
            alpha = rs / _bdot(p, ap).clamp_min(1e-30)
            x = x + _bcast(alpha, x) * p
            r = r - _bcast(alpha, x) * ap
            rs_new = _bdot(r, r)
            if float(rs_new.max()) < 1e-20:
                break
            p = r + _bcast(rs_new / rs.clamp_min(1e-30), p) * p
            rs = rs_new
        return x

    def check_image(self, x: torch.Tensor, name: str = "x") -> None:
        if tuple(x.shape[1:]) != tuple(self.image_shape):
            raise ValueError(
                f"{name} has shape {tuple(x.shape)}; {type(self).__name__} acts on images [B, *{self.image_shape}]"
            )


def _bdot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * b).reshape(a.shape[0], -1).sum(1)


def _bcast(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return v.reshape(-1, *([1] * (like.ndim - 1)))


def random_mask(image_shape: tuple[int, ...], missing: float, rng: np.random.Generator) -> np.ndarray:
    """A 0/1 mask that hides round(missing * pixels) pixels chosen uniformly (shared across channels)."""
    if not 0.0 <= missing < 1.0:
        raise ValueError(f"missing must be in [0, 1), got {missing}")
    h, w = image_shape[-2:]
    flat = np.ones(h * w, dtype=np.float32)
    flat[rng.choice(h * w, size=round(missing * h * w), replace=False)] = 0.0
    return np.broadcast_to(flat.reshape(h, w), image_shape).copy()


class Inpainting(LinearOperator):
    """y = m * x with a 0/1 mask m of the image's shape (A = A^T, A A^T = diag(m))."""

    def __init__(self, mask: Any):
        m = torch.as_tensor(np.asarray(mask, dtype=np.float32))
        if m.ndim == 2:
            m = m[None]
        if not bool(((m == 0) | (m == 1)).all()):
            raise ValueError("an inpainting mask must hold only 0 and 1")
        self.mask = m
        self.image_shape = tuple(m.shape)

    def A(self, x: torch.Tensor) -> torch.Tensor:
        self.check_image(x)
        return self.mask * x

    def A_adjoint(self, y: torch.Tensor) -> torch.Tensor:
        return self.mask * y

    def prox(self, u: torch.Tensor, y: torch.Tensor, w: float, iters: int = 0) -> torch.Tensor:
        return (w * self.mask * y + u) / (w * self.mask + 1.0)


class AvgPoolSR(LinearOperator):
    """Super-resolution: y = average of each ``factor`` x ``factor`` block (A A^T = I / factor^2)."""

    def __init__(self, image_shape: tuple[int, ...], factor: int = 2):
        self.image_shape = tuple(image_shape)
        h, w = self.image_shape[-2:]
        if factor < 1 or h % factor or w % factor:
            raise ValueError(f"factor {factor} must divide the image size {h}x{w}")
        self.factor = int(factor)
        self.norm_sq = 1.0 / factor**2

    def A(self, x: torch.Tensor) -> torch.Tensor:
        self.check_image(x)
        return F.avg_pool2d(x, self.factor)

    def A_adjoint(self, y: torch.Tensor) -> torch.Tensor:
        return F.interpolate(y, scale_factor=self.factor, mode="nearest") / self.factor**2

    def prox(self, u: torch.Tensor, y: torch.Tensor, w: float, iters: int = 0) -> torch.Tensor:
        # Woodbury with A A^T = c I: (w A^T A + I)^{-1} b = b - w A^T (A b) / (1 + w c)
        b = w * self.A_adjoint(y) + u
        return b - w * self.A_adjoint(self.A(b)) / (1.0 + w * self.norm_sq)


class RadonCT(LinearOperator):
    """Few-angle CT: a dense Radon matrix built by ``skimage.transform.radon`` on basis images, scaled so that
    ||A||_2 = 1 (``scale`` is the factor divided out; ``fbp`` undoes it for filtered back-projection).

    ``angles`` equally spaced projection angles in [0, 180); ``circle=False`` keeps the image corners.
    """

    def __init__(self, n: int = 8, angles: int = 6):
        from skimage.transform import radon

        if n < 2 or angles < 1:
            raise ValueError(f"need n >= 2 and angles >= 1, got n={n}, angles={angles}")
        self.n, self.angles = int(n), int(angles)
        self.theta = np.linspace(0.0, 180.0, self.angles, endpoint=False)
        self.image_shape = (1, self.n, self.n)
        basis = np.eye(n * n).reshape(n * n, n, n)
        cols = [radon(b, theta=self.theta, circle=False).ravel() for b in basis]
        self.sino_shape = radon(basis[0], theta=self.theta, circle=False).shape
        mat = np.stack(cols, axis=1)  # [rows, n*n]
        self.scale = float(np.linalg.norm(mat, 2))
        self.matrix = torch.as_tensor(mat / self.scale, dtype=torch.float32)
        gram = (self.matrix.T @ self.matrix).double()
        evals, evecs = torch.linalg.eigh(gram)
        self._evals, self._evecs = evals.clamp_min(0.0), evecs
        self.norm_sq = 1.0

    def A(self, x: torch.Tensor) -> torch.Tensor:
        self.check_image(x)
        return x.reshape(x.shape[0], -1) @ self.matrix.T

    def A_adjoint(self, y: torch.Tensor) -> torch.Tensor:
        return (y @ self.matrix).reshape(y.shape[0], *self.image_shape)

    def prox(self, u: torch.Tensor, y: torch.Tensor, w: float, iters: int = 0) -> torch.Tensor:
        b = (w * self.A_adjoint(y) + u).reshape(u.shape[0], -1).double()
        coef = (b @ self._evecs) / (w * self._evals + 1.0)
        return (coef @ self._evecs.T).to(u.dtype).reshape(u.shape)

    def fbp(self, y: torch.Tensor) -> torch.Tensor:
        """Filtered back-projection (``skimage.transform.iradon``, ramp filter): the classical baseline."""
        from skimage.transform import iradon

        sino = (y.detach().double().numpy() * self.scale).reshape(-1, *self.sino_shape)
        out = [iradon(s, theta=self.theta, circle=False, output_size=self.n) for s in sino]
        return torch.as_tensor(np.stack(out)[:, None], dtype=torch.float32)


class _Wrapped(LinearOperator):
    """An outside operator (e.g. deepinv physics) with the conjugate-gradient prox of the base class."""

    def __init__(self, op: Any, image_shape: tuple[int, ...]):
        self._op, self.image_shape = op, tuple(image_shape)
        self.norm_sq = float(getattr(op, "norm_sq", 1.0))

    def A(self, x: torch.Tensor) -> torch.Tensor:
        return self._op.A(x)

    def A_adjoint(self, y: torch.Tensor) -> torch.Tensor:
        return self._op.A_adjoint(y)


def as_operator(op: Any, image_shape: tuple[int, ...]) -> LinearOperator:
    """``op`` itself if it is one of ours, else a wrapper; one clear error if it lacks ``A`` or ``A_adjoint``."""
    if isinstance(op, LinearOperator):
        if tuple(op.image_shape) != tuple(image_shape):
            raise ValueError(f"the operator acts on images {op.image_shape}, the prior on {tuple(image_shape)}")
        return op
    missing = [name for name in ("A", "A_adjoint") if not callable(getattr(op, name, None))]
    if missing:
        raise TypeError(
            f"the forward operator {type(op).__name__} has no callable {' or '.join(missing)}; MS-Flow and D-Flow "
            "need a linear operator with A(x) and its adjoint A_adjoint(y) (deepinv's physics interface)"
        )
    return _Wrapped(op, image_shape)
