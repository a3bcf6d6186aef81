"""``KSoSConformal``: asymmetric kernel-SoS conformal bands with MAPIE 1.x conventions (fit, conformalize,
predict_interval) on a scikit-learn estimator."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import KFold, cross_val_predict
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from icml26.stats.ksos_conformal.kernels import FeatureMap
from icml26.stats.ksos_conformal.selection import (
    LengthScaleSelection,
    SymmetryTest,
    band_values,
    conformal_rank,
    fit_band,
    median_distance,
    select_length_scale,
    signed_scores,
    symmetry_test,
)

__all__ = ["KSoSConformal"]

LENGTH_SCALE_FACTORS = (0.25, 0.5, 1.0, 2.0)  # x the median pairwise distance of the standardised inputs
SYMMETRY_GRID = (0.0, 0.3, 3.0, 30.0)  # mu / reg candidates of the automatic penalty (inf is always added)
MIN_SELECTION = 8  # fewer points on either side of the selection split: no selection (defaults, with a warning)


def _levels(confidence_level: Any) -> tuple[float, ...]:
    levels = (confidence_level,) if isinstance(confidence_level, numbers.Real) else tuple(confidence_level)
    if not levels or not all(isinstance(c, numbers.Real) and 0.0 < float(c) < 1.0 for c in levels):
        raise ValueError(
            f"confidence_level must be a number in (0, 1) or a list of them (alpha = 1 - level in (0, 1)); "
            f"got {confidence_level!r}"
        )
    return tuple(float(c) for c in levels)


class KSoSConformal(RegressorMixin, BaseEstimator):
    """Split-conformal prediction bands [m(x) - q sqrt(f-(x)), m(x) + q sqrt(f+(x))] with kernel-SoS f+- learned by
    the penalised problem of the package docstring, the symmetry penalty chosen by a sign-flip test.

    Follows MAPIE 1.x: ``fit(X, y)`` (the training split) learns the band shape (and fits ``estimator`` when
    ``prefit=False``), ``conformalize(X_conformalize, y_conformalize)`` calibrates q on held-out data,
    ``predict_interval(X)`` returns ``(y_pred, intervals)`` with intervals of shape (n, 2, n_levels).

    Parameters
    ----------
    estimator : regressor, default None (``LinearRegression()``)
        The point predictor m. With ``prefit=True`` it must already be fitted on data *other* than X_train (the
        band is learned from out-of-sample residuals). With ``prefit=False`` it is fitted on X_train and the band
        is learned from ``cv``-fold out-of-fold residuals.
    confidence_level : float or list of floats in (0, 1), default 0.9
    prefit : bool, default True
    length_scale : "hsic" or float, default "hsic"
        RBF length scale on the standardised inputs; "hsic" minimises HSIC(score, X) over
        ``LENGTH_SCALE_FACTORS`` x the median pairwise distance.
    reg : float, default 1e-2
        lambda, the squared-Frobenius penalty on each A (standardised residuals, unit-diagonal kernel).
    symmetry_penalty : "auto" or float >= 0 (``inf``: symmetric kSoS), default "auto"
    symmetry_grid : tuple of floats, default None (``SYMMETRY_GRID`` x reg)
        The mu candidates of the automatic penalty (mu = inf is always a candidate).
    n_components : int or None, default 50
        Nystrom rank (landmarks drawn uniformly from X_train); None uses every training point (exact representer
        form, cost cubic in n).
    slack : "auto", float or None, default "auto"
        Soft constraints with penalty (c / n) * sum of shortfalls (r_i^2 - f(x_i))_+; "auto" is c = 1 / alpha at the
        largest confidence level, for which f+- (mu = 0) target the alpha tail of each side (our reading). None:
        hard constraints f_{s_i}(x_i) >= r_i^2, the interpolation of Liang (2022).
    solver : "dual" (accelerated projected gradient) or "cvxpy" (Clarabel primal reference), default "dual"
    selection_size : float in (0, 1), default 1/3
        Share of X_train held out to select the length scale and the symmetry penalty.
    test_level : float, default 0.1
        Level of the sign-flip test: asymmetry is kept only when the test rejects symmetry at this level.
    n_flips : int, default 199
    cv : int, default 5
        Folds for the out-of-fold residuals when ``prefit=False``.
    tol, max_iter : dual solver's relative duality-gap tolerance and iteration cap.
    random_state : int, RandomState or None
        Seeds the selection split, the Nystrom landmarks, the folds and the sign flips.

    Attributes
    ----------
    estimator_ : the fitted point predictor.
    A_upper_, A_lower_ : (m, m) arrays
        Representer coefficients B+- of A+- = sum_jl B_jl phi(z_j) phi(z_l)^T, so that
        f+-(x) = k(Z, x)^T B+- k(Z, x) in units of y^2 (Z = ``landmarks_``, in standardised inputs).
    landmarks_ : (m, d) array, the anchor points z_j (standardised inputs).
    length_scale_, symmetry_penalty_ : the values used for the final band.
    length_scale_selection_ : LengthScaleSelection or None; symmetry_test_ : SymmetryTest or None.
    solution_ : BandSolution (primal and dual values, iterations, convergence).
    quantile_ : (n_levels,) array, the calibrated q per confidence level (after ``conformalize``).
    conformity_scores_ : (n_cal,) array of S on the conformalization set.
    """

    def __init__(
        self,
        estimator: Any = None,
        confidence_level: float | Sequence[float] = 0.9,
        prefit: bool = True,
        length_scale: str | float = "hsic",
        reg: float = 1e-2,
        symmetry_penalty: str | float = "auto",
        symmetry_grid: tuple[float, ...] | None = None,
        n_components: int | None = 50,
        slack: str | float | None = "auto",
        solver: str = "dual",
        selection_size: float = 1 / 3,
        test_level: float = 0.1,
        n_flips: int = 199,
        cv: int = 5,
        tol: float = 1e-4,
        max_iter: int = 5000,
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.confidence_level = confidence_level
        self.prefit = prefit
        self.length_scale = length_scale
        self.reg = reg
        self.symmetry_penalty = symmetry_penalty
        self.symmetry_grid = symmetry_grid
        self.n_components = n_components
        self.slack = slack
        self.solver = solver
        self.selection_size = selection_size
        self.test_level = test_level
        self.n_flips = n_flips
        self.cv = cv
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    # ------------------------------------------------------------------------------------- checks
    def _check_params(self) -> None:
        _levels(self.confidence_level)
        ell = self.length_scale
        if not (ell == "hsic" or (isinstance(ell, numbers.Real) and 0 < ell < math.inf)):
            raise ValueError(f"length_scale must be 'hsic' or a positive finite number, got {self.length_scale!r}")
        if not (isinstance(self.reg, numbers.Real) and 0 < self.reg < math.inf):
            raise ValueError(f"reg must be a positive finite number, got {self.reg!r}")
        mu = self.symmetry_penalty
        if not (mu == "auto" or (isinstance(mu, numbers.Real) and mu >= 0)):
            raise ValueError(f"symmetry_penalty must be 'auto' or a number >= 0 (inf: symmetric), got {mu!r}")
        n_comp = self.n_components
        if n_comp is not None and not (isinstance(n_comp, numbers.Integral) and n_comp > 0):
            raise ValueError(f"n_components must be a positive integer or None, got {self.n_components!r}")
        slack = self.slack
        if not (slack is None or slack == "auto" or (isinstance(slack, numbers.Real) and slack > 0)):
            raise ValueError(f"slack must be 'auto', a positive number or None (hard constraints), got {self.slack!r}")
        if self.solver not in ("dual", "cvxpy"):
            raise ValueError(f"solver must be 'dual' or 'cvxpy', got {self.solver!r}")
        if not 0 < self.selection_size < 1:
            raise ValueError(f"selection_size must be in (0, 1), got {self.selection_size!r}")
        if not 0 < self.test_level < 1:
            raise ValueError(f"test_level must be in (0, 1), got {self.test_level!r}")
        grid = self.symmetry_grid
        if grid is not None and not (
            len(grid) > 0 and all(isinstance(g, numbers.Real) and 0 <= g < math.inf for g in grid)
        ):
            raise ValueError(f"symmetry_grid must be a non-empty tuple of finite numbers >= 0, got {grid!r}")
        for name, low in (("n_flips", 1), ("cv", 2), ("max_iter", 1)):
            value = getattr(self, name)
            if not (isinstance(value, numbers.Integral) and value >= low):
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if not (isinstance(self.tol, numbers.Real) and 0 < self.tol < 1):
            raise ValueError(f"tol (the dual's relative duality-gap tolerance) must be in (0, 1), got {self.tol!r}")

    def _base_estimator(self) -> Any:
        est = LinearRegression() if self.estimator is None else self.estimator
        if not (hasattr(est, "fit") and hasattr(est, "predict")):
            raise ValueError(f"estimator must be a regressor with fit and predict, got {type(est).__name__}")
        return est

    # ------------------------------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any) -> KSoSConformal:
        """Learn the band shape f+- (and fit the estimator when ``prefit=False``)."""
        self._check_params()
        X_in = X  # the estimator sees the user's own input (a DataFrame keeps its feature names)
        X, y = validate_data(self, X, y, y_numeric=True)
        rs = self.random_state
        fixed = isinstance(rs, numbers.Integral) and rs >= 0
        self._entropy = int(rs) if fixed else int(check_random_state(rs).randint(2**31 - 1))
        n = len(y)
        base = self._base_estimator()
        if self.prefit:
            try:
                check_is_fitted(base)
            except NotFittedError as exc:
                raise NotFittedError(
                    "prefit=True needs an estimator already fitted (on data other than X_train); "
                    "fit it first or pass prefit=False"
                ) from exc
            self.estimator_ = base
            residuals = y - np.asarray(base.predict(X_in), float).reshape(-1)
        else:
            if n < 2:
                raise ValueError(f"prefit=False needs at least 2 samples for out-of-fold residuals; n_samples = {n}")
            self.estimator_ = clone(base).fit(X_in, y)
            folds = KFold(min(self.cv, n), shuffle=True, random_state=self._seed(3))
            residuals = y - np.asarray(cross_val_predict(clone(base), X_in, y, cv=folds), float).reshape(-1)
        if not np.all(np.isfinite(residuals)):
            raise ValueError("the estimator's predictions on X_train are not finite")

        self.x_mean_ = X.mean(0)
        self.x_scale_ = np.where(X.std(0) > 0, X.std(0), 1.0)
        Xs = (X - self.x_mean_) / self.x_scale_
        scale = float(np.sqrt(np.mean(residuals**2)))
        self.residual_scale_ = scale if scale > 0 else 1.0
        r = residuals / self.residual_scale_
        self._select(Xs, r)
        self.features_ = FeatureMap.fit(Xs, self.length_scale_, self.n_components, np.random.default_rng(self._seed(1)))
        self.solution_ = fit_band(self.features_, Xs, r, symmetry_penalty=self.symmetry_penalty_, **self._band_kw())
        s2 = self.residual_scale_**2
        self.n_iter_ = self.solution_.n_iter
        self.landmarks_ = self.features_.anchors
        self.A_upper_ = s2 * self.features_.representer(self.solution_.C_upper)
        self.A_lower_ = s2 * self.features_.representer(self.solution_.C_lower)
        for name in ("quantile_", "conformity_scores_"):
            self.__dict__.pop(name, None)
        return self

    def _seed(self, stream: int) -> int:
        """An independent seed per use (0 split, 1 landmarks, 2 sign flips, 3 folds), fixed within one fit."""
        return int(np.random.SeedSequence([self._entropy, stream]).generate_state(1)[0])

    def _slack_value(self) -> float:
        if self.slack is None:
            return math.inf
        if self.slack == "auto":
            return 1.0 / (1.0 - max(_levels(self.confidence_level)))
        return float(self.slack)

    def _band_kw(self) -> dict[str, Any]:
        return {
            "reg": float(self.reg),
            "slack": self._slack_value(),
            "solver": self.solver,
            "tol": self.tol,
            "max_iter": self.max_iter,
        }

    def _select(self, Xs: np.ndarray, r: np.ndarray) -> None:
        """Length scale by HSIC and mu by the sign-flip test on a split of the training data."""
        self.length_scale_selection_: LengthScaleSelection | None = None
        self.symmetry_test_: SymmetryTest | None = None
        auto_ell, auto_mu = self.length_scale == "hsic", self.symmetry_penalty == "auto"
        self.length_scale_ = median_distance(Xs) if auto_ell else float(self.length_scale)
        self.symmetry_penalty_ = math.inf if auto_mu else float(self.symmetry_penalty)
        if not (auto_ell or auto_mu):
            return
        n = len(r)
        n_sel = round(self.selection_size * n)
        if min(n_sel, n - n_sel) < MIN_SELECTION:
            warnings.warn(
                f"{n} training points are too few to select the length scale / symmetry penalty on a split "
                f"(needs {MIN_SELECTION} per part); using the median distance and the symmetric band",
                UserWarning,
                stacklevel=3,
            )
            return
        perm = np.random.default_rng(self._seed(0)).permutation(n)
        sel, fit = perm[:n_sel], perm[n_sel:]
        band = self._band_kw()
        seed = self._seed(1)
        grid = tuple(f * self.length_scale_ for f in LENGTH_SCALE_FACTORS) if auto_ell else (self.length_scale_,)
        selection, fits = select_length_scale(
            Xs[fit], r[fit], Xs[sel], r[sel], grid, n_components=self.n_components, seed=seed, **band
        )
        if auto_ell:
            self.length_scale_selection_ = selection
            self.length_scale_ = selection.length_scale
        if not auto_mu:
            return
        features, sym = fits[self.length_scale_]
        penalties = (
            tuple(self.symmetry_grid)
            if self.symmetry_grid is not None
            else tuple(g * float(self.reg) for g in SYMMETRY_GRID)
        )
        fu, fl = [], []
        for mu in penalties:
            sol = fit_band(features, Xs[fit], r[fit], symmetry_penalty=mu, **band)
            up, lo = band_values(features, sol, Xs[sel])
            fu.append(up)
            fl.append(lo)
        f_sym, _ = band_values(features, sym, Xs[sel])
        self.symmetry_test_ = symmetry_test(
            r[sel],
            np.array(fu),
            np.array(fl),
            f_sym,
            penalties,
            confidence_level=max(_levels(self.confidence_level)),
            test_level=self.test_level,
            n_flips=self.n_flips,
            rng=np.random.default_rng(self._seed(2)),
        )
        self.symmetry_penalty_ = self.symmetry_test_.selected

    # ------------------------------------------------------------------------------------- band values
    def _standardise(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        check_is_fitted(self, "solution_")
        X = validate_data(self, X, reset=False)
        return X, (X - self.x_mean_) / self.x_scale_

    def predict_scale(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """(sqrt f-(x), sqrt f+(x)) in units of y: the band is m(x) - q sqrt f-(x), m(x) + q sqrt f+(x)."""
        _, Xs = self._standardise(X)
        f_up, f_lo = band_values(self.features_, self.solution_, Xs)
        return self.residual_scale_ * np.sqrt(f_lo), self.residual_scale_ * np.sqrt(f_up)

    def predict(self, X: Any) -> np.ndarray:
        """The point prediction m(x) of the fitted estimator."""
        self._standardise(X)  # validates X against the training data
        return np.asarray(self.estimator_.predict(X), float).reshape(-1)

    # ---------------------------------------------------------------------------------- conformalize
    def conformalize(self, X_conformalize: Any, y_conformalize: Any) -> KSoSConformal:
        """Calibrate q on held-out data: S = r / sqrt f+ (r >= 0) or -r / sqrt f- (r < 0); q = the
        ceil((n + 1) level)-th smallest S. Raises if n is too small for a finite q at some level."""
        check_is_fitted(self, "solution_")
        X, y = validate_data(self, X_conformalize, y_conformalize, reset=False, y_numeric=True)
        m = np.asarray(self.estimator_.predict(X_conformalize), float).reshape(-1)
        levels = _levels(self.confidence_level)
        n = len(y)
        need = max(math.ceil(1.0 / (1.0 - c) - 1.0 - 1e-12) for c in levels)
        if conformal_rank(n, max(levels)) > n:
            raise ValueError(
                f"too few calibration points for confidence_level {max(levels):g}: got {n}, need at least {need} "
                f"(ceil((n + 1) * level) must be <= n for a finite band)"
            )
        f_up, f_lo = band_values(self.features_, self.solution_, (X - self.x_mean_) / self.x_scale_)
        residuals = (y - m) / self.residual_scale_
        scores = signed_scores(residuals, f_up, f_lo)
        ordered = np.sort(scores)
        self.conformity_scores_ = scores
        self.quantile_ = np.array([ordered[conformal_rank(n, c) - 1] for c in levels])
        return self

    def predict_interval(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """(y_pred, intervals): intervals[:, 0, j] lower and intervals[:, 1, j] upper bound at level j."""
        if not hasattr(self, "quantile_"):
            raise NotFittedError("call conformalize(X_conformalize, y_conformalize) before predict_interval")
        y_pred = self.predict(X)
        lower, upper = self.predict_scale(X)
        q = self.quantile_[None, :]
        intervals = np.stack([y_pred[:, None] - q * lower[:, None], y_pred[:, None] + q * upper[:, None]], axis=1)
        return y_pred, intervals

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
