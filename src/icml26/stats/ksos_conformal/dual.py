"""Accelerated projected gradient ascent on the dual of the band problem (see ``problem``).

The dual variables are alpha (box [0, c / n]; [0, inf) for hard constraints) and two PSD matrices Z+-; their
projections are a clip and an eigenvalue clip. The gradient of D is Lipschitz with constant |H^-1| |A|^2 where
A(alpha, Z) = (sum_{I+} alpha_i v_i v_i^T + Z+, sum_{I-} alpha_i v_i v_i^T + Z-) and |H^-1| = 1 / (2 lam); we use
block steps t_alpha = lam / |A_alpha|^2 and t_Z = lam, which satisfy the descent lemma in the block-weighted norm
(|A_alpha|^2 is found by power iteration, matrix-free). FISTA momentum with the gradient restart of O'Donoghue &
Candes (2015) keeps the iterations monotone in practice.

The primal iterate C = H^-1 W is projected onto the PSD cone (so f = v^T C v >= 0 everywhere); the duality gap uses
that point with the cheapest slacks (soft constraints) or rescaled until every hard constraint holds, so it is a
certified upper bound on the suboptimality of the returned band.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from icml26.stats.ksos_conformal.problem import BandProblem, psd_part, quad_forms

__all__ = ["BandSolution", "ConvergenceWarning", "solve_dual"]


class ConvergenceWarning(UserWarning):
    """The dual solver stopped at ``max_iter`` before reaching its gap tolerance."""


@dataclass(frozen=True)
class BandSolution:
    """Solution of one band problem: the PSD feature-space matrices and the certificate of optimality."""

    C_upper: np.ndarray
    C_lower: np.ndarray
    primal_value: float
    dual_value: float
    n_iter: int
    converged: bool
    alpha: np.ndarray | None = None
    solver: str = "dual"

    @property
    def gap(self) -> float:
        return self.primal_value - self.dual_value

    @property
    def relative_gap(self) -> float:
        return self.gap / max(1.0, abs(self.primal_value))


def _alpha_block_norm2(problem: BandProblem, split: bool = True, iters: int = 100) -> float:
    """|A_alpha|^2: the top eigenvalue of alpha -> (v_i^T G v_i)_i with G = sum_j alpha_j v_j v_j^T over the same
    side as i (``split``) or over all points, by power iteration (matrix-free, O(n r^2) per step)."""
    groups = (problem.upper, ~problem.upper) if split else (np.ones(problem.n, bool),)
    x = np.ones(problem.n) / math.sqrt(problem.n)
    est = 0.0
    for _ in range(iters):
        y = np.empty_like(x)
        for mask in groups:
            Vs = problem.V[mask]
            y[mask] = quad_forms(Vs, (Vs.T * x[mask]) @ Vs)
        new = float(np.linalg.norm(y))
        if new == 0.0:
            return 1.0
        x = y / new
        done = abs(new - est) <= 1e-6 * new
        est = new
        if done:
            break
    return est


def _feasible_primal(problem: BandProblem, C_upper: np.ndarray, C_lower: np.ndarray) -> tuple[np.ndarray, ...]:
    """A primal-feasible point near (C+, C-): PSD parts, and for hard constraints each side scaled up until its
    constraints hold (a symmetric problem scales both sides together)."""
    C_upper, C_lower = psd_part(C_upper), psd_part(C_lower)
    if math.isinf(problem.slack):
        y, up = problem.targets, problem.upper
        fitted = problem.fitted(C_upper, C_lower)
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(y > 0, y / fitted, 0.0)
        need = np.nan_to_num(need, nan=math.inf, posinf=math.inf)
        s_up, s_lo = max(1.0, need[up].max(initial=0.0)), max(1.0, need[~up].max(initial=0.0))
        if problem.symmetric:
            s_up = s_lo = max(s_up, s_lo)
        if math.isfinite(s_up) and math.isfinite(s_lo):
            C_upper, C_lower = s_up * C_upper, s_lo * C_lower
    return C_upper, C_lower


def solve_dual(
    problem: BandProblem,
    *,
    tol: float = 1e-4,
    max_iter: int = 5000,
    check_every: int = 10,
) -> BandSolution:
    """Maximise the dual by FISTA with gradient restarts until the relative duality gap is below ``tol``.

    For mu = 0 and mu = inf the Z blocks are maximised out in closed form (``BandProblem.reduced_dual_parts``) and
    the iteration runs on alpha alone, with the full step 1 / L; otherwise on (alpha, Z+, Z-) with block steps.
    """
    if not (max_iter >= 1 and check_every >= 1 and tol > 0):
        raise ValueError(f"need max_iter >= 1, check_every >= 1 and tol > 0; got {max_iter}, {check_every}, {tol}")
    n, r, lam = problem.n, problem.rank, problem.reg
    hi, targets = problem.alpha_bound, problem.targets
    reduced = problem.reducible
    if reduced:
        # L = |A|^2 |H^-1| restricted to the alpha block: 1 / (2 lam) (mu = 0), 1 / (4 lam) on the unsplit map (inf)
        factor = 4.0 if problem.symmetric else 2.0
        steps = (factor * lam / (1.05 * _alpha_block_norm2(problem, split=not problem.symmetric)),)
    else:
        steps = (lam / (1.05 * _alpha_block_norm2(problem)), lam, lam)

    def parts(x: tuple[np.ndarray, ...]) -> tuple[float, np.ndarray, np.ndarray]:
        return problem.reduced_dual_parts(x[0]) if reduced else problem.dual_parts(*x)

    def ascent(x: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        _, Cu, Cl = parts(x)
        alpha = np.clip(x[0] + steps[0] * (targets - problem.fitted(Cu, Cl)), 0.0, hi)
        if reduced:
            return (alpha,)
        return alpha, psd_part(x[1] - steps[1] * Cu), psd_part(x[2] - steps[2] * Cl)

    x_prev: tuple[np.ndarray, ...] = (np.zeros(n),) if reduced else (np.zeros(n), np.zeros((r, r)), np.zeros((r, r)))
    y_pt, theta = x_prev, 1.0
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    dual_value, converged, it = -math.inf, False, 0
    for it in range(1, max_iter + 1):
        x_new = ascent(y_pt)
        # gradient restart: drop the momentum when the step turns against the previous direction
        blocks = zip(y_pt, x_new, x_prev, steps, strict=True)
        turn = sum(float(np.sum((yb - xb) * (xb - pb))) / t for yb, xb, pb, t in blocks)
        theta = 1.0 if turn > 0 else theta
        theta_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * theta * theta))
        beta = (theta - 1.0) / theta_next
        y_pt = tuple(xb + beta * (xb - pb) for xb, pb in zip(x_new, x_prev, strict=True))
        theta, x_prev = theta_next, x_new
        if it % check_every == 0 or it == max_iter:
            dual_value, Cu, Cl = parts(x_new)
            Cu, Cl = _feasible_primal(problem, Cu, Cl)
            primal = problem.primal_value(Cu, Cl)
            if best is None or primal < best[0]:
                best = (primal, Cu, Cl)
            if math.isfinite(best[0]) and best[0] - dual_value <= tol * max(1.0, abs(best[0])):
                converged = True
                break
    assert best is not None
    if not converged:
        warnings.warn(
            f"kSoS dual solver stopped at max_iter={max_iter} with relative gap "
            f"{(best[0] - dual_value) / max(1.0, abs(best[0])):.2e} > tol={tol:g}; raise max_iter or reg",
            ConvergenceWarning,
            stacklevel=2,
        )
    return BandSolution(best[1], best[2], best[0], dual_value, it, converged, alpha=x_prev[0])
