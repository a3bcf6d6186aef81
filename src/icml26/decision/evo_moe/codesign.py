"""The co-design loop (CMA-ES over latents, PPO on the shared controller) and "evo by demo".

One generation: ask K latents from CMA-ES; decode them; train the controller with ``ppo_iters_per_gen`` PPO
iterations on envs of all K designs (``envs_per_design`` each); *then* score each design (deterministic rollouts
on the same ``n_eval_targets`` targets every generation, shared by every arm of a seed; fitness = mean reward per
step); tell CMA-ES. The early
elites (best design of each of the first ``n_early`` generations) are re-scored every later generation on a fixed
target set, so that forgetting is measured, not guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import torch

from icml26.decision.evo_moe.design import Morphology, RandomMLPDecoder, morphology_distance
from icml26.decision.evo_moe.policies import (
    Critic,
    LatentGatedMoEPolicy,
    MonolithicPolicy,
    PerRobotPolicies,
    SingleExpert,
    count_parameters,
)
from icml26.decision.evo_moe.ppo import PPOConfig, PPOTrainer
from icml26.decision.evo_moe.sim import ACT_DIM, OBS_DIM, PlanarChainVecEnv

__all__ = [
    "ARMS",
    "DEMO_BODY",
    "DEMO_MODES",
    "CoDesign",
    "CoDesignConfig",
    "CoDesignResult",
    "EvoMoE",
    "evaluate_designs",
    "evo_by_demo",
    "find_demo_latent",
    "pretrain_demo_expert",
]

Arm = Literal["moe", "monolithic", "per_robot"]
ARMS: tuple[str, ...] = ("moe", "monolithic", "per_robot")
DEMO_MODES: tuple[str, ...] = ("freeform", "pretrain", "predesign", "costeer")
# The hand-designed demo body (ours; the paper's is an 8-DOF ant): a tapered limb with mirrored actuation.
DEMO_BODY = Morphology((0.9, 0.7, 0.5), (1.5, 1.2, 1.0), (-1, -1, -1), (2.8, 2.0, 2.0))


@dataclass(frozen=True)
class CoDesignConfig:
    """Sizes of one co-design run (ours: the abstract gives none; the notes' quick task scaled to 2 cores)."""

    popsize: int = 8
    envs_per_design: int = 16
    horizon: int = 40
    ppo_iters_per_gen: int = 3
    sigma0: float = 0.5
    n_eval_targets: int = 8
    n_early: int = 4
    n_experts: int = 4
    hidden: int = 32
    gate_hidden: int = 16
    ppo: PPOConfig = field(default_factory=PPOConfig)

    def __post_init__(self) -> None:
        for name in ("popsize", "envs_per_design", "horizon", "ppo_iters_per_gen", "n_eval_targets", "n_experts"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.popsize < 2:
            raise ValueError("CMA-ES needs popsize >= 2")


@dataclass
class CoDesignResult:
    """What one run recorded, per generation g (arrays of length G) and at the end."""

    arm: str
    mean_fitness: np.ndarray
    best_fitness: np.ndarray
    population: list[np.ndarray]
    gate_entropy: np.ndarray
    elite_z: np.ndarray
    elite_fitness: np.ndarray  # (n_early, G): re-scores of early elites, NaN before discovery
    train_steps: int
    eval_steps: int
    n_params: int
    final_mean: np.ndarray

    @property
    def final_fitness(self) -> float:
        """Cumulative max of the population-mean fitness at the last generation (the paper's plotted quantity)."""
        return float(np.max(self.mean_fitness))

    @property
    def forgetting(self) -> float:
        """Mean over early elites of (best re-score since discovery - final re-score); NaN where not tracked."""
        if self.elite_fitness.size == 0 or np.all(np.isnan(self.elite_fitness)):
            return float("nan")
        return float(np.mean(np.nanmax(self.elite_fitness, 1) - self.elite_fitness[:, -1]))

    @property
    def retention(self) -> float:
        """Mean over early elites of (final re-score - score at discovery): the notes' retention."""
        if self.elite_fitness.size == 0 or np.all(np.isnan(self.elite_fitness)):
            return float("nan")
        first = np.array([row[~np.isnan(row)][0] for row in self.elite_fitness])
        return float(np.mean(self.elite_fitness[:, -1] - first))


def _z_tensor(z: np.ndarray, per: int) -> torch.Tensor:
    return torch.as_tensor(np.repeat(z, per, axis=0), dtype=torch.float32)


@torch.no_grad()
def evaluate_designs(
    actor: torch.nn.Module,
    decoder: RandomMLPDecoder,
    z: np.ndarray,
    targets: torch.Tensor,
    horizon: int,
    design_index: torch.Tensor | None = None,
) -> tuple[np.ndarray, int]:
    """Deterministic rollouts (the policy mean) of each design on the same targets (shape (T, 2)).

    Returns (fitness per design = mean reward per step over targets and steps, env steps used)."""
    z = decoder.check(z)
    if targets.dim() != 2 or targets.shape[1] != 2 or targets.shape[0] == 0:
        raise ValueError(f"targets must have shape (T, 2) with T >= 1, got {tuple(targets.shape)}")
    n_t = targets.shape[0]
    env = PlanarChainVecEnv(decoder.decode_batch(z), n_t, horizon)
    # the small initial joint noise from a fixed stream: every arm and generation starts from the same states
    obs = env.reset(torch.Generator().manual_seed(12_345), targets=targets.repeat(len(z), 1))
    idx = env.design_index if design_index is None else design_index.repeat_interleave(n_t)
    z_env = _z_tensor(z, n_t)
    total = torch.zeros(env.n_envs)
    done = False
    while not done:
        mean, _, _ = actor(obs, z_env, idx)
        obs, rew, done = env.step(mean)
        total += rew
    fit = (total / horizon).reshape(len(z), n_t).mean(1)
    return fit.numpy().astype(float), env.steps_taken


def _targets(seed: int, tag: int, n: int) -> torch.Tensor:
    from icml26.decision.evo_moe.sim import TARGET_RADIUS

    g = torch.Generator().manual_seed(int(seed) * 100_003 + tag)
    lo, hi = TARGET_RADIUS
    r = lo + (hi - lo) * torch.rand(n, generator=g)
    ang = (2 * torch.rand(n, generator=g) - 1) * torch.pi
    return torch.stack([r * ang.cos(), r * ang.sin()], 1)


class CoDesign:
    """Co-optimise a CMA-ES search distribution over latents and a controller trained by PPO.

    ``arm``: ``"moe"`` (:class:`LatentGatedMoEPolicy`, the method), ``"monolithic"`` (:class:`MonolithicPolicy`
    with the mixture's parameter count) or ``"per_robot"`` (a fresh :class:`PerRobotPolicies` slot per sampled
    design, each trained only on its own envs: the same total env steps). ``plugged`` experts are added frozen to
    the mixture (evo by demo). ``x0``: the search mean's start (default 0).
    """

    def __init__(
        self,
        arm: Arm = "moe",
        decoder: RandomMLPDecoder | None = None,
        config: CoDesignConfig | None = None,
        seed: int = 0,
        x0: np.ndarray | None = None,
        plugged: tuple[torch.nn.Module, ...] = (),
    ):
        if arm not in ARMS:
            raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
        if plugged and arm != "moe":
            raise ValueError("only the mixture takes plugged-in experts")
        self.arm, self.decoder = arm, decoder or RandomMLPDecoder()
        self.config, self.seed = config or CoDesignConfig(), int(seed)
        d = self.decoder.latent_dim
        self.x0 = np.zeros(d) if x0 is None else self.decoder.check(x0)[0]
        self.generator = torch.Generator().manual_seed(self.seed)
        c = self.config
        moe = LatentGatedMoEPolicy(OBS_DIM, ACT_DIM, d, c.n_experts, c.hidden, c.gate_hidden, generator=self.generator)
        self.moe_params = count_parameters(moe)
        if arm == "moe":
            for m in plugged:
                moe.add_expert(m, frozen=True)
            self.actor: torch.nn.Module = moe
        elif arm == "monolithic":
            self.actor = MonolithicPolicy(OBS_DIM, ACT_DIM, d, match=self.moe_params, generator=self.generator)
        else:
            self.actor = self._fresh_per_robot()
        self.critic = Critic(OBS_DIM, d, generator=self.generator)
        self.trainer = PPOTrainer(self.actor, self.critic, c.ppo)

    def _fresh_per_robot(self) -> PerRobotPolicies:
        return PerRobotPolicies(OBS_DIM, ACT_DIM, self.config.popsize, self.config.hidden, generator=self.generator)

    def run(self, generations: int) -> CoDesignResult:
        import cma

        if generations < 1:
            raise ValueError(f"generations must be >= 1, got {generations}")
        c, dec = self.config, self.decoder
        es = cma.CMAEvolutionStrategy(
            self.x0,
            c.sigma0,
            {"popsize": c.popsize, "bounds": [-dec.bound, dec.bound], "seed": self.seed + 1, "verbose": -9},
        )
        # the same scoring targets every generation (and for every arm of a seed): curves compare like with like
        eval_targets = _targets(self.seed, 0, c.n_eval_targets)
        elite_targets = _targets(self.seed, 999_999, c.n_eval_targets)
        mean_fit, best_fit, pops, entropy = [], [], [], []
        n_early = min(c.n_early, generations)
        elite_z = np.zeros((n_early, dec.latent_dim))
        elite_fit = np.full((n_early, generations), np.nan)
        elite_idx = torch.arange(n_early)
        train_steps = eval_steps = 0
        for g in range(generations):
            z = np.clip(np.asarray(es.ask(), dtype=float), -dec.bound, dec.bound)
            env = PlanarChainVecEnv(dec.decode_batch(z), c.envs_per_design, c.horizon)
            z_env = _z_tensor(z, c.envs_per_design)
            if self.arm == "per_robot":
                self.actor = self._fresh_per_robot()
                self.trainer.set_actor(self.actor)
            for _ in range(c.ppo_iters_per_gen):
                self.trainer.iterate(env, z_env, self.generator)
            train_steps += env.steps_taken
            # fitness after this generation's update (never stale)
            fit, steps = evaluate_designs(self.actor, dec, z, eval_targets, c.horizon)
            eval_steps += steps
            es.tell(list(z), list(-fit))
            mean_fit.append(float(fit.mean()))
            best_fit.append(float(fit.max()))
            pops.append(z)
            if isinstance(self.actor, LatentGatedMoEPolicy):
                with torch.no_grad():
                    p = self.actor.gate(torch.as_tensor(z, dtype=torch.float32))
                    entropy.append(float(-(p * p.clamp_min(1e-12).log()).sum(1).mean()))
            else:
                entropy.append(float("nan"))
            if g < n_early:
                elite_z[g] = z[int(np.argmax(fit))]
            if self.arm != "per_robot":  # per-robot policies are discarded: nothing shared to forget
                seen = min(g + 1, n_early)
                f, steps = evaluate_designs(self.actor, dec, elite_z[:seen], elite_targets, c.horizon, elite_idx[:seen])
                eval_steps += steps
                elite_fit[:seen, g] = f
        return CoDesignResult(
            arm=self.arm,
            mean_fitness=np.asarray(mean_fit),
            best_fitness=np.asarray(best_fit),
            population=pops,
            gate_entropy=np.asarray(entropy),
            elite_z=elite_z,
            elite_fitness=elite_fit,
            train_steps=train_steps,
            eval_steps=eval_steps,
            n_params=count_parameters(self.actor),
            final_mean=np.clip(np.asarray(es.mean, dtype=float), -dec.bound, dec.bound),
        )


EvoMoE = CoDesign  # the registry's name for the main entry point


# ------------------------------------------------------------------------------------------------ evo by demo
def find_demo_latent(
    decoder: RandomMLPDecoder,
    body: Morphology = DEMO_BODY,
    radius: tuple[float, float] = (1.0, 2.0),
    n: int = 4096,
    seed: int = 0,
) -> np.ndarray:
    """The latent whose decoded design is closest to ``body`` among ``n`` seeded candidates with |z| in ``radius``
    (the demo must lie in the family; ours: the paper encodes its demo ant with the VAE)."""
    rng = np.random.default_rng([seed, 7])
    u = rng.standard_normal((n, decoder.latent_dim))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    z = u * rng.uniform(*radius, size=(n, 1))
    z = np.clip(z, -decoder.bound, decoder.bound)
    raw = decoder.decode_batch(z)
    same = np.all(raw["gear_signs"] == np.asarray(body.gear_signs), axis=1)
    if not same.any():
        raise ValueError("no candidate latent decodes to the demo body's control regime; widen the radius or n")
    vec = np.concatenate([(raw[k] - lo) / (hi - lo) for k, (lo, hi) in _ranges()], 1)
    gap = np.where(same, np.sqrt(np.mean((vec - body.vector()) ** 2, 1)), np.inf)
    return z[int(np.argmin(gap))]


def _ranges() -> list[tuple[str, tuple[float, float]]]:
    from icml26.decision.evo_moe.design import RANGES

    return [(k, RANGES[k]) for k in ("lengths", "gains", "limits")]


def pretrain_demo_expert(
    decoder: RandomMLPDecoder,
    demo_z: np.ndarray,
    iterations: int,
    config: CoDesignConfig | None = None,
    seed: int = 0,
) -> SingleExpert:
    """PPO on the demo body alone (popsize x envs_per_design envs) with a one-expert policy; returns the expert."""
    c = config or CoDesignConfig()
    z = decoder.check(demo_z)
    gen = torch.Generator().manual_seed(int(seed) + 50_000)
    policy = LatentGatedMoEPolicy(OBS_DIM, ACT_DIM, decoder.latent_dim, 1, c.hidden, c.gate_hidden, generator=gen)
    trainer = PPOTrainer(policy, Critic(OBS_DIM, decoder.latent_dim, generator=gen), c.ppo)
    n = c.popsize * c.envs_per_design
    env = PlanarChainVecEnv(decoder.decode_batch(z), n, c.horizon)
    z_env = _z_tensor(z, n)
    for _ in range(iterations):
        trainer.iterate(env, z_env, gen)
    return SingleExpert(policy.experts)


def evo_by_demo(
    decoder: RandomMLPDecoder,
    demo_z: np.ndarray,
    demo_expert: torch.nn.Module | None,
    mode: str = "costeer",
    generations: int = 10,
    config: CoDesignConfig | None = None,
    seed: int = 0,
    x0: np.ndarray | None = None,
) -> tuple[CoDesignResult, float]:
    """One evo-by-demo run; returns (result, mean morphology distance of the final population to the demo).

    ``freeform``: the plain mixture from ``x0``; ``pretrain``: the frozen demo expert plugged in, search from
    ``x0``; ``predesign``: no demo expert, search mean started at ``demo_z``; ``costeer``: both."""
    if mode not in DEMO_MODES:
        raise ValueError(f"mode must be one of {DEMO_MODES}, got {mode!r}")
    if mode in ("pretrain", "costeer") and demo_expert is None:
        raise ValueError(f"mode {mode!r} needs the pretrained demo expert")
    demo_z = decoder.check(demo_z)[0]
    start = demo_z if mode in ("predesign", "costeer") else x0
    plugged = (demo_expert,) if mode in ("pretrain", "costeer") else ()
    run = CoDesign("moe", decoder, config, seed, x0=start, plugged=plugged).run(generations)
    run = replace(run, arm=mode)
    demo = decoder.decode(demo_z)
    final = run.population[-1]
    dist = float(np.mean([morphology_distance(decoder.decode(z), demo) for z in final]))
    return run, dist
