"""The hierarchical SBI benchmark runs: every method at one simulator budget on one task, scored against a reference.

``gaussian_run`` (hierarchical Gaussian, exact reference posterior): TFMPE-LF (one likelihood fit from B single-site
calls, then one posterior fit per number of sites S), sbi's NPE and FMPE and TFMPE-direct on B // S full S-site
simulations; C2ST on the joint and on theta_g alone, and the posterior-mean error. ``sir_calibration`` (hierarchical
SIR): TARP and SBC of TFMPE-LF over test observations drawn from the prior.
"""

from __future__ import annotations

import copy
import time
import warnings
from functools import partial
from typing import Any

import torch

from icml26.probabilistic.tfmpe.baselines import fit_sbi
from icml26.probabilistic.tfmpe.diagnostics import c2st, sbc_ranks, sbc_uniform_ks, tarp_credibility, uniform_ks
from icml26.probabilistic.tfmpe.inference import TFMPE, ConvergenceWarning
from icml26.probabilistic.tfmpe.tasks import HierGaussian, HierSIR

__all__ = ["gaussian_run", "sir_calibration"]

SBI_METHODS = ("npe", "fmpe")


def _scores(q: torch.Tensor, ref: torch.Tensor, seed: int, n_folds: int = 3) -> dict[str, float]:
    """Scores of draws q against the exact reference: C2ST (joint and theta_g alone), the posterior-mean error in
    reference sds (mean over dimensions) and that of log sigma."""
    mean_err = ((q.mean(0) - ref.mean(0)).abs() / ref.std(0)).mean()
    return {
        "c2st": c2st(q, ref, seed, n_folds),
        "c2st_global": c2st(q[:, :1], ref[:, :1], seed, n_folds),
        "mean_error": float(mean_err),
        "sigma_error": float((q[:, 0].mean() - ref[:, 0].mean()).abs() / ref[:, 0].std()),
    }


def _tfmpe(task, net: dict[str, Any], seed: int, batch_size: int = 100) -> TFMPE:
    return TFMPE(task, random_state=seed, batch_size=batch_size, **net)


def _judge(sample, xs, refs, score, seconds_before: float, start: float) -> dict[str, float]:
    """Mean scores of ``sample(x_o)`` over the observations, and the CPU seconds since ``start`` (plus before)."""
    rows = [score(sample(x_o), ref) for x_o, ref in zip(xs, refs, strict=True)]
    mean = {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
    return mean | {"seconds": seconds_before + time.process_time() - start}


def _draw(post, n: int, x_o: torch.Tensor) -> torch.Tensor:
    return post.sample((n,), x=x_o)


def _draw_sbi(post, n: int, seed: int, x_o: torch.Tensor) -> torch.Tensor:
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return post.sample((n,), x=x_o.flatten()[None], show_progress_bars=False)


def gaussian_run(
    budget: int,
    sites: list[int],
    seed: int,
    net: dict[str, Any],
    n_iter: int,
    m_obs: int = 3,
    n_post: int = 1000,
    n_obs: int = 3,
    methods: tuple[str, ...] = ("tfmpe_lf", "npe", "fmpe"),
    sbi_train: dict[str, Any] | None = None,
    c2st_folds: int = 3,
) -> dict[str, Any]:
    """Every method at budget B for each S in ``sites``, scored on ``n_obs`` observations drawn from the prior
    (scores averaged over them, as sbibm averages over its observations); returns {S: {method: scores}}.

    ``sbi_train`` is passed to sbi's ``train`` (default: sbi's own defaults, early stopping included). Seconds are
    CPU seconds of the fit and the sampling (one thread), not wall time. ``c2st_folds``: the C2ST's cross-validation
    folds (fewer: cheaper, a slightly weaker classifier for every method alike)."""
    score = partial(_scores, seed=seed, n_folds=c2st_folds)
    gen = torch.Generator().manual_seed(seed)
    obs_task = HierGaussian(m_obs=m_obs)  # observations and references are not part of any budget
    lf_task = HierGaussian(m_obs=m_obs)
    single = lf_task.simulate_single_sites(budget, gen)
    calls: dict[str, dict[str, int]] = {}
    out: dict[int, dict[str, dict[str, float]]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        base = _tfmpe(lf_task, net, seed)
        base.append_simulations(single.theta, single.x)
        start = time.process_time()
        base.train_likelihood(n_iter)
        lik_seconds = time.process_time() - start
        # the surrogate against the simulator, per site, at fresh parameters (diagnostic draws, not budget)
        check = obs_task.simulate_single_sites(n_post, gen)
        x_sur = base.surrogate_sites(check.theta_global, check.theta_local, check.times)
        surrogate = c2st(
            torch.cat([check.theta_global, check.theta_local[:, 0], x_sur[:, 0]], 1),
            torch.cat([check.theta_global, check.theta_local[:, 0], check.x[:, 0]], 1),
            seed,
            c2st_folds,
        )
        for n_sites in sites:
            xs = obs_task.simulate(n_obs, n_sites, gen).x
            refs = [obs_task.reference_posterior(x_o, n_post, seed=seed + k) for k, x_o in enumerate(xs)]
            scores: dict[str, dict[str, float]] = {}

            if "tfmpe_lf" in methods:
                start = time.process_time()
                inf = copy.deepcopy(base)
                inf.train_posterior(n_sites, n_iter)
                post = inf.build_posterior()
                sample = partial(_draw, post, n_post)
                scores["tfmpe_lf"] = _judge(sample, xs, refs, score, lik_seconds, start)
                scores["tfmpe_lf"]["surrogate_c2st"] = surrogate
            full_task = HierGaussian(m_obs=m_obs)
            full = full_task.simulate(budget // n_sites, n_sites, gen)  # NPE, FMPE, direct: B // S full sets
            calls[f"S{n_sites}"] = {"tfmpe_lf": lf_task.n_calls, "full_sets": full_task.n_calls}
            for method in SBI_METHODS:
                if method in methods:
                    start = time.process_time()
                    sbi_post = fit_sbi(method, full_task, full, seed, **(sbi_train or {}))

                    sample = partial(_draw_sbi, sbi_post, n_post, seed)
                    scores[method] = _judge(sample, xs, refs, score, 0.0, start)
            if "tfmpe_direct" in methods:
                start = time.process_time()
                direct = _tfmpe(full_task, net, seed, batch_size=min(100, full.x.shape[0]))
                direct.append_simulations(full.theta, full.x)
                direct.train(mode="direct", n_iter=n_iter)
                sample = partial(_draw, direct.build_posterior(), n_post)
                scores["tfmpe_direct"] = _judge(sample, xs, refs, score, 0.0, start)
            out[n_sites] = scores
    return {"scores": out, "calls": calls}


def sir_calibration(
    budget: int,
    n_sites: int,
    seed: int,
    net: dict[str, Any],
    n_iter: int,
    n_test: int = 100,
    n_post: int = 100,
    n_times: int = 10,
) -> dict[str, Any]:
    """TFMPE-LF on the hierarchical SIR from B single-site calls; TARP and SBC over n_test prior draws."""
    gen = torch.Generator().manual_seed(seed)
    task = HierSIR(n_sites=n_sites, n_times=n_times)
    single = task.simulate_single_sites(budget, gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        inf = _tfmpe(task, net, seed)
        inf.append_simulations(single.theta, single.x, single.times)
        inf.train(mode="lf", n_sites=n_sites, n_iter=n_iter)
    test = HierSIR(n_sites=n_sites, n_times=n_times).simulate(n_test, n_sites, gen)
    q = inf.build_posterior().sample_batched((n_post,), test.x, test.times)  # [n_post, n_test, D]
    f = tarp_credibility(q, test.theta, seed=seed)
    ranks = sbc_ranks(q, test.theta)
    ks = sbc_uniform_ks(ranks, n_post)
    sd_ratio = (q.std(0) / task_prior_sd(task, n_sites)).mean(0)
    return {
        "tarp_ks": uniform_ks(f),
        "sbc_ks_global": ks[0],
        "sbc_ks_local": float(sum(ks[1:]) / len(ks[1:])),
        "contraction_global": float(1 - sd_ratio[0] ** 2),
        "calls": task.n_calls,
        "credibility": f.tolist(),
        "ranks_global": ranks[:, 0].tolist(),
    }


def task_prior_sd(task, n_sites: int, n: int = 4000) -> torch.Tensor:
    g = torch.Generator().manual_seed(12345)
    tg = task.sample_global(n, g)
    tl = task.sample_local(tg, n_sites, g)
    return torch.cat([tg, tl.flatten(1)], 1).std(0)
