"""Reproduction of Tilt Matching's claims on CPU-sized problems: the 8-Gaussian ring and a closed-form Gaussian tilt.

Design (every arm of a cell shares the target, the initial network, the energy-evaluation budget and the reference
sample; the margins were fixed before any run and each claim's notes give its reason):

- Ring (C1-C1d, C2): 8 Gaussians on a circle of radius 4 (sd 0.4); base rho_1 = N(0, 3^2 I) (the notes' quick
  problem); velocity = MLP 3 -> 128 -> 128 -> 2 (SiLU) added to the closed-form base velocity, so the untrained model
  is the exact base; reward r = -E - log rho_1. Arms:
  * ``tilt_matching``: the ESS rule (h the largest step with ESS >= 0.5 of the pool), weighted regression, warm
    start, ``inner_iters`` Adam steps (lr 2e-3, batch 512) per annealing step, pools of ``pool_size`` fresh samples;
  * ``iw_flow_matching``: one-shot importance-weighted flow matching from the base (h = 1): one pool of the SAME
    number of energy evaluations and the SAME total number of Adam steps, same initial network;
  * ``smc_mala``: annealed SMC (ESS-chosen temperatures, multinomial resampling, MALA moves with an adapted step)
    with the same number of energy evaluations; it also uses that many gradient evaluations (reported).
  Metrics on ``n_eval`` samples of each arm against an exact reference sample of the same size: exact W2 (the
  assignment problem), the smallest per-mode fraction, the energy W1; ``reference`` is a second exact sample (the
  finite-sample floor of W2). The full profile also runs both flow arms again with minibatches drawn in proportion
  to the weights (``*_resampled``, our variant; reported, not judged). In development runs a narrow base N(0, I)
  (six annealing steps) lost modes at this regression budget (one seed: W2 2.9, smallest mode 0.3%); it is not
  part of the card.
- Variance (C2, our reading of "an objective with strictly lower variance than flow matching"): before every
  annealing step of the ring run, at the warm start b_old, the per-minibatch gradient of each regression's loss over
  32 paired minibatches of one fresh pool (its reward calls are counted apart from the method's budget): the
  trace of the gradient covariance for the flow-matching regression onto dI (``fm_weighted``, the weights w) and
  for the tilt update in cumulant form, the regression onto b_old + (w - 1)(dI - b_old) (``tilt_cumulant``), plus
  the notes' control-variate and first-order forms for the plot. Mean over the annealing steps.
- Fine-tuning (C3, C3b): a flow pretrained by flow matching on samples of N(0, 1.5^2 I) (no closed-form help), tilted
  by the linear reward r(x) = c.x, c = (0.8, -0.4): the exact target is N(1.5^2 c, 1.5^2 I). Metrics: the W2 between
  the Gaussian fitted to 4000 (full: 8000) samples and the exact target, and the relative RMS error of the learned
  velocity against the closed-form tilted velocity on the target's interpolant.

Not attempted (and not claimed): Lennard-Jones 13/55 state of the art, DW-4, Many-Well-32 and Stable Diffusion
fine-tuning (CPU budget; the energies are implemented and tested, no MCMC reference is generated); GMM-40.
The abstract reports no numbers.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread
from icml26._core.plots import with_judged_metric

REVISION = 1
RING = {"radius": 4.0, "sd": 0.4}
NET = {"hidden": 128, "depth": 2}
FIT = {"ess_target": 0.5, "batch_size": 512, "lr": 2e-3, "ode_steps": 32}
TILT_C = (0.8, -0.4)
GAUSS_SCALE = 1.5


def _velocity(dim: int, base_scale: float | None, seed: int) -> Any:
    import torch

    from icml26.probabilistic.tilt_matching.flow import GaussianVelocity, VelocityMLP

    torch.manual_seed(seed)
    base = None if base_scale is None else GaussianVelocity([0.0] * dim, base_scale)
    return VelocityMLP(dim, NET["hidden"], NET["depth"], base=base)


def _sample_metrics(x: Any, ref: Any, target: Any) -> dict[str, float]:
    from icml26.probabilistic.tilt_matching.metrics import energy_w1, mode_fractions, w2_exact

    if not bool(x.isfinite().all()):
        return {"w2": float("inf"), "min_mode_fraction": 0.0, "energy_w1": float("inf")}
    return {
        "w2": w2_exact(x, ref),
        "min_mode_fraction": float(mode_fractions(x, target.means).min()),
        "energy_w1": energy_w1(target.energy(x), target.energy(ref)),
    }


# ---------------------------------------------------------------------------------------------------- cells
@single_torch_thread()
def run_ring(cell: Cell) -> dict[str, Any]:
    """Tilt Matching, one-shot IW flow matching and SMC-MALA on the ring at one energy budget; gradient variances."""
    import copy

    import numpy as np
    import torch

    from icml26.probabilistic.tilt_matching.baselines import smc_mala
    from icml26.probabilistic.tilt_matching.energies import CountingEnergy, boltzmann_reward, ring8
    from icml26.probabilistic.tilt_matching.flow import GaussianVelocity
    from icml26.probabilistic.tilt_matching.tilt import TiltMatching

    seed, scale = cell.seed, float(cell["base_scale"])
    n_eval, pool, inner = int(cell["n_eval"]), int(cell["pool_size"]), int(cell["inner_iters"])
    target = ring8(**RING)
    base = GaussianVelocity([0.0, 0.0], scale)

    def reward() -> tuple[CountingEnergy, Any]:
        energy = CountingEnergy(target.energy, 2)
        return energy, boltzmann_reward(energy, base.log_prob_at)

    def anneal_and_one_shot(resample: bool, variance: bool) -> tuple[Any, Any, Any, Any, list[dict[str, float]]]:
        """Tilt Matching, then one-shot IW flow matching with its energy evaluations and Adam steps (same rule)."""
        energy_tm, reward_tm = reward()
        tm = TiltMatching(
            _velocity(2, scale, seed), reward_tm, pool_size=pool, inner_iters=inner, resample=resample, seed=seed, **FIT
        )
        rows = []
        for step in range(int(cell.get("max_steps", 50))):
            if tm.a_ >= 1.0 - 1e-9 or tm.diverged_:
                break
            if variance:  # a copy with its own counter and stream: the method's run is untouched
                _, reward_diag = reward()
                diag = TiltMatching(
                    copy.deepcopy(tm.velocity), reward_diag, pool_size=pool, seed=10_000 + 97 * seed + step, **FIT
                )
                diag.a_ = tm.a_
                out = diag.gradient_variance(n_batches=int(cell.get("variance_batches", 32)))
                rows.append(
                    {"step": step, "a": tm.a_, "h": out["h"], "ess": out["ess"]}
                    | {u: out[u]["trace_cov"] for u in ("weighted", "control_variate", "cumulant", "first_order")}
                )
            tm.fit(max_steps=1)
        energy_os, reward_os = reward()
        one_shot = TiltMatching(
            _velocity(2, scale, seed),
            reward_os,
            step_size=1.0,
            pool_size=tm.energy_evals_,
            inner_iters=tm.adam_steps_,
            resample=resample,
            seed=seed,
            **FIT,
        ).fit()
        return tm, energy_tm, one_shot, energy_os, rows

    tm, energy_tm, one_shot, energy_os, variance_rows = anneal_and_one_shot(False, bool(cell.get("variance", True)))
    budget, adam_steps = tm.energy_evals_, tm.adam_steps_

    energy_smc = CountingEnergy(target.energy, 2)
    gen = torch.Generator().manual_seed(seed)
    smc = smc_mala(
        energy_smc,
        lambda n, g: scale * torch.randn(n, 2, generator=g),
        lambda x: (base.log_prob_at(x), -x / scale**2),
        n_eval,
        budget,
        ess_target=FIT["ess_target"],
        generator=gen,
    )

    ref_gen = torch.Generator().manual_seed(1_000_003 + seed)
    ref, ref2 = target.sample_reference(n_eval, ref_gen), target.sample_reference(n_eval, ref_gen)
    sample_gen = torch.Generator().manual_seed(2_000_003 + seed)
    metrics: dict[str, dict[str, float]] = {
        "tilt_matching": _sample_metrics(tm.sample(n_eval, sample_gen), ref, target)
        | {"energy_evals": float(energy_tm.evaluations), "grad_evals": float(energy_tm.grad_evaluations)},
        "iw_flow_matching": _sample_metrics(one_shot.sample(n_eval, sample_gen), ref, target)
        | {"energy_evals": float(energy_os.evaluations), "grad_evals": float(energy_os.grad_evaluations)},
        "smc_mala": _sample_metrics(smc.samples, ref, target)
        | {"energy_evals": float(smc.energy_evals), "grad_evals": float(smc.grad_evals)},
        "reference": _sample_metrics(ref2, ref, target),
    }
    if cell.get("resampled_arms", False):  # not judged: both arms again with minibatches drawn in proportion to w
        tm_r, _, one_shot_r, _, _ = anneal_and_one_shot(True, False)
        metrics["tilt_matching_resampled"] = _sample_metrics(tm_r.sample(n_eval, sample_gen), ref, target)
        metrics["iw_flow_matching_resampled"] = _sample_metrics(one_shot_r.sample(n_eval, sample_gen), ref, target)
    if variance_rows:
        for name, key in (
            ("fm_weighted", "weighted"),
            ("tilt_cumulant", "cumulant"),
            ("tilt_control_variate", "control_variate"),
            ("tilt_first_order", "first_order"),
        ):
            metrics[name] = {"grad_var": float(np.mean([row[key] for row in variance_rows]))}
    steps = [{"step": i} | h for i, h in enumerate(tm.history_)]
    info = {
        "annealing_steps": len(tm.history_),
        "adam_steps": adam_steps,
        "one_shot_ess": one_shot.history_[0]["ess"] if one_shot.history_ else float("nan"),
        "smc_temperatures": len(smc.betas),
        "smc_reached_target": smc.reached_target,
        "smc_acceptance": float(np.mean(smc.acceptance)) if smc.acceptance else float("nan"),
        "diverged": tm.diverged_,
    }
    return {"metrics": metrics, "curves": {"annealing": steps, "variance": variance_rows}, "info": info}


@single_torch_thread()
def run_gaussian_tilt(cell: Cell) -> dict[str, Any]:
    """Pretrain a flow on N(0, s^2 I) by flow matching, tilt it by r = c.x, compare with N(s^2 c, s^2 I)."""
    import numpy as np
    import torch

    from icml26.probabilistic.tilt_matching.flow import GaussianVelocity, interpolate
    from icml26.probabilistic.tilt_matching.metrics import gaussian_w2
    from icml26.probabilistic.tilt_matching.tilt import TiltMatching

    seed, s = cell.seed, GAUSS_SCALE
    c = torch.tensor(TILT_C)
    velocity = _velocity(2, None, seed)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(velocity.parameters(), lr=FIT["lr"])
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, int(cell["pretrain_iters"]), eta_min=0.1 * FIT["lr"])
    bs = FIT["batch_size"]
    for _ in range(int(cell["pretrain_iters"])):  # the "pretrained model": plain flow matching on base samples
        x1, x0, t = (
            s * torch.randn(bs, 2, generator=gen),
            torch.randn(bs, 2, generator=gen),
            torch.rand(bs, generator=gen),
        )
        i_t, di = interpolate(x0, x1, t)
        loss = ((velocity(i_t, t) - di) ** 2).sum(-1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()

    def moments_w2(x: torch.Tensor, mean: torch.Tensor) -> float:
        xn = x.double().numpy()
        return gaussian_w2(xn.mean(0), np.cov(xn.T), mean.double().numpy(), np.eye(2) * s**2)

    n_eval = int(cell["n_eval"])
    # our reading of fine-tuning: the tilt is learned as a zero-initialised residual on the frozen pretrained field
    tilted = _velocity(2, None, seed)
    tilted.base = velocity.requires_grad_(False)
    torch.nn.init.zeros_(tilted.net[-1].weight)
    torch.nn.init.zeros_(tilted.net[-1].bias)
    tm = TiltMatching(
        tilted,
        lambda x: x @ c,
        pool_size=int(cell["pool_size"]),
        inner_iters=int(cell["inner_iters"]),
        seed=seed,
        **FIT,
    )
    pretrained_w2 = moments_w2(tm.sample(n_eval, torch.Generator().manual_seed(7 + seed)), torch.zeros(2))
    tm.fit()
    target_mean = s**2 * c
    x_tilted = tm.sample(n_eval, torch.Generator().manual_seed(11 + seed))
    tilted_w2 = moments_w2(x_tilted, target_mean)
    exact = GaussianVelocity(target_mean, s)
    g = torch.Generator().manual_seed(13 + seed)
    x1 = target_mean + s * torch.randn(n_eval, 2, generator=g)
    x0, t = torch.randn(n_eval, 2, generator=g), torch.rand(n_eval, generator=g)
    i_t, _ = interpolate(x0, x1, t)
    with torch.no_grad():
        b, b_star = tm.velocity(i_t, t), exact(i_t, t)
    rel = float(((b - b_star) ** 2).sum(-1).mean().sqrt() / (b_star**2).sum(-1).mean().sqrt())
    return {
        "metrics": {
            "tilt_matching": {"gauss_w2": tilted_w2, "velocity_rel_err": rel, "energy_evals": float(tm.energy_evals_)},
            "pretrained": {"gauss_w2": pretrained_w2},
        },
        "curves": {"annealing": [{"step": i} | h for i, h in enumerate(tm.history_)]},
        "info": {
            "sample_mean": x_tilted.mean(0).tolist(),
            "sample_sd": x_tilted.std(0).tolist(),
            "target_mean": target_mean.tolist(),
        },
    }


# ---------------------------------------------------------------------------------------------------- plots
def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("status", "ok") == "ok" and "metrics" in r]


def plot_variance(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """C2: per annealing step, the trace of the minibatch-gradient covariance of each regression (log scale)."""
    import numpy as np

    rows = [row for r in _ok(records) for row in (r.get("curves") or {}).get("variance", [])]
    names = {  # key: (label, colour, style); the control-variate form equals flow matching at the warm start
        "weighted": ("flow matching (weighted, dI target)", "C3", "o-"),
        "cumulant": ("tilt, cumulant form (judged)", "C0", "s-"),
        "control_variate": ("tilt, control-variate form (= flow matching at b_old)", "C2", "x--"),
        "first_order": ("tilt, first-order form", "C1", "^:"),
    }
    steps = sorted({row["step"] for row in rows})
    for key, (label, colour, style) in names.items():
        mean = [np.mean([x[key] for x in rows if x["step"] == s]) for s in steps]
        ax.semilogy(steps, mean, style, color=colour, label=f"{label}: mean over seeds")
    ax.set_xticks(steps)
    ax.set_xlabel("annealing step (gradient at the warm start b_old)")
    ax.set_ylabel("trace of minibatch-gradient covariance")
    ax.legend(fontsize=7)


RING_ARMS = {
    "tilt_matching": "Tilt Matching (judged)",
    "iw_flow_matching": "one-shot IW flow matching",
    "smc_mala": "SMC-MALA (uses gradients)",
    "tilt_matching_resampled": "Tilt Matching, resampled minibatches (ours)",
    "iw_flow_matching_resampled": "one-shot, resampled minibatches (ours)",
}


def plot_ring_arms(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Every ring arm's W2 (mean +- sd over seeds) at the same energy budget, and the exact-sample floor."""
    import numpy as np

    ok = _ok(records)
    shown = [a for a in RING_ARMS if any(a in r["metrics"] for r in ok)]
    for i, arm in enumerate(shown):
        vals = [r["metrics"][arm]["w2"] for r in ok if arm in r["metrics"]]
        ax.errorbar([i], [np.mean(vals)], yerr=[np.std(vals)], fmt="o", capsize=4, color=f"C{i}", label=RING_ARMS[arm])
    floor = [r["metrics"]["reference"]["w2"] for r in ok]
    ax.axhline(float(np.mean(floor)), color="k", ls="--", lw=0.8, label="floor: W2 between two exact samples")
    ax.set_xticks(range(len(shown)), [str(i + 1) for i in range(len(shown))])
    ax.set_xlabel("arm (see legend, in order)")
    ax.set_ylabel("W2 (mean +- sd over seeds)")
    ax.legend(fontsize=7)


# --------------------------------------------------------------------------------------------------- claims
RING_PROFILES = profiles(
    smoke={"base_scale": 3.0, "pool_size": 128, "inner_iters": 10, "n_eval": 100, "variance_batches": 4},
    quick={"base_scale": 3.0, "pool_size": 2048, "inner_iters": 300, "n_eval": 1000},
    full={"base_scale": 3.0, "pool_size": 4096, "inner_iters": 1000, "n_eval": 2000, "resampled_arms": True},
    seeds=(2, 3, 6),
    cell_seconds=(2.0, 10.0, 55.0),  # quick: ~9 s of CPU per cell at 300 inner steps (measured by the lead)
)
GAUSS_PROFILES = profiles(
    smoke={"pretrain_iters": 30, "pool_size": 128, "inner_iters": 10, "n_eval": 300},
    quick={"pretrain_iters": 600, "pool_size": 2048, "inner_iters": 500, "n_eval": 4000},
    full={"pretrain_iters": 2000, "pool_size": 4096, "inner_iters": 1000, "n_eval": 8000},
    seeds=(2, 3, 6),
    cell_seconds=(1.0, 5.0, 18.0),  # quick: ~4-5 s of CPU per cell at 600 + 500 steps (measured by the lead)
)
_RING_FINDING = (
    "Full-profile result (6 seeds): not reproduced, Tilt Matching's W2 is 19% WORSE than one-shot's (0.68 vs "
    "0.58; exact-sample floor 0.41). Why, as far as we measured: the notes' base N(0, 3^2 I) already covers the "
    "ring, so the one-shot pool keeps an ESS of 11% (about 1350 of 12288 points), plenty for a 2-D regression, "
    "and the one-shot arm spends all its Adam steps on the final target, while Tilt Matching splits them over 3 "
    "annealing steps whose regression errors carry forward (each step tilts the model it has, not the exact "
    "rho_{1,a}). With minibatches drawn in proportion to w (our variant, both arms) one-shot reaches the floor "
    "(0.405) and Tilt Matching 0.656. Annealing should pay where the one-shot weights degenerate (a narrow base); "
    "at our regression budget Tilt Matching lost modes there in development runs, so that is not shown either. "
    "The quick profile (3 seeds, 300 Adam steps per annealing step) is inconclusive with the same sign"
)
_RING = dict(run=run_ring, profiles=RING_PROFILES, revision=REVISION)
_GAUSS = dict(run=run_gaussian_tilt, profiles=GAUSS_PROFILES, revision=REVISION)
_BUDGET = (
    "Equal budget: the one-shot arm gets the Tilt Matching run's energy evaluations as one pool and its total Adam "
    "steps, from the same initial network; SMC-MALA (1000 / 2000 particles) gets the same energy evaluations and as "
    "many gradient evaluations (Tilt Matching's grad_evals are 0, recorded per arm). Metrics on 1000 (quick) / 2000 "
    "(full) samples against an exact sample of the same size; the 'reference' arm (a second exact sample) is the "
    "finite-sample floor. Smaller than the notes: pools of 2048 / 4096, 500 / 1000 Adam steps per annealing step, "
    "3 / 6 seeds"
)

CARD = PaperCard(
    slug="tilt_matching",
    title="Tilt Matching",
    group="probabilistic",
    api="icml26.probabilistic.tilt_matching.TiltMatching",
    extra="probabilistic",
    summary="Anneal a flow's velocity toward a reward-tilted target by ESS-controlled weighted flow-matching "
    "regressions on its own samples, with no reward gradients; against one-shot importance-weighted flow matching "
    "and annealed SMC-MALA on the 8-Gaussian ring, a measured gradient-variance comparison, and a closed-form "
    "Gaussian fine-tuning check.",
    claims=(
        Claim(
            id="C1",
            statement="Annealed Tilt Matching samples the 8-Gaussian ring (base N(0, 3^2 I)) better than one-shot "
            "importance-weighted flow matching at an equal energy-evaluation budget: W2 at least 10% lower.",
            metric="w2",
            direction="lower",
            method="tilt_matching",
            baselines=("iw_flow_matching",),
            min_effect=0.1,
            relative=True,
            paper_figure="notes: annealed Tilt Matching clearly beats one-shot weighted flow matching in W2",
            notes="margin 10% relative, fixed before any run (the smallest gain we would call clear). "
            + _BUDGET
            + ". "
            + _RING_FINDING,
            plot=with_judged_metric(plot_ring_arms, title="every arm at the same energy budget"),
            **_RING,
        ),
        Claim(
            id="C1b",
            statement="Tilt Matching holds every mode of the ring: the smallest per-mode fraction of its samples "
            "exceeds 5% (each mode has 12.5%).",
            metric="min_mode_fraction",
            direction="higher",
            method="tilt_matching",
            reference=0.05,
            paper_figure="notes' test: all 8 ring modes hold at least 5% each",
            notes="nearest-mode assignment of every sample (exact for a mixture); threshold from the notes. Full "
            "profile: smallest mode 8.9% (6 of 6 seeds above 5%); the quick profile's 3 seeds (pools of 2048, 300 "
            "Adam steps) give 7.0% with an interval reaching below 5% (inconclusive)",
            **_RING,
        ),
        Claim(
            id="C1c",
            statement="Tilt Matching, with no energy gradients, is on par with annealed SMC-MALA at an equal number "
            "of energy evaluations: its W2 on the ring is at most 20% worse.",
            metric="w2",
            direction="lower",
            method="tilt_matching",
            baselines=("smc_mala",),
            test="noninferiority",
            min_effect=0.2,
            relative=True,
            paper_figure="notes: roughly on par with SMC-MALA in 2-D",
            notes="non-inferiority margin 20% relative, fixed before any run ('roughly on par'); SMC-MALA also "
            "spends one gradient evaluation per energy evaluation, Tilt Matching none. Full profile: 0.68 vs 0.76, "
            "but SMC-MALA's W2 varies widely across seeds (sd 0.28: 12000 evaluations for 2000 particles leave it "
            "few tempering and move rounds, and its energy W1 is the best of all arms, 0.03), so the interval spans "
            "+-45%: inconclusive. " + _BUDGET,
            plot=with_judged_metric(plot_ring_arms, title="every arm at the same energy budget"),
            **_RING,
        ),
        Claim(
            id="C1d",
            statement="Tilt Matching's energy histogram is closer to the target's than one-shot importance-weighted "
            "flow matching's at an equal budget: energy W1 at least 10% lower.",
            metric="energy_w1",
            direction="lower",
            method="tilt_matching",
            baselines=("iw_flow_matching",),
            min_effect=0.1,
            relative=True,
            paper_figure="notes: metrics include the energy W1; no number given",
            notes="margin 10% relative, fixed before any run, as C1. Full profile: +8.7% (95% CI +0.8% to +16.6%), "
            "5 of 6 seeds better: a gain, but not shown to reach the margin (the quick profile's 3 seeds at 300 Adam "
            "steps per annealing step: -1.0%, interval -17.9% to +15.9%, inconclusive); the flows' energy W1 (1.7-1.8) "
            "is far above SMC-MALA's (0.03): a few flow samples fall between the modes at high energy. " + _BUDGET,
            **_RING,
        ),
        Claim(
            id="C2",
            statement="The tilt update minimises an objective of lower variance than flow matching: at the warm "
            "start of every annealing step its minibatch gradient's covariance trace is at least 20% below that of "
            "the flow-matching regression onto the interpolant velocity.",
            metric="grad_var",
            direction="lower",
            method="tilt_cumulant",
            baselines=("fm_weighted",),
            min_effect=0.2,
            relative=True,
            paper_figure="abstract: 'an objective with strictly lower variance than flow matching itself'",
            notes="our reading: the low-variance objective is the regression onto b_old + (w - 1)(dI - b_old), whose "
            "conditional mean is the sum of joint cumulants of dI and the tilt; 'flow matching' is the weighted "
            "regression onto dI with the same weights. Both are measured on the same pools, minibatches, x_0 and t, "
            "at the same network (paired). Since E[w] = 1, E[(w - 1)^2] = E[w^2] - 1: part of the gap is structural, "
            "the measurement is how large it is for a real network and pool. Margin 20% relative, fixed before any "
            "run. The plot also shows the notes' control-variate form (which equals flow matching's gradient at the "
            "warm start) and the first-order form",
            plot=with_judged_metric(plot_variance, title="gradient variance per annealing step"),
            **_RING,
        ),
        Claim(
            id="C3",
            statement="Tilting a pretrained flow by a linear reward reaches the closed-form tilted Gaussian: the W2 "
            "between the fitted Gaussian of its samples and N(s^2 c, s^2 I) is below 0.1.",
            metric="gauss_w2",
            direction="lower",
            method="tilt_matching",
            reference=0.0,
            test="noninferiority",
            min_effect=0.1,
            paper_figure="notes: closed form N(s^2 c, s^2 I); the weighted regression should recover it within ~5%",
            notes="s = 1.5, c = (0.8, -0.4): the target mean moves by 1.34 s.d.; margin 0.1 (7% of s), fixed before "
            "any run. The 'pretrained' arm is the flow before the tilt, measured against its own N(0, s^2 I) (the "
            "pretraining floor; not judged). Fine-tuning of Stable Diffusion is not attempted (no weights offline). "
            "Full profile: W2 0.19 +- 0.09 against a pretraining floor of 0.05: the tilt goes the right way (from "
            "2.0 before it) but not within 0.1; the fitted mean and spread carry the two pools' Monte Carlo error "
            "and the regression noise (the exact-base unit test records 0.1-0.35 at smaller pools). Our reading of "
            "fine-tuning: the tilt is a zero-initialised residual MLP on the frozen pretrained field. The quick "
            "profile (600 pretraining + 500 tilt steps, to fit the 60 s budget) reads 'not reproduced' (0.26): a "
            "shorter regression, not a different answer",
            **_GAUSS,
        ),
        Claim(
            id="C3b",
            statement="The tilted velocity matches the closed-form tilted velocity: relative RMS error below 10% on "
            "the target's interpolant.",
            metric="velocity_rel_err",
            direction="lower",
            method="tilt_matching",
            reference=0.0,
            test="noninferiority",
            min_effect=0.1,
            paper_figure="notes: the weighted regression must recover the analytic velocity within about 5%",
            notes="the notes' 5% is for the exact base (a unit test records 7-10.5% at its budget); here the base is "
            "itself a learned flow, so the margin is 10%, fixed before any run. Full profile: 9.6% +- 2.1%, the "
            "interval reaches past the margin (inconclusive); quick (shorter regressions) 14%, not reproduced",
            **_GAUSS,
        ),
    ),
)
