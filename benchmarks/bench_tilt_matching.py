"""Tilt Matching's hot paths against outside anchors and the baselines' loops, on the 8-Gaussian ring model.

Model: the ring room's velocity (MLP 3 -> 128 -> 128 -> 2 on the closed-form N(0, 3^2 I) base velocity), after a short
Tilt Matching fit so that the field is not trivial. One torch thread. Rows (ratio = anchor time / our time; > 1 when
ours is faster):

1. Sampling n points: our fixed-grid midpoint ODE (32 steps, 64 velocity calls) against ``zuko.utils.odeint``
   (adaptive Dormand-Prince, the field library's solver, atol 1e-5 / rtol 1e-4): the notes lists zuko / torchdiffeq
   as the outside ODE integrators. The note gives the largest difference between the two endpoints.
2. One regression step (weighted flow-matching loss, backward, Adam) against a plain-torch transcription of the
   textbook conditional flow-matching step (torchcfm's recipe: x_t = (1 - t) x0 + t x1, target x1 - x0, MSE),
   weighted by the same w: the overhead of our loss function over the minimal loop.
3. Energy throughput: one Tilt Matching annealing step (pool sampling, one energy evaluation per pool point, the
   ESS bisection and ``inner_iters`` Adam steps) against one SMC-MALA temperature of the same number of energy
   evaluations (resampling and MALA moves, which also need gradients), in energy evaluations per second.

    .venv/bin/python benchmarks/bench_tilt_matching.py [tiny|quick|full]
"""

from __future__ import annotations

import sys

import torch

from icml26._core import single_torch_thread
from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.probabilistic.tilt_matching import (
    CountingEnergy,
    GaussianVelocity,
    TiltMatching,
    VelocityMLP,
    boltzmann_reward,
    ring8,
    sample_ode,
    smc_mala,
)
from icml26.probabilistic.tilt_matching.tilt import tilt_loss

SIZES = {  # sample / pool size, inner Adam steps per annealing step, timing repeats
    "tiny": (512, 5, 1),
    "quick": (2048, 50, 3),
    "full": (4096, 200, 5),
}
S = 3.0


def _model(pool: int, inner: int) -> tuple[TiltMatching, CountingEnergy]:
    torch.manual_seed(0)
    target, base = ring8(), GaussianVelocity([0.0, 0.0], S)
    energy = CountingEnergy(target.energy, 2)
    net = VelocityMLP(2, 128, 2, base=GaussianVelocity([0.0, 0.0], S))
    tm = TiltMatching(net, boltzmann_reward(energy, base.log_prob_at), pool_size=pool, inner_iters=inner)
    return tm.fit(a_target=0.5, max_steps=2), energy


def _sampling_row(tm: TiltMatching, n: int, repeat: int) -> BenchRow:
    from zuko.utils import odeint

    x0 = torch.randn(n, 2, generator=torch.Generator().manual_seed(1))
    net = tm.velocity

    def zuko_sample() -> torch.Tensor:
        with torch.no_grad():
            return odeint(lambda t, x: net(x, t.expand(x.shape[0])), x0, 0.0, 1.0, atol=1e-5, rtol=1e-4)

    def ours() -> torch.Tensor:
        return sample_ode(net, x0, 32)

    t = interleaved_medians({"ours": ours, "zuko": zuko_sample}, repeat=repeat)
    gap = float((ours() - zuko_sample()).abs().max())
    return BenchRow(
        "tilt_matching",
        f"sample {n} points (2-D ring model)",
        "zuko.utils.odeint (adaptive Dormand-Prince, atol 1e-5, rtol 1e-4)",
        t["ours"],
        t["zuko"],
        "s",
        notes=f"ours: fixed-grid midpoint, 32 steps; largest endpoint difference {gap:.2g}",
    )


def _regression_row(tm: TiltMatching, n: int, repeat: int) -> BenchRow:
    g = torch.Generator().manual_seed(2)
    x1 = tm.sample(n, g)
    w = torch.softmax(torch.randn(n, generator=g), 0) * n
    net = tm.velocity
    opt = torch.optim.Adam(net.parameters(), lr=1e-5)
    bs = 512

    def ours() -> None:
        x0, t = torch.randn(bs, 2, generator=g), torch.rand(bs, generator=g)
        loss = tilt_loss("weighted", net, None, x0, x1[:bs], t, w[:bs], w[:bs], 0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def plain() -> None:
        x0, t = torch.randn(bs, 2, generator=g), torch.rand(bs, generator=g)
        xt = (1 - t[:, None]) * x0 + t[:, None] * x1[:bs]
        loss = (w[:bs] * ((net(xt, t) - (x1[:bs] - x0)) ** 2).sum(-1)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    t = interleaved_medians({"ours": ours, "plain": plain}, repeat=max(repeat * 20, 20))
    return BenchRow(
        "tilt_matching",
        f"one weighted regression step (batch {bs}, MLP 128x2)",
        "plain-torch conditional flow-matching step (torchcfm's recipe, transcribed)",
        t["ours"],
        t["plain"],
        "s",
    )


def _throughput_row(tm: TiltMatching, energy: CountingEnergy, pool: int, repeat: int) -> BenchRow:
    target, base = ring8(), GaussianVelocity([0.0, 0.0], S)

    def tm_step() -> None:
        before = energy.evaluations
        tm._step(a_target=10.0)  # one annealing step; the far target keeps h set by the ESS rule
        assert energy.evaluations - before == pool

    def smc_step() -> None:
        smc_energy = CountingEnergy(target.energy, 2)
        n = pool // 2  # initial evaluation + one MALA move per particle = pool energy evaluations
        smc_mala(
            smc_energy,
            lambda k, g: S * torch.randn(k, 2, generator=g),
            lambda x: (base.log_prob_at(x), -x / S**2),
            n,
            pool,
            mala_steps=1,
            generator=torch.Generator().manual_seed(3),
        )

    t = interleaved_medians({"tm": tm_step, "smc": smc_step}, repeat=repeat)
    return BenchRow(
        "tilt_matching",
        f"energy evaluations per second in one annealing step ({pool} evaluations)",
        "SMC-MALA: one temperature of the same energy evaluations (with gradients)",
        pool / t["tm"],
        pool / t["smc"],
        "evals/s",
        better="higher",
        notes=f"Tilt Matching's step includes {tm.inner_iters} Adam steps and the pool's ODE sampling; the ratio "
        "is the cost of learning a reusable sampler rather than moving particles",
    )


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    n, inner, repeat = SIZES[size]
    with single_torch_thread():
        tm, energy = _model(n, inner)
        return [
            _sampling_row(tm, n, repeat),
            _regression_row(tm, n, repeat),
            _throughput_row(tm, energy, n, repeat),
        ]


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
