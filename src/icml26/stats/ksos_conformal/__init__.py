"""Asymmetric kernel sum-of-squares conformal bands (Allain, Da Veiga & Staber, ICML 2026).

Split-conformal bands whose upper and lower half-widths are two kernel-SoS functions, coupled by a penalty that
promotes symmetry: as the penalty grows the band moves smoothly from asymmetric to the symmetric kSoS band.

    from icml26.stats.ksos_conformal import KSoSConformal
    band = KSoSConformal(fitted_regressor, confidence_level=0.9).fit(X_train, y_train).conformalize(X_cal, y_cal)
    y_pred, intervals = band.predict_interval(X_test)      # intervals: (n, 2, 1), as MAPIE 1.x returns them

Algorithm (our reading of the abstract, built on the symmetric predecessor arXiv 2505.21039 and Liang 2022):

1. Residuals. A point predictor m (pre-fitted on other data, or cross-fitted: ``prefit=False``) gives out-of-sample
   residuals r_i = y_i - m(x_i) on the band-learning split D_tr (n points), standardised by their RMS s.
2. Model. f+(x) = phi(x)^T A+ phi(x), f-(x) = phi(x)^T A- phi(x), A+- PSD operators on the RKHS of the Gaussian
   kernel k(x, x') = exp(-|x - x'|^2 / (2 l^2)) on standardised inputs: f+- >= 0 by construction.
3. Learning problem (ours: the abstract gives no formula). With I+ = {i : r_i >= 0}, I- the rest,

       min_{A+, A- PSD}  (1/n) sum_i [f+(x_i) + f-(x_i)] + lam (|A+|_F^2 + |A-|_F^2) + mu |A+ - A-|_F^2
                         + (c/n) sum_{i in I+} (r_i^2 - f+(x_i))_+ + (c/n) sum_{i in I-} (r_i^2 - f-(x_i))_+ .

   mu = 0 decouples the sides; mu = inf forces A+ = A-: symmetric kSoS. Readings: squared residuals r^2 <= f;
   squared-Frobenius Omega (it makes the dual smooth); soft constraints with c = 1 / alpha by default, for which
   f+ (mu = 0) targets the level at which P(r > sqrt f+ | x) = alpha (a kernel-SoS quantile regression of each tail);
   ``slack=None`` gives the hard constraints r_i^2 <= f_{s_i}(x_i) of Liang (2022).
4. Representer theorem. The optimal A+- lie in span{phi(x_i) phi(x_j)^T}: A = sum_jl B_jl phi(z_j) phi(z_l)^T with
   anchors z = the training points (exact) or m Nystrom landmarks. In coordinates v(x) = S^(-1/2) U^T k(Z, x)
   (K_ZZ = U S U^T), A is an r x r PSD matrix C with f(x) = v(x)^T C v(x), |A|_F = |C|_F and B = P C P^T.
5. Dual. With multipliers alpha_i in [0, c/n] and Z+- PSD, W+- = sum_{I+-} alpha_i v_i v_i^T + Z+- - V^T V / n, and
   H = 2 [[lam + mu, -mu], [-mu, lam + mu]],

       D(alpha, Z) = sum_i alpha_i r_i^2 - (1/2) <W, H^-1 W>,      (C+, C-) = H^-1 (W+, W-)  at the optimum,

   smooth and concave; solved by accelerated projected gradient (FISTA with restarts; projections: a clip and an
   eigenvalue clip), Z maximised out in closed form when mu is 0 or inf. The duality gap of the PSD-projected primal
   point certifies each solve; cvxpy + Clarabel solve the primal as the reference (``solver="cvxpy"``).
6. Length scale (predecessor): on a split of D_tr, the l minimising HSIC(|r| / sqrt f_sym, X) over a grid.
7. Symmetry penalty (ours: "a data-driven method which automatically identifies the symmetric nature of the
   noise"): on the same split, conformally calibrated widths W(mu) of the bands for mu in a grid and mu = inf; the
   statistic T = (W(inf) - min W(mu)) / W(inf) is compared with its sign-flip distribution (exact under residuals
   symmetric given x); the best mu is kept only if p <= ``test_level`` (0.1), else the symmetric band.
8. Conformalisation. Refit on all of D_tr; on D_cal, S = r / sqrt f+ (r >= 0) or -r / sqrt f- (r < 0);
   q = the ceil((n_cal + 1)(1 - alpha))-th smallest S; band [m(x) - q sqrt f-(x), m(x) + q sqrt f+(x)]. Marginal
   coverage >= 1 - alpha holds in finite samples because f+- never saw D_cal.

References
----------
- L. Allain, S. Da Veiga, B. Staber, "Asymmetric kernel sum-of-squares conformal bands", ICML 2026, arXiv:2601.22834.
- L. Allain, S. Da Veiga, B. Staber, "Scalable and adaptive prediction bands with kernel sum-of-squares",
  arXiv:2505.21039 (representer theorem, dual, HSIC tuning).
- T. Liang, "Universal prediction band via semi-definite programming", JRSS-B 84, 2022.
- U. Marteau-Ferey, F. Bach, A. Rudi, "Non-parametric models for non-negative functions", NeurIPS 2020.
- B. O'Donoghue, E. Candes, "Adaptive restart for accelerated gradient schemes", FoCM 15, 2015.
- MAPIE 1.x (``SplitConformalRegressor``, ``ConformalizedQuantileRegressor``): the conventions and the baselines.
"""

from icml26.stats.ksos_conformal.dual import BandSolution, ConvergenceWarning, solve_dual
from icml26.stats.ksos_conformal.estimator import KSoSConformal
from icml26.stats.ksos_conformal.kernels import FeatureMap, rbf_kernel
from icml26.stats.ksos_conformal.primal import solve_primal
from icml26.stats.ksos_conformal.problem import BandProblem
from icml26.stats.ksos_conformal.selection import (
    LengthScaleSelection,
    SymmetryTest,
    hsic_score,
    select_length_scale,
    symmetry_test,
)

KernelSoSBandRegressor = KSoSConformal  # the name of the notes' API sketch


__all__ = [
    "BandProblem",
    "BandSolution",
    "ConvergenceWarning",
    "FeatureMap",
    "KSoSConformal",
    "KernelSoSBandRegressor",
    "LengthScaleSelection",
    "SymmetryTest",
    "hsic_score",
    "rbf_kernel",
    "select_length_scale",
    "solve_dual",
    "solve_primal",
    "symmetry_test",
]
