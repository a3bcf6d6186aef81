"""Reproduction of the equivariant spectral representation claims on symmetric Gaussian mixtures.

Design (the notes' protocol, scaled to 2 shared CPU cores; the robotics data sets are not available offline):

- Data: three G-invariant Gaussian mixtures over (x, y) in R^2 x R with exact E[y | x] and F(y | x) (``data``):
  C2 (x -> -x, y -> -y), C2xC2 (coordinate reflections, y flips with the first), D3 (the triangle's symmetries, y
  flips with reflections). n_train in {250, 1000, 4000}; 2000 test points drawn from the exact mixture.
- Arms, all in one cell on the same data, frame (invariant shift, scalar scale), widths (64 rounded up to a multiple
  of |G|), depth 2, Adam at 1e-3, batch 256 and the same number of steps: NCP, eNCP (rank 32 rounded up to a
  multiple of |G|), MLP and eMLP (least squares). CQR / eCQR are not run (time; see the card's notes).
- Metrics against the truth: mse of E[y | x]; cdf_err, the mean |F_hat - F| on the model's 100-point grid;
  coverage of the shortest 90% interval on fresh test pairs; equiv_err, the largest |m(g x) - rho_Y(g) m(x)| over
  test points and group elements of the trained predictor evaluated in float64, relative to the sd of m.

The abstract gives no numbers; margins are the notes' assertions, fixed before any profile ran.
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread

ARMS = ("encp", "ncp", "emlp", "mlp")
PROBLEMS = ("C2", "C2xC2", "D3")
ALPHA = 0.1
REVISION = 1


def _equivariance_error(predict: Any, X: Any, rep_x: Any, rep_y: Any) -> float:
    """max_g max_x |m(rho_X(g) x) - rho_Y(g) m(x)| / sd(m(x)) of a predictor m (numpy in, numpy out)."""
    import numpy as np

    m = predict(X)
    worst = 0.0
    for gx, gy in zip(rep_x.matrices, rep_y.matrices, strict=True):
        worst = max(worst, float(np.abs(predict(X @ gx.T) - gy[0, 0] * m).max()))
    return worst / float(np.std(m) + 1e-300)


def _float64_mean(est: Any) -> Any:
    """The trained model's E[y | x] evaluated in float64 (a copy), so the error measures the construction."""
    import copy

    import torch

    model = copy.deepcopy(est.model_).double()
    frame = est.frame_

    def predict(X: Any) -> Any:
        with torch.no_grad():
            out = (
                model.conditional_expectation(frame.x(X, torch.float64))[:, 0]
                if hasattr(model, "cov_vz")
                else (model(frame.x(X, torch.float64))[:, 0])
            )
        return out.numpy() * frame.scale_y + frame.shift_y

    return predict


@single_torch_thread()
def run_problem(cell: Cell) -> dict[str, Any]:
    """Every arm on one problem, one training size and one seed; metrics against the exact mixture."""
    import numpy as np

    from icml26.stats.equivariant_spectral.data import benchmark_problem
    from icml26.stats.equivariant_spectral.estimators import EMLPRegressor, NCPRegressor

    rng = cell.rng(by_setting=True)
    prob = benchmark_problem(str(cell["problem"]))
    X, y = prob.sample(int(cell["n"]), rng)
    Xt, yt = prob.sample(int(cell.get("n_test", 2000)), rng)
    truth = prob.conditional_mean(Xt)
    rx, ry = prob.rep_x, prob.rep_y
    order = rx.group.order  # every arm gets the same widths: 64 and rank 32 rounded up to a multiple of |G|
    width, rank = order * -(-64 // order), order * -(-32 // order)
    common = dict(n_steps=int(cell["n_steps"]), random_state=cell.seed, width=width)
    arms = {
        "encp": NCPRegressor(rx, ry, rank=rank, **common),
        "ncp": NCPRegressor(rank=rank, **common),
        "emlp": EMLPRegressor(rx, ry, **common),
        "mlp": EMLPRegressor(**common),
    }
    metrics: dict[str, dict[str, float]] = {}
    curves = []
    for name, est in arms.items():
        est.fit(X, y)  # (fit times live in the benchmark: a card's metrics must be reproducible)
        pred = est.predict(Xt)
        out = {
            "mse": float(np.mean((pred - truth) ** 2)),
            "equiv_err": _equivariance_error(_float64_mean(est), Xt[:500], rx, ry),
            "loss_first": float(est.loss_curve_[:20].mean()),
            "loss_last": float(est.loss_curve_[-20:].mean()),
        }
        if isinstance(est, NCPRegressor):
            lo, hi = est.predict_interval(Xt, ALPHA).T
            F_true = prob.conditional_cdf(Xt, est.grid_)
            out |= {
                "coverage": float(np.mean((yt >= lo) & (yt <= hi))),
                "interval_width": float(np.mean(hi - lo)),
                "cdf_err": float(np.mean(np.abs(est.predict_cdf(Xt) - F_true))),
            }
        metrics[name] = out
        curves.append({"arm": name, "n": int(cell["n"]), "problem": cell["problem"]} | out)
    return {"metrics": metrics, "curves": {"arms": curves}, "info": {"var_truth": float(np.var(truth))}}


# ---------------------------------------------------------------------------------------------------- plots
def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] == "ok"]


def _finish(ax: Any, ylabel: str) -> None:
    from icml26._core.plots import legend_outside

    ax.set_ylabel(ylabel, fontsize=8)
    legend_outside(ax)


def _by_n(ax: Any, records: list[dict[str, Any]], metric: str, arms: tuple[str, ...], log: bool = True) -> None:
    """Each arm's metric against n_train: one dot per (problem, seed), the mean over them joined by a line."""
    import numpy as np

    ok = _ok(records)
    for j, arm in enumerate(arms):
        pts = [
            (r["spec"]["setting"]["n"], r["metrics"][arm][metric]) for r in ok if metric in r["metrics"].get(arm, {})
        ]
        if not pts:
            continue
        ns = sorted({p[0] for p in pts})
        ax.plot(
            [p[0] * (1 + 0.04 * (j - 1.5)) for p in pts], [p[1] for p in pts], "o", ms=2.5, color=f"C{j}", alpha=0.5
        )
        ax.plot(ns, [np.mean([p[1] for p in pts if p[0] == n]) for n in ns], "-", color=f"C{j}", label=f"{arm} (mean)")
    ns_all = sorted({r["spec"]["setting"]["n"] for r in ok})
    ax.set_xscale("log")
    ax.set_xticks(ns_all, [str(n) for n in ns_all])
    ax.minorticks_off()
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("n_train (dots: one problem and seed)")


def plot_mse(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _by_n(ax, records, "mse", ARMS)
    _finish(ax, "MSE of E[y | x] against the exact mixture (lower is better)")


def plot_mse_vs_emlp(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """C2: the MSEs with the non-inferiority bound 2 x eMLP (mean over problems and seeds at each n)."""
    import numpy as np

    _by_n(ax, records, "mse", ARMS)
    ok = _ok(records)
    ns = sorted({r["spec"]["setting"]["n"] for r in ok})
    bound = [2 * np.mean([r["metrics"]["emlp"]["mse"] for r in ok if r["spec"]["setting"]["n"] == n]) for n in ns]
    ax.plot(ns, bound, "k--", lw=0.8, label="margin: 2 x eMLP (mean)")
    _finish(ax, "MSE of E[y | x] against the exact mixture (lower is better)")


def plot_coverage(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _by_n(ax, records, "coverage", ("encp", "ncp"), log=False)
    ax.axhline(1 - ALPHA, color="k", ls="--", lw=0.8, label="nominal 0.9")
    ax.axhspan(0.85, 0.95, color="C2", alpha=0.15, label="claim's band 0.9 +- 0.05")
    _finish(ax, "coverage of the shortest 90% interval")


def plot_cdf(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _by_n(ax, records, "cdf_err", ("encp", "ncp"))
    _finish(ax, "mean |F_hat(t | x) - F(t | x)| on the grid (lower is better)")


def plot_equivariance(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _by_n(ax, records, "equiv_err", ARMS)
    ax.axhline(1e-5, color="k", ls="--", lw=0.8, label="claim's bound 1e-5")
    _finish(ax, "max |m(g x) - rho_Y(g) m(x)| / sd(m), float64")


# ---------------------------------------------------------------------------------------------------- card
def _grid(ns: tuple[int, ...], n_steps: int, problems: tuple[str, ...] = PROBLEMS, n_test: int = 2000) -> list:
    return [{"problem": p, "n": n, "n_steps": n_steps, "n_test": n_test} for p in problems for n in ns]


SMOKE = _grid((64,), 20, ("D3",), 200)
ALL = profiles(
    smoke=SMOKE,
    quick=_grid((250,), 300, ("C2", "D3")),
    full=_grid((250, 1000, 4000), 1000),
    seeds=(1, 3, 3),
    cell_seconds=(2, 8, 22),
)
SMALL = profiles(
    smoke=SMOKE,
    quick=_grid((250,), 300, ("C2", "D3")),
    full=_grid((250,), 1000),
    seeds=(1, 3, 3),
    cell_seconds=(2, 8, 22),
)
_COMMON = dict(run=run_problem, revision=REVISION)
_STEPS_NOTE = (
    "Every arm: 1000 Adam steps (full; 300 quick) at batch 256, lr 1e-3, width 64 and depth 2 (rounded up to a "
    "multiple of |G|); the full profile runs 3 seeds (not the notes' 5) to fit the shared 2-core budget and the "
    "heavy-job queue (decided before any full run)"
)

CARD = PaperCard(
    slug="equivariant_spectral",
    title="Equivariant spectral representation learning",
    group="stats",
    api="icml26.stats.equivariant_spectral.EquivariantSpectral",
    extra="stats",
    summary="NCP (a learned truncated SVD of the conditional expectation operator) and its G-equivariant version "
    "(isotypic projectors, Schur-block operator) against NCP, an MLP and an equivariant MLP on symmetric Gaussian "
    "mixtures with exact conditional mean and CDF.",
    claims=(
        Claim(
            id="C1",
            statement="At small n (250), eNCP's regression error is at least 30% lower than non-equivariant NCP's.",
            metric="mse",
            direction="lower",
            method="encp",
            baselines=("ncp",),
            min_effect=0.3,
            relative=True,
            paper_figure="notes: eNCP MSE below NCP MSE at n = 250, where the gap is expected to be large",
            notes="margin 0.3 (relative) fixed before any profile ran. " + _STEPS_NOTE,
            profiles=SMALL,
            plot=plot_mse,
            **_COMMON,
        ),
        Claim(
            id="C2",
            statement="eNCP's regression error matches the equivariant MLP's: at most 2x eMLP's MSE (non-inferiority, "
            "relative margin 1) over all groups and sample sizes.",
            metric="mse",
            direction="lower",
            method="encp",
            baselines=("emlp",),
            test="noninferiority",
            min_effect=1.0,
            relative=True,
            paper_figure="abstract: matching or outperforming existing equivariant baselines in regression; notes' "
            "soft target eNCP MSE <= 2 x eMLP MSE",
            notes="margin fixed before any profile ran, from the notes' soft target. " + _STEPS_NOTE,
            profiles=ALL,
            plot=plot_mse_vs_emlp,
            **_COMMON,
        ),
        Claim(
            id="C3",
            statement="eNCP's shortest 90% intervals are calibrated: marginal coverage within 0.9 +- 0.05.",
            metric="coverage",
            direction="higher",
            method="encp",
            reference=1 - ALPHA,
            test="equivalence",
            min_effect=0.05,
            paper_figure="abstract: well-calibrated uncertainty estimates; notes: eNCP coverage within +-0.05 of 0.9",
            notes="coverage on 2000 fresh test pairs per cell, pooled over groups and sample sizes. " + _STEPS_NOTE,
            profiles=ALL,
            plot=plot_coverage,
            **_COMMON,
        ),
        Claim(
            id="C4",
            statement="At small n (250), eNCP's conditional CDF is closer to the truth than NCP's: mean |F_hat - F| "
            "at least 20% lower.",
            metric="cdf_err",
            direction="lower",
            method="encp",
            baselines=("ncp",),
            min_effect=0.2,
            relative=True,
            paper_figure="notes: eNCP better calibrated than NCP at small n, the gap shrinking as n grows",
            notes="margin 0.2 (relative) fixed before any profile ran; CQR / eCQR are not run (time), so the "
            "notes' comparison with eCQR is not made. " + _STEPS_NOTE,
            profiles=SMALL,
            plot=plot_cdf,
            **_COMMON,
        ),
        Claim(
            id="C5",
            statement="eNCP is exactly equivariant after training: E_hat[y | g x] = rho_Y(g) E_hat[y | x] to a "
            "relative error below 1e-5 (float64 evaluation of the trained model).",
            metric="equiv_err",
            direction="lower",
            method="encp",
            reference=1e-5,
            paper_figure="issue 38: equivariance error below 1e-5",
            notes="a check of the construction on trained models (the unit tests prove it on random ones); NCP's and "
            "MLP's errors are on the plot for contrast",
            profiles=ALL,
            plot=plot_equivariance,
            **_COMMON,
        ),
    ),
)
