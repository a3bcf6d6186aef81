"""One small LP entry point, HiGHS underneath: ``min c.x  s.t.  row_lo <= A x <= row_hi,  col_lo <= x <= col_hi``.

The policies re-solve a tiny LP hundreds of times per run, where ``scipy.optimize.linprog``'s input checks cost five
times the solve itself. We call HiGHS through its own Python binding (``highspy``) with presolve off (nothing to
presolve in an LP of a few dozen rows), and fall back to ``linprog(method="highs")`` (the same solver, bundled with
scipy) when highspy is not installed. Row duals follow HiGHS's sign convention in both paths: for a minimisation, an
active ``<=`` row has a dual <= 0 (scipy calls them ``marginals``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from typing import Any

import numpy as np
from scipy.sparse import csc_array

try:  # the fast path; highspy is HiGHS's own binding
    import highspy

    if highspy.kHighsInf != np.inf:  # pragma: no cover - bounds are passed as IEEE infinities below
        highspy = None
except ImportError:  # pragma: no cover - exercised only where highspy is absent
    highspy = None

__all__ = ["Basis", "LPError", "remap_basis", "solve_lp"]

Basis = Any  # an optimal simplex basis as HiGHS returns it (opaque here; see remap_basis)


class LPError(RuntimeError):
    """HiGHS did not reach an optimal solution."""


def solve_lp(
    c: np.ndarray,
    A: csc_array,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    col_lo: np.ndarray,
    col_hi: np.ndarray,
    fast: bool = True,
    basis: Basis | None = None,
) -> tuple[float, np.ndarray, np.ndarray, Basis | None]:
    """(optimal value, x, row duals, optimal basis) of the LP.

    ``basis`` warm-starts the simplex (a valid basis of this LP's shape, e.g. the previous optimum extended by
    basic slack rows); HiGHS path only, the basis returned is None on the scipy path. ``fast=False`` forces the
    scipy path (tests compare the two).
    """
    if not isinstance(A, csc_array):
        A = csc_array(A)
    if fast and highspy is not None:
        return _solve_highspy(c, A, row_lo, row_hi, col_lo, col_hi, basis)
    return (*_solve_scipy(c, A, row_lo, row_hi, col_lo, col_hi), None)


_SOLVERS = threading.local()


def remap_basis(basis: Basis, col_from: np.ndarray, row_from: np.ndarray) -> Basis:
    """The basis of a grown LP: new column i takes old column ``col_from[i]``'s status (nonbasic at its lower
    bound where -1), new row i old row ``row_from[i]``'s (basic where -1). Adding basic rows with nonbasic
    columns keeps a basis a basis."""
    cols, rows = basis.col_status, basis.row_status
    lower, basic = highspy.HighsBasisStatus.kLower, highspy.HighsBasisStatus.kBasic
    out = highspy.HighsBasis()
    out.col_status = [cols[i] if i >= 0 else lower for i in col_from.tolist()]
    out.row_status = [rows[i] if i >= 0 else basic for i in row_from.tolist()]
    out.valid = True
    return out


def _highs():  # type: ignore[no-untyped-def]
    """This thread's HiGHS instance, built once (building one costs as much as solving a small LP).

    HiGHS writes a banner on stdout when the first instance of a process is built, which would corrupt
    ``icml26 reproduce --json``: that first construction runs with file descriptor 1 pointed at /dev/null.
    """
    h = getattr(_SOLVERS, "highs", None)
    if h is None:
        sys.stdout.flush()
        saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            _flush_c_stdout()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(null)
        h.setOptionValue("presolve", "off")
        h.setOptionValue("threads", 1)
        _SOLVERS.highs = h
    return h


def _flush_c_stdout() -> None:
    with contextlib.suppress(OSError, AttributeError, TypeError):  # no C runtime handle (Windows): nothing to flush
        ctypes.CDLL(None).fflush(None)


def _solve_highspy(c, A, row_lo, row_hi, col_lo, col_hi, basis):  # type: ignore[no-untyped-def]
    h = _highs()
    h.clearModel()  # and the previous basis: a solve never depends on what ran before it in this process
    lp = highspy.HighsLp()
    lp.num_row_, lp.num_col_ = A.shape
    # HiGHS's infinity is IEEE inf (kHighsInf), so bounds pass as they are
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = c, col_lo, col_hi
    lp.row_lower_, lp.row_upper_ = row_lo, row_hi
    matrix = lp.a_matrix_
    matrix.format_ = highspy.MatrixFormat.kColwise
    matrix.num_row_, matrix.num_col_ = A.shape
    matrix.start_, matrix.index_, matrix.value_ = A.indptr, A.indices, A.data
    h.passModel(lp)
    if basis is not None and h.setBasis(basis) != highspy.HighsStatus.kOk:  # not a basis of this LP: solve cold
        h.clearSolver()
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise LPError(f"LP solver failed: {h.modelStatusToString(h.getModelStatus())}")
    sol = h.getSolution()
    return h.getObjectiveValue(), np.array(sol.col_value), np.array(sol.row_dual), h.getBasis()


def _solve_scipy(c, A, row_lo, row_hi, col_lo, col_hi):  # type: ignore[no-untyped-def]
    from scipy.optimize import linprog
    from scipy.sparse import vstack

    row_lo, row_hi = np.asarray(row_lo, float), np.asarray(row_hi, float)
    eq = row_lo == row_hi
    upper = ~eq & np.isfinite(row_hi)
    lower = ~eq & np.isfinite(row_lo)
    A = A.tocsr()
    A_ub = vstack([A[upper], -A[lower]]).tocsr() if (upper.any() or lower.any()) else None
    b_ub = np.concatenate([row_hi[upper], -row_lo[lower]]) if A_ub is not None else None
    res = linprog(
        c,
        A_ub=A_ub,
        b_ub=b_ub,
        A_eq=A[eq] if eq.any() else None,
        b_eq=row_hi[eq] if eq.any() else None,
        bounds=list(zip(col_lo, col_hi, strict=True)),
        method="highs",
    )
    if res.status != 0:
        raise LPError(f"LP solver failed: {res.message}")
    duals = np.zeros(A.shape[0])
    n_up = int(upper.sum())
    if A_ub is not None:
        duals[upper] += res.ineqlin.marginals[:n_up]
        duals[lower] -= res.ineqlin.marginals[n_up:]
    if eq.any():
        duals[eq] = res.eqlin.marginals
    return float(res.fun), np.asarray(res.x), duals
