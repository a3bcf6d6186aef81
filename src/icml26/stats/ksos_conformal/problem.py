"""The penalised kernel sum-of-squares band problem in feature coordinates, its primal and dual objectives.

Our reading (see the package docstring). With features v_i (rows of V, n x r), targets y_i = r_i^2, sides
s_i = + (r_i >= 0) or - (r_i < 0), M = V^T V / n, and C+, C- PSD (r x r):

    P = <M, C+ + C->  +  lam (|C+|_F^2 + |C-|_F^2)  +  mu |C+ - C-|_F^2  +  (c / n) sum_i xi_i
        s.t.  v_i^T C_{s_i} v_i + xi_i >= y_i,  xi >= 0       (hard constraints: c = inf, xi = 0)

The quadratic part is (1/2) <C, H C> with H = 2 [[lam + mu, -mu], [-mu, lam + mu]] acting on the pair (C+, C-).
Lagrange multipliers alpha_i in [0, c / n] and Z+-, PSD, give W+- = sum_{i in I+-} alpha_i v_i v_i^T + Z+- - M and

    C = H^-1 W:   C+ = a W+ + b W-,   C- = b W+ + a W-,   a = (lam + mu) / (2 lam (lam + 2 mu)),  b = mu / (...)
    D(alpha, Z) = sum_i alpha_i y_i - (1/2) (<W+, C+> + <W-, C->)

a smooth concave function with grad_alpha_i = y_i - v_i^T C_{s_i} v_i and grad_Z+- = -C+-. mu = inf is the
symmetric problem (C+ = C-, a = b = 1 / (4 lam)); mu = 0 decouples the sides (b = 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["BandProblem", "psd_part", "quad_forms"]


def quad_forms(V: np.ndarray, C: np.ndarray) -> np.ndarray:
    """v_i^T C v_i for every row v_i of V."""
    return np.einsum("ij,ij->i", V @ C, V)


def psd_part(S: np.ndarray) -> np.ndarray:
    """Projection of a symmetric matrix onto the PSD cone (negative eigenvalues set to 0)."""
    w, U = np.linalg.eigh(0.5 * (S + S.T))
    return (U * np.maximum(w, 0.0)) @ U.T


@dataclass(frozen=True)
class BandProblem:
    """One instance: features, standardised residuals, penalties. ``slack`` is c (``inf``: hard constraints)."""

    V: np.ndarray
    residuals: np.ndarray
    reg: float
    symmetry_penalty: float
    slack: float = math.inf

    def __post_init__(self) -> None:
        if self.V.ndim != 2 or self.residuals.shape != (self.V.shape[0],):
            raise ValueError(f"V {self.V.shape} and residuals {self.residuals.shape} do not match")
        if not (self.reg > 0 and math.isfinite(self.reg)):
            raise ValueError(f"reg must be a positive finite number, got {self.reg!r}")
        if not self.symmetry_penalty >= 0:
            raise ValueError(f"symmetry_penalty must be >= 0 (inf: symmetric), got {self.symmetry_penalty!r}")
        if not self.slack > 0:
            raise ValueError(f"slack must be > 0 (inf: hard constraints), got {self.slack!r}")

    # ------------------------------------------------------------------------------------------- data
    @property
    def n(self) -> int:
        return self.V.shape[0]

    @property
    def rank(self) -> int:
        return self.V.shape[1]

    @cached_property
    def targets(self) -> np.ndarray:
        return self.residuals**2

    @cached_property
    def upper(self) -> np.ndarray:
        """Mask of the points constrained by the upper function (r >= 0)."""
        return self.residuals >= 0

    @cached_property
    def sides(self) -> tuple[np.ndarray, np.ndarray]:
        """(V+, V-): the feature rows of the points on each side."""
        return self.V[self.upper], self.V[~self.upper]

    @cached_property
    def M(self) -> np.ndarray:
        return self.V.T @ self.V / self.n

    @property
    def symmetric(self) -> bool:
        return math.isinf(self.symmetry_penalty)

    @property
    def alpha_bound(self) -> float:
        return self.slack / self.n

    def coupling(self) -> tuple[float, float]:
        """(a, b) of C = H^-1 W (see the module docstring)."""
        lam, mu = self.reg, self.symmetry_penalty
        if math.isinf(mu):
            return 1.0 / (4.0 * lam), 1.0 / (4.0 * lam)
        den = 2.0 * lam * (lam + 2.0 * mu)
        return (lam + mu) / den, mu / den

    # ------------------------------------------------------------------------------------- objectives
    def primal_value(self, C_upper: np.ndarray, C_lower: np.ndarray) -> float:
        """P at (C+, C-), with the cheapest slacks; ``inf`` if a hard constraint is violated (beyond 1e-9 rel)."""
        M = self.M
        val = float(np.sum(M * (C_upper + C_lower)))
        val += self.reg * float(np.sum(C_upper**2) + np.sum(C_lower**2))
        if not self.symmetric:
            val += self.symmetry_penalty * float(np.sum((C_upper - C_lower) ** 2))
        shortfall = np.maximum(self.targets - self.fitted(C_upper, C_lower), 0.0)
        if math.isinf(self.slack):
            return math.inf if shortfall.max(initial=0.0) > 1e-9 * max(1.0, self.targets.max()) else val
        return val + self.alpha_bound * float(shortfall.sum())

    def fitted(self, C_upper: np.ndarray, C_lower: np.ndarray) -> np.ndarray:
        """f_{s_i}(x_i) for every training point (the side its residual is on)."""
        out = np.empty(self.n)
        out[self.upper] = quad_forms(self.sides[0], C_upper)
        out[~self.upper] = quad_forms(self.sides[1], C_lower)
        return out

    def dual_parts(
        self, alpha: np.ndarray, Z_upper: np.ndarray, Z_lower: np.ndarray
    ) -> tuple[float, np.ndarray, np.ndarray]:
        """(D, C+, C-) at dual point (alpha, Z+, Z-): the dual value and the unconstrained minimisers C = H^-1 W."""
        up, M = self.upper, self.M
        Vu, Vl = self.sides
        W_upper = (Vu.T * alpha[up]) @ Vu + Z_upper - M
        W_lower = (Vl.T * alpha[~up]) @ Vl + Z_lower - M
        a, b = self.coupling()
        C_upper, C_lower = a * W_upper + b * W_lower, b * W_upper + a * W_lower
        value = float(alpha @ self.targets) - 0.5 * float(np.sum(W_upper * C_upper) + np.sum(W_lower * C_lower))
        return value, C_upper, C_lower

    @property
    def reducible(self) -> bool:
        """mu = 0 and mu = inf: the maximisation over Z has a closed form (a PSD part), leaving a dual in alpha."""
        return self.symmetry_penalty == 0 or self.symmetric

    def reduced_dual_parts(self, alpha: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """(D, C+, C-) with Z maximised out (mu = 0 or inf only):
        mu = 0:   C+- = [G+- - M]_+ / (2 lam),      D = alpha . y - lam (|C+|^2 + |C-|^2);
        mu = inf: C = [G+ + G- - 2M]_+ / (4 lam),   D = alpha . y - 2 lam |C|^2."""
        up, M, lam = self.upper, self.M, self.reg
        Vu, Vl = self.sides
        G_upper, G_lower = (Vu.T * alpha[up]) @ Vu, (Vl.T * alpha[~up]) @ Vl
        if self.symmetric:
            C = psd_part(G_upper + G_lower - 2.0 * M) / (4.0 * lam)
            return float(alpha @ self.targets) - 2.0 * lam * float(np.sum(C * C)), C, C
        if self.symmetry_penalty != 0:
            raise ValueError("the reduced dual exists for symmetry_penalty 0 or inf only")
        C_upper, C_lower = psd_part(G_upper - M) / (2.0 * lam), psd_part(G_lower - M) / (2.0 * lam)
        value = float(alpha @ self.targets) - lam * float(np.sum(C_upper**2) + np.sum(C_lower**2))
        return value, C_upper, C_lower
