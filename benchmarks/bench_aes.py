"""AES: the scheduler's overhead per update against stable-baselines3's own training step (the anchor).

Rows (ratio = anchor / ours; > 1 means the AES work costs less than SB3's step; the overhead in percent of SB3's
step is 100 / ratio, and 100 / (ratio * every) when the callback runs every ``every`` steps):

- *PPO*: ``AESCallback._on_rollout_end`` (the 0.9 quantile of |returns - values| over the rollout buffer, the
  schedule update, writing ``ent_coef``) against SB3 ``PPO.train()`` on the same buffer (CartPole-v1, n_steps 2048,
  batch 64, 10 epochs: SB3's defaults); the callback runs once per rollout, as ``train()`` does;
- *SAC, per call*: ``AESCallback``'s SAC update (a replay batch of 256, the TD errors with SB3's soft target:
  two forward passes of the critics and one of the actor, then the schedule) against one SB3 ``SAC.train``
  gradient step at batch 256 (Pendulum-v1, SB3's default networks); the callback's default ``every=50`` divides
  the per-step overhead by 50 (``notes`` give the amortised percent);
- *schedule alone*: ``AdaptiveEntropySchedule.update`` on a batch of 256 TD errors against the same SAC step;
- *soft-Q*: one step of the vectorised tabular learner of the reproduction with the AES temperature against the
  same learner with a fixed temperature (our own code on both sides: a secondary row, ratio < 1 by construction).

    .venv/bin/python benchmarks/bench_aes.py [tiny|quick|full]
"""

from __future__ import annotations

import sys

import numpy as np

from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26._core.threads import single_torch_thread

PAPER = "aes"
SIZES = {  # PPO n_steps, SAC batch, timing repeats, calls per timing, soft-Q runs
    "tiny": (256, 64, 3, 2, 4),
    "quick": (2048, 256, 7, 5, 8),
    "full": (2048, 256, 15, 20, 8),
}


def _ppo_rows(n_steps: int, repeat: int) -> list[BenchRow]:
    from stable_baselines3 import PPO

    from icml26.decision.aes import AdaptiveEntropySchedule, AESCallback

    model = PPO("MlpPolicy", "CartPole-v1", n_steps=n_steps, batch_size=64, seed=0, device="cpu")
    model.learn(n_steps)  # fills the rollout buffer and sets the logger
    cb = AESCallback(AdaptiveEntropySchedule(0.01, 0.0025, 0.04, proxy="ema_ratio", warmup=1))
    cb.init_callback(model)
    t = interleaved_medians({"aes": cb._on_rollout_end, "sb3": model.train}, repeat=repeat)
    return [
        BenchRow(
            PAPER,
            f"PPO CartPole, per rollout ({n_steps} steps)",
            "SB3 PPO.train() (10 epochs, batch 64)",
            t["aes"],
            t["sb3"],
            "s",
            notes=f"overhead {100 * t['aes'] / t['sb3']:.3f}% of SB3's training per rollout",
        )
    ]


def _sac_rows(batch: int, repeat: int, calls: int) -> list[BenchRow]:
    from stable_baselines3 import SAC

    from icml26.decision.aes import AdaptiveEntropySchedule, AESCallback

    model = SAC("MlpPolicy", "Pendulum-v1", ent_coef=0.2, learning_starts=batch, batch_size=batch, seed=0, device="cpu")
    model.learn(batch + 50)  # a replay buffer to sample from, the logger set
    schedule = AdaptiveEntropySchedule(0.2, 0.05, 0.8, proxy="ema_ratio", warmup=1)
    cb = AESCallback(schedule, every=1, batch_size=batch)
    cb.init_callback(model)
    td = np.random.default_rng(0).standard_normal(batch)
    lone = AdaptiveEntropySchedule(0.2, 0.05, 0.8, proxy="ema_ratio", warmup=1)

    def aes() -> None:
        for _ in range(calls):
            cb._on_step()

    def sb3() -> None:
        model.train(gradient_steps=calls, batch_size=batch)

    def schedule_only() -> None:
        for _ in range(calls):
            lone.update(td)

    t = interleaved_medians({"aes": aes, "sb3": sb3, "schedule": schedule_only}, repeat=repeat)
    per = t["aes"] / t["sb3"]
    return [
        BenchRow(
            PAPER,
            f"SAC Pendulum, per callback call (batch {batch})",
            "SB3 SAC.train, one gradient step",
            t["aes"] / calls,
            t["sb3"] / calls,
            "s",
            notes=f"{100 * per:.1f}% of a gradient step per call; {100 * per / 50:.2f}% at the default every=50",
        ),
        BenchRow(
            PAPER,
            f"schedule update alone (batch {batch})",
            "SB3 SAC.train, one gradient step",
            t["schedule"] / calls,
            t["sb3"] / calls,
            "s",
            notes=f"{100 * t['schedule'] / t['sb3']:.2f}% of a gradient step",
        ),
    ]


def _softq_rows(runs: int, repeat: int) -> list[BenchRow]:
    from icml26.decision.aes import (
        AdaptiveEntropySchedule,
        DriftingGoalGrid,
        FixedTemperature,
        ScheduledTemperature,
        VectorSoftQ,
    )

    env = DriftingGoalGrid(5, phase_steps=2000, horizon=20)
    fixed = VectorSoftQ(
        env, [("f", FixedTemperature(np.full(runs, 0.005)), runs)], n_envs=32, lr=0.5, rng=np.random.default_rng(0)
    )
    sched = AdaptiveEntropySchedule(0.005, 0.00125, 0.02, proxy="ema_ratio", warmup=10)
    aes = VectorSoftQ(
        env, [("a", ScheduledTemperature(sched, runs), runs)], n_envs=32, lr=0.5, rng=np.random.default_rng(0)
    )
    t = interleaved_medians({"aes": lambda: aes.run(50), "fixed": lambda: fixed.run(50)}, repeat=repeat)
    return [
        BenchRow(
            PAPER,
            f"tabular soft-Q step, {runs} runs x 32 envs",
            "same learner, fixed temperature (ours)",
            t["aes"] / 50,
            t["fixed"] / 50,
            "s",
            notes="secondary row: our own learner on both sides",
        )
    ]


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    n_steps, batch, repeat, calls, runs = SIZES[size]
    with single_torch_thread():
        return [*_ppo_rows(n_steps, repeat), *_sac_rows(batch, repeat, calls), *_softq_rows(runs, repeat)]


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
