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

Where the data sit must not matter (our reading; the paper is silent). q is fitted over standardised coordinates u,
theta = shift + scale @ u (``model.Frame``), an affine reparameterisation that leaves the objective unchanged: the
built-in models standardise y and X and start at the least-squares fit; a model without a ``standardize`` hook
starts at its MAP with the Laplace unit-information scale (or, simulator-only, at the prior's mean and sd). Adam's
steps, the initial sd (``init_scale``, in standardised units) and the rule weights are then the same for data
shifted or rescaled. The model's prior is the user's and stays fixed: a prior that is informative at one scale
(the default IG(1, 1) on sigma^2 at unit scale) is not at another, so exact invariance needs the prior carried to
the new units too (the tests do so); the optimiser adds no dependence of its own. A fit whose objective has not
flattened raises a ``ConvergenceWarning``.

Defaults follow the paper file's reading: lambda = 1, K = 64, Adam lr 1e-2 with cosine decay. With several rules each
rule is divided by the spread (sd across the data) of its per-datum values at the initial q before weighting (our
choice: it is unchanged by a shift of y and scales with it, so the weights do not depend on the data's units; the
prior predictive of a heavy-tailed prior, the notes' suggestion, makes unstable scales). Fits run on one torch
thread unless ``single_thread=False`` (a thread pool buys nothing on these small tensors and, on a loaded machine,
made a default fit 6x slower).

References:
    Y. Lai, A. Linero, Y. Yao, "Predictive variational inference: Learn the predictively optimal posterior
    distribution", arXiv:2410.14843 (ICML 2026).
    T. Gneiting, A. Raftery, "Strictly proper scoring rules, prediction, and estimation", JASA 2007.
"""

from __future__ import annotations

import contextlib
import math
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from icml26._core import single_torch_thread
from icml26.probabilistic.pvi.families import Affine, VariationalFamily, make_family
from icml26.probabilistic.pvi.model import Frame, ModelSpec, linear_regression
from icml26.probabilistic.pvi.scores import (
    crps_ensemble,
    energy_score,
    gaussian_mixture_quadratic_score,
    mixture_log_score,
)

try:  # scikit-learn conventions (get_params/set_params/clone, its ConvergenceWarning) when available
    from sklearn.base import BaseEstimator
    from sklearn.exceptions import ConvergenceWarning
except ImportError:  # pragma: no cover - scikit-learn is in the probabilistic extra
    BaseEstimator = object  # type: ignore[assignment,misc]

    class ConvergenceWarning(UserWarning):  # type: ignore[no-redef]
        """The optimisation stopped before its objective flattened."""


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
    y_arr = np.array(y, dtype=np.float64)  # a copy: torch warns on read-only numpy buffers
    if y_arr.ndim not in (1, 2) or y_arr.shape[0] == 0:
        raise ValueError(f"y must be a non-empty array of shape [n] or [n, dy], got shape {y_arr.shape}")
    if not np.all(np.isfinite(y_arr)):
        raise ValueError("y contains non-finite values (NaN or inf)")
    X_t = None
    if X is not None:
        X_arr = np.array(X, dtype=np.float64)
        if X_arr.ndim == 1:
            X_arr = X_arr[:, None]
        if X_arr.ndim != 2 or X_arr.shape[0] != y_arr.shape[0]:
            raise ValueError(f"X must have shape [n, p] with n = len(y) = {y_arr.shape[0]}, got {X_arr.shape}")
        if not np.all(np.isfinite(X_arr)):
            raise ValueError("X contains non-finite values (NaN or inf)")
        X_t = torch.as_tensor(X_arr, dtype=torch.float32)
    return torch.as_tensor(y_arr, dtype=torch.float32), X_t


def _match_model(model: ModelSpec, y: Tensor, X: Tensor | None) -> Tensor:
    """Check y and X against what the model takes; scalar-observation models accept y as [n] or [n, 1]."""
    got = 0 if X is None else X.shape[1]
    if got != model.covariates:
        if model.covariates == 0:
            raise ValueError(
                f"this model takes no covariates, but X has {got} columns (set n_features in the ModelSpec)"
            )
        raise ValueError(f"the model expects {model.covariates} covariate columns, X has {got}")
    if model.obs_dim == 1:
        if y.ndim == 2 and y.shape[1] != 1:
            raise ValueError(
                f"this model has scalar observations: y must have shape [n] (or [n, 1]), got {tuple(y.shape)}"
            )
        return y.reshape(-1)
    if y.ndim != 2 or y.shape[1] != model.obs_dim:
        raise ValueError(f"this model has {model.obs_dim}-dimensional observations: y must be [n, {model.obs_dim}]")
    return y


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
        tol: float = 0.01,
        single_thread: bool = True,
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
        self.tol = tol
        self.single_thread = single_thread
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
        if not (self.tol >= 0 and math.isfinite(self.tol)):
            raise ValueError(f"tol must be a finite number >= 0, got {self.tol}")
        self._check_eval_particles()

    def _check_eval_particles(self) -> None:
        if int(self.n_eval_particles) < 2:
            raise ValueError(
                f"n_eval_particles must be >= 2 (a mixture's scores need several draws), got {self.n_eval_particles}"
            )

    def _threads(self) -> contextlib.AbstractContextManager[None]:
        return single_torch_thread() if self.single_thread else contextlib.nullcontext()

    def _resolve_model(self, X: Tensor | None) -> ModelSpec:
        # default: Gaussian linear regression with unknown noise (intercept only without X)
        return self.model if self.model is not None else linear_regression(0 if X is None else X.shape[1])

    def _prepare(self, model: ModelSpec, q: VariationalFamily, y: Tensor, X: Tensor | None) -> None:
        """Hook: validate rules against the model, set scales at the initial q (called once before the loop)."""

    def _data_term(self, model: ModelSpec, theta: Tensor, y: Tensor, X: Tensor | None) -> Tensor:
        raise NotImplementedError  # pragma: no cover

    def fit(self, y: Any, X: Any = None) -> _VariationalEstimator:
        """Fit q to data y (shape [n] or [n, dy]) with optional covariates X ([n, p]). Returns self."""
        self._check_params()
        y_t, X_t = _as_data(y, X)
        model = self._resolve_model(X_t)
        y_t = _match_model(model, y_t, X_t)
        n = y_t.shape[0]
        batch = n if self.batch_size is None else min(int(self.batch_size), n)
        seed = 0 if self.random_state is None else int(self.random_state)
        with self._threads(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            frame = _frame(model, y_t, X_t)
            base = make_family(self.family, model.dim, loc=frame.start.float(), log_scale=math.log(self.init_scale))
            q = Affine(base, frame.shift, frame.scale)
            self._prepare(model, q, y_t, X_t)
            optimiser = torch.optim.Adam(q.parameters(), lr=self.lr)
            # cosine decay to lr/100: Adam's noise floor on the scale parameters otherwise dominates small sds
            schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, int(self.n_iter), eta_min=self.lr / 100)
            losses = np.empty(int(self.n_iter))
            params = [p for p in q.parameters() if p.requires_grad]
            watch_from = int(self.n_iter) - int(self.n_iter) // 4  # gradients of the last quarter: the check
            grads = np.empty((int(self.n_iter) - watch_from, sum(p.numel() for p in params)))
            for step in range(int(self.n_iter)):
                if batch < n:
                    idx = torch.randperm(n)[:batch]
                    y_b, X_b = y_t[idx], None if X_t is None else X_t[idx]
                else:
                    y_b, X_b = y_t, X_t
                theta = q.rsample(int(self.n_particles))
                data = self._data_term(model, theta, y_b, X_b).mean()
                loss = -(data - self.reg_weight * _kl_estimate(q, theta, model) / n)
                losses[step] = loss.item()
                if not math.isfinite(losses[step]):
                    raise FloatingPointError(
                        f"the objective became non-finite at step {step}; lower lr or check the model's scale"
                    )
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                if step >= watch_from:
                    grads[step - watch_from] = torch.cat([p.grad.reshape(-1) for p in params]).numpy()
                optimiser.step()
                schedule.step()
                if self.verbose and (step + 1) % max(1, int(self.n_iter) // 10) == 0:
                    print(
                        f"[{type(self).__name__}] step {step + 1}/{self.n_iter}  loss {losses[step]:.4f}",
                        file=sys.stderr,
                    )
        self.q_ = q.eval()
        self.model_ = model
        self.frame_ = frame
        self.loss_curve_ = losses
        self.n_iter_ = int(self.n_iter)
        self.converged_ = _has_flattened(losses, self.tol) and _is_stationary(grads)
        self.n_features_in_ = model.covariates
        self.param_names_ = model.param_names
        self._y_train, self._X_train = y_t, X_t
        if not self.converged_:
            warnings.warn(
                f"{type(self).__name__} stopped after {self.n_iter} steps before converging: over the last quarter "
                "of the steps the objective (loss_curve_) still improved, or its gradient stayed away from zero; "
                "raise n_iter or lr",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    # ----------------------------------------------------------------------------------------------- sampling
    def _check_fitted(self) -> None:
        if not hasattr(self, "q_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit(y, X) first")

    @torch.no_grad()
    def sample_posterior(self, n: int, seed: int = 0) -> Tensor:
        """n draws from the fitted q, [n, d], in the model's parameters."""
        self._check_fitted()
        with self._threads(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return self.q_.rsample(int(n))

    @torch.no_grad()
    def predictive_sample(self, X: Any = None, n: int = 1000, seed: int = 0) -> Tensor:
        """n draws from the predictive mixture at each covariate row (one theta per draw): [n, n_points(, dy)].

        Without X, the model must not need covariates and one point is returned per call ([n, 1]).
        """
        self._check_fitted()
        X_t = None if X is None else _as_data(np.zeros(len(np.asarray(X))), X)[1]
        _match_model(self.model_, torch.zeros(1 if X_t is None else X_t.shape[0]), X_t)
        points = 1 if X_t is None else X_t.shape[0]
        with self._threads(), torch.random.fork_rng(devices=[]):
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
        self._check_eval_particles()
        _require_rule(self.model_, rule)
        y_t, X_t = _as_data(y, X)
        y_t = _match_model(self.model_, y_t, X_t)
        theta = self.sample_posterior(int(self.n_eval_particles), seed=seed)
        with self._threads():
            return particle_scores(self.model_, theta, y_t, X_t, rule, seed=seed)

    def score(self, y: Any, X: Any = None, rule: str = "log") -> float:
        """Mean held-out score per datum, higher is better (log score, -CRPS, -energy score or quadratic score)."""
        return float(self.score_samples(y, X, rule).mean())

    def heterogeneity_report(self, bayes_sd: Any = None) -> HeterogeneityReport:
        """Per-parameter (marginal) sd of q, and its ratio to the Bayes posterior sd.

        ``bayes_sd=None`` computes the exact posterior sd on the training data when the model declares a conjugate
        form (the built-in ``normal_location`` and ``linear_regression``); for other models pass it explicitly, or
        the report carries the sds without ratios.
        """
        self._check_fitted()
        with self._threads(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)  # Monte Carlo moments of a flow: the same report every call
            _, sd = self.q_.moments()
        if bayes_sd is None and self.model_.conjugate is not None:
            from icml26.probabilistic.pvi.bayes import exact_posterior

            X = None if self._X_train is None else self._X_train.double().numpy()
            bayes_sd = exact_posterior(self.model_, self._y_train.double().numpy(), X).sd()
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


def _frame(model: ModelSpec, y: Tensor, X: Tensor | None) -> Frame:
    """Standardised coordinates for q: the model's hook, else MAP + Laplace, else the prior's moments."""
    if model.standardize is not None:
        return model.standardize(y, X)
    if model.log_lik is not None:
        frame = _laplace_frame(model, y, X)
        if frame is not None:
            return frame
    return _prior_frame(model)


def _prior_frame(model: ModelSpec, draws: int = 4096) -> Frame:
    """Centre and per-coordinate scale from the prior's draws (a zero or non-finite spread counts as 1)."""
    theta = model.prior.sample((draws,)).double().reshape(draws, model.dim)
    centre, spread = theta.mean(0), theta.std(0)
    spread = torch.where(torch.isfinite(spread) & (spread > 0), spread, torch.ones_like(spread))
    centre = torch.where(torch.isfinite(centre), centre, torch.zeros_like(centre))
    return Frame(centre, torch.diag(spread), torch.zeros(model.dim, dtype=torch.float64))


def _laplace_frame(model: ModelSpec, y: Tensor, X: Tensor | None) -> Frame | None:
    """MAP by L-BFGS from the prior's centre, and the Laplace sd times sqrt(n) (one datum's worth of information)
    as the scale; None when the optimum or its curvature is not usable."""
    start = _prior_frame(model).shift.float()

    def neg_log_posterior(theta: Tensor) -> Tensor:
        batch = theta.reshape(1, -1)
        return -(model.log_lik(batch, y, X).sum() + model.prior.log_prob(batch).sum())  # type: ignore[misc]

    theta = start.clone().requires_grad_(True)
    optimiser = torch.optim.LBFGS([theta], max_iter=500, line_search_fn="strong_wolfe")

    def closure() -> Tensor:
        optimiser.zero_grad()
        value = neg_log_posterior(theta)
        value.backward()
        return value

    optimiser.step(closure)
    mode = theta.detach()
    hessian = torch.autograd.functional.hessian(neg_log_posterior, mode).double()
    try:
        sd = torch.linalg.inv(hessian).diagonal().sqrt()
    except RuntimeError:
        return None
    if not (torch.isfinite(mode).all() and torch.isfinite(sd).all() and (sd > 0).all()):
        return None
    return Frame(mode.double(), torch.diag(sd * math.sqrt(y.shape[0])), torch.zeros(model.dim, dtype=torch.float64))


def _has_flattened(losses: np.ndarray, tol: float) -> bool:
    """Whether the objective has flattened: the last quarter of the steps improves on the quarter before by no more
    than four standard errors of the step-to-step noise, or by no more than ``tol`` of the run's total improvement
    (first quarter to last). Fewer than 20 steps cannot be judged and count as not flattened."""
    m = len(losses) // 4
    if m < 5:
        return False
    first, before, last = losses[:m], losses[-2 * m : -m], losses[-m:]
    drop = before.mean() - last.mean()
    noise = math.sqrt((before.var() + last.var()) / m)
    total = max(first.mean() - last.mean(), 0.0)
    return bool(drop <= 4 * noise or drop <= tol * total)


def _is_stationary(grads: np.ndarray) -> bool:
    """Whether the mean gradient over the recorded steps is zero within its noise: max over the P parameters of
    t^2 = (mean / standard error)^2 below 2 ln P + 12 (a false alarm rate near 1e-3 for independent Gaussian noise).
    A stuck location has a gradient of one sign that a loss curve flattened by the decaying step size hides."""
    m, n_params = grads.shape
    if m < 5:
        return False
    se2 = grads.var(0, ddof=1) / m
    t2 = grads.mean(0) ** 2 / np.where(se2 > 0, se2, np.inf)
    return bool(t2.max() < 2 * math.log(max(n_params, 1)) + 12)


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
    if rule in ("crps", "quadratic") and model.obs_dim > 1:
        raise ValueError(f"the {rule} score is for scalar observations; use 'energy' for vector y")


class PredictiveVI(_VariationalEstimator):
    """Predictive variational inference: q maximising scoring rules of the per-datum posterior-predictive mixture.

    Parameters:
        model: a ``ModelSpec`` (likelihood and/or simulator, prior); None = Gaussian linear regression with
            unknown noise and a conjugate prior (intercept only when X is None).
        family: 'gaussian' (diagonal), 'fullrank', 'flow' (zuko NSF), or a ``VariationalFamily`` instance; the
            family lives on the standardised coordinates u of ``frame_`` (a diagonal Gaussian is diagonal there).
        scores: {rule: weight} over 'log', 'crps', 'energy', 'quadratic'; default {'log': 1.0}.
        n_particles: K, draws of theta per step shared by the batch (small K biases q narrow; report K).
        reg_weight: lambda, the weight of KL(q || prior) / n.
        lr, n_iter, batch_size: Adam step size, steps, data minibatch (None: full batch).
        n_eval_particles: draws of q used by ``score``/``score_samples`` (>= 2).
        init_scale: initial sd of every coordinate of q in standardised units (Pyro's AutoNormal default, 0.1);
            q starts at the model's least-squares / MAP location (see ``model.Frame``).
        tol: convergence check: a ``ConvergenceWarning`` when the last quarter of the steps still improves the
            objective on the quarter before by more than 4 standard errors of its noise and more than ``tol`` of
            the run's total improvement, or when the mean gradient of that quarter is not zero within its noise.
        single_thread: run on one torch thread (``icml26._core.single_torch_thread``); False leaves torch's setting.
        random_state: seeds the fit (torch's global RNG is forked, not disturbed).

    Attributes after ``fit``: ``q_`` (the fitted family, in the model's parameters), ``model_``, ``frame_`` (the
    standardised coordinates), ``loss_curve_`` (the objective per step), ``n_iter_``, ``converged_``,
    ``param_names_``.
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
        tol: float = 0.01,
        single_thread: bool = True,
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
            tol,
            single_thread,
            random_state,
            verbose,
        )
        self.scores = scores

    def _prepare(self, model: ModelSpec, q: VariationalFamily, y: Tensor, X: Tensor | None) -> None:
        rules = dict(self.scores) if self.scores is not None else {"log": 1.0}
        if not rules:
            raise ValueError("scores must name at least one scoring rule")
        for rule, weight in rules.items():
            _require_rule(model, rule)
            if not (weight > 0 and math.isfinite(weight)):
                raise ValueError(f"the weight of {rule!r} must be a positive number, got {weight}")
        self._rules = rules
        self._scales = {rule: 1.0 for rule in rules}
        if len(rules) > 1:  # one scale for all rules: divide each by the spread of its per-datum values at q's start
            with torch.no_grad():
                theta = q.rsample(int(self.n_particles))
                for rule in rules:
                    spread = float(rule_score(model, rule, theta, y, X).std()) if y.shape[0] > 1 else 0.0
                    self._scales[rule] = spread if spread > 0 and math.isfinite(spread) else 1.0

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

    def _prepare(self, model: ModelSpec, q: VariationalFamily, y: Tensor, X: Tensor | None) -> None:
        _require_rule(model, "log")

    def _data_term(self, model: ModelSpec, theta: Tensor, y: Tensor, X: Tensor | None) -> Tensor:
        return model.log_lik(theta, y, X).mean(0)  # type: ignore[misc]
