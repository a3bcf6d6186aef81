"""The sbi-style builder: ``TFMPE(prior).append_simulations(...).train(mode="lf")`` then ``build_posterior()``."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import torch

from icml26.probabilistic.tfmpe.flow import cfm_loss, log_prob, sample_targets
from icml26.probabilistic.tfmpe.network import TokenVelocityField
from icml26.probabilistic.tfmpe.tasks import HierarchicalTask, SiteData
from icml26.probabilistic.tfmpe.tokens import Tokens, tokenise

__all__ = ["TFMPE", "ConvergenceWarning", "TFMPEPosterior"]


class ConvergenceWarning(UserWarning):
    """The last stretch of a fit's loss is still clearly falling: more iterations would help."""


@dataclass(frozen=True)
class Standardiser:
    """Per-label centring and scaling of token values (and of the functional input), fitted on the simulations."""

    mean: torch.Tensor  # [n_labels]
    std: torch.Tensor
    time_mean: float
    time_std: float

    @classmethod
    def fit(cls, data: SiteData) -> Standardiser:
        cols = [data.theta_global.T, data.theta_local.flatten(0, 1).T, data.x.reshape(1, -1)]
        rows = [c for block in cols for c in block]
        mean = torch.stack([r.mean() for r in rows])
        std = torch.stack([r.std() if r.numel() > 1 else torch.tensor(1.0) for r in rows])
        std = torch.where(std > 1e-8, std, torch.ones_like(std))
        t = data.times.reshape(-1)
        t_std = float(t.std()) if t.numel() > 1 else 0.0
        return cls(mean, std, float(t.mean()), t_std if t_std > 1e-8 else 1.0)

    def apply(self, tokens: Tokens) -> Tokens:
        value = (tokens.value - self.mean[tokens.label]) / self.std[tokens.label]
        time = (tokens.time - self.time_mean) / self.time_std
        return Tokens(value, tokens.label, tokens.site, time, tokens.target, tokens.pad)

    def invert_targets(self, z: torch.Tensor, tokens: Tokens) -> torch.Tensor:
        lab = tokens.label[tokens.target].reshape(z.shape)
        return z * self.std[lab] + self.mean[lab]

    def log_jacobian(self, tokens: Tokens) -> torch.Tensor:
        """log |d standardised / d raw| of each sequence's targets: subtract sum log std."""
        return -(self.std[tokens.label].log() * tokens.target).sum(1)


def _as_sites(name: str, a: torch.Tensor, n: int, width: int | None) -> torch.Tensor:
    a = torch.as_tensor(a, dtype=torch.float32)
    if a.ndim == 2:
        a = a[:, None, :]
    if a.ndim != 3 or a.shape[0] != n or (width is not None and a.shape[2] != width):
        want = f"[N, {width}] or [N, S, {width}]" if width is not None else "[N, n_obs] or [N, S, n_obs]"
        raise ValueError(f"mismatched token shapes: {name} must be {want} with N = {n}, got {tuple(a.shape)}")
    return a


@dataclass
class TFMPE:
    """Tokenised flow matching for posterior estimation, with likelihood-factorised (LF) training.

    ``prior`` is a hierarchical task (``tasks.HierGaussian``, ``tasks.HierSIR`` or any ``HierarchicalTask``): it
    gives the parameter names and draws theta_g and theta_s | theta_g for the synthetic multi-site sets. The
    defaults are the official runner's (d = 64, two attention layers, two heads, Adam 1e-4, batch 100, 1000
    iterations per fit, sigma_min = 1e-3); ``ode_steps`` RK4 steps sample both modes.
    """

    prior: HierarchicalTask
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 2
    mlp_ratio: int = 4
    sigma_min: float = 1e-3
    learning_rate: float = 1e-4
    batch_size: int = 100
    n_iter: int = 1000
    ode_steps: int = 10
    random_state: int = 0
    _data: list[SiteData] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.prior, HierarchicalTask):
            raise TypeError(f"prior must be a HierarchicalTask (tasks.HierGaussian, ...), got {type(self.prior)}")
        if not (0 < self.sigma_min < 1):
            raise ValueError(f"sigma_min must be in (0, 1), got {self.sigma_min}")
        self.generator = torch.Generator().manual_seed(self.random_state)
        n_labels = self.prior.dim_global + self.prior.dim_local + 1
        with torch.random.fork_rng():
            torch.manual_seed(self.random_state)
            self.net = TokenVelocityField(n_labels, self.d_model, self.n_layers, self.n_heads, self.mlp_ratio)
        self.loss_curve_: dict[str, list[float]] = {}
        self.standardiser: Standardiser | None = None
        self.trained_sites: int | None = None
        self.likelihood_trained = False

    # -------------------------------------------------------------------------------------------- data
    def append_simulations(
        self,
        theta: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
        x: torch.Tensor,
        times: torch.Tensor | None = None,
    ) -> TFMPE:
        """Add N simulations, sbi-style: ``theta`` flat ``[N, Dg + S * Dl]`` (globals first, then the sites' in site
        order; ``SiteData.theta``) or the pair ``(theta_global [N, Dg], theta_local [N, S, Dl])``, and ``x``
        ``[N, S, n_obs]`` (``[N, n_obs]`` for single sites); ``times`` are the functional inputs of x (default 0)."""
        dg, dl = self.prior.dim_global, self.prior.dim_local
        xs = torch.as_tensor(x, dtype=torch.float32)
        if isinstance(theta, tuple | list):
            theta_global, theta_local = theta
        else:
            flat = torch.as_tensor(theta, dtype=torch.float32)
            n_sites = xs.shape[1] if xs.ndim == 3 else 1
            if flat.ndim != 2 or flat.shape[1] != dg + n_sites * dl:
                raise ValueError(
                    f"mismatched token shapes: theta must be [N, {dg} + S * {dl}] for x with S = {n_sites} sites, "
                    f"got {tuple(flat.shape)}"
                )
            theta_global, theta_local = flat[:, :dg], flat[:, dg:].reshape(len(flat), n_sites, dl)
        tg = torch.as_tensor(theta_global, dtype=torch.float32)
        if tg.ndim != 2 or tg.shape[1] != dg:
            raise ValueError(f"mismatched token shapes: theta_global must be [N, {dg}], got {tuple(tg.shape)}")
        n = tg.shape[0]
        tl = _as_sites("theta_local", theta_local, n, self.prior.dim_local)
        xs = _as_sites("x", x, n, None)
        if tl.shape[1] != xs.shape[1]:
            raise ValueError(f"mismatched token shapes: theta_local has {tl.shape[1]} sites, x has {xs.shape[1]}")
        ts = torch.zeros_like(xs) if times is None else _as_sites("times", times, n, xs.shape[2])
        if ts.shape != xs.shape:
            raise ValueError(f"mismatched token shapes: times {tuple(ts.shape)} must match x {tuple(xs.shape)}")
        for name, a in (("theta_global", tg), ("theta_local", tl), ("x", xs), ("times", ts)):
            if not torch.isfinite(a).all():
                raise ValueError(f"{name} contains NaN or inf")
        if self._data and self._data[0].x.shape[1:] != xs.shape[1:]:
            raise ValueError(
                f"mismatched token shapes: earlier simulations have x {tuple(self._data[0].x.shape[1:])} per set, "
                f"these {tuple(xs.shape[1:])}"
            )
        self._data.append(SiteData(tg, tl, xs, ts))
        return self

    @property
    def data(self) -> SiteData:
        if not self._data:
            raise ValueError("no simulations: call append_simulations first")
        cat = [torch.cat([getattr(d, f) for d in self._data]) for f in ("theta_global", "theta_local", "x", "times")]
        return SiteData(*cat)

    # ------------------------------------------------------------------------------------------- training
    def train(
        self,
        mode: str = "lf",
        n_sites: int | None = None,
        n_iter: int | None = None,
        n_synthetic: int | None = None,
        mix_single_site: bool = True,
    ) -> TokenVelocityField:
        """Fit the velocity field.

        ``mode="lf"`` (likelihood factorisation): the simulations must be single-site; (a) fit the likelihood mode
        on them, (b) draw ``n_synthetic`` (default: as many as simulations) sets of ``n_sites`` sites from the prior
        with x from the learned likelihood (the surrogate, never the simulator), (c) fit the posterior mode on the
        synthetic sets, mixed with the real single-site sets (``mix_single_site``).
        ``mode="direct"``: fit the posterior mode on the appended S-site simulations (the ablation).
        """
        if mode not in ("lf", "direct"):
            raise ValueError(f"mode must be 'lf' or 'direct', got {mode!r}")
        data = self.data
        n = data.x.shape[0]
        if n < self.batch_size:
            raise ValueError(
                f"a budget of {n} simulations is below one batch ({self.batch_size}): simulate more or lower batch_size"
            )
        n_iter = self.n_iter if n_iter is None else n_iter
        self.standardiser = Standardiser.fit(data)
        self.loss_curve_ = {}
        if mode == "direct":
            self.trained_sites = data.x.shape[1]
            self._fit({"posterior": data}, n_iter)
            return self.net
        self.train_likelihood(n_iter)
        return self.train_posterior(n_sites, n_iter, n_synthetic, mix_single_site)

    def _single_site_data(self) -> SiteData:
        data = self.data
        if data.x.shape[1] != 1:
            raise ValueError(f"mode='lf' trains on single-site simulations; these have {data.x.shape[1]} sites")
        if data.x.shape[0] < self.batch_size:
            raise ValueError(
                f"a budget of {data.x.shape[0]} simulations is below one batch ({self.batch_size}): simulate more or "
                "lower batch_size"
            )
        return data

    def train_likelihood(self, n_iter: int | None = None) -> TokenVelocityField:
        """LF step (a): fit the likelihood mode (x given theta_g, theta_s) on the single-site simulations."""
        data = self._single_site_data()
        self.standardiser = Standardiser.fit(data)
        self._fit({"likelihood": data}, self.n_iter if n_iter is None else n_iter)
        self.likelihood_trained = True
        return self.net

    def train_posterior(
        self,
        n_sites: int | None = None,
        n_iter: int | None = None,
        n_synthetic: int | None = None,
        mix_single_site: bool = True,
    ) -> TokenVelocityField:
        """LF steps (b)-(c): synthetic n_sites-site sets from the learned likelihood, then the posterior mode.

        Call after ``train_likelihood``; a deep copy of a TFMPE after step (a) can be trained for several S.
        """
        if not self.likelihood_trained:
            raise RuntimeError("fit the likelihood mode first (train_likelihood)")
        data = self._single_site_data()
        n_sites = self.prior.n_sites if n_sites is None else n_sites
        if n_sites < 1:
            raise ValueError(f"n_sites must be >= 1, got {n_sites}")
        self.trained_sites = n_sites
        synthetic = self.synthetic_sets(data.x.shape[0] if n_synthetic is None else n_synthetic, n_sites)
        sets = {"posterior": synthetic} | ({"posterior_single": data} if mix_single_site else {})
        self._fit(sets, self.n_iter if n_iter is None else n_iter)
        return self.net

    def _tokens(self, data: SiteData, mode: str) -> Tokens:
        assert self.standardiser is not None
        return self.standardiser.apply(tokenise(data.theta_global, data.theta_local, data.x, data.times, mode))

    def _fit(self, sets: dict[str, SiteData], n_iter: int) -> None:
        """Adam with cosine decay; each step sums the CFM loss of one batch from every set."""
        tokens = {k: self._tokens(d, "likelihood" if k == "likelihood" else "posterior") for k, d in sets.items()}
        opt = torch.optim.Adam(self.net.parameters(), lr=self.learning_rate)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(n_iter, 1))
        curve = []
        self.net.train()
        for _ in range(n_iter):
            loss = torch.zeros(())
            for tok in tokens.values():
                idx = torch.randint(tok.value.shape[0], (self.batch_size,), generator=self.generator)
                loss = loss + cfm_loss(self.net, tok[idx], self.sigma_min, self.generator)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
            opt.step()
            sched.step()
            curve.append(float(loss.detach()) / len(tokens))
        self.net.eval()
        name = "+".join(sets)
        self.loss_curve_[name] = curve
        if not all(math.isfinite(v) for v in curve):
            raise FloatingPointError(f"the {name} fit diverged (non-finite loss); lower learning_rate")
        w = max(n_iter // 5, 1)
        if n_iter >= 50 and sum(curve[-w:]) / w < 0.9 * sum(curve[-2 * w : -w]) / w:
            warnings.warn(f"the {name} fit's loss fell by >10% over its last fifth", ConvergenceWarning, stacklevel=3)

    @torch.no_grad()
    def synthetic_sets(self, n: int, n_sites: int, chunk: int = 4096) -> SiteData:
        """n sets of n_sites sites from the prior, with every site's x drawn from the learned likelihood."""
        if self.standardiser is None:
            raise RuntimeError("fit the likelihood mode first (train(mode='lf'))")
        tg = self.prior.sample_global(n, self.generator)
        tl = self.prior.sample_local(tg, n_sites, self.generator)
        pool = self.data.times.flatten(0, 1)  # functional inputs are resampled from the simulated sites' designs
        times = pool[torch.randint(pool.shape[0], (n * n_sites,), generator=self.generator)]
        x = self.surrogate_sites(tg.repeat_interleave(n_sites, 0), tl.reshape(n * n_sites, 1, -1), times[:, None])
        return SiteData(tg, tl, x.reshape(n, n_sites, -1), times.reshape(n, n_sites, -1))

    @torch.no_grad()
    def surrogate_sites(
        self, theta_global: torch.Tensor, theta_local: torch.Tensor, times: torch.Tensor, chunk: int = 4096
    ) -> torch.Tensor:
        """x ``[N, 1, n_obs]`` of single sites drawn from the learned likelihood (likelihood-mode ODE)."""
        out = []
        for lo in range(0, theta_global.shape[0], chunk):
            sl = slice(lo, lo + chunk)
            dummy = torch.zeros_like(times[sl])
            tok = self._tokens(SiteData(theta_global[sl], theta_local[sl], dummy, times[sl]), "likelihood")
            z = sample_targets(self.net, tok, self.ode_steps, self.generator)
            out.append(self.standardiser.invert_targets(z, tok))
        return torch.cat(out).reshape(times.shape)

    def build_posterior(self) -> TFMPEPosterior:
        if self.trained_sites is None:
            raise RuntimeError("train() first")
        return TFMPEPosterior(self)


class TFMPEPosterior:
    """q(theta | x) of a trained TFMPE: ``sample``, ``sample_batched``, ``log_prob``, ``set_default_x``.

    theta is flat and unconstrained: the global parameters, then each site's local parameters in site order.
    """

    def __init__(self, inference: TFMPE) -> None:
        self._inf = inference
        self._x: tuple[torch.Tensor, torch.Tensor] | None = None

    @property
    def prior(self) -> HierarchicalTask:
        return self._inf.prior

    def _obs(self, x: torch.Tensor | None, times: torch.Tensor | None, batched: bool) -> tuple:
        if x is None:
            if self._x is None:
                raise ValueError("give x or call set_default_x first")
            x, times = self._x if times is None else (self._x[0], times)
        xs = torch.as_tensor(x, dtype=torch.float32)
        want = 3 if batched else 2
        if xs.ndim == want - 1:
            xs = xs[None] if not batched else xs[:, None]
        if xs.ndim != want:
            shape = "[B, S, n_obs]" if batched else "[S, n_obs]"
            raise ValueError(f"mismatched token shapes: x must be {shape}, got {tuple(xs.shape)}")
        ts = torch.zeros_like(xs) if times is None else torch.as_tensor(times, dtype=torch.float32).reshape(xs.shape)
        self.prior.check_observation(xs)
        train = self._inf.data
        functional = bool((train.times != 0).any())
        if xs.shape[-1] != train.x.shape[-1] and not functional:
            raise ValueError(
                f"mismatched token shapes: x has {xs.shape[-1]} observations per site, the simulations had "
                f"{train.x.shape[-1]} (only function-valued observations may change their number)"
            )
        return (xs if batched else xs[None]), (ts if batched else ts[None])

    def set_default_x(self, x: torch.Tensor, times: torch.Tensor | None = None) -> TFMPEPosterior:
        xs, ts = self._obs(x, times, batched=False)
        self._x = (xs[0], ts[0])
        return self

    def _cond_tokens(self, xs: torch.Tensor, ts: torch.Tensor) -> Tokens:
        b, n_sites, _ = xs.shape
        tg = torch.zeros(b, self.prior.dim_global)
        tl = torch.zeros(b, n_sites, self.prior.dim_local)
        return self._inf._tokens(SiteData(tg, tl, xs, ts), "posterior")

    @torch.no_grad()
    def sample_batched(
        self,
        sample_shape: tuple[int, ...] | torch.Size,
        x: torch.Tensor,
        times: torch.Tensor | None = None,
        chunk: int = 4096,
    ) -> torch.Tensor:
        """``[n, B, D]`` draws for each of B observations ``x [B, S, n_obs]`` (sbi's convention)."""
        n = int(torch.Size(sample_shape).numel())
        xs, ts = self._obs(x, times, batched=True)
        tok = self._cond_tokens(xs, ts).repeat(n)  # row b * n + k
        out = []
        for lo in range(0, tok.value.shape[0], chunk):
            part = tok[lo : lo + chunk]
            z = sample_targets(self._inf.net, part, self._inf.ode_steps, self._inf.generator)
            out.append(self._inf.standardiser.invert_targets(z, part))
        theta = torch.cat(out).reshape(xs.shape[0], n, -1)
        return theta.transpose(0, 1)

    def sample(
        self,
        sample_shape: tuple[int, ...] | torch.Size = (1,),
        x: torch.Tensor | None = None,
        times: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``[n, Dg + S * Dl]`` draws given one observation ``x [S, n_obs]`` (or the default x)."""
        xs, ts = self._obs(x, times, batched=False)
        return self.sample_batched(sample_shape, xs, ts)[:, 0]

    def log_prob(self, theta: torch.Tensor, x: torch.Tensor | None = None, times: torch.Tensor | None = None):
        """log q(theta | x) ``[n]`` (exact divergence along the ODE; -inf outside the prior's support)."""
        xs, ts = self._obs(x, times, batched=False)
        theta = torch.as_tensor(theta, dtype=torch.float32)
        n_sites = xs.shape[1]
        d = self.prior.dim_global + n_sites * self.prior.dim_local
        if theta.ndim != 2 or theta.shape[1] != d:
            raise ValueError(f"mismatched token shapes: theta must be [n, {d}] for {n_sites} sites")
        tok = self._cond_tokens(xs, ts).repeat(theta.shape[0])
        std = self._inf.standardiser
        lab = tok.label[tok.target].reshape(theta.shape)
        z1 = (theta - std.mean[lab]) / std.std[lab]
        lp = log_prob(self._inf.net, tok, z1, self._inf.ode_steps) + std.log_jacobian(tok)
        tg, tl = theta[:, : self.prior.dim_global], theta[:, self.prior.dim_global :].reshape(len(theta), n_sites, -1)
        support = torch.isfinite(self.prior.log_prior(tg, tl))
        return torch.where(support, lp.detach(), torch.full_like(lp, -math.inf))
