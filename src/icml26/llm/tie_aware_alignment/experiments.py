"""The toy experiments behind claims C1 and C2: labelers compared, then tie objectives compared, on shared pairs.

One experiment = one :class:`PreferenceWorld` and one set of pairs drawn from the reference; every labeler judges
the same pairs with common random numbers (one noise draw ``eps`` scaled by each labeler's ``sigma``, one coin for
forced tie-breaks); every arm trains with the same optimiser, steps and ``beta`` (:func:`~.toy.train_arms`).

Scoring is with the true reward only. The judged metric is the normalised true reward *at matched KL*: each learned
policy is moved along its own direction to exactly ``kl_budget`` nats from the reference
(:meth:`PreferenceWorld.reward_at_kl`). In this world the true reward grows without limit as a policy sharpens
along a good direction, so a raw reward at one ``beta`` rewards whichever objective regularises least (ties shrink
the margins: Chen et al.'s KL regularisation); comparing at equal KL, as DPO's reward-KL frontier does, measures
what the labels taught. The reward and KL at the trained ``beta`` are reported beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from icml26.llm.tie_aware_alignment.toy import Arm, Objective, train_arms
from icml26.llm.tie_aware_alignment.world import PairSet, PreferenceWorld, ResolutionLimitedLabeler

__all__ = [
    "C1_ARMS",
    "HIGHLIGHTS",
    "LABELERS",
    "TIE_SWEEP",
    "draw",
    "run_labelers",
    "run_tie_objectives",
    "tie_sweep",
]

# Labelers (the true gap of a random pair has sd 1): "strong" = an LLM judge or expert, little noise and a fine
# resolution, but forced; "weak" = a small model, 5x the noise and twice the resolution limit.
LABELERS: dict[str, dict[str, float]] = {"strong": {"sigma": 0.1, "tau": 0.3}, "weak": {"sigma": 0.5, "tau": 0.6}}
DAVIDSON = Objective(model="davidson", nu=2.0)
RAO_KUPPER = Objective(model="rao_kupper", nu=2.0)
DROP = Objective(model="bt_drop")
# arm name -> (labeler, forced, tiebreak, objective)
C1_ARMS: dict[str, tuple[str, bool, str, Objective]] = {
    "silent_weak": ("weak", False, "random", DAVIDSON),
    "silent_weak_drop": ("weak", False, "random", DROP),
    "silent_weak_rao_kupper": ("weak", False, "random", RAO_KUPPER),
    "forced_weak_spurious": ("weak", True, "spurious", DROP),
    "forced_weak_random": ("weak", True, "random", DROP),
    "forced_strong_spurious": ("strong", True, "spurious", DROP),
    "forced_strong_random": ("strong", True, "random", DROP),
    "forced_strong_spurious_rdpo": ("strong", True, "spurious", Objective(loss="robust", label_smoothing=0.1)),
    "forced_strong_spurious_cdpo": ("strong", True, "spurious", Objective(loss="cdpo", label_smoothing=0.1)),
    "forced_strong_spurious_ipo": ("strong", True, "spurious", Objective(loss="ipo")),
    "perfect": ("perfect", True, "random", DROP),
}
# Arms of the sweep reported on the card by a short name (the whole sweep goes to the curves).
HIGHLIGHTS = {
    "rao_kupper": "rao_kupper|nu=2|w=1|none",
    "davidson": "davidson|nu=2|w=1|none",
    "davidson_downweighted": "davidson|nu=2|w=0.25|none",
    "davidson_stop_higher": "davidson|nu=2|w=1|stop_higher",
    "davidson_anchor": "davidson|nu=2|w=1|anchor",
}
TIE_SWEEP = {
    "models": ("rao_kupper", "davidson"),
    "nus": (1.1, 1.5, 2.0, 4.0),
    "tie_weights": (0.25, 1.0),
    "guards": (None, "stop_higher", "anchor"),
}


def draw(setting: Mapping[str, Any], seed: int | np.random.SeedSequence) -> tuple[PreferenceWorld, PairSet, Any]:
    """One world, its pairs, and the common random numbers every labeler uses (noise, tie-break coin seed)."""
    rng = np.random.default_rng(seed)
    world = PreferenceWorld.random(
        int(setting["prompts"]),
        int(setting["candidates"]),
        int(setting["features"]),
        float(setting["length_weight"]),
        seed=rng,
    )
    pairs = world.sample_pairs(int(setting["pairs"]), rng)
    return world, pairs, (rng.standard_normal(len(pairs)), int(rng.integers(2**32)))


def _labels(
    world: PreferenceWorld, pairs: PairSet, crn: Any, sigma: float, tau: float, forced: bool, tiebreak: str
) -> np.ndarray:
    noise, coin = crn
    labeler = ResolutionLimitedLabeler(sigma, tau, forced, tiebreak)  # type: ignore[arg-type]
    ra, rb = world.pair_rewards(pairs)
    la, lb = world.pair_lengths(pairs)
    return labeler.label(ra, rb, spurious_a=la, spurious_b=lb, noise=noise, rng=np.random.default_rng(coin))


def _budgets(setting: Mapping[str, Any]) -> tuple[float, ...]:
    return tuple(sorted({float(setting["kl_budget"]), *map(float, setting.get("kl_curve", ()))}))


def _metrics(scores: dict[str, dict[str, float]], budget: float) -> dict[str, dict[str, float]]:
    return {name: {**s, "reward_at_kl": s[f"reward_at_kl_{budget:g}"]} for name, s in scores.items()}


def run_labelers(setting: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """C1: every labeler of :data:`C1_ARMS` on the same pairs; with ``heatmap`` a grid of silent labelers (sigma x
    tau, Davidson) against the strong forced-spurious labeler."""
    world, pairs, crn = draw(setting, seed)
    labelers = {**LABELERS, "perfect": {"sigma": 0.0, "tau": 0.0}}
    arms = []
    tie_fraction = {}
    for name, (who, forced, tiebreak, objective) in C1_ARMS.items():
        labels = _labels(world, pairs, crn, forced=forced, tiebreak=tiebreak, **labelers[who])
        tie_fraction[name] = float(np.mean(labels == 0))
        arms.append(Arm(name, objective, labels))
    grid = []
    if setting.get("heatmap"):
        for sigma in setting["heatmap"]["sigmas"]:
            for tau in setting["heatmap"]["taus"]:
                labels = _labels(world, pairs, crn, float(sigma), float(tau), False, "random")
                arms.append(Arm(f"heat:{sigma}:{tau}", DAVIDSON, labels))
                grid.append({"sigma": float(sigma), "tau": float(tau), "tie_fraction": float(np.mean(labels == 0))})
    beta, budget = float(setting["beta"]), float(setting["kl_budget"])
    trained = train_arms(world, pairs, arms, beta=beta, steps=int(setting["steps"]), lr=float(setting["lr"]))
    scores = _metrics(trained.scores(_budgets(setting)), budget)
    metrics = {name: {**scores[name], "tie_fraction": tie_fraction[name]} for name in C1_ARMS}
    base = scores["forced_strong_spurious"]["reward_at_kl"]
    for cell in grid:
        cell["advantage"] = scores[f"heat:{cell['sigma']}:{cell['tau']}"]["reward_at_kl"] - base
    return {
        "metrics": metrics,
        "curves": {"heatmap": grid},
        "info": {"oracle_minus_uniform": world.oracle_reward - world.uniform_reward},
    }


def tie_sweep(sweep: Mapping[str, Any] = TIE_SWEEP) -> dict[str, Objective]:
    """Every tie-aware objective of the sweep (model x nu x tie weight x guard), plus ``"drop"``."""
    out = {"drop": DROP}
    for model in sweep["models"]:
        for nu in sweep["nus"]:
            for weight in sweep["tie_weights"]:
                for guard in sweep["guards"]:
                    name = f"{model}|nu={nu:g}|w={weight:g}|{guard or 'none'}"
                    out[name] = Objective(model=model, nu=float(nu), tie_weight=float(weight), guard=guard)
    return out


def _sweep_scores(setting: Mapping[str, Any], seed: Any, objectives: dict[str, Objective]) -> dict[str, Any]:
    world, pairs, crn = draw(setting, seed)
    labels = _labels(world, pairs, crn, forced=False, tiebreak="random", **LABELERS["weak"])
    arms = [Arm(name, objective, labels) for name, objective in objectives.items()]
    trained = train_arms(
        world, pairs, arms, beta=float(setting["beta"]), steps=int(setting["steps"]), lr=float(setting["lr"])
    )
    return {"scores": _metrics(trained.scores(_budgets(setting)), float(setting["kl_budget"])), "ties": labels == 0}


def run_tie_objectives(setting: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """C2: the weak silent labeler's data under every objective of the sweep. The tie-aware configuration is
    chosen on a *selection* draw (another world and pairs, same sizes) by the judged metric, then compared with
    ``drop`` on the test draw: selecting on the test draw would favour a sweep of 48 over one arm by chance."""
    objectives = tie_sweep(setting.get("sweep", TIE_SWEEP))
    select_seq, test_seq = np.random.SeedSequence(seed).spawn(2)
    selection = _sweep_scores(setting, select_seq, objectives)["scores"]
    candidates = [name for name in objectives if name != "drop"]
    chosen = max(candidates, key=lambda name: selection[name]["reward_at_kl"])
    test = _sweep_scores(setting, test_seq, objectives)
    scores = test["scores"]
    metrics = {"selected": dict(scores[chosen]), "drop": scores["drop"]}
    metrics |= {short: scores[name] for short, name in HIGHLIGHTS.items() if name in scores}
    curves = [
        {"objective": name, **scores[name], "selection_reward_at_kl": selection[name]["reward_at_kl"]}
        for name in objectives
    ]
    return {
        "metrics": metrics,
        "curves": {"sweep": curves},
        "info": {"selected": chosen, "tie_fraction": float(np.mean(test["ties"]))},
    }
