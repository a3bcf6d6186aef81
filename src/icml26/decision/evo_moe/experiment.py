"""The paired cells of the reproduction: every arm on the same decoder, seed, scoring targets and env budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from icml26.decision.evo_moe.codesign import (
    ARMS,
    DEMO_MODES,
    CoDesign,
    CoDesignConfig,
    evo_by_demo,
    find_demo_latent,
    pretrain_demo_expert,
)
from icml26.decision.evo_moe.design import RandomMLPDecoder
from icml26.decision.evo_moe.ppo import PPOConfig

__all__ = ["codesign_experiment", "config_from_setting", "demo_experiment"]


def config_from_setting(setting: Mapping[str, Any]) -> CoDesignConfig:
    return CoDesignConfig(
        popsize=int(setting["popsize"]),
        envs_per_design=int(setting["envs_per_design"]),
        horizon=int(setting["horizon"]),
        ppo_iters_per_gen=int(setting["ppo_iters"]),
        sigma0=float(setting.get("sigma0", 0.5)),
        n_eval_targets=int(setting.get("eval_targets", 8)),
        n_early=int(setting.get("n_early", 4)),
        ppo=PPOConfig(lr=float(setting.get("lr", 3e-3))),
    )


def _curve(values: np.ndarray) -> list[float]:
    return [float(v) for v in values]


def codesign_experiment(setting: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """C1/C2: the mixture, the monolithic and the per-robot arms, same seed (decoder, CMA-ES seed, targets)."""
    import torch

    from icml26._core import single_torch_thread

    single_torch_thread()
    torch.manual_seed(seed)
    decoder = RandomMLPDecoder(seed=int(setting.get("decoder_seed", 0)))
    cfg = config_from_setting(setting)
    gens = int(setting["generations"])
    metrics: dict[str, dict[str, float]] = {}
    curve: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    for arm in ARMS:
        res = CoDesign(arm, decoder, cfg, seed).run(gens)  # type: ignore[arg-type]
        m = {
            "final_fitness": res.final_fitness,
            "last_mean_fitness": float(res.mean_fitness[-1]),
            "best_fitness": float(res.best_fitness.max()),
            "train_steps": float(res.train_steps),
            "eval_steps": float(res.eval_steps),
            "n_params": float(res.n_params),
        }
        if arm != "per_robot":
            m["forgetting"] = res.forgetting
            m["retention"] = res.retention
        if arm == "moe":
            m["gate_entropy"] = float(res.gate_entropy[-1])
        metrics[arm] = m
        cummax = np.maximum.accumulate(res.mean_fitness)
        elite = np.nanmean(res.elite_fitness, 0) if arm != "per_robot" else np.full(gens, np.nan)
        for g in range(gens):
            curve.append(
                {
                    "method": arm,
                    "generation": g,
                    "mean_fitness": float(res.mean_fitness[g]),
                    "cummax_mean_fitness": float(cummax[g]),
                    "elite_fitness": None if np.isnan(elite[g]) else float(elite[g]),
                    "gate_entropy": None if np.isnan(res.gate_entropy[g]) else float(res.gate_entropy[g]),
                }
            )
        regimes = decoder.decode_batch(res.population[-1])["gear_signs"]
        info[f"{arm}_final_regimes"] = sorted({tuple(int(x) for x in r) for r in regimes})
    return {"metrics": metrics, "curves": {"generations": curve}, "info": info}


def demo_experiment(setting: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """C3: evo by demo; the four modes on the same decoder, seed and targets, one demo expert per seed."""
    import torch

    from icml26._core import single_torch_thread
    from icml26.decision.evo_moe.design import morphology_distance

    single_torch_thread()
    torch.manual_seed(seed)
    decoder = RandomMLPDecoder(seed=int(setting.get("decoder_seed", 0)))
    cfg = config_from_setting(setting)
    demo_z = find_demo_latent(decoder, seed=0)
    expert = pretrain_demo_expert(decoder, demo_z, int(setting["pretrain_iters"]), cfg, seed)
    demo = decoder.decode(demo_z)
    start = decoder.decode(np.zeros(decoder.latent_dim))
    metrics: dict[str, dict[str, float]] = {}
    curve: list[dict[str, Any]] = []
    for mode in DEMO_MODES:
        res, dist = evo_by_demo(decoder, demo_z, expert, mode, int(setting["generations"]), cfg, seed)
        per_gen = [
            float(np.mean([morphology_distance(decoder.decode(z), demo) for z in pop])) for pop in res.population
        ]
        same_regime = float(np.mean([decoder.decode(z).regime == demo.regime for z in res.population[-1]]))
        metrics[mode] = {
            "demo_distance": dist,
            "demo_regime_share": same_regime,
            "final_fitness": res.final_fitness,
            "train_steps": float(res.train_steps),
        }
        curve += [{"method": mode, "generation": g, "demo_distance": d} for g, d in enumerate(per_gen)]
    info = {
        "demo_z": [float(x) for x in demo_z],
        "demo_design": {k: list(getattr(demo, k)) for k in ("lengths", "gains", "gear_signs", "limits")},
        "start_to_demo_distance": morphology_distance(start, demo),
    }
    return {"metrics": metrics, "curves": {"generations": curve}, "info": info}
