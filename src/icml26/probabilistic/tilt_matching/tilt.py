"""Tilt Matching: anneal a flow's velocity from rho_1 to rho_1 e^{a r} / Z_a by regressions on its own samples."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from icml26.probabilistic.tilt_matching.flow import interpolate, log_prob, sample_ode

__all__ = [
    "UPDATES",
    "TiltDivergenceWarning",
    "TiltMatching",
    "choose_step",
    "effective_sample_size",
    "tilt_loss",
]

UPDATES = ("weighted", "control_variate", "cumulant", "first_order")


class TiltDivergenceWarning(RuntimeWarning):
    """The model produced non-finite samples or losses; the fit stopped (``diverged_`` is True)."""


def effective_sample_size(log_w: torch.Tensor) -> float:
    """Kish's ESS of unnormalised log-weights as a fraction of their number: (sum w)^2 / (n sum w^2).

    -inf is a zero weight; NaN (a reward that failed) or no weights at all is an error, not an ESS of NaN (which would
    make the step search return h = 0 without a word)."""
    log_w = torch.as_tensor(log_w).to(torch.float64)
    if log_w.numel() == 0 or bool(torch.isnan(log_w).any()):
        raise ValueError(f"log-weights must be a non-empty tensor without NaN, got {log_w.numel()} values")
    return float(torch.exp(2 * torch.logsumexp(log_w, 0) - torch.logsumexp(2 * log_w, 0)) / log_w.numel())


def choose_step(reward: torch.Tensor, ess_target: float, h_max: float, iters: int = 60) -> float:
    """The largest h in (0, h_max] with ESS(e^{h r}) >= ess_target (bisection; the ESS falls as h grows)."""
    if effective_sample_size(h_max * reward) >= ess_target:
        return float(h_max)
    lo, hi = 0.0, float(h_max)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if effective_sample_size(mid * reward) >= ess_target else (lo, mid)
    return lo


def tilt_loss(
    update: str,
    velocity: nn.Module,
    old: nn.Module | None,
    x0: torch.Tensor,
    x1: torch.Tensor,
    t: torch.Tensor,
    w: torch.Tensor,
    centred_reward: torch.Tensor,
    h: float,
) -> torch.Tensor:
    """One minibatch of the regression whose minimiser is the tilted velocity b_{t, a+h}.

    ``w`` are the self-normalised weights e^{h r} (mean 1 over the pool); ``old`` is b_{t,a} (frozen).

    - weighted: mean w ||b(I_t) - dI_t||^2 (implicit: minimiser E_a[w dI | I_t] / E_a[w | I_t], exact);
    - control_variate: mean ||b - (b_old + w (dI - b_old))||^2 (the notes' form);
    - cumulant: mean ||b - (b_old + (w - 1)(dI - b_old))||^2; E[(w - 1)(dI - b_old) | I_t] is the sum of the joint
      cumulants of dI with copies of h r, and subtracting 1 (E[w] = 1) removes the flow-matching noise
      E||dI - b_old||^2 from the target (explicit; exact to first order in h);
    - first_order: mean ||b - (b_old + h (r - rbar)(dI - b_old))||^2, the covariance term alone.

    The explicit forms' minimiser is b_old + E[w | I_t] (b_{a+h} - b_old) (first-order accurate in h; it overshoots
    where the tilt puts its mass, since E[w | I_t] > 1 there as t -> 1).
    """
    i_t, di = interpolate(x0, x1, t)
    b = velocity(i_t, t)
    if update == "weighted":
        return (w * ((b - di) ** 2).sum(-1)).mean()
    assert old is not None
    with torch.no_grad():
        b_old = old(i_t, t)
        coef = {"control_variate": w, "cumulant": w - 1.0, "first_order": h * centred_reward}[update]
        target = b_old + coef[:, None] * (di - b_old)
    return ((b - target) ** 2).sum(-1).mean()


class TiltMatching:
    """Sample rho_1 e^{a r} / Z (a = 1: the target) by tilting a flow's velocity, with no reward gradients.

    ``velocity`` is a ``torch.nn.Module`` v(x, t) whose ODE from N(0, I) generates the base rho_1 (its ``dim``
    attribute or ``dim=`` gives the dimension); ``reward`` maps points [n, d] to rewards [n] and is only ever
    evaluated under ``torch.no_grad`` on samples of the current model. For sampling pi ∝ e^{-E}, use
    ``boltzmann_reward(energy, base_log_prob)``. ``step_size=None`` chooses each h by the ESS rule; a number fixes
    it (``step_size=1`` is one-shot importance-weighted flow matching from the base).

    After :meth:`fit`: ``a_`` (how far the tilt went), ``history_`` (per annealing step: a, h, ess, loss,
    energy_evals, grad_evals), ``energy_evals_``, ``diverged_``.
    """

    def __init__(
        self,
        velocity: nn.Module,
        reward: Callable[[torch.Tensor], torch.Tensor],
        *,
        update: str = "weighted",
        ess_target: float = 0.5,
        step_size: float | None = None,
        pool_size: int = 4096,
        inner_iters: int = 300,
        batch_size: int = 512,
        ode_steps: int = 32,
        lr: float = 2e-3,
        resample: bool = False,
        lr_schedule: str = "cosine",
        dim: int | None = None,
        seed: int = 0,
    ) -> None:
        if not isinstance(velocity, nn.Module):
            raise TypeError(f"velocity must be a torch.nn.Module v(x, t), got {type(velocity).__name__}")
        if not callable(reward):
            raise TypeError(f"reward must be callable x -> r(x), got {type(reward).__name__}")
        if update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}, got {update!r}")
        if not (isinstance(ess_target, int | float) and 0 < ess_target <= 1):
            raise ValueError(f"ess_target must lie in (0, 1], got {ess_target!r}")
        if step_size is not None and not (math.isfinite(step_size) and step_size > 0):
            raise ValueError(f"step_size must be None (ESS rule) or a positive number, got {step_size!r}")
        for name, value in (("pool_size", pool_size), ("inner_iters", inner_iters), ("batch_size", batch_size)):
            if int(value) < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not (math.isfinite(lr) and lr > 0):
            raise ValueError(f"lr must be a positive number, got {lr!r}")
        d = dim if dim is not None else getattr(velocity, "dim", None)
        if d is None:
            raise ValueError("give dim= (the velocity has no `dim` attribute)")
        self.velocity, self.reward, self.dim = velocity, reward, int(d)
        self.update, self.ess_target, self.step_size = update, float(ess_target), step_size
        self.pool_size, self.inner_iters, self.batch_size = int(pool_size), int(inner_iters), int(batch_size)
        self.ode_steps, self.lr, self.seed = int(ode_steps), float(lr), int(seed)
        self.resample = bool(resample)
        if lr_schedule not in ("cosine", "constant"):
            raise ValueError(f"lr_schedule must be 'cosine' or 'constant', got {lr_schedule!r}")
        self.lr_schedule = lr_schedule
        self._gen = torch.Generator().manual_seed(self.seed)
        self.a_ = 0.0
        self.history_: list[dict[str, float]] = []
        self.energy_evals_ = 0
        self.adam_steps_ = 0
        self.diverged_ = False

    # ------------------------------------------------------------------------------------------------ sampling
    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """n samples of the current model: the ODE from fresh N(0, I) noise."""
        x0 = torch.randn(int(n), self.dim, generator=generator or self._gen)
        return sample_ode(self.velocity, x0, self.ode_steps)

    def log_prob(self, x: torch.Tensor, exact_trace: bool | None = None) -> torch.Tensor:
        """The model's log-density at x (instantaneous change of variables; exact trace for d <= 10)."""
        self._check_points(x)
        return log_prob(self.velocity, x, self.ode_steps, exact_trace, generator=self._gen)

    def _check_points(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[1] != self.dim:
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"points must be a tensor of shape [n, {self.dim}], got {shape}")

    def _rewards(self, x1: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            r = self.reward(x1.detach())
        self.energy_evals_ += x1.shape[0]
        if not isinstance(r, torch.Tensor) or r.shape != (x1.shape[0],):
            got = tuple(r.shape) if isinstance(r, torch.Tensor) else type(r).__name__
            raise ValueError(f"the reward must return a tensor of shape [{x1.shape[0]}], got {got}")
        if not torch.isfinite(r).all():
            raise ValueError(f"the reward returned {int((~torch.isfinite(r)).sum())} non-finite value(s)")
        return r.to(torch.float32)

    # ----------------------------------------------------------------------------------------------------- fit
    def fit(self, a_target: float = 1.0, max_energy_evals: int | None = None, max_steps: int = 200) -> TiltMatching:
        """Anneal a from its current value to ``a_target``: pool, ESS step, regression, repeat.

        Each step draws a pool of ``pool_size`` samples from the current model (one reward evaluation each), picks
        h, and takes ``inner_iters`` Adam steps (warm start) on minibatches with fresh x_0 ~ N(0, I) and
        t ~ U[0, 1]. It stops at ``a_target``, after ``max_steps``, or before a pool would exceed
        ``max_energy_evals``.
        """
        if not (math.isfinite(a_target) and a_target > 0):
            raise ValueError(f"a_target must be a positive number, got {a_target!r}")
        for _ in range(int(max_steps)):
            if self.a_ >= a_target - 1e-9 or self.diverged_:
                break
            if max_energy_evals is not None and self.energy_evals_ + self.pool_size > max_energy_evals:
                break
            self._step(a_target)
        return self

    def _step(self, a_target: float) -> None:
        x1 = self.sample(self.pool_size)
        if not torch.isfinite(x1).all():
            self._diverge("the model produced non-finite samples")
            return
        r = self._rewards(x1)
        h_max = a_target - self.a_
        h = choose_step(r, self.ess_target, h_max) if self.step_size is None else min(self.step_size, h_max)
        log_w = h * r.to(torch.float64)
        w = torch.softmax(log_w, 0).to(torch.float32) * len(r)  # mean 1
        ess = effective_sample_size(log_w)
        loss = self._regress(x1, w, r - r.mean(), h)
        if not math.isfinite(loss):
            self._diverge("the regression loss is not finite")
            return
        self.a_ += h
        counts = getattr(self.reward, "counts", None)
        grad_evals = int(counts()["grad_evals"]) if callable(counts) else 0
        self.history_.append(
            {
                "a": self.a_,
                "h": h,
                "ess": ess,
                "loss": loss,
                "energy_evals": self.energy_evals_,
                "grad_evals": grad_evals,
            }
        )

    def _regress(self, x1: torch.Tensor, w: torch.Tensor, centred: torch.Tensor, h: float) -> float:
        old = None
        if self.update != "weighted":
            old = copy.deepcopy(self.velocity).requires_grad_(False)
        opt = torch.optim.Adam(self.velocity.parameters(), lr=self.lr)
        decay = self.lr_schedule == "cosine"  # to lr / 10 within each annealing step: less parameter noise at its end
        sched = (
            torch.optim.lr_scheduler.CosineAnnealingLR(opt, self.inner_iters, eta_min=0.1 * self.lr) if decay else None
        )
        n, total = x1.shape[0], 0.0
        for _ in range(self.inner_iters):
            if self.resample:  # minibatch drawn in proportion to w, then unit weights: the same objective
                idx = torch.multinomial(w, self.batch_size, replacement=True, generator=self._gen)
                wb = torch.ones(self.batch_size)
            else:
                idx = torch.randint(0, n, (self.batch_size,), generator=self._gen)
                wb = w[idx]
            x0 = torch.randn(self.batch_size, self.dim, generator=self._gen)
            t = torch.rand(self.batch_size, generator=self._gen)
            loss = tilt_loss(self.update, self.velocity, old, x0, x1[idx], t, wb, centred[idx], h)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            total += float(loss.detach())
        self.adam_steps_ += self.inner_iters
        return total / self.inner_iters

    def _diverge(self, why: str) -> None:
        self.diverged_ = True
        warnings.warn(f"Tilt Matching stopped at a = {self.a_:.4g}: {why}", TiltDivergenceWarning, stacklevel=3)

    # --------------------------------------------------------------------------------------------- diagnostics
    def gradient_variance(
        self,
        pool_size: int | None = None,
        h: float | None = None,
        updates: tuple[str, ...] = UPDATES,
        n_batches: int = 64,
        batch_size: int | None = None,
    ) -> dict[str, Any]:
        """Per-minibatch gradient variance of each update's loss at the current velocity (the warm start).

        One pool from the current model (its reward evaluations are counted), one h (the ESS rule unless given),
        then ``n_batches`` minibatches; every update sees the same indices, x_0 and t (paired). Returns, per update,
        the trace of the covariance of the minibatch gradient over the network's parameters, and the h and ESS.
        """
        for u in updates:
            if u not in UPDATES:
                raise ValueError(f"update must be one of {UPDATES}, got {u!r}")
        x1 = self.sample(pool_size or self.pool_size)
        r = self._rewards(x1)
        h = choose_step(r, self.ess_target, 1.0 - self.a_) if h is None else float(h)
        log_w = h * r.to(torch.float64)
        w = torch.softmax(log_w, 0).to(torch.float32) * len(r)
        centred = r - r.mean()
        old = copy.deepcopy(self.velocity).requires_grad_(False)
        params = [p for p in self.velocity.parameters() if p.requires_grad]
        bs = batch_size or self.batch_size
        grads: dict[str, list[torch.Tensor]] = {u: [] for u in updates}
        for _ in range(n_batches):
            idx = torch.randint(0, len(r), (bs,), generator=self._gen)
            x0 = torch.randn(bs, self.dim, generator=self._gen)
            t = torch.rand(bs, generator=self._gen)
            for u in updates:
                loss = tilt_loss(u, self.velocity, old, x0, x1[idx], t, w[idx], centred[idx], h)
                g = torch.autograd.grad(loss, params)
                grads[u].append(torch.cat([x.reshape(-1) for x in g]))
        out: dict[str, Any] = {"h": h, "ess": effective_sample_size(log_w)}
        for u, gs in grads.items():
            stack = torch.stack(gs)
            out[u] = {"trace_cov": float(stack.var(0).sum()), "mean_norm": float(stack.mean(0).norm())}
        return out
