"""Scikit-learn-style estimators: the NCP / eNCP regressor with conditional CDF, quantiles and intervals, and the
(equivariant) MLP regression baseline. Every estimator shares the same data frame, optimiser and step budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from icml26.stats.equivariant_spectral.groups import GroupError, Representation
from icml26.stats.equivariant_spectral.layers import equivariant_mlp, hidden_representation, mlp
from icml26.stats.equivariant_spectral.ncp import NCP, EquivariantNCP

__all__ = ["EMLPRegressor", "NCPConditionalCDF", "NCPRegressor"]


@dataclass(frozen=True)
class _Frame:
    """Shift by the invariant part of the mean and divide by one scalar scale: both commute with an orthogonal
    group action, so standardising never breaks equivariance (a per-coordinate scale would, e.g. for D3)."""

    shift_x: np.ndarray
    scale_x: float
    shift_y: float
    scale_y: float

    @classmethod
    def of(cls, X: np.ndarray, y: np.ndarray, rep_x: Representation | None, rep_y: Representation | None) -> _Frame:
        mx, my = X.mean(0), np.array([y.mean()])
        if rep_x is not None:
            mx, my = rep_x.invariant_projector() @ mx, rep_y.invariant_projector() @ my
        sx = float(np.sqrt(((X - mx) ** 2).sum(1).mean() / X.shape[1]))
        sy = float(np.sqrt(((y - my[0]) ** 2).mean()))
        return cls(mx, sx if sx > 0 else 1.0, float(my[0]), sy if sy > 0 else 1.0)

    def x(self, X: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
        return torch.as_tensor((X - self.shift_x) / self.scale_x, dtype=dtype)

    def y(self, y: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
        return torch.as_tensor((y - self.shift_y) / self.scale_y, dtype=dtype)[:, None]


def _check_reps(rep_x: Representation | None, rep_y: Representation | None) -> None:
    if (rep_x is None) != (rep_y is None):
        raise GroupError("give both rep_x and rep_y (equivariant model) or neither (plain model)")
    if rep_x is not None:
        if not isinstance(rep_x, Representation) or not isinstance(rep_y, Representation):
            raise GroupError("rep_x and rep_y must be Representation objects")
        if rep_x.group is not rep_y.group:
            raise GroupError("rep_x and rep_y must be representations of the same group")
        if rep_y.dim != 1:
            raise GroupError(f"the target is scalar: rep_y must be 1-dimensional, got dimension {rep_y.dim}")


def _check_data(X: object, y: object | None, rep_x: Representation | None, d: int | None = None) -> tuple:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array [n_samples, n_features], got shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError("X is empty: need at least one sample")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or inf")
    if rep_x is not None and X.shape[1] != rep_x.dim:
        raise ValueError(f"X has {X.shape[1]} features but rep_x acts on dimension {rep_x.dim}")
    if d is not None and X.shape[1] != d:
        raise ValueError(f"X has {X.shape[1]} features; the estimator was fitted on {d}")
    if y is None:
        return X, None
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array of scalar targets, got shape {y.shape}")
    if len(y) != len(X):
        raise ValueError(f"X and y have different numbers of samples: {len(X)} and {len(y)}")
    if len(y) < 2:
        raise ValueError("need at least 2 samples to fit")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or inf")
    return X, y


def _train(model: nn.Module, loss_fn, n: int, n_steps: int, batch_size: int, lr: float, seed: int) -> np.ndarray:
    """Adam on minibatches drawn without replacement within each pass (same rule for every estimator)."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    batch = min(batch_size, n)
    curve = np.empty(n_steps)
    order, pos = torch.randperm(n, generator=gen), 0
    model.train()
    for step in range(n_steps):
        if pos + batch > n:
            order, pos = torch.randperm(n, generator=gen), 0
        idx = order[pos : pos + batch]
        pos += batch
        loss = loss_fn(idx)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        curve[step] = float(loss.detach())
    model.eval()
    return curve


class _Base:
    def __init__(
        self,
        rep_x: Representation | None = None,
        rep_y: Representation | None = None,
        *,
        width: int = 64,
        depth: int = 2,
        n_steps: int = 1500,
        batch_size: int = 256,
        lr: float = 1e-3,
        random_state: int | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.rep_x, self.rep_y = rep_x, rep_y
        self.width, self.depth, self.n_steps, self.batch_size, self.lr = width, depth, n_steps, batch_size, lr
        self.random_state, self.dtype = random_state, dtype

    def _validate_params(self) -> None:
        _check_reps(self.rep_x, self.rep_y)
        for name in ("width", "depth", "n_steps", "batch_size"):
            if not isinstance(getattr(self, name), int | np.integer) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")

    @property
    def equivariant(self) -> bool:
        return self.rep_x is not None

    def _seed(self) -> int:
        return 0 if self.random_state is None else int(self.random_state)

    def _width(self) -> int:
        """The hidden width, rounded up to a multiple of |G| when some model of the comparison is equivariant."""
        if self.rep_x is None:
            return self.width
        return hidden_representation(self.rep_x, self.width).dim

    def _check_fitted(self) -> None:
        if not hasattr(self, "frame_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet: call fit(X, y) first")


class EMLPRegressor(_Base):
    """Least-squares regression E[y | x] by an MLP; equivariant (eMLP) when ``rep_x`` and ``rep_y`` are given."""

    def fit(self, X: object, y: object) -> EMLPRegressor:
        self._validate_params()
        X, y = _check_data(X, y, self.rep_x)
        self.frame_ = _Frame.of(X, y, self.rep_x, self.rep_y)
        torch.manual_seed(self._seed())
        width = self._width()
        net = (
            equivariant_mlp(self.rep_x, self.rep_y, width, self.depth)
            if self.equivariant
            else mlp(X.shape[1], 1, width, self.depth)
        ).to(self.dtype)
        Xt, yt = self.frame_.x(X, self.dtype), self.frame_.y(y, self.dtype)
        self.loss_curve_ = _train(
            net,
            lambda i: ((net(Xt[i]) - yt[i]) ** 2).mean(),
            len(X),
            self.n_steps,
            self.batch_size,
            self.lr,
            self._seed(),
        )
        self.model_, self.n_features_in_ = net, X.shape[1]
        return self

    @torch.no_grad()
    def predict(self, X: object) -> np.ndarray:
        self._check_fitted()
        X, _ = _check_data(X, None, self.rep_x, self.n_features_in_)
        out = self.model_(self.frame_.x(X, self.dtype))[:, 0].double().numpy()
        return out * self.frame_.scale_y + self.frame_.shift_y


class NCPConditionalCDF:
    """Conditional CDF of a scalar target from a trained NCP: F(t | x) on a quantile grid of the training targets.

    F(t_m | x) = F_Y(t_m) + u(x)^T S Cov(v, 1{Y <= t_m}), clipped to [0, 1] and made monotone by a running maximum.
    """

    def __init__(self, model: NCP, y_train: torch.Tensor, n_grid: int = 100) -> None:
        if n_grid < 2:
            raise ValueError(f"n_grid must be at least 2, got {n_grid}")
        y = model.y_orbit(y_train if y_train.ndim == 2 else y_train[:, None])
        self.model = model
        self.grid = torch.quantile(y[:, 0].double(), torch.linspace(0, 1, n_grid, dtype=torch.float64)).to(y.dtype)
        z = torch.cat([y, (y <= self.grid[None, :]).to(y.dtype)], dim=1)  # column 0: y itself (the regression)
        model.fit_linear_decoder(y, z, y_first=True)

    @torch.no_grad()
    def mean(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.conditional_expectation(x)[:, 0]

    @torch.no_grad()
    def cdf_grid(self, x: torch.Tensor) -> torch.Tensor:
        """[n, n_grid]: the monotone conditional CDF at the grid points."""
        F = self.model.conditional_expectation(x)[:, 1:].clamp(0.0, 1.0)
        return torch.cummax(F, dim=1).values

    @torch.no_grad()
    def quantiles(self, x: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """[n, len(q)]: the smallest grid point with F >= q (generalised inverse of the monotone grid CDF)."""
        F = self.cdf_grid(x)
        hit = F[:, None, :] >= q[None, :, None]
        idx = torch.where(hit.any(-1), hit.to(torch.int8).argmax(-1), len(self.grid) - 1)
        return self.grid[idx]

    @torch.no_grad()
    def interval(self, x: torch.Tensor, alpha: float, chunk: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
        """The shortest grid interval [t_a, t_b] with F(t_b | x) - F(t_a | x) >= 1 - alpha (the whole grid if none)."""
        parts = [self._interval(self.cdf_grid(x[i : i + chunk]), alpha) for i in range(0, len(x), chunk)]
        return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])

    def _interval(self, F: torch.Tensor, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
        width = self.grid[None, :] - self.grid[:, None]  # [a, b]
        ok = (F[:, None, :] - F[:, :, None]) >= 1 - alpha - 1e-12  # [n, a, b]
        cost = torch.where(ok, width[None], torch.full_like(width[None], float("inf")))
        flat = cost.reshape(len(F), -1).argmin(1)
        a, b = flat // len(self.grid), flat % len(self.grid)
        none = ~ok.reshape(len(F), -1).any(1)
        a, b = torch.where(none, 0, a), torch.where(none, len(self.grid) - 1, b)
        return self.grid[a], self.grid[b]


class NCPRegressor(_Base):
    """NCP (or eNCP with ``rep_x``/``rep_y``) as an estimator: ``fit``, ``predict`` (E[y | x]), ``predict_cdf``,
    ``predict_quantiles`` and ``predict_interval``, all from one trained model.

    Defaults follow the official recipe's essentials: rank 32 (rounded up to a multiple of |G|), S initialised at I
    with spectral norm <= 1, orthonormality weight 0.1, centring weight 0.01, EMA momentum 0.995, a 100-point grid.
    """

    def __init__(
        self,
        rep_x: Representation | None = None,
        rep_y: Representation | None = None,
        *,
        rank: int = 32,
        orth_reg: float = 0.1,
        centering_reg: float = 0.01,
        momentum: float = 0.995,
        n_grid: int = 100,
        **kwargs,
    ) -> None:
        super().__init__(rep_x, rep_y, **kwargs)
        self.rank, self.orth_reg, self.centering_reg, self.momentum, self.n_grid = (
            rank,
            orth_reg,
            centering_reg,
            momentum,
            n_grid,
        )

    def _build(self, d: int) -> NCP:
        reg = dict(orth_reg=self.orth_reg, centering_reg=self.centering_reg, momentum=self.momentum)
        width = self._width()
        if self.equivariant:
            return EquivariantNCP(self.rep_x, self.rep_y, self.rank, width, self.depth, **reg)
        return NCP(mlp(d, self.rank, width, self.depth), mlp(1, self.rank, width, self.depth), self.rank, **reg)

    def fit(self, X: object, y: object) -> NCPRegressor:
        self._validate_params()
        if not isinstance(self.rank, int | np.integer) or self.rank < 1:
            raise ValueError(f"rank must be a positive integer, got {self.rank!r}")
        X, y = _check_data(X, y, self.rep_x)
        self.frame_ = _Frame.of(X, y, self.rep_x, self.rep_y)
        torch.manual_seed(self._seed())
        model = self._build(X.shape[1]).to(self.dtype)
        Xt, yt = self.frame_.x(X, self.dtype), self.frame_.y(y, self.dtype)
        self.loss_curve_ = _train(
            model,
            lambda i: model.training_loss(Xt[i], yt[i]),
            len(X),
            self.n_steps,
            self.batch_size,
            self.lr,
            self._seed(),
        )
        self.model_, self.n_features_in_ = model, X.shape[1]
        self.cdf_ = NCPConditionalCDF(model, yt, self.n_grid)
        return self

    def _x(self, X: object) -> torch.Tensor:
        self._check_fitted()
        X, _ = _check_data(X, None, self.rep_x, self.n_features_in_)
        return self.frame_.x(X, self.dtype)

    def predict(self, X: object) -> np.ndarray:
        """E[y | x] (the linear decoder of y)."""
        x = self._x(X)
        return self.cdf_.mean(x).double().numpy() * self.frame_.scale_y + self.frame_.shift_y

    @property
    def grid_(self) -> np.ndarray:
        self._check_fitted()
        return self.cdf_.grid.double().numpy() * self.frame_.scale_y + self.frame_.shift_y

    def predict_cdf(self, X: object) -> np.ndarray:
        """[n, n_grid]: F(t | x) at the thresholds ``grid_`` (monotone in t, in [0, 1])."""
        x = self._x(X)
        return self.cdf_.cdf_grid(x).double().numpy()

    def predict_quantiles(self, X: object, q: object) -> np.ndarray:
        q_arr = np.atleast_1d(np.asarray(q, dtype=np.float64))
        if np.any(~np.isfinite(q_arr)) or np.any((q_arr < 0) | (q_arr > 1)):
            raise ValueError(f"quantile levels must lie in [0, 1], got {q_arr}")
        x = self._x(X)
        out = self.cdf_.quantiles(x, torch.as_tensor(q_arr, dtype=self.dtype))
        return out.double().numpy() * self.frame_.scale_y + self.frame_.shift_y

    def predict_interval(self, X: object, alpha: float = 0.1) -> np.ndarray:
        """[n, 2]: the shortest interval of conditional mass >= 1 - alpha."""
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
        x = self._x(X)
        lo, hi = self.cdf_.interval(x, alpha)
        out = torch.stack([lo, hi], dim=1).double().numpy()
        return out * self.frame_.scale_y + self.frame_.shift_y
