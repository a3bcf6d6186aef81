"""Predictive variational inference (PVI) and, on the same code path, standard ELBO variational inference.

PVI (Lai, Linero & Yao) looks for the distribution q over parameters whose *posterior predictive* is closest to the
data-generating process, as measured by proper scoring rules, instead of the distribution closest to the Bayes
posterior. With a model p(y | theta, x), a prior pi and a variational family q_phi, it maximises

    J(phi) = (1/n) sum_i sum_r w_r S_r( p_phi(. | x_i), y_i )  -  (lambda / n) KL(q_phi || pi),
    p_phi(. | x_i) = E_{theta ~ q_phi} p(. | theta, x_i)          (the per-datum predictive MIXTURE)

where S_r are proper scoring rules (log score, CRPS, energy score, quadratic score; ``scores.py``). The mixture
sits inside the score for every datum: that is the whole method. Moving the log outside,
(1/n) sum_i E_q log p(y_i | theta) - KL/n, is exactly the ELBO (``ELBOVI`` below), whose optimum is the Bayes
posterior: narrow (sd ~ 1/sqrt(n)) and, under misspecification, predictively poor. PVI's q instead acts as an
implicit hierarchical expansion theta_i ~ q: when the data are heterogeneous (overdispersed relative to the model),
q stays wide however large n is, and its spread per parameter diagnoses *which* parameter varies in the population.

Optimisation (our reading of the paper's estimator): K reparameterised draws theta_k = T_phi(eps_k), fresh eps at
every Adam step, shared across a (mini)batch of data; the KL term uses the closed-form entropy of q when it has one.
Likelihood-free models (a simulator only) use the CRPS / energy score of simulated observations, which stay
pathwise-differentiable because the simulator is reparameterised.

Defaults follow the paper file's reading: lambda = 1, K = 64, Adam lr 1e-2. With several rules each rule is divided
by its magnitude at the initial q before weighting (our choice; the prior predictive of a heavy-tailed prior, the
notes' suggestion, makes unstable scales).

References:
    Y. Lai, A. Linero, Y. Yao, "Predictive variational inference: Learn the predictively optimal posterior
    distribution", arXiv:2410.14843 (ICML 2026).
    T. Gneiting, A. Raftery, "Strictly proper scoring rules, prediction, and estimation", JASA 2007.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from icml26.probabilistic.pvi.families import VariationalFamily, make_family
from icml26.probabilistic.pvi.model import ModelSpec, linear_regression
from icml26.probabilistic.pvi.scores import (
    crps_ensemble,
    energy_score,
    gaussian_mixture_quadratic_score,
    mixture_log_score,
)

try:  # scikit-learn conventions (get_params/set_params/clone) when available
    from sklearn.base import BaseEstimator
except ImportError:  # pragma: no cover - scikit-learn is in the probabilistic extra
    BaseEstimator = object  # type: ignore[assignment,misc]

RULES = ("log", "crps", "energy", "quadratic")
_EVAL_CHUNK = 4096  # data points per chunk when scoring with many particles


@dataclass(frozen=True)
class HeterogeneityReport:
    """Per-parameter spread of q against the Bayes posterior's: ratio >> 1 flags population heterogeneity."""

    names: tuple[str, ...]
    sd: np.ndarray
    bayes_sd: np.ndarray | None

    @property
    def ratio(self) -> np.ndarray | None:
        return None if self.bayes_sd is None else self.sd / self.bayes_sd

    def flagged(self, threshold: float = 3.0) -> tuple[str, ...]:
        """Names of parameters whose sd ratio exceeds ``threshold``."""
        ratio = self.ratio
        return () if ratio is None else tuple(n for n, r in zip(self.names, ratio, strict=True) if r > threshold)

    def as_dict(self) -> dict[str, dict[str, float]]:
        ratio = self.ratio
        return {
            n: {"sd": float(self.sd[j])}
            | ({} if ratio is None else {"bayes_sd": float(self.bayes_sd[j]), "ratio": float(ratio[j])})  # type: ignore[index]
            for j, n in enumerate(self.names)
        }


def _as_data(y: Any, X: Any) -> tuple[Tensor, Tensor | None]:
    y_arr = np.asarray(y, dtype=np.float64)
    if y_arr.ndim not in (1, 2) or y_arr.shape[0] == 0:
        raise ValueError(f"y must be a non-empty array of shape [n] or [n, dy], got shape {y_arr.shape}")
    if not np.all(np.isfinite(y_arr)):
        raise ValueError("y contains non-finite values (NaN or inf)")
    X_t = None
    if X is not None:
        X_arr = np.asarray(X, dtype=np.float64)
        if X_arr.ndim == 1:
            X_arr = X_arr[:, None]
        if X_arr.ndim != 2 or X_arr.shape[0] != y_arr.shape[0]:
            raise ValueError(f"X must have shape [n, p] with n = len(y) = {y_arr.shape[0]}, got {X_arr.shape}")
        if not np.all(np.isfinite(X_arr)):
            raise ValueError("X contains non-finite values (NaN or inf)")
        X_t = torch.as_tensor(X_arr, dtype=torch.float32)
    return torch.as_tensor(y_arr, dtype=torch.float32), X_t


class _VariationalEstimator(BaseEstimator):  # type: ignore[misc,valid-type]
    """Shared fit loop, sampling and scoring; subclasses define the per-datum data term."""

    def __init__(
        self,
        model: ModelSpec | None = None,
        family: str | VariationalFamily = "gaussian",
        n_particles: int = 64,
        reg_weight: float = 1.0,
        lr: float = 1e-2,
        n_iter: int = 2000,
        batch_size: int | None = None,
        n_eval_particles: int = 1000,
        init_scale: float = 0.1,
        random_state: int | None = None,
        verbose: bool = False,
    ) -> None:
        self.model = model
        self.family = family
        self.n_particles = n_particles
        self.reg_weight = reg_weight
        self.lr = lr
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.n_eval_particles = n_eval_particles
        self.init_scale = init_scale
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------------------------------------- fitting
    def _check_params(self) -> None:
        if int(self.n_particles) < 2:
            raise ValueError(f"n_particles must be >= 2 (mixture scores need several draws), got {self.n_particles}")
        if self.reg_weight < 0:
            raise ValueError(f"reg_weight must be >= 0, got {self.reg_weight}")
        if self.lr <= 0 or int(self.n_iter) < 1:
            raise ValueError("lr must be > 0 and n_iter >= 1")
        if not self.init_scale > 0:
            raise ValueError(f"init_scale must be > 0, got {self.init_scale}")
        if self.batch_size is not None and int(self.batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1 or None, got {self.batch_size}")

    def _resolve_model(self, X: Tensor | None) -> ModelSpec:
        # default: Gaussian linear regression with unknown noise (intercept only without X)
        model = self.model if self.model is not None else linear_regression(0 if X is None else X.shape[1])
        if model.n_features is not None and (X.shape[1] if X is not None else 0) != model.n_features:
            got = 0 if X is None else X.shape[1]
            raise ValueError(f"the model expects {model.n_features} covariate columns, X has {got}")
        return model

    def _prepare(self, model: ModelSpec, y: Tensor, X: Tensor | None) -> None:
        """Hook: validate rules against the model, set scales (called once before the loop)."""

    def _data_term(self, model: ModelSpec, theta: Tensor, y: Tensor, X: Tensor | None) -> Tensor:
        raise NotImplementedError  # pragma: no cover

    def fit(self, y: Any, X: Any = None) -> _VariationalEstimator:
        """Fit q to data y (shape [n] or [n, dy]) with optional covariates X ([n, p]). Returns self."""
        self._check_params()
        y_t, X_t = _as_data(y, X)
        model = self._resolve_model(X_t)
        n = y_t.shape[0]
        batch = n if self.batch_size is None else min(int(self.batch_size), n)
        seed = 0 if self.random_state is None else int(self.random_state)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            q = make_family(self.family, model.dim, log_scale=math.log(self.init_scale))
            self._prepare(model, y_t, X_t)
            optimiser = torch.optim.Adam(q.parameters(), lr=self.lr)
            # cosine decay to lr/100: Adam's noise floor on the scale parameters otherwise dominates small sds
            schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, int(self.n_iter), eta_min=self.lr / 100)
            losses = np.empty(int(self.n_iter))
            for step in range(int(self.n_iter)):
                if batch < n:
                    idx = torch.randperm(n)[:batch]
                    y_b, X_b = y_t[idx], None if X_t is None else X_t[idx]
                else:
                    y_b, X_b = y_t, X_t
                theta = q.rsample(int(self.n_particles))
                data = self._data_term(model, theta, y_b, X_b).mean()
                loss = -(data - self.reg_weight * _kl_estimate(q, theta, model) / n)
                if not torch.isfinite(loss):
                    raise FloatingPointError(
                        f"the objective became non-finite at step {step}; lower lr or check the model's scale"
                    )
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                optimiser.step()
                schedule.step()
                losses[step] = loss.item()
                if self.verbose and (step + 1) % max(1, int(self.n_iter) // 10) == 0:
                    print(
                        f"[{type(self).__name__}] step {step + 1}/{self.n_iter}  loss {losses[step]:.4f}",
                        file=sys.stderr,
                    )
        self.q_ = q.eval()
        self.model_ = model
        self.loss_curve_ = losses
        self.n_features_in_ = 0 if X_t is None else X_t.shape[1]
        self.param_names_ = model.param_names
        self._y_train, self._X_train = y_t, X_t
        return self

    # ----------------------------------------------------------------------------------------------- sampling
    def _check_fitted(self) -> None:
        if not hasattr(self, "q_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit(y, X) first")

    @torch.no_grad()
    def sample_posterior(self, n: int, seed: int = 0) -> Tensor:
        """n draws from the fitted q, [n, d]."""
        self._check_fitted()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return self.q_.rsample(int(n))

    @torch.no_grad()
    def predictive_sample(self, X: Any = None, n: int = 1000, seed: int = 0) -> Tensor:
        """n draws from the predictive mixture at each covariate row (one theta per draw): [n, n_points(, dy)].

        Without X, the model must not need covariates and one point is returned per call ([n, 1]).
        """
        self._check_fitted()
        X_t = None if X is None else _as_data(np.zeros(len(np.asarray(X))), X)[1]
        points = 1 if X_t is None else X_t.shape[0]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            theta = self.q_.rsample(int(n))
            return _simulate(self.model_, theta, X_t, points)

    # ---------------------------------------------------------------------------------------------- scoring
    @torch.no_grad()
    def score_samples(self, y: Any, X: Any = None, rule: str = "log", seed: int = 0) -> np.ndarray:
        """Per-datum score of the fitted predictive mixture, positively oriented (log, -crps, -energy, quadratic).

        Uses ``n_eval_particles`` draws from q (fixed by ``seed``), in chunks of data.
        """
        self._check_fitted()
        if rule not in RULES:
            raise ValueError(f"unknown scoring rule {rule!r}; choose one of {RULES}")
        y_t, X_t = _as_data(y, X)
        if (0 if X_t is None else X_t.shape[1]) != self.n_features_in_:
            raise ValueError(f"X has {0 if X_t is None else X_t.shape[1]} columns; the fit had {self.n_features_in_}")
        theta = self.sample_posterior(int(self.n_eval_particles), seed=seed)
        return particle_scores(self.model_, theta, y_t, X_t, rule, seed=seed)

    def score(self, y: Any, X: Any = None, rule: str = "log") -> float:
        """Mean held-out score per datum, higher is better (log score, -CRPS, -energy score or quadratic score)."""
        return float(self.score_samples(y, X, rule).mean())

    def heterogeneity_report(self, bayes_sd: Any = None) -> HeterogeneityReport:
        """Per-parameter sd of q, and its ratio to the Bayes posterior sd.

        ``bayes_sd=None`` computes the exact posterior sd for the built-in conjugate models (normal location,
        linear regression) on the training data; pass it explicitly for other models.
        """
        self._check_fitted()
        _, sd = self.q_.moments()
        if bayes_sd is None:
            from icml26.probabilistic.pvi.bayes import exact_posterior

            try:
                X = None if self._X_train is None else self._X_train.double().numpy()
                bayes_sd = exact_posterior(self.model_, self._y_train.double().numpy(), X).sd()
            except (AttributeError, TypeError, ValueError):
                bayes_sd = None
        ref = None if bayes_sd is None else np.asarray(bayes_sd, float).reshape(-1)
        if ref is not None and ref.shape[0] != self.model_.dim:
            raise ValueError(f"bayes_sd has {ref.shape[0]} entries, the model has {self.model_.dim} parameters")
        return HeterogeneityReport(self.param_names_, sd.double().numpy(), ref)


def _kl_estimate(q: VariationalFamily, theta: Tensor, model: ModelSpec) -> Tensor:
    """KL(q || prior) from the particles, with the closed-form entropy of q when available (lower variance)."""
    log_prior = model.prior.log_prob(theta).mean()
    entropy = q.entropy()
    if entropy is None:
        return q.log_prob(theta).mean() - log_prior
    return -entropy - log_prior


def _simulate(model: ModelSpec, theta: Tensor, X: Tensor | None, n_points: int) -> Tensor:
    """One simulated observation per (particle, datum): [K, n(, dy)]; from the Gaussian form if no simulator."""
    eps = torch.randn(theta.shape[0], n_points, model.noise_dim, dtype=theta.dtype)
    if model.simulate is not None:
        sims = model.simulate(theta, X, eps)
    elif model.gaussian_predictive is not None:
        mean, sd = model.gaussian_predictive(theta, X)
        sims = mean + sd * eps[..., 0]
    else:
        raise ValueError("this model has neither a simulator nor a Gaussian predictive: cannot sample y")
    if sims.shape[1] != n_points:  # models whose mean does not depend on the datum broadcast to [K, 1]
        sims = sims.expand(theta.shape[0], n_points, *sims.shape[2:])
    return sims


def rule_score(model: ModelSpec, rule: str, theta: Tensor, y: Tensor, X: Tensor | None) -> Tensor:
    """Positively oriented score of the K-particle predictive mixture for each datum, [n] (differentiable)."""
    if rule == "log":
        return mixture_log_score(model.log_lik(theta, y, X))  # type: ignore[misc]
    if rule == "quadratic":
        mean, sd = model.gaussian_predictive(theta, X)  # type: ignore[misc]
        shape = (theta.shape[0], y.shape[0])
        return gaussian_mixture_quadratic_score(mean.expand(shape), sd.expand(shape), y)
    sims = _simulate(model, theta, X, y.shape[0])
    return -(crps_ensemble(sims, y) if rule == "crps" else energy_score(sims, y))


def particle_scores(
    model: ModelSpec, theta: Tensor, y: Tensor, X: Tensor | None, rule: str, seed: int = 0
) -> np.ndarray:
    """Per-datum scores of the mixture of the given particles (no gradient; chunked over data)."""
    _require_rule(model, rule)
    theta = theta.to(torch.float32)
    out = []
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for start in range(0, y.shape[0], _EVAL_CHUNK):
            stop = start + _EVAL_CHUNK
            out.append(rule_score(model, rule, theta, y[start:stop], None if X is None else X[start:stop]))
    return torch.cat(out).double().numpy()


def _require_rule(model: ModelSpec, rule: str) -> None:
    if rule not in RULES:
        raise ValueError(f"unknown scoring rule {rule!r}; choose one of {RULES}")
    if rule == "log" and model.log_lik is None:
        raise ValueError("the log score needs a likelihood; this model is simulator-only (use 'crps' or 'energy')")
    if rule == "quadratic" and model.gaussian_predictive is None:
        raise ValueError("the quadratic score is implemented for Gaussian observation models (gaussian_predictive)")


class PredictiveVI(_VariationalEstimator):
    """Predictive variational inference: q maximising scoring rules of the per-datum posterior-predictive mixture.

    Parameters:
        model: a ``ModelSpec`` (likelihood and/or simulator, prior); None = Gaussian linear regression with
            unknown noise and a conjugate prior (intercept only when X is None).
        family: 'gaussian' (diagonal), 'fullrank', 'flow' (zuko NSF), or a ``VariationalFamily`` instance.
        scores: {rule: weight} over 'log', 'crps', 'energy', 'quadratic'; default {'log': 1.0}.
        n_particles: K, draws of theta per step shared by the batch (small K biases q narrow; report K).
        reg_weight: lambda, the weight of KL(q || prior) / n.
        lr, n_iter, batch_size: Adam step size, steps, data minibatch (None: full batch).
        n_eval_particles: draws of q used by ``score``/``score_samples``.
        init_scale: initial sd of every coordinate of q (Pyro's AutoNormal default, 0.1), centred at 0.
        random_state: seeds the fit (torch's global RNG is forked, not disturbed).

    Attributes after ``fit``: ``q_`` (the fitted family), ``model_``, ``loss_curve_``, ``param_names_``.
    """

    def __init__(
        self,
        model: ModelSpec | None = None,
        family: str | VariationalFamily = "gaussian",
        scores: Mapping[str, float] | None = None,
        n_particles: int = 64,
        reg_weight: float = 1.0,
        lr: float = 1e-2,
        n_iter: int = 2000,
        batch_size: int | None = None,
        n_eval_particles: int = 1000,
        init_scale: float = 0.1,
        random_state: int | None = None,
        verbose: bool = False,
    ) -> None:
        super().__init__(
            model,
            family,
            n_particles,
            reg_weight,
            lr,
            n_iter,
            batch_size,
            n_eval_particles,
            init_scale,
            random_state,
            verbose,
        )
        self.scores = scores

    def _prepare(self, model: ModelSpec, y: Tensor, X: Tensor | None) -> None:
        rules = dict(self.scores) if self.scores is not None else {"log": 1.0}
        if not rules:
            raise ValueError("scores must name at least one scoring rule")
        for rule, weight in rules.items():
            _require_rule(model, rule)
            if not (weight > 0 and math.isfinite(weight)):
                raise ValueError(f"the weight of {rule!r} must be a positive number, got {weight}")
        self._rules = rules
        self._scales = {rule: 1.0 for rule in rules}
        if len(rules) > 1:  # put the rules on one scale: divide each by its magnitude at the initial q
            q0 = make_family("gaussian", model.dim, log_scale=math.log(self.init_scale))
            with torch.no_grad():
                theta = q0.rsample(int(self.n_particles))
                for rule in rules:
                    self._scales[rule] = max(float(rule_score(model, rule, theta, y, X).mean().abs()), 1e-6)

    def _data_term(self, model: ModelSpec, theta: Tensor, y: Tensor, X: Tensor | None) -> Tensor:
        total = torch.zeros((), dtype=theta.dtype)
        for rule, weight in self._rules.items():
            total = total + weight / self._scales[rule] * rule_score(model, rule, theta, y, X)
        return total


class ELBOVI(_VariationalEstimator):
    """Standard variational inference: maximise (1/n) [sum_i E_q log p(y_i | theta) - KL(q || prior)].

    The same family, particles and optimiser as ``PredictiveVI``; the only change is the log *outside* the mixture.
    With ``reg_weight=1`` its optimum is the member of the family closest to the Bayes posterior.
    """

    def _prepare(self, model: ModelSpec, y: Tensor, X: Tensor | None) -> None:
        _require_rule(model, "log")

    def _data_term(self, model: ModelSpec, theta: Tensor, y: Tensor, X: Tensor | None) -> Tensor:
        return model.log_lik(theta, y, X).mean(0)  # type: ignore[misc]
