"""Reference solver: the primal band problem as a conic program, cvxpy + Clarabel (an interior-point method).

It solves exactly the problem of ``problem`` (same features, penalties and constraints), so it checks the dual
solver; it is the slow path (two r x r PSD cones and n linear constraints), used by tests and the benchmark.
"""

from __future__ import annotations

import math

import numpy as np

from icml26.stats.ksos_conformal.dual import BandSolution
from icml26.stats.ksos_conformal.problem import BandProblem

__all__ = ["solve_primal"]


def _cvxpy():  # type: ignore[no-untyped-def]
    try:
        import cvxpy as cp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the reference primal solver needs cvxpy and clarabel: pip install 'icml26[stats]'") from exc
    if "CLARABEL" not in cp.installed_solvers():  # pragma: no cover
        raise ImportError("the reference primal solver needs clarabel: pip install 'icml26[stats]'")
    return cp


def solve_primal(problem: BandProblem, *, tol: float = 1e-8, verbose: bool = False) -> BandSolution:
    """Solve P with Clarabel; ``dual_value`` is Clarabel's reported optimum (its gap is below ``tol``)."""
    cp = _cvxpy()
    r, V, y, up = problem.rank, problem.V, problem.targets, problem.upper
    C_upper = cp.Variable((r, r), PSD=True)
    C_lower = C_upper if problem.symmetric else cp.Variable((r, r), PSD=True)
    M = problem.M
    fit_upper = cp.sum(cp.multiply(V[up] @ C_upper, V[up]), axis=1)
    fit_lower = cp.sum(cp.multiply(V[~up] @ C_lower, V[~up]), axis=1)
    objective = cp.trace(M @ C_upper) + cp.trace(M @ C_lower)
    objective += problem.reg * (cp.sum_squares(C_upper) + cp.sum_squares(C_lower))
    if not problem.symmetric and problem.symmetry_penalty > 0:
        objective += problem.symmetry_penalty * cp.sum_squares(C_upper - C_lower)
    constraints = []
    if math.isinf(problem.slack):
        constraints += [fit_upper >= y[up], fit_lower >= y[~up]]
    else:
        xi = cp.Variable(problem.n, nonneg=True)
        iu, il = np.flatnonzero(up), np.flatnonzero(~up)
        constraints += [fit_upper + xi[iu] >= y[up], fit_lower + xi[il] >= y[~up]]
        objective += problem.alpha_bound * cp.sum(xi)
    prob = cp.Problem(cp.Minimize(objective), constraints)
    prob.solve(
        solver="CLARABEL",
        verbose=verbose,
        tol_gap_abs=tol,
        tol_gap_rel=tol,
        tol_feas=tol,
        max_iter=500,
    )
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"Clarabel did not solve the band problem: status {prob.status}")
    Cu = np.asarray(C_upper.value)
    Cl = np.asarray(C_lower.value)
    value = float(prob.value)
    return BandSolution(Cu, Cl, problem.primal_value(Cu, Cl), value, 0, prob.status == "optimal", solver="cvxpy")
