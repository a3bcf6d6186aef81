"""The bands a user would otherwise pick, from MAPIE 1.x itself, on the same splits and base predictor.

Every baseline gets the same pre-fitted point predictor m, learns whatever it learns on the band-learning split
D_tr, and is calibrated by MAPIE on the same D_cal:

- ``split_abs_sym`` / ``split_abs_asym``: ``SplitConformalRegressor`` with ``AbsoluteConformityScore(sym=True|False)``
  (nothing is learned on D_tr);
- ``residual_normalised_sym`` / ``_asym``: ``ResidualNormalisedScore(residual_estimator, prefit=True, sym=...)``, the
  residual model (gradient boosting on log |r|, exponentiated, as MAPIE prescribes for a prefit one) fitted on D_tr;
- ``cqr``: ``ConformalizedQuantileRegressor(prefit=True)`` with three gradient-boosting quantile regressors of the
  residual y - m(x) at alpha/2, 1 - alpha/2 and 1/2, fitted on D_tr and offset by m (so CQR shares the base
  predictor), ``predict_interval(symmetric_correction=False)`` (asymmetric CQR).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.ensemble import GradientBoostingRegressor

__all__ = ["BASELINES", "LogResidualRegressor", "OffsetRegressor", "ShiftedRegressor", "mapie_bands"]

BASELINES = ("split_abs_sym", "split_abs_asym", "residual_normalised_sym", "residual_normalised_asym", "cqr")


def _boosting(random_state: int, **kw: Any) -> GradientBoostingRegressor:
    """The small-sample gradient boosting every learned baseline uses (fixed before any run)."""
    return GradientBoostingRegressor(
        n_estimators=100, max_depth=2, learning_rate=0.1, min_samples_leaf=10, random_state=random_state, **kw
    )


class ShiftedRegressor(RegressorMixin, BaseEstimator):
    """A fitted predictor plus a known shift: m(x) + shift(x) (a deliberately biased predictor)."""

    def __init__(self, predictor: Any = None, shift: Any = None) -> None:
        self.predictor = predictor
        self.shift = shift

    def fit(self, X: Any, y: Any) -> ShiftedRegressor:
        """Nothing to learn: the predictor is already fitted."""
        return self

    def __sklearn_is_fitted__(self) -> bool:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self.predictor)
        return True

    @property
    def n_features_in_(self) -> int:
        """The wrapped predictor's (so that MAPIE and scikit-learn see a fitted estimator)."""
        return int(self.predictor.n_features_in_)

    def predict(self, X: Any) -> np.ndarray:
        X = np.asarray(X, float)
        base = np.asarray(self.predictor.predict(X), float)
        return base if self.shift is None else base + self.shift(X)


class OffsetRegressor(RegressorMixin, BaseEstimator):
    """m(x) + g(x), with g a regressor of the residual y - m(x) fitted in ``fit`` (m stays as given)."""

    def __init__(self, predictor: Any = None, residual_model: Any = None) -> None:
        self.predictor = predictor
        self.residual_model = residual_model

    def fit(self, X: Any, y: Any) -> OffsetRegressor:
        X, y = np.asarray(X, float), np.asarray(y, float)
        self.n_features_in_ = X.shape[1]
        self.residual_model_ = clone(self.residual_model).fit(X, y - self.predictor.predict(X))
        return self

    def predict(self, X: Any) -> np.ndarray:
        X = np.asarray(X, float)
        return np.asarray(self.predictor.predict(X), float) + self.residual_model_.predict(X)


class LogResidualRegressor(RegressorMixin, BaseEstimator):
    """Fits a regressor to log|r| and predicts exp(prediction): a prefit residual model for MAPIE's
    ``ResidualNormalisedScore`` (which expects the scale itself from a prefit model)."""

    def __init__(self, model: Any = None, eps: float = 1e-8) -> None:
        self.model = model
        self.eps = eps

    def fit(self, X: Any, abs_residuals: Any) -> LogResidualRegressor:
        target = np.log(np.maximum(np.abs(np.asarray(abs_residuals, float)), self.eps))
        self.n_features_in_ = np.asarray(X).shape[1]
        self.model_ = clone(self.model).fit(np.asarray(X, float), target)
        return self

    def predict(self, X: Any) -> np.ndarray:
        return np.exp(self.model_.predict(np.asarray(X, float)))


def _as_band(intervals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    iv = np.asarray(intervals, float)
    return iv[:, 0, 0], iv[:, 1, 0]


def mapie_bands(
    predictor: Any,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_cal: np.ndarray,
    y_cal: np.ndarray,
    X_test: np.ndarray,
    *,
    confidence_level: float = 0.9,
    random_state: int = 0,
    names: tuple[str, ...] = BASELINES,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(lower, upper) on X_test of each named MAPIE baseline (see the module docstring)."""
    try:
        from mapie.conformity_scores import AbsoluteConformityScore, ResidualNormalisedScore
        from mapie.regression import ConformalizedQuantileRegressor, SplitConformalRegressor
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the MAPIE baselines need mapie: pip install 'icml26[stats]'") from exc

    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def split(score: Any) -> tuple[np.ndarray, np.ndarray]:
        reg = SplitConformalRegressor(predictor, confidence_level=confidence_level, conformity_score=score, prefit=True)
        return _as_band(reg.conformalize(X_cal, y_cal).predict_interval(X_test)[1])

    for sym, suffix in ((True, "sym"), (False, "asym")):
        if f"split_abs_{suffix}" in names:
            out[f"split_abs_{suffix}"] = split(AbsoluteConformityScore(sym=sym))
    if any(n.startswith("residual_normalised") for n in names):
        residuals = np.abs(y_train - predictor.predict(X_train))
        scale = LogResidualRegressor(_boosting(random_state)).fit(X_train, residuals)
        for sym, suffix in ((True, "sym"), (False, "asym")):
            if f"residual_normalised_{suffix}" in names:
                score = ResidualNormalisedScore(residual_estimator=scale, prefit=True, sym=sym)
                out[f"residual_normalised_{suffix}"] = split(score)
    if "cqr" in names:
        alpha = 1.0 - confidence_level
        quantiles = (alpha / 2, 1 - alpha / 2, 0.5)  # MAPIE's order: lower, upper, median
        models = [
            OffsetRegressor(predictor, _boosting(random_state, loss="quantile", alpha=q)).fit(X_train, y_train)
            for q in quantiles
        ]
        cqr = ConformalizedQuantileRegressor(models, confidence_level=confidence_level, prefit=True)
        out["cqr"] = _as_band(cqr.conformalize(X_cal, y_cal).predict_interval(X_test, symmetric_correction=False)[1])
    return out
