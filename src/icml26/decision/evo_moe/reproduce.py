"""Reproduction of ECo-MoE's claims on a substitute task: latent-gated experts vs a monolithic universal controller
vs per-robot policies, and evo by demo, on the torch-vectorised MorphReach family (see the package docstring).

Cells (paired: every arm of a cell runs the same decoder, CMA-ES seed, PPO sample budget and scoring targets):

- ``run_codesign``: the arms ``moe`` (4 experts gated by softmax(MLP(z))), ``monolithic`` (one MLP of [obs, z],
  width chosen to match the mixture's parameter count) and ``per_robot`` (a fresh one-expert-sized policy per
  sampled design, trained on that design's envs only), each a full co-design run (CMA-ES over z, PPO on the
  controller). Read by C1 (final fitness) and C2 (forgetting of early elites).
- ``run_demo``: evo by demo; a demo expert pretrained on a hand-designed body, then four mixture runs: freeform,
  pretrain (frozen demo expert plugged in), predesign (search mean started at the demo's latent) and costeer (both).
  Read by C3 (pretrain vs freeform) and C4 (costeer vs predesign): do frozen demo experts steer evolution towards the
  demo's morphology?

Margins were fixed before any claim run, from the metrics' units (not from results): fitness is minus the mean
distance of the tip to its target plus a small effort term (link-length units; doing nothing scores about -2.1),
C1 0.02 (1% of that); C2 0.01 fitness units of forgetting; C3/C4 0.05 of the morphology distance, a number in
[0, 1] (half the RMS gap of the scaled continuous parameters, half the share of differing regime bits).
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles


def run_codesign(cell: Cell) -> dict[str, Any]:
    """The mixture, the monolithic and the per-robot arm on the same seed (see the module)."""
    from icml26.decision.evo_moe.experiment import codesign_experiment

    return codesign_experiment(dict(cell.setting), cell.seed)


def run_demo(cell: Cell) -> dict[str, Any]:
    """Evo by demo: freeform, pretrain, predesign and costeer on the same seed (see the module)."""
    from icml26.decision.evo_moe.experiment import demo_experiment

    return demo_experiment(dict(cell.setting), cell.seed)


# ---------------------------------------------------------------------------------------------------- plots
def _per_generation(key: str, ylabel: str, reference: float | None = None, ref_label: str = ""):  # type: ignore[no-untyped-def]
    def curves(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
        import numpy as np

        from icml26._core.plots import arm_style, band_key

        claim = card["claim"]
        ok = [r for r in records if r["status"] == "ok"]
        shown = [claim["method"], *claim["baselines"]]
        arms = sorted({p["method"] for r in ok for p in r["curves"]["generations"]}, key=lambda a: (a not in shown, a))
        for i, arm in enumerate(arms):
            runs = [[p.get(key) for p in r["curves"]["generations"] if p["method"] == arm] for r in ok]
            runs = [r for r in runs if r and all(v is not None for v in r)]
            if not runs:
                continue
            ys = np.asarray(runs, float)
            xs = np.arange(ys.shape[1])
            style = arm_style(card, arm, index=i)
            role = "method" if arm == claim["method"] else "baseline" if arm in shown else "other arm, no claim here"
            if arm not in shown:
                style = {**style, "ls": ":", "lw": 1.0}
            ax.plot(xs, ys.mean(0), label=f"{arm} ({role}), mean of {len(runs)} seeds", **style)
            ax.fill_between(xs, ys.mean(0) - ys.std(0), ys.mean(0) + ys.std(0), color=style["color"], alpha=0.12, lw=0)
        if reference is not None:
            ax.axhline(reference, color="black", ls="--", lw=1.0, label=ref_label)
        band_key(ax)
        ax.legend()
        ax.set_xlabel("generation (CMA-ES over the latent; PPO on the controller)", fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)

    return curves


def _plot(key: str, ylabel: str, title: str, reference: float | None = None, ref_label: str = ""):  # type: ignore[no-untyped-def]
    from icml26._core.plots import with_judged_metric

    return with_judged_metric(_per_generation(key, ylabel, reference, ref_label), title=title)


# ------------------------------------------------------------------------------------------------- settings
_BASE = {"popsize": 8, "horizon": 40, "sigma0": 0.5, "eval_targets": 8, "lr": 3e-3, "decoder_seed": 0}
SMOKE = {
    **_BASE,
    "popsize": 4,
    "envs_per_design": 4,
    "horizon": 10,
    "ppo_iters": 1,
    "generations": 2,
    "n_early": 1,
    "eval_targets": 2,
    "pretrain_iters": 1,
}
QUICK = {**_BASE, "envs_per_design": 4, "ppo_iters": 2, "generations": 3, "n_early": 2, "pretrain_iters": 4}
FULL = {**_BASE, "envs_per_design": 16, "ppo_iters": 3, "generations": 16, "n_early": 5, "pretrain_iters": 30}
CODESIGN = profiles(SMOKE, QUICK, FULL, seeds=(2, 3, 12), cell_seconds=(1.5, 4.0, 40.0))
DEMO = profiles(SMOKE, QUICK, FULL, seeds=(2, 3, 8), cell_seconds=(2.0, 6.0, 45.0))

_COMMON = (
    "Substitute task (ours; the paper's soft/endoskeletal voxel robots, its VAE and its CUDA simulator are not "
    "available, and EvoGym does not install on Python 3.11): MorphReach, a 3-link planar chain decoded from z in "
    "[-3, 3]^8 by a fixed seeded random MLP (not a learned VAE): link lengths, motor gains, joint limits and four "
    "control regimes of motor gear signs (mirror m, base sign b; gears (m b, m, m)), so the same observation needs "
    "opposite torques in different regimes. Joints are torque-driven damped double integrators vectorised in torch; "
    "reward = -|tip - target| - 0.02 sum g a^2 per step, 40-step episodes, targets anywhere at radius 0.4-2.4. "
    "CMA-ES (the cma package, sigma0 0.5, popsize 8, bounded latents) over z; PPO written here (GAE 0.97/0.95, "
    "clip 0.2, lr 3e-3, 4 epochs x 2 minibatches), the same update, critic V(obs, z) and env-step budget for every "
    "arm; fitness scored after each generation's PPO update on fixed targets shared by the arms of a seed. Our "
    "readings: mixing at the action level, experts see the observation only, no load-balancing loss. Full: 16 "
    "generations x 8 designs x 3 PPO iterations x 128 envs x 40 steps (245,760 training steps per arm), 12 seeds "
    "(C1, C2) and 8 seeds (C3, C4). History (same code and margins): a first start with 8 + 5 seeds was stopped "
    "after 2 cells, whose ~150 s each on a crowded machine predicted ~20 min; a 6 + 4 seed run then took 2 min "
    "(about 30 s a cell on a quiet machine) and gave C1-C4 inconclusive (C1 vs monolithic +0.097 [-0.098, +0.29], "
    "4/6; vs per-robot +0.37 [+0.25, +0.49], 6/6; C2 +0.031 [-0.026, +0.089], 3/6; C3 +0.025 [-0.33, +0.38], 2/4; "
    "C4 +0.093 [-0.030, +0.22], 3/4); the profile of record raises the seeds to 12 + 8, as the budget allows. "
    "Quick: 3 generations x 2 "
    "iterations x 32 envs, 3 seeds (a pipeline check, too short to decide). The generated MuJoCo model of each "
    "design (mjcf_chain, MorphReachMujocoEnv) is tested and benchmarked but not used in these runs: a MuJoCo "
    "co-design of 3 arms x 6 seeds does not fit the ~10 min budget on 2 cores. Rigid planar chains "
    "say nothing about the paper's soft or endoskeletal robots. "
)
_C1 = (
    "Metric final_fitness: the cumulative max over generations of the population-mean fitness (the paper's plotted "
    "quantity), at the last generation. Margin 0.02 fitness units (1% of the do-nothing distance), fixed before any "
    "claim run. Parameter counts: mixture 6,627 (4 experts of 13-32-32-3, gate 8-16-4, log std), monolithic 6,561 "
    "(21-69-69-3, the width closest to the mixture's count); per-robot: one expert-sized policy (1,606) per sampled "
    "design, fresh for each design, 12,848 in a generation. "
)
_C2 = (
    "Metric forgetting: the best design of each of the first 5 generations (the early elites) is re-scored with "
    "the current controller every later generation on fixed targets; forgetting = mean over elites of (best "
    "re-score since discovery - final re-score). Margin 0.01 fitness units, fixed before any claim run. Per-robot "
    "policies are discarded with their designs, so they have nothing shared to forget and are not an arm here. The "
    "card's CSV also has retention (final re-score - score at discovery, the notes' form). "
)
_C3 = (
    "Metric demo_distance: mean distance of the final population's designs to the demo design (the decoded latent "
    "nearest a hand-designed tapered mirrored limb, (0.9, 0.7, 0.5) links, gears (-1, -1, -1)), in [0, 1]. The demo "
    "expert: one expert trained by PPO on the demo body alone for 30 iterations (4 in quick) and plugged in frozen "
    "(its parameters bit-identical after training, tested). The search starts at z = 0 (freeform, pretrain) or at "
    "the demo's latent (predesign, costeer). Margin 0.05, fixed before any claim run. "
)
# Outcomes of the recorded full run (12 seeds for C1/C2, 8 for C3/C4), written after it; margins and claims unchanged.
_C1_OUT = (
    "Outcome (full): inconclusive. The mixture beats per-robot policies clearly (final fitness -1.31 vs -1.66, "
    "+0.36 [+0.28, +0.43], 12 of 12 seeds) but not the monolithic universal controller by the margin: -1.31 vs "
    "-1.38, +0.070 [-0.040, +0.18], 7 of 12 (the mean is above the 0.02 margin, the interval includes 0). The "
    "gate stays soft (entropy 0.97 nats at the end, of ln 4 = 1.39): experts are shared across regimes rather than "
    "one per regime. At 245,760 training steps per arm both shared controllers are still far from a good reacher "
    "(doing nothing scores about -2.07). "
)
_C2_OUT = (
    "Outcome (full): reproduced. Forgetting 0.0092 (mixture) vs 0.040 (monolithic), +0.031 [+0.0025, +0.059], 7 of "
    "12 (the other seeds near ties); the interval's lower end is below the margin, the rule asks mean >= margin and "
    "a positive lower end. Retention (final re-score - score at discovery) is positive for both, +0.38 vs +0.25: "
    "the shared controllers keep improving on the early elites overall; the monolithic one loses more of its peak. "
)
_C3_OUT = (
    "Outcome (full): inconclusive. Distance to the demo 0.285 (pretrain) vs 0.378 (freeform), +0.093 [-0.11, "
    "+0.29], 4 of 8: bimodal per seed, the population either ends in the demo's control regime or not (share of "
    "the final population in the demo's regime 0.59 vs 0.38). "
)
_C4_OUT = (
    "Outcome (full): reproduced. Distance 0.242 (costeer) vs 0.359 (predesign), +0.117 [+0.065, +0.17], 7 of 8: "
    "started at the demo's latent without the expert, evolution drifts out of the demo's regime (0.20 of the final "
    "population in it), with the frozen demo expert plugged in it stays (0.61). Final fitness: freeform -1.24, "
    "pretrain -1.31, predesign -1.32, costeer -1.37 (steering costs some fitness here; the paper saw PredesignOnly "
    "reach the highest fitness). "
)
_QVF = (
    "Quick vs full: quick (3 seeds, 3 generations of 32 envs per design) leaves all four claims inconclusive, too "
    "short to decide; the full profile decides C2 and C4. "
)
_DEMO_PLOT = _plot(
    "demo_distance",
    "population's distance to demo (lower = closer)",
    "evo by demo: distance to the demo",
)
_FIG = "qualitative (project site figures; no numeric table is public)"


def _claim(
    cid: str,
    statement: str,
    metric: str,
    direction: str,
    method: str,
    baselines: tuple[str, ...],
    margin: float,
    run: Any,
    grid: Any,
    plot: Any,
    note: str,
) -> Claim:
    return Claim(
        id=cid,
        statement=statement,
        metric=metric,
        direction=direction,  # type: ignore[arg-type]
        method=method,
        baselines=baselines,
        min_effect=margin,
        run=run,
        profiles=grid,
        paper_figure=_FIG,
        unit="fitness units" if "fitness" in metric or metric == "forgetting" else "distance in [0, 1]",
        plot=plot,
        notes=note + _COMMON,
    )


CARD = PaperCard(
    slug="evo_moe",
    title="Evolution with a mixture of control experts",
    group="decision",
    api="icml26.decision.evo_moe.EvoMoE",
    extra="decision",
    summary="Co-design with CMA-ES over design latents and a mixture of PPO-trained control experts gated by the "
    "latent only; against a monolithic universal controller and per-robot policies at equal samples and "
    "parameters, and evo by demo with frozen pretrained experts, on a torch-vectorised planar substitute.",
    claims=(
        _claim(
            "C1",
            "Experts gated by the design latent reach higher fitness than a monolithic universal controller and than "
            "per-robot policies at equal environment steps, where control regimes conflict.",
            "final_fitness",
            "higher",
            "moe",
            ("monolithic", "per_robot"),
            0.02,
            run_codesign,
            CODESIGN,
            _plot(
                "cummax_mean_fitness",
                "cum. max of population-mean fitness (higher better)",
                "co-design progress",
                -2.07,
                "reference: doing nothing (about -2.07)",
            ),
            _C1 + _C1_OUT + _QVF,
        ),
        _claim(
            "C2",
            "The modular controller preserves ancestral knowledge: early elite designs lose less fitness under the "
            "mixture than under the monolithic controller as evolution moves on.",
            "forgetting",
            "lower",
            "moe",
            ("monolithic",),
            0.01,
            run_codesign,
            CODESIGN,
            _plot("elite_fitness", "early elites' mean re-score (higher better)", "early elites over time"),
            _C2 + _C2_OUT + _QVF,
        ),
        _claim(
            "C3",
            "A pretrained expert plugged frozen into the mixture steers evolution towards the demo's morphology "
            "(PretrainOnly vs freeform evolution from the same start).",
            "demo_distance",
            "lower",
            "pretrain",
            ("freeform",),
            0.05,
            run_demo,
            DEMO,
            _DEMO_PLOT,
            _C3 + _C3_OUT + _QVF,
        ),
        _claim(
            "C4",
            "Co-steering (frozen demo expert plus a search started at the demo's latent) keeps evolution closer to "
            "the demo's morphology than starting there without the expert (PredesignOnly).",
            "demo_distance",
            "lower",
            "costeer",
            ("predesign",),
            0.05,
            run_demo,
            DEMO,
            _DEMO_PLOT,
            _C3 + _C4_OUT + _QVF,
        ),
    ),
)
