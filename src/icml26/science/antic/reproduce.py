"""Reproduction of ANTIC's claims on 2-D Kolmogorov flow (forced, bursting regime) and decaying turbulence.

Design (one cell = one simulated trajectory and every arm on it, so all comparisons are paired):

- Data: our pseudo-spectral solver (``solver.py``), forced Kolmogorov flow k_f = 4, Re = 40 (Farazmand-Sapsis
  bursting regime), spun up from the laminar state plus 1% noise (seeded), then T frames 0.2 time units apart (the
  notes' 0.5 is too coarse at our resolution: consecutive frames differ by about 40% in relative L2, so nothing can
  be interpolated; at 0.2 they differ by about 16%). The full profile records 24 time units (120 frames), long
  enough to hold calm and bursting phases; the quick profile 8 (40 frames at 32^2, fewer optimiser steps). The full
  profile adds decaying turbulence (no forcing, Re = 300), which mirrors the released code, and LoRA on the first
  layer too (ours).
- Arms: ``antic`` = the released code's enstrophy selector (PATS: enstrophy-change and correlation bounds, window 10)
  + a Fourier-feature MLP (about 8k weights) with continual rank-4 LoRA updates on the hidden layers and a keyframe
  every 20 kept frames; ``uniform`` = the same field on evenly spaced frames, as many as ``antic`` kept; ``antic_ie``
  and ``uniform_ie`` = the same pair with our interpolation-error selector (piecewise-linear segmentation, tolerance
  10%, about the field's own error) instead of PATS; ``per_frame`` = independent fields on ``antic``'s frames at an
  equal optimiser-step budget;
  ``sz3`` / ``zfp`` = the codecs on every frame with their absolute bound bisected to ``antic``'s all-frame relative
  L2 error (the same metric); ``sz3_ie`` = the hybrid, SZ3 on our selector's frames, matched the same way.
- Metrics on ALL frames (dropped frames linearly interpolated from the decoded kept ones): relative L2, the same on
  the burst frames (dissipation in the top 20% of the series), PSNR, max error, the enstrophy series' relative error;
  total compression ratio = raw float32 bytes of every frame / every stored byte (header, frequencies, indices,
  keyframe ids, min-max ranges, keyframe weights, LoRA tensors; for the codecs the streams plus 4 bytes per frame).
"""

from __future__ import annotations

from typing import Any

from icml26._core import Cell, Claim, PaperCard, profiles, single_torch_thread

REVISION = 1
_SIMULATIONS: dict[tuple, Any] = {}  # per-worker cache: claims and arms of a cell share one trajectory


def simulate(flow: str, n: int, re: float, spinup: float, n_frames: int, every: float, seed: int) -> Any:
    """(T, n, n) float32 vorticity frames; cached per worker process."""
    import numpy as np

    from icml26.science.antic.solver import KolmogorovFlow2D

    key = (flow, n, re, spinup, n_frames, every, seed)
    if key not in _SIMULATIONS:
        forced = flow == "kolmogorov"
        probe = KolmogorovFlow2D(n, re=re, forcing=forced, seed=seed)
        dt = every / int(np.ceil(every / probe.dt))  # output times fall on steps
        sim = KolmogorovFlow2D(n, re=re, forcing=forced, seed=seed, dt=dt)
        sim.advance(spinup)
        _SIMULATIONS.clear()
        _SIMULATIONS[key] = (sim.snapshots(n_frames, every), sim.nu)
    return _SIMULATIONS[key]


def _scores(rec: Any, truth: Any, burst: Any) -> dict[str, float]:
    import numpy as np

    from icml26.science.antic.codecs import relative_l2

    rec64, truth64 = np.asarray(rec, np.float64), np.asarray(truth, np.float64)
    err = rec64 - truth64
    peak = truth64.max() - truth64.min()
    z_true, z_rec = (truth64**2).mean(axis=(1, 2)), (rec64**2).mean(axis=(1, 2))
    return {
        "rel_l2": relative_l2(rec64, truth64),
        "burst_rel_l2": relative_l2(rec64[burst], truth64[burst]),
        "calm_rel_l2": relative_l2(rec64[~burst], truth64[~burst]),
        "psnr": float(20 * np.log10(peak / np.sqrt((err**2).mean()))),
        "max_err": float(np.abs(err).max() / np.abs(truth64).max()),
        "enstrophy_err": float(np.linalg.norm(z_rec - z_true) / np.linalg.norm(z_true)),
    }


@single_torch_thread()
def run_compression(cell: Cell) -> dict[str, Any]:
    """One trajectory; ANTIC (released selector and ours), uniform, per-frame fields, ZFP and SZ3 at matched error."""
    import numpy as np
    import torch

    from icml26.science.antic.codecs import SZ3Codec, ZFPCodec, compress_frames, match_error, relative_l2
    from icml26.science.antic.compressor import ANTIC, FixedSelector, interpolate_frames
    from icml26.science.antic.selector import EnstrophySelector, InterpolationErrorSelector, uniform_indices

    torch.manual_seed(cell.seed)
    frames, nu = simulate(
        cell["flow"],
        int(cell["n"]),
        float(cell["re"]),
        float(cell["spinup"]),
        int(cell["frames"]),
        float(cell["every"]),
        cell.seed,
    )
    n_frames = len(frames)
    dissipation = nu * (frames.astype(np.float64) ** 2).mean(axis=(1, 2))
    burst = dissipation >= np.quantile(dissipation, 0.8)
    field = dict(
        lora_rank=int(cell["lora_rank"]),
        lora_targets=cell["lora_targets"],
        keyframe_every=20,
        steps_first=int(cell["steps_first"]),
        steps_next=int(cell["steps_next"]),
        seed=cell.seed,
    )

    def run_arm(selector: Any, continual: bool = True) -> tuple[Any, Any, int]:
        comp = ANTIC(selector, continual=continual, **field)
        traj = comp.compress(frames, 0.0, float(cell["every"]))
        return traj, traj.decompress(), comp.optimizer_steps

    metrics: dict[str, dict[str, float]] = {}
    recs: dict[str, Any] = {}

    def record(name: str, traj: Any, rec: Any, steps: int) -> None:
        recs[name] = rec
        metrics[name] = _scores(rec, frames, burst) | {
            "compression_ratio": traj.compression_ratio(),
            "kept": float(len(traj.indices)),
            "kept_fraction": len(traj.indices) / n_frames,
            "nbytes": float(traj.nbytes),
            "optimizer_steps": float(steps),
        }

    pats = EnstrophySelector(corr_threshold=0.9, window_size=10)
    traj, rec, steps = run_arm(pats)
    record("antic", traj, rec, steps)
    kept = traj.indices
    u_traj, u_rec, u_steps = run_arm(FixedSelector(uniform_indices(n_frames, len(kept))))
    record("uniform", u_traj, u_rec, u_steps)
    p_traj, p_rec, p_steps = run_arm(FixedSelector(kept), continual=False)
    record("per_frame", p_traj, p_rec, p_steps)
    ie_traj, ie_rec, ie_steps = run_arm(InterpolationErrorSelector(float(cell["ie_tolerance"]), max_gap=20))
    record("antic_ie", ie_traj, ie_rec, ie_steps)
    ui_traj, ui_rec, ui_steps = run_arm(FixedSelector(uniform_indices(n_frames, len(ie_traj.indices))))
    record("uniform_ie", ui_traj, ui_rec, ui_steps)

    # the selectors alone: exact kept frames, interpolated (no spatial compression)
    for name, idx in (
        ("pats_exact", kept),
        ("uniform_exact", uniform_indices(n_frames, len(kept))),
        ("ie_exact", ie_traj.indices),
        ("uniform_ie_exact", uniform_indices(n_frames, len(ie_traj.indices))),
    ):
        metrics[name] = _scores(interpolate_frames(idx, frames[idx], n_frames), frames, burst)

    raw_bytes = frames.size * 4
    target = metrics["antic"]["rel_l2"]
    for name, codec in (("sz3", SZ3Codec), ("zfp", ZFPCodec)):
        bound, rec_c, nbytes = match_error(codec, frames, target)
        metrics[name] = _scores(rec_c, frames, burst) | {"compression_ratio": raw_bytes / nbytes, "bound": bound}
    idx = ie_traj.indices
    bound, rec_h, nbytes = match_error(
        SZ3Codec, frames[idx], target, truth=frames, reconstruct=lambda r: interpolate_frames(idx, r, n_frames)
    )
    metrics["sz3_ie"] = _scores(rec_h, frames, burst) | {"compression_ratio": raw_bytes / (nbytes + 4 * len(idx))}

    # rate-distortion curves of the codecs on every frame (bounds relative to the field's max |omega|)
    scale = float(np.abs(frames).max())
    rd = []
    for rel_bound in cell["rd_bounds"]:
        for name, codec in (("sz3", SZ3Codec), ("zfp", ZFPCodec)):
            rec_c, nbytes = compress_frames(codec(rel_bound * scale), frames)
            rd.append({"arm": name, "rel_l2": relative_l2(rec_c, frames), "compression_ratio": raw_bytes / nbytes})
    for name in ("antic", "uniform", "per_frame", "antic_ie", "uniform_ie", "sz3_ie"):
        m = metrics[name]
        rd.append({"arm": name, "rel_l2": m["rel_l2"], "compression_ratio": m["compression_ratio"]})
    per_frame_err = {
        name: np.linalg.norm((recs[name] - frames).reshape(n_frames, -1), axis=1)
        / np.linalg.norm(frames.reshape(n_frames, -1), axis=1)
        for name in ("antic", "uniform", "antic_ie", "uniform_ie")
    }
    series = [
        {"frame": i, "dissipation": float(dissipation[i]), **{k: float(v[i]) for k, v in per_frame_err.items()}}
        for i in range(n_frames)
    ]
    return {
        "metrics": metrics,
        "curves": {"rate_distortion": rd, "series": series},
        "info": {
            "pats_kept": [int(i) for i in kept],
            "ie_kept": [int(i) for i in ie_traj.indices],
            "raw_bytes": raw_bytes,
            "field_parameters": int(traj.keyframes[0].size),
            "lora_parameters_per_frame": int(traj.loras[1].size) if len(traj.loras) > 1 else 0,
        },
    }


# ---------------------------------------------------------------------------------------------------- plots
def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] == "ok"]


def _finish(ax: Any, ylabel: str, xlabel: str | None = None) -> None:
    from icml26._core.plots import legend_outside

    ax.set_ylabel(ylabel, fontsize=8)
    if xlabel:
        ax.set_xlabel(xlabel, fontsize=8)
    legend_outside(ax, below=False)
    ax.figure.set_dpi(max(150, ax.figure.get_dpi()))


def _strip(ax: Any, records: list[dict[str, Any]], metric: str, names: tuple[str, ...]) -> None:
    """Each arm's value per cell (dots; grey lines join the same cell) and the mean (black bar)."""
    from icml26._core.plots import paired_strip

    values = [[r["metrics"][n][metric] for n in names] for r in _ok(records)]
    paired_strip(
        ax, values, names, mean_label="mean over cells", point_label="one cell (seed x setting; grey lines pair them)"
    )


def plot_selector(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _strip(ax, records, "rel_l2", ("antic", "uniform", "antic_ie", "uniform_ie", "pats_exact", "uniform_exact"))
    _finish(ax, "relative L2 error over ALL frames (lower is better)")


def plot_burst(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _strip(ax, records, "burst_rel_l2", ("antic", "uniform", "antic_ie", "uniform_ie", "ie_exact", "uniform_ie_exact"))
    _finish(ax, "relative L2 error on burst frames (top-20% dissipation)")


def plot_selector_ours(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _strip(ax, records, "rel_l2", ("antic_ie", "uniform_ie", "ie_exact", "uniform_ie_exact"))
    _finish(ax, "relative L2 error over ALL frames (lower is better)")


def plot_selector_exact(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _strip(ax, records, "rel_l2", ("pats_exact", "uniform_exact", "ie_exact", "uniform_ie_exact"))
    _finish(ax, "relative L2 error over ALL frames, kept frames exact")


def plot_continual(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    _strip(ax, records, "rel_l2", ("antic", "per_frame"))
    ax.set_yscale("log")
    _finish(ax, "relative L2 error over ALL frames, equal optimiser steps")


def plot_rate_distortion(card: dict[str, Any], records: list[dict[str, Any]], ax: Any) -> None:
    """Compression ratio against all-frame relative L2 error: codec curves per cell, ANTIC's arms as points."""
    ok = _ok(records)
    styles = {"sz3": ("C0", "-"), "zfp": ("C1", "-")}
    for k, r in enumerate(ok):
        rows = r["curves"]["rate_distortion"]
        for arm, (color, ls) in styles.items():
            pts = sorted((p["rel_l2"], p["compression_ratio"]) for p in rows if p["arm"] == arm)
            ax.plot(
                *zip(*pts, strict=True),
                ls,
                color=color,
                lw=0.8,
                alpha=0.6,
                label=f"{arm} per frame" if k == 0 else None,
            )
        for j, arm in enumerate(("antic", "antic_ie", "per_frame", "sz3_ie")):
            p = next(p for p in rows if p["arm"] == arm)
            ax.plot(
                p["rel_l2"], p["compression_ratio"], "os^D"[j], color=f"C{j + 2}", ms=4, label=arm if k == 0 else None
            )
        for arm, (color, _) in styles.items():  # the judged baselines: bound bisected to ANTIC's error
            m = r["metrics"][arm]
            label = "X: codec bound bisected to antic's error (judged)" if k == 0 and arm == "sz3" else None
            ax.plot(m["rel_l2"], m["compression_ratio"], "X", color=color, ms=6, mec="k", mew=0.5, label=label)
    ax.axhline(400, color="C3", ls="--", lw=0.8, label="paper: ~400x on 2-D Kolmogorov flow (256^2+)")
    ax.axhline(1, color="0.5", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _finish(ax, "total compression ratio (raw float32 / stored bytes)", "relative L2 error over all frames")


# --------------------------------------------------------------------------------------------------- claims
_BASE = {"flow": "kolmogorov", "re": 40.0, "every": 0.2, "lora_rank": 4, "lora_targets": "hidden", "ie_tolerance": 0.1}
_RD = {"rd_bounds": [0.003, 0.01, 0.03, 0.1, 0.3]}
_DECAYING = {"flow": "decaying", "re": 300.0, "spinup": 2.0}
_FULL = {"n": 48, "spinup": 50.0, "frames": 120, "steps_first": 150, "steps_next": 30}
COMPRESSION = profiles(
    smoke=_BASE | _RD | {"n": 16, "spinup": 5.0, "frames": 12, "steps_first": 20, "steps_next": 5},
    quick=_BASE | _RD | {"n": 32, "spinup": 15.0, "frames": 40, "steps_first": 120, "steps_next": 25},
    full=[
        _BASE | _RD | _FULL,
        _BASE | _RD | _FULL | {"lora_targets": "input_hidden"},
        _BASE | _RD | _FULL | _DECAYING,
    ],
    seeds=(1, 3, 3),
    cell_seconds=(6.0, 16.0, 120.0),
)
_COMMON = dict(run=run_compression, profiles=COMPRESSION, revision=REVISION)
_QUICK_FULL = (
    "Quick (8 time units of forced flow at 32^2, fewer optimiser steps) and full (24 time units at 48^2, three "
    "settings: forced flow with LoRA on hidden layers, the same with the first layer too, decaying turbulence) can "
    "disagree: the quick record is too short to hold both calm and bursting phases"
)
_REPEATED = (
    "the two forced settings differ only in the neural field, so their exact-frame pairs repeat (3 distinct forced "
    "pairs, counted twice, and 3 decaying ones). "
)
_READING = (
    "our readings: the released code's enstrophy selector (not a paper formula), LoRA on the hidden layers only "
    "(paper), per-frame min-max normalisation, the stream's last frame always kept so every dropped frame lies "
    "between two kept ones"
)


def _selector_claim(
    cid: str, statement: str, arms: tuple[str, str], figure: str, notes: str, plot: Any, metric: str = "rel_l2"
) -> Claim:
    """A selector-vs-uniform claim at an equal frame count: lower error by at least 5% (relative)."""
    return Claim(
        id=cid,
        statement=statement,
        metric=metric,
        direction="lower",
        method=arms[0],
        baselines=(arms[1],),
        min_effect=0.05,
        relative=True,
        paper_figure=figure,
        notes=notes,
        plot=plot,
        **_COMMON,
    )


CARD = PaperCard(
    slug="antic",
    title="ANTIC",
    group="science",
    api="icml26.science.antic.ANTIC",
    extra="science",
    summary="In situ compression of PDE trajectories: a physics-aware temporal selector and a neural field with "
    "continual LoRA updates, against uniform subsampling, per-frame fields and ZFP/SZ3 at matched all-frame error.",
    claims=(
        _selector_claim(
            "C1",
            "The adaptive (enstrophy) temporal selector beats uniform subsampling at an equal number of kept frames: "
            "lower relative L2 error over all frames (dropped ones interpolated), same neural field.",
            ("antic", "uniform"),
            "abstract: the selector 'identifies and filters informative snapshots'; notes guess 10-40%",
            "margin: 5% relative, fixed before any run (the smallest gain we call real above the neural field's "
            "fitting noise between arms; the notes guess 10-40%). " + _READING + ". Full run, mean all-frame error "
            "by setting: forced/hidden antic 0.351 vs uniform 0.346, forced/first+hidden 0.239 vs 0.220, decaying "
            "0.536 vs 0.584 (selector 8% better). The neural field's own error (0.22-0.58) dwarfs the interpolation "
            "error of either frame set (0.02-0.11, C1d), so which frames are kept barely matters at our scale; the "
            "field drifts between keyframes (per-frame error 0.04-0.3 at keyframes, up to 0.34-0.74 between them). "
            + _QUICK_FULL,
            plot_selector,
        ),
        _selector_claim(
            "C1b",
            "The selector's gain is largest around bursts: on the burst frames (top-20% dissipation) the enstrophy "
            "selector's error is lower than uniform subsampling's at an equal frame count.",
            ("antic", "uniform"),
            "notes: 'with more at the bursts'",
            "margin 5% relative, fixed before any run (as C1). " + _READING + ". Full run, burst-frame error: forced/"
            "hidden 0.379 vs 0.388, forced/first+hidden 0.254 vs 0.248, decaying 0.600 vs 0.678 (12% better: the "
            "burst frames of decaying turbulence are its fast early frames, which the selector keeps). " + _QUICK_FULL,
            plot_burst,
            metric="burst_rel_l2",
        ),
        _selector_claim(
            "C1c",
            "Ours, not the paper's rule: an interpolation-error selector (piecewise-linear segmentation in time, "
            "streaming, one frame of lag) beats uniform subsampling at an equal frame count, same field.",
            ("antic_ie", "uniform_ie"),
            "not in the paper: tests whether adaptive selection can pay at our scale at all",
            "margin 5% relative, fixed before any run (as C1); the selector is ours (tolerance 10%, max gap 20). It "
            "keeps 18-28% of the forced flow's frames (PATS: 43-62%) and 53-63% of the decaying flow's. With the "
            "neural field its gain is lost in the field's error (forced 0.469 vs 0.464 and 0.321 vs 0.319, decaying "
            "0.522 vs 0.573). " + _QUICK_FULL,
            plot_selector_ours,
        ),
        _selector_claim(
            "C1d",
            "The selector alone: with the kept frames stored exactly (no spatial compression), the enstrophy "
            "selector's frames give a lower all-frame interpolation error than as many uniform frames.",
            ("pats_exact", "uniform_exact"),
            "isolates the temporal part of C1 from the neural field's error",
            "margin 5% relative, fixed before any run (as C1). Full run: the released rule keeps runs of consecutive "
            "frames where the enstrophy bound breaks and leaves gaps up to the window elsewhere, so on the forced "
            "flow it is 3x WORSE than as many uniform frames (0.054 vs 0.017), while on decaying turbulence, whose "
            "activity falls monotonically, it is 54% better (0.052 vs 0.113): the rule suits the case the released "
            "code runs (decaying), not forced Kolmogorov flow. The verdict pools both; " + _REPEATED + _QUICK_FULL,
            plot_selector_exact,
        ),
        _selector_claim(
            "C1e",
            "Ours: with the kept frames stored exactly, the interpolation-error selector's frames give a lower "
            "all-frame interpolation error than as many uniform frames.",
            ("ie_exact", "uniform_ie_exact"),
            "not in the paper: the temporal part of C1c",
            "margin 5% relative, fixed before any run (as C1). Full run: forced 0.062 vs 0.071 (13% better), decaying "
            "0.037 vs 0.109 (66% better); the quick record (8 time units) gives +4.5%, inconclusive; "
            + _REPEATED
            + _QUICK_FULL,
            plot_selector_exact,
        ),
        Claim(
            id="C2",
            statement="Continual fine-tuning (LoRA residuals from the previous snapshot's state) beats independent "
            "per-frame neural fields trained with the same number of optimiser steps on the same frames.",
            metric="rel_l2",
            direction="lower",
            method="antic",
            baselines=("per_frame",),
            min_effect=0.1,
            relative=True,
            paper_figure="abstract: 'continual fine-tuning that learns residual updates between adjacent snapshots'",
            notes="margin 10% relative, fixed before any run (a warm start that gains less is not worth its state). "
            "Equal steps per frame: the per-frame arm trains every weight from scratch with ANTIC's schedule (the "
            "keyframe budget where ANTIC trains a keyframe, the LoRA budget elsewhere) and stores whole fields "
            "(7x ANTIC's bytes). Full run: 0.84 / 0.84 / 0.83 vs 0.35 / 0.24 / 0.54 (forced hidden / forced "
            "first+hidden / decaying): 30 steps from scratch barely start a fit; quick and full agree",
            plot=plot_continual,
            **_COMMON,
        ),
        Claim(
            id="C3",
            statement="At matched all-frame error, ANTIC's total compression ratio exceeds SZ3's (absolute bound "
            "bisected to ANTIC's relative L2 error over all frames, every frame compressed).",
            metric="compression_ratio",
            direction="higher",
            method="antic",
            baselines=("sz3",),
            min_effect=0.0,
            relative=True,
            paper_figure="abstract: ~400x on 2-D Kolmogorov flow (the notes expect codecs to win at our scale)",
            notes="margin 0 (any gain), fixed before any run. Every stored byte counted; raw = float32 of every frame. "
            "A field of ~8k weights compresses only when grid points far outnumber its parameters: at 32^2-64^2 the "
            "notes expect SZ3 to win; the plot shows both rate-distortion curves and the hybrid (SZ3 on our selector's "
            "frames). Full run at 48^2: ANTIC 2.8-3.9x at 0.24-0.54 relative L2 over all frames, SZ3 29-44x at the "
            "same error, ZFP 20-34x, the hybrid SZ3 on our selector's frames 69-163x; ANTIC with our selector 3.5-8x. "
            "Nothing near the paper's ~400x (a 48^2 frame has 2304 values, the field 8161 weights, a LoRA update 768); "
            "quick and full agree",
            plot=plot_rate_distortion,
            **_COMMON,
        ),
        Claim(
            id="C3b",
            statement="At matched all-frame error, ANTIC's total compression ratio exceeds ZFP's (fixed-accuracy "
            "tolerance bisected to ANTIC's all-frame relative L2 error).",
            metric="compression_ratio",
            direction="higher",
            method="antic",
            baselines=("zfp",),
            min_effect=0.0,
            relative=True,
            paper_figure="abstract: ~400x on 2-D Kolmogorov flow",
            notes="margin 0 (any gain), fixed before any run; as C3 (ZFP 20-34x at ANTIC's error in the full run)",
            plot=plot_rate_distortion,
            **_COMMON,
        ),
    ),
)
