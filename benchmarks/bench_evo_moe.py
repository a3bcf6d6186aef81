"""ECo-MoE: simulator throughput and the PPO update against outside anchors.

Rows (ratio > 1 means ours is faster):

- *vectorised vs per-design loop*: env steps per second of :class:`PlanarChainVecEnv` stepping every env of K designs
  in one batch, against a Python loop over K single-design envs (the same class, the same physics, one design at a
  time: what a per-robot co-design loop does); a secondary row (our own code on both sides);
- *MuJoCo*: the same designs as generated MJCF models stepped by MuJoCo (``mujoco.mj_step``, 5 substeps of 0.01 s
  = one 0.05 s control step, as :class:`MorphReachMujocoEnv` does), one model after another in a Python loop, against
  our batched torch step (control steps per second); MuJoCo integrates coupled rigid-body dynamics, ours independent
  joints, so this says what the vectorised substitute buys, not that the physics are equal. A second MuJoCo row
  gives raw ``mj_step`` steps per second on one model (notes: tens of thousands);
- *PPO update*: one :class:`PPOTrainer` update of the mixture (4 epochs x 2 minibatches) against stable-baselines3's
  ``PPO.train()`` on a rollout buffer of the same size with the same epochs and minibatch size (SB3's default MLP
  policy 64-64 on :class:`MorphReachMujocoEnv`), both on one thread.

    .venv/bin/python benchmarks/bench_evo_moe.py [tiny|quick|full]
"""

from __future__ import annotations

import sys

import numpy as np

from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26._core.threads import single_torch_thread

PAPER = "evo_moe"
SIZES = {  # designs, envs per design, steps per timing, repeats, PPO buffer (steps)
    "tiny": (4, 4, 5, 3, 256),
    "quick": (8, 16, 40, 5, 2560),
    "full": (64, 16, 40, 9, 5120),
}


def _designs(k: int):  # type: ignore[no-untyped-def]
    from icml26.decision.evo_moe import RandomMLPDecoder

    dec = RandomMLPDecoder(seed=0)
    z = np.random.default_rng(0).uniform(-3, 3, (k, dec.latent_dim))
    return dec, z, [dec.decode(x) for x in z]


def _sim_rows(k: int, per: int, steps: int, repeat: int) -> list[BenchRow]:
    import mujoco
    import torch

    from icml26.decision.evo_moe import ACT_DIM, PlanarChainVecEnv, compile_mjcf

    _, _, designs = _designs(k)
    batched = PlanarChainVecEnv(designs, per, horizon=10**9)
    singles = [PlanarChainVecEnv([d], per, horizon=10**9) for d in designs]
    batched.reset(torch.Generator().manual_seed(0))
    for s in singles:
        s.reset(torch.Generator().manual_seed(0))
    a_all = torch.full((k * per, ACT_DIM), 0.3)
    a_one = torch.full((per, ACT_DIM), 0.3)
    models = [compile_mjcf(d) for d in designs]
    datas = [mujoco.MjData(m) for m in models]
    for d in datas:
        d.ctrl[:] = 0.3

    def vec() -> None:
        for _ in range(steps):
            batched.step(a_all)

    def loop() -> None:
        for _ in range(steps):
            for s in singles:
                s.step(a_one)

    def mj() -> None:  # one env per design (MuJoCo steps one model at a time): 5 substeps per control step
        for _ in range(steps):
            for m, d in zip(models, datas, strict=True):
                mujoco.mj_step(m, d, nstep=5)

    t = interleaved_medians({"vec": vec, "loop": loop, "mj": mj}, repeat=repeat)
    n = k * per * steps
    rows = [
        BenchRow(
            PAPER,
            f"env steps/s, {k} designs x {per} envs",
            "per-design Python loop (same env class)",
            n / t["vec"],
            n / t["loop"],
            "steps/s",
            better="higher",
            notes="our own code on both sides (secondary row)",
        ),
        BenchRow(
            PAPER,
            f"control steps/s (0.05 s), {k} designs",
            "MuJoCo mj_step x5 on generated MJCF, one env per design",
            n / t["vec"],
            k * steps / t["mj"],
            "steps/s",
            better="higher",
            notes=f"ours steps {per} envs per design in one batch; MuJoCo coupled dynamics, ours independent joints",
        ),
    ]
    m, d = models[0], datas[0]

    def raw() -> None:
        for _ in range(steps * 5):
            mujoco.mj_step(m, d)

    t_raw = interleaved_medians({"raw": raw}, repeat=repeat)["raw"]
    rows.append(
        BenchRow(
            PAPER,
            "raw mj_step/s on one generated chain (0.01 s steps)",
            "MuJoCo mj_step",
            n / t["vec"] * 5,
            steps * 5 / t_raw,
            "steps/s",
            better="higher",
            notes="ours counted in 0.01 s-equivalents (x5 per 0.05 s control step) across the batch",
        )
    )
    return rows


def _ppo_rows(buffer: int, repeat: int) -> list[BenchRow]:
    import torch
    from stable_baselines3 import PPO

    from icml26.decision.evo_moe import (
        ACT_DIM,
        OBS_DIM,
        Critic,
        LatentGatedMoEPolicy,
        MorphReachMujocoEnv,
        PlanarChainVecEnv,
        PPOConfig,
        PPOTrainer,
    )

    dec, z, designs = _designs(8)
    per = max(1, buffer // (8 * 40))
    env = PlanarChainVecEnv(designs, per, horizon=40)
    z_env = torch.as_tensor(np.repeat(z, per, 0), dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    trainer = PPOTrainer(LatentGatedMoEPolicy(OBS_DIM, ACT_DIM, dec.latent_dim, generator=gen), Critic(OBS_DIM, 8))
    batch = trainer.collect(env, z_env, gen)
    size = batch["rew"].numel()
    cfg = PPOConfig()
    model = PPO(
        "MlpPolicy",
        MorphReachMujocoEnv(designs[0]),
        n_steps=size,
        batch_size=size // cfg.minibatches,
        n_epochs=cfg.epochs,
        seed=0,
        device="cpu",
    )
    model.learn(size)  # fills the rollout buffer and sets the logger

    def ours() -> None:
        trainer.update(batch, z_env, env.design_index, gen)

    t = interleaved_medians({"ours": ours, "sb3": model.train}, repeat=repeat)
    return [
        BenchRow(
            PAPER,
            f"PPO update, {size} samples, {cfg.epochs} epochs x {cfg.minibatches} minibatches",
            "SB3 PPO.train() (MlpPolicy 64-64)",
            t["ours"],
            t["sb3"],
            "s",
            notes="ours: 4-expert mixture + gate + critic V(obs, z); SB3: one 64-64 actor-critic",
        )
    ]


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    single_torch_thread()
    k, per, steps, repeat, buffer = SIZES[size]
    return _sim_rows(k, per, steps, repeat) + _ppo_rows(buffer, repeat)


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
