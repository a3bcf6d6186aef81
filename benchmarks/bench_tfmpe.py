"""TFMPE training throughput against sbi's FMPE at the same budget and network size.

Workload: the hierarchical Gaussian (S = 5 sites, m = 3 observations per site) at a budget of B = 1000 simulator
calls, i.e. 200 full 5-site simulations (B = 250, 50 sets at size ``tiny``). Every contender trains a flow-matching
posterior on those sets with batch size 100 (sbi: 50 at ``tiny``) for the same number of passes over the data, on one
torch thread; the figure is training examples (S-site sets) processed per second.

Rows (ratio = ours / anchor; > 1 when ours is faster):

1. TFMPE posterior mode (``train(mode="direct")``: the tokenised masked transformer, d = 32, two layers, two heads,
   MLP ratio 2: the reproduction's network) against sbi's ``FMPE`` with ``posterior_flow_nn(model="transformer",
   hidden_features=32, num_layers=2, num_heads=2)`` (sbi's own transformer vector field at the same width, depth
   and heads: the anchor).
2. The same against sbi's default ``FMPE`` (MLP vector field, 5 layers of 100): what an sbi user runs.

sbi trains with its own loop (a 10% validation split evaluated every epoch, early stopping disabled by a patience
longer than the run): examples/s counts the training examples only. TFMPE-LF's own cost is the likelihood fit on
single sites plus this posterior fit on synthetic sets of the same size, so row 1 is also its posterior step.

    .venv/bin/python benchmarks/bench_tfmpe.py [tiny|quick|full]
"""

from __future__ import annotations

import contextlib
import io
import sys
import warnings

import torch

from icml26._core import single_torch_thread
from icml26._core.bench import BenchRow, interleaved_medians, print_rows
from icml26.probabilistic.tfmpe import TFMPE, ConvergenceWarning, HierGaussian
from icml26.probabilistic.tfmpe.baselines import FlatHierarchicalPrior, NullTracker

NET = {"d_model": 32, "mlp_ratio": 2, "n_layers": 2, "n_heads": 2, "learning_rate": 2e-3}
SIZES = {  # budget B, epochs, timing repeats
    "tiny": (250, 2, 1),
    "quick": (1000, 10, 3),
    "full": (1000, 50, 3),
}
S, M = 5, 3


def _sets(budget: int):
    return HierGaussian(n_sites=S, m_obs=M).simulate(budget // S, S, torch.Generator().manual_seed(0))


def ours(data, epochs: int, batch: int):
    steps = max(1, epochs * data.x.shape[0] // batch)

    def fit() -> None:
        inf = TFMPE(HierGaussian(n_sites=S, m_obs=M), batch_size=batch, n_iter=steps, **NET)
        inf.append_simulations(data.theta, data.x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            inf.train(mode="direct")

    return fit, steps * batch


def sbi_fmpe(data, epochs: int, batch: int, model: str):
    from sbi.inference import FMPE
    from sbi.neural_nets import posterior_flow_nn

    estimator = (
        posterior_flow_nn(model="transformer", hidden_features=32, num_layers=2, num_heads=2)
        if model == "transformer"
        else "mlp"
    )
    prior = FlatHierarchicalPrior(HierGaussian(n_sites=S, m_obs=M), S)
    n_train = round(data.x.shape[0] * 0.9)

    def fit() -> None:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            inf = FMPE(prior=prior, vf_estimator=estimator, show_progress_bars=False, tracker=NullTracker())
            inf.append_simulations(data.theta, data.x.flatten(1))
            inf.train(
                training_batch_size=batch, max_num_epochs=epochs, stop_after_epochs=10**6, show_train_summary=False
            )

    return fit, epochs * n_train


def rows(size: str) -> list[BenchRow]:
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    budget, epochs, repeat = SIZES[size]
    batch = min(100, budget // S)
    data = _sets(budget)
    out = []
    with single_torch_thread():
        fit_ours, n_ours = ours(data, epochs, batch)
        fit_tr, n_tr = sbi_fmpe(data, epochs, batch, "transformer")
        fit_mlp, n_mlp = sbi_fmpe(data, epochs, batch, "mlp")
        t = interleaved_medians({"ours": fit_ours, "transformer": fit_tr, "mlp": fit_mlp}, repeat=repeat)
    workload = (
        f"train on {budget // S} hierarchical-Gaussian sets (S={S}, m={M}, B={budget}), batch {batch}, {epochs} epochs"
    )
    for key, n, name in (
        ("transformer", n_tr, "sbi FMPE, transformer vector field (d=32, 2 layers)"),
        ("mlp", n_mlp, "sbi FMPE, default MLP vector field"),
    ):
        out.append(
            BenchRow(
                "tfmpe",
                f"TFMPE posterior mode: {workload}",
                name,
                n_ours / t["ours"],
                n / t[key],
                "examples/s",
                better="higher",
                notes="sbi's epochs include its 10% validation pass; examples count training sets only",
            )
        )
    return out


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
