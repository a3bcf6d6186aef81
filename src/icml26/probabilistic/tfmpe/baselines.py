"""The baselines users know: sbi's NPE and FMPE trained on full S-site simulations (flattened), at equal budget.

An S-site simulation costs S simulator calls, so a budget of B calls buys B // S (theta, x) pairs. The
hierarchical prior is handed to sbi as a torch ``Distribution`` over the flat, unconstrained theta.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import torch
from torch.distributions import Distribution, constraints

from icml26.probabilistic.tfmpe.tasks import HierarchicalTask, SiteData

__all__ = ["FlatHierarchicalPrior", "fit_sbi"]


class FlatHierarchicalPrior(Distribution):
    """p(theta_g) prod_s p(theta_s | theta_g) over flat theta = (theta_g, theta_1, ..., theta_S)."""

    arg_constraints: dict = {}  # noqa: RUF012 (torch's Distribution protocol)
    support = constraints.real_vector
    has_rsample = False

    def __init__(self, task: HierarchicalTask, n_sites: int, seed: int = 0) -> None:
        self.task, self.n_sites = task, n_sites
        self.generator = torch.Generator().manual_seed(seed)
        super().__init__(torch.Size(), torch.Size([task.dim_global + n_sites * task.dim_local]), validate_args=False)

    def sample(self, sample_shape: torch.Size | tuple = ()) -> torch.Tensor:
        shape = torch.Size(sample_shape)
        n = shape.numel()
        tg = self.task.sample_global(n, self.generator)
        tl = self.task.sample_local(tg, self.n_sites, self.generator)
        return torch.cat([tg, tl.flatten(1)], 1).reshape(*shape, -1)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        dg = self.task.dim_global
        tl = value[..., dg:].reshape(*value.shape[:-1], self.n_sites, self.task.dim_local)
        return self.task.log_prior(value[..., :dg], tl)

    @property
    def mean(self) -> torch.Tensor:
        return self.sample((2000,)).mean(0)

    @property
    def variance(self) -> torch.Tensor:
        return self.sample((2000,)).var(0)


class NullTracker:
    """sbi's ``Tracker`` protocol, doing nothing: sbi's default writes TensorBoard logs to ./sbi-logs."""

    log_dir = None

    def log_metric(self, name: str, value: float, step: int | None = None) -> None:
        pass

    def log_metrics(self, metrics: dict, step: int | None = None) -> None:
        pass

    def log_params(self, params: dict) -> None:
        pass

    def add_figure(self, name: str, figure: object, step: int | None = None) -> None:
        pass

    def flush(self) -> None:
        pass


def fit_sbi(method: str, task: HierarchicalTask, data: SiteData, seed: int = 0, **train_kwargs):
    """Train sbi's ``NPE`` or ``FMPE`` (defaults: MAF / MLP vector field) on S-site sets; returns the posterior.

    x is the flattened observations (and their functional inputs when they vary), theta the flat parameters.
    """
    try:
        from sbi.inference import FMPE, NPE
    except ImportError as err:  # pragma: no cover - sbi is part of the probabilistic extra
        raise ImportError("the sbi baselines need sbi: pip install 'icml26[probabilistic]'") from err
    cls = {"npe": NPE, "fmpe": FMPE}.get(method)
    if cls is None:
        raise ValueError(f"method must be 'npe' or 'fmpe', got {method!r}")
    n_sites = data.x.shape[1]
    prior = FlatHierarchicalPrior(task, n_sites, seed)
    quiet = contextlib.redirect_stdout(io.StringIO())  # sbi prints its training summary
    with torch.random.fork_rng(), warnings.catch_warnings(), quiet:
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        inference = cls(prior=prior, show_progress_bars=False, tracker=NullTracker())
        inference.append_simulations(data.theta, flatten_x(data))
        inference.train(show_train_summary=False, **train_kwargs)
        return inference.build_posterior()


def flatten_x(data: SiteData) -> torch.Tensor:
    """sbi's x: the flat observations, followed by the flat functional inputs when they are not all zero."""
    x = data.x.flatten(1)
    return torch.cat([x, data.times.flatten(1)], 1) if bool((data.times != 0).any()) else x
