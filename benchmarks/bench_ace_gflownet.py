"""ACE for GFlowNets: trajectories per second of the batched sampler, and the cost of an ACE iteration.

Workload: HyperGrid 2-D (H = 20; H = 8 at the tiny size), a 2-layer MLP policy of width 64 whose exit logit is
lowered by 3 nats so that trajectories walk far (about 25 steps on average at H = 20, as after training), one
thread.

Rows (ratio > 1: ours is better):
- *anchor*, torchgfn's sampler approach (``Sampler.sample_trajectories`` of torchgfn 2.x, re-implemented here
  for timing, not copied; torchgfn itself pins numpy < 2 and cannot be installed beside this project): per step,
  masks recomputed from the state tensor, the distribution computed on the *active* rows only (``states[~dones]``),
  actions drawn from a ``Categorical`` and scattered into a full-batch action tensor padded with a dummy action,
  the environment stepped on the full batch, every step's states and actions appended to lists and stacked at the
  end; our ``sample_trajectories`` against it (same network, same batch);
- *naive*, the issue's reference: one trajectory at a time (a Python loop over trajectories, one forward pass per
  step of each); secondary row;
- an ACE iteration (mixture sampling + canonical TB + divergent TB, two networks) against a TB iteration: the
  price of the explorer (the notes expect about 2x), ratio < 1 by construction.

    .venv/bin/python benchmarks/bench_ace_gflownet.py [tiny|quick|full]
"""

from __future__ import annotations

import sys

import torch

from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26._core.threads import single_torch_thread
from icml26.decision.ace_gflownet import ACETrainer, GFlowNet, HyperGrid, TBTrainer, sample_trajectories

PAPER = "ace_gflownet"
SIZES = {  # height, batches, timing repeats, trajectories of the per-trajectory loop
    "tiny": (8, (16,), 3, 16),
    "quick": (20, (16, 256), 5, 64),
    "full": (20, (16, 256, 1024), 7, 128),
}


def walker(env: HyperGrid, seed: int = 0) -> GFlowNet:
    """A policy that walks far: an untrained MLP with its exit logit lowered by 3 nats."""
    torch.manual_seed(seed)
    gfn = GFlowNet(env, hidden=64)
    with torch.no_grad():
        gfn.head.bias[env.n_actions - 1] -= 3.0
    return gfn


@torch.no_grad()
def torchgfn_style(env: HyperGrid, gfn: GFlowNet, n: int, generator: torch.Generator) -> torch.Tensor:
    """torchgfn's forward sampling loop (see the module docstring); returns the stacked states."""
    exit_action, dummy = env.n_actions - 1, -1
    states = env.initial(n)
    dones = torch.zeros(n, dtype=torch.bool)
    trajectory_states, trajectory_actions = [states], [torch.full((n, 1), dummy)]
    dummy_actions = torch.full((n, 1), dummy)
    while not bool(dones.all()):
        actions = dummy_actions.clone()
        active = ~dones
        masks = env.forward_mask(states[active])
        logits = gfn.raw(states[active])[:, : env.n_actions].masked_fill(~masks, -float("inf"))
        dist = torch.distributions.Categorical(logits=logits)
        actions[active] = dist.sample()[:, None]
        is_exit = actions[:, 0] == exit_action
        new_states = states.clone()
        move = active & ~is_exit
        new_states[move] = env._apply(states[move], actions[move, 0])
        new_states[active & is_exit] = -1  # torchgfn pads finished trajectories with the sink state s_f
        dones = dones | (active & is_exit)
        trajectory_states.append(new_states)
        trajectory_actions.append(actions)
        states = new_states
    return torch.stack(trajectory_states)


@torch.no_grad()
def per_trajectory(env: HyperGrid, gfn: GFlowNet, n: int, generator: torch.Generator) -> list[list[int]]:
    """One trajectory at a time: a Python loop over trajectories, one forward pass per step."""
    out = []
    for _ in range(n):
        state, path = env.initial(1), []
        while True:
            logp = gfn.forward_log_probs(state)
            a = int(torch.multinomial(logp.exp(), 1, generator=generator))
            path.append(a)
            if a == env.n_actions - 1:
                break
            state = env._apply(state, torch.tensor([a]))
        out.append(path)
    return out


def rows(size: str) -> list[BenchRow]:
    height, batches, repeat, loop_n = SIZES[size]
    env = HyperGrid(2, height)
    out: list[BenchRow] = []
    with single_torch_thread():
        gfn = walker(env)
        g = torch.Generator().manual_seed(0)
        mean_len = float(sample_trajectories(env, gfn, 512, generator=g).lengths.float().mean())
        for batch in batches:
            t = interleaved_medians(
                {
                    "ours": lambda b=batch: sample_trajectories(env, gfn, b, generator=g),
                    "torchgfn": lambda b=batch: torchgfn_style(env, gfn, b, g),
                },
                repeat=repeat,
            )
            out.append(
                BenchRow(
                    PAPER,
                    f"sample {batch} trajectories, HyperGrid 2-D H={height}",
                    "torchgfn-style sampler (active-row loop)",
                    batch / t["ours"],
                    batch / t["torchgfn"],
                    "trajectories/s",
                    better="higher",
                    notes=f"mean length {mean_len:.1f} actions; exit logit -3",
                )
            )
        t = interleaved_medians(
            {
                "ours": lambda: sample_trajectories(env, gfn, loop_n, generator=g),
                "loop": lambda: per_trajectory(env, gfn, loop_n, g),
            },
            repeat=max(2, repeat // 2),
        )
        out.append(
            BenchRow(
                PAPER,
                f"sample {loop_n} trajectories, HyperGrid 2-D H={height}",
                "per-trajectory Python loop (naive)",
                loop_n / t["ours"],
                loop_n / t["loop"],
                "trajectories/s",
                better="higher",
                notes="secondary row: the naive reference the issue asks for",
            )
        )
        tb, ace = TBTrainer(env, seed=0), ACETrainer(env, seed=0)
        for trainer in (tb, ace):  # leave the initial random-walk regime so both sample realistic lengths
            trainer.train(16 * 20, 16)
        t = interleaved_medians(
            {"ace": lambda: ace._iteration(16), "tb": lambda: tb._iteration(16)}, repeat=max(10, 4 * repeat)
        )
        out.append(
            BenchRow(
                PAPER,
                f"one training iteration, batch 16, HyperGrid 2-D H={height}",
                "TB iteration (one network)",
                t["ace"],
                t["tb"],
                "s",
                better="lower",
                ours_name="ACE iteration",
                notes="the explorer's price: mixture sampling, two forward/backward passes; ratio < 1 expected",
            )
        )
    return out


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
