"""The paired drift experiment behind the claims: every arm on the same drifting gridworld, the same seed and the
same budget, each next to its own no-drift counterfactual run, with every tuned constant calibrated on separate
seeds of the *stationary* task (the notes' protocol).

Arms (soft Q-learning, :mod:`icml26.decision.aes.softq`):

- ``fixed_small``: alpha* fixed, the best fixed alpha of a grid on stationary calibration runs;
- ``fixed_large``: 4 alpha* fixed;
- ``auto``: SAC's automatic temperature, alpha_0 = alpha*, target entropy the best of a grid on the same runs;
- ``aes``: :class:`AdaptiveEntropySchedule` with alpha_base = alpha*, clip [alpha*/4, 4 alpha*], the setting's
  proxy (the EMA ratio in the reproduction);
- ``aes_variation`` (no claim): the same with the other reading of the proxy, the sliding-window variation
  normalised by its value at the end of warm-up.

Metrics per arm (means over the change points; the counterfactual is the same arm and seed without drift):

- ``df``: degradation fraction, (R_nodrift - R_drift) / R_opt over the first 20% of each new phase: the share of
  the optimal reward rate lost to drift, against the same learner without drift (bounded; the notes' form divides
  by R_pre and is unstable when R_pre is near 0);
- ``rt``: recovery time as a fraction of the phase: the first step of a new phase at which the trailing 100-step
  mean of R_drift reaches 0.9 max(R_nodrift over the same phase, R_opt / 2), capped at 1 (never recovered);
- ``nauc``: steady-state normalised AUC of the drifting run: the mean reward rate over the last half of every
  phase divided by the optimal rate;
- ``df_own``, ``rt_own``: the notes' forms with the arm's own pre-drift level R_pre (DF clipped to [-1, 1], RT as
  a fraction of the phase; reported, not judged: they reward an arm that never learned, which has nothing to lose).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from icml26.decision.aes.metrics import degradation_fraction, recovery_time, steady_nauc
from icml26.decision.aes.schedule import AdaptiveEntropySchedule
from icml26.decision.aes.softq import (
    AutoTemperature,
    DriftingGoalGrid,
    FixedTemperature,
    ScheduledTemperature,
    VectorSoftQ,
)

__all__ = ["ARMS", "calibrate", "drift_experiment"]

ARMS = ("aes", "fixed_small", "fixed_large", "auto", "aes_variation")
CALIBRATION_SEED = 10_000  # calibration seeds are 10_000, 10_001, ...: never an evaluation seed
LARGE = 4.0  # fixed_large = LARGE * alpha*, and AES's clip is [alpha* / LARGE, LARGE * alpha*]


def _env(setting: Mapping[str, Any], drift: bool) -> DriftingGoalGrid:
    k = int(setting["phase_steps"])
    total = k * int(setting["phases"])
    return DriftingGoalGrid(int(setting["size"]), k if drift else total + 1, int(setting["horizon"]))


def _learner(
    setting: Mapping[str, Any], env: DriftingGoalGrid, groups: list, seed: int, drifting: Any = None
) -> VectorSoftQ:
    return VectorSoftQ(
        env,
        groups,
        n_envs=int(setting["n_envs"]),
        gamma=float(setting["gamma"]),
        lr=float(setting["lr"]),
        drifting=drifting,
        rng=np.random.default_rng(seed),
    )


@functools.lru_cache(maxsize=8)
def _calibrate(key: tuple) -> dict[str, float]:
    setting = dict(key)
    alphas = [float(a) for a in setting["alpha_grid"]]
    targets = [float(h) for h in setting["entropy_grid"]]
    n = int(setting["calibration_seeds"])
    steps = int(setting["phase_steps"]) * int(setting["phases"])
    env = _env(setting, drift=False)
    groups: list = [(f"fixed {a:g}", FixedTemperature(np.full(n, a)), n) for a in alphas]
    groups += [(f"auto {h:g}", None, n) for h in targets]  # filled below, once alpha* is known
    rates_fixed, _ = _learner(setting, env, groups[: len(alphas)], CALIBRATION_SEED).run(steps)
    score = rates_fixed.reshape(len(alphas), n, steps).mean(axis=(1, 2))
    best = alphas[int(np.argmax(score))]
    lr = float(setting["auto_lr"])
    auto = [(f"auto {h:g}", AutoTemperature(np.full(n, best), np.full(n, h), lr=lr), n) for h in targets]
    rates_auto, _ = _learner(setting, env, auto, CALIBRATION_SEED + 1).run(steps)
    auto_score = rates_auto.reshape(len(targets), n, steps).mean(axis=(1, 2))
    return {
        "alpha_star": best,
        "target_entropy": targets[int(np.argmax(auto_score))],
        **{f"score_fixed_{a:g}": float(s) for a, s in zip(alphas, score, strict=True)},
        **{f"score_auto_{h:g}": float(s) for h, s in zip(targets, auto_score, strict=True)},
    }


def calibrate(setting: Mapping[str, Any]) -> dict[str, float]:
    """alpha* (best fixed alpha) and the auto arm's target entropy, each the best mean reward rate on stationary
    runs of calibration seeds (10_000 onwards) over the same number of steps as the experiment."""
    key = tuple(sorted((k, tuple(v) if isinstance(v, list | tuple) else v) for k, v in setting.items()))
    return dict(_calibrate(key))


def _arms(setting: Mapping[str, Any], cal: Mapping[str, float], n: int = 2) -> list[tuple[str, Any, int]]:
    """The arms, ``n`` runs each (run 0: drifting, run 1: its no-drift counterfactual)."""
    a = float(cal["alpha_star"])

    def schedule(proxy: str) -> AdaptiveEntropySchedule:
        return AdaptiveEntropySchedule(
            a,
            a / LARGE,
            a * LARGE,
            proxy=proxy,  # type: ignore[arg-type]
            window=int(setting["window"]),
            warmup=int(setting["warmup"]),
            fast=float(setting["fast"]),
            slow=float(setting["slow"]),
        )

    auto = AutoTemperature(np.full(n, a), np.full(n, float(cal["target_entropy"])), lr=float(setting["auto_lr"]))
    return [
        ("aes", ScheduledTemperature(schedule(str(setting["proxy"])), n), n),
        ("fixed_small", FixedTemperature(np.full(n, a)), n),
        ("fixed_large", FixedTemperature(np.full(n, a * LARGE)), n),
        ("auto", auto, n),
        ("aes_variation", ScheduledTemperature(schedule("variation"), n), n),
    ]


def drift_experiment(setting: Mapping[str, Any], seed: int, curve_every: int = 100) -> dict[str, Any]:
    """One paired cell: calibration (cached), then every arm with drift and without, same seed; see the module."""
    cal = calibrate(setting)
    k, phases = int(setting["phase_steps"]), int(setting["phases"])
    steps = k * phases
    drifting = _env(setting, drift=True)
    flags = np.tile([True, False], len(ARMS))  # per arm: the drifting run, then its no-drift counterfactual
    both, both_alpha = _learner(setting, drifting, _arms(setting, cal), seed, flags).run(steps)
    rates, alphas, base = both[flags], both_alpha[flags], both[~flags]
    cps = [k * p for p in range(1, phases)]
    n = max(1, round(0.2 * k))
    opt = drifting.optimal_rate
    metrics: dict[str, dict[str, float]] = {}
    for i, arm in enumerate(ARMS):
        y, y0, a = rates[i], base[i], alphas[i]
        post = np.array([y[c : c + n].mean() for c in cps])
        post0 = np.array([y0[c : c + n].mean() for c in cps])
        level0 = np.array([y0[c : c + k].mean() for c in cps])
        rt = [_recovery(y[c : c + k], 0.9 * max(lv, 0.5 * opt)) / k for c, lv in zip(cps, level0, strict=True)]
        metrics[arm] = {
            "df": float(((post0 - post) / opt).mean()),
            "rt": float(np.mean(rt)),
            "nauc": float(steady_nauc(y, k, opt)),
            "nauc_nodrift": float(steady_nauc(y0, k, opt)),
            "df_own": float(np.clip(degradation_fraction(y, cps, k, floor=0.05 * opt), -1, 1).mean()),
            "rt_own": float(recovery_time(y, cps, k).mean() / k),
            "alpha_before": float(np.mean([a[c - n : c].mean() for c in cps])),
            "alpha_after": float(np.mean([a[c : c + n].mean() for c in cps])),
        }
    smooth = np.stack([np.convolve(r, np.ones(curve_every) / curve_every, "valid")[::curve_every] for r in rates])
    alpha_pts = alphas[:, curve_every - 1 :: curve_every][:, : smooth.shape[1]]
    curve = [
        {
            "method": arm,
            "step": int((j + 1) * curve_every),
            "rate": float(smooth[i, j] / drifting.optimal_rate),
            "alpha": float(alpha_pts[i, j]),
        }
        for i, arm in enumerate(ARMS)
        for j in range(smooth.shape[1])
    ]
    return {"metrics": metrics, "curves": {"training": curve}, "info": {**cal, "change_points": cps}}


def _recovery(segment: np.ndarray, level: float, window: int = 100) -> float:
    """First step at which the trailing mean (up to ``window`` steps, within the phase) reaches ``level``."""
    csum = np.cumsum(segment)
    k = np.arange(1, segment.size + 1)
    lag = np.concatenate([[0.0], csum])[np.maximum(k - window, 0)]
    ok = (csum - lag) / np.minimum(k, window) >= level
    return float(ok.argmax()) if ok.any() else float(segment.size)
