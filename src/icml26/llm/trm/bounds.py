"""Surrogate-error bounds for off-policy sequence policy gradients, and an exact check on enumerable policies.

Setting. A completion y = (y_1, ..., y_T) is generated token by token; c_t = (prompt, y_<t) is the context of
token t, d_t^pi the distribution of c_t under pi, and R(y) in [0, 1] a sequence reward. J(pi) = E_{y~pi}[R(y)].
Samples come from pi_roll; the policy-gradient surrogate at pi_theta is

    L(theta) = J(roll) + sum_t E_{c_t ~ d_t^roll} E_{y_t ~ pi_theta(.|c_t)} [A_t^roll(c_t, y_t)]
             = E_{y ~ roll}[(1 + sum_t (rho_t - 1)) R(y)],          rho_t = pi_theta(y_t|c_t) / pi_roll(y_t|c_t),

with Q_t^roll(c, y) = E_roll[R | c_t = c, y_t = y], V_t^roll(c) = E_{y~roll} Q_t^roll, A = Q - V. Its gradient
at theta = roll is the policy gradient; the question is how far L is from J once pi_theta != pi_roll.

Derivation (ours: only the abstract of the paper was available, so every constant below is derived here from
first principles and checked exactly by :func:`exact_surrogate_error`; none is copied).

1. Performance difference (Kakade & Langford 2002, finite horizon, no discount):
   J(theta) - J(roll) = sum_t E_{c ~ d_t^theta}[g_t(c)], with g_t(c) = E_{y~theta(.|c)}[A_t^roll(c, y)].
   Subtracting L: J - L = sum_t (E_{d_t^theta} - E_{d_t^roll})[g_t]. So |J - L| <= sum_t 2 TV_t ||g_t||_inf with
   TV_t = TV(d_t^theta, d_t^roll).
2. Per-token factor: sum_y (pi_theta - pi_roll)(y|c) = 0, so |g_t(c)| <= 2 TV(c) eps with eps = max |A_t^roll|
   (max |A| >= half the range of Q, as V lies inside it) and TV(c) the token-level total variation. Pinsker:
   TV(c) <= alpha := sqrt(D_max / 2), D_max = max_{t,c} KL(pi_roll(.|c) || pi_theta(.|c)), the maximum
   token-level KL. Hence ||g_t||_inf <= 2 eps alpha.
3. Context factor TV_t, three ways:

   - classical (coupling / hybrid argument, as in TRPO): TV_t <= sum_{s<t} E TV(c_s) <= (t - 1) alpha, so
     |J - L| <= sum_t 4 eps alpha^2 (t - 1) = **eps * D_max * T (T - 1)**               (O(T^2));
   - Pinsker-marginal: the context c_t *is* the prefix y_<t, so the KL chain rule is an equality,
     KL(d_t^roll || d_t^theta) = sum_{s<t} E_{d_s^roll} KL_s(c_s) <= (t - 1) D_max, and Pinsker gives
     TV_t <= sqrt((t - 1) D_max / 2), so |J - L| <= **2 eps D_max sum_{k=0}^{T-1} sqrt(k)**
     <= (4/3) eps D_max T^{3/2}                                                           (O(T^{3/2}));
   - mixed: the marginal of c_t is a marginal of the whole sequence, TV_t <= TV_seq <= min(1, sqrt(D_seq / 2)),
     D_seq = KL(P_roll || P_theta) over whole sequences (<= T D_max). Keeping the token factor in D_max:
     |J - L| <= **2 sqrt(2) eps T sqrt(D_max) min(1, sqrt(D_seq / 2))**                  (O(T)).
     With ``d_seq=None`` the factor is its worst case 1: linear in T, sqrt in D_max. It is the tightest of the
     three once T > about 4.5 / D_max (long horizons); below that, Pinsker-marginal is. The classical bound is
     never the tightest: sqrt(k) <= k makes Pinsker-marginal <= classical for every T (equal for T <= 2).

   Sharpness: at T = 2, V = 2, pi_roll uniform and pi_theta a small perturbation of it (with the worst-case
   reward), |J - L| / bound -> 1, so the classical and Pinsker-marginal constants cannot be lowered (the test
   suite checks this).

The paper's example T = 4096, D_max = 1e-4, eps = 1: classical 1677 (vacuous), Pinsker-marginal 35.0, mixed 115.9
(vacuous too, as |J - L| <= 1 trivially; all three shrink with D_max, which is why TRM bounds D_max by masking).
Our reconstruction may differ from the paper's constants by small factors; the exponents of T agree with the
abstract.

References
----------
- Y. Li et al., "Trust Region Masking for Long-Horizon LLM Reinforcement Learning", arXiv 2512.23075.
- S. Kakade, J. Langford, "Approximately Optimal Approximate Reinforcement Learning", ICML 2002.
- J. Schulman et al., "Trust Region Policy Optimization", ICML 2015.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "BOUNDS",
    "ExactCheck",
    "TabularPolicy",
    "classical",
    "exact_surrogate_error",
    "mixed",
    "pinsker_marginal",
    "worst_case_reward",
]


def _T(T: ArrayLike) -> np.ndarray:
    t = np.asarray(T, dtype=float)
    if np.any(t < 1) or np.any(t != np.floor(t)):
        raise ValueError(f"T must be a positive integer (or an array of them), got {T!r}")
    return t


def _nonnegative(name: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")


def classical(T: ArrayLike, d_max: float, eps: float = 1.0) -> np.ndarray:
    """Classical trust-region bound eps * D_max * T (T - 1): O(T^2) (step 3, first bullet, of the module doc)."""
    _nonnegative("d_max", d_max)
    _nonnegative("eps", eps)
    t = _T(T)
    return eps * d_max * t * (t - 1)


def pinsker_marginal(T: ArrayLike, d_max: float, eps: float = 1.0) -> np.ndarray:
    """Pinsker-marginal bound 2 eps D_max sum_{k<T} sqrt(k) <= (4/3) eps D_max T^1.5: O(T^{3/2})."""
    _nonnegative("d_max", d_max)
    _nonnegative("eps", eps)
    t = _T(T)
    t_max = int(t.max()) if t.size else 0
    cumulative = np.concatenate([[0.0], np.cumsum(np.sqrt(np.arange(t_max)))])  # cumulative[n] = sum_{k<n} sqrt k
    return 2.0 * eps * d_max * cumulative[t.astype(int)]


def mixed(T: ArrayLike, d_max: float, eps: float = 1.0, d_seq: float | None = None) -> np.ndarray:
    """Mixed bound 2 sqrt(2) eps T sqrt(D_max) min(1, sqrt(D_seq / 2)): O(T); ``d_seq=None`` uses the factor 1."""
    _nonnegative("d_max", d_max)
    _nonnegative("eps", eps)
    factor = 1.0
    if d_seq is not None:
        _nonnegative("d_seq", d_seq)
        factor = min(1.0, math.sqrt(d_seq / 2))
    return 2.0 * math.sqrt(2.0) * eps * _T(T) * math.sqrt(d_max) * factor


BOUNDS = {"classical": classical, "pinsker_marginal": pinsker_marginal, "mixed": mixed}


# ----------------------------------------------------------------------------------------- exact check
@dataclass(frozen=True)
class TabularPolicy:
    """An autoregressive policy over V tokens and T steps, one logit row per context (every prefix).

    ``logits[t]`` has shape ``(V**t, V)``: row ``i`` is the context whose prefix y_<t, read as a base-V number
    (first token most significant), equals ``i``. Enumerable for V**T up to about 1e6.
    """

    logits: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        rows = tuple(np.asarray(row, dtype=float) for row in self.logits)
        if not rows or rows[0].ndim != 2 or rows[0].shape[-1] < 2:
            raise ValueError("logits must be a non-empty sequence of (V**t, V) arrays with V >= 2")
        V = rows[0].shape[-1]
        for t, row in enumerate(rows):
            if row.shape != (V**t, V):
                raise ValueError(f"logits[{t}] must have shape (V**t, V) = {(V**t, V)}, got {row.shape}")
        object.__setattr__(self, "logits", rows)

    @property
    def vocab(self) -> int:
        return int(self.logits[0].shape[-1])

    @property
    def horizon(self) -> int:
        return len(self.logits)

    def log_probs(self) -> list[np.ndarray]:
        out = []
        for row in self.logits:
            z = row - row.max(axis=-1, keepdims=True)
            out.append(z - np.log(np.exp(z).sum(axis=-1, keepdims=True)))
        return out

    @classmethod
    def random(cls, vocab: int, horizon: int, rng: np.random.Generator, scale: float = 1.0) -> TabularPolicy:
        return cls(tuple(scale * rng.standard_normal((vocab**t, vocab)) for t in range(horizon)))

    def perturbed(self, rng: np.random.Generator, sd: float) -> TabularPolicy:
        """The same policy with N(0, sd^2) noise on every logit (a controlled mismatch)."""
        return TabularPolicy(tuple(row + sd * rng.standard_normal(row.shape) for row in self.logits))

    def at_kl(self, rng: np.random.Generator, kl: float) -> TabularPolicy:
        """A policy at exactly KL(self(.|c) || new(.|c)) = ``kl`` in *every* context c (so D_max = kl whatever T).

        Each context's logits move along their own random direction u, z + s u, with s >= 0 found by bisection:
        s -> KL(softmax z || softmax(z + s u)) is convex with its minimum 0 at s = 0, so it is increasing on s >= 0.
        """
        if not (math.isfinite(kl) and kl >= 0):
            raise ValueError(f"kl must be finite and >= 0, got {kl!r}")
        rows = []
        for z in self.logits:
            u = rng.standard_normal(z.shape)
            lp = z - np.logaddexp.reduce(z, axis=-1, keepdims=True)

            def divergence(scale: np.ndarray, z: np.ndarray = z, u: np.ndarray = u, lp: np.ndarray = lp) -> np.ndarray:
                moved = z + scale[:, None] * u
                lq = moved - np.logaddexp.reduce(moved, axis=-1, keepdims=True)
                return (np.exp(lp) * (lp - lq)).sum(-1)

            lo, hi = np.zeros(len(z)), np.ones(len(z))
            for _ in range(200):  # grow the bracket until every row reaches kl
                short = divergence(hi) < kl
                if not short.any():
                    break
                hi = np.where(short, 2 * hi, hi)
            for _ in range(100):  # bisection to float precision
                mid = 0.5 * (lo + hi)
                below = divergence(mid) < kl
                lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
            rows.append(z + (0.5 * (lo + hi))[:, None] * u)
        return TabularPolicy(tuple(rows))


def _sequence_log_probs(policy: TabularPolicy) -> np.ndarray:
    """(V**T, T) token log-probs of every sequence; the context of y_t is n // V**(T-t), y_t a base-V digit."""
    V, T = policy.vocab, policy.horizon
    lp, n = policy.log_probs(), np.arange(V**policy.horizon)
    return np.stack([lp[t][n // V ** (T - t), (n // V ** (T - 1 - t)) % V] for t in range(T)], axis=1)


def worst_case_reward(policy_a: TabularPolicy, policy_b: TabularPolicy) -> np.ndarray:
    """The reward table in [0, 1] that maximises J(b) - L(b): J - L is linear in R, so R = 1[coefficient > 0].

    The adversarial case for the bounds (they hold for every reward in [0, 1], so also for this one).
    """
    tok_a, tok_b = _sequence_log_probs(policy_a), _sequence_log_probs(policy_b)
    p_a, p_b = np.exp(tok_a.sum(1)), np.exp(tok_b.sum(1))
    coefficient = p_b - p_a * (1.0 + np.expm1(tok_b - tok_a).sum(1))
    return (coefficient > 0).astype(float)


@dataclass(frozen=True)
class ExactCheck:
    """Exact J, L and their error, the divergences the bounds need, and the bounds themselves."""

    j_theta: float
    j_roll: float
    surrogate: float
    error: float  # |J(theta) - L(theta)|
    d_max: float  # max_{t,c} KL(pi_roll || pi_theta)
    tv_max: float
    d_seq: float  # KL(P_roll || P_theta) over whole sequences
    eps: float  # max |A^roll|
    bounds: dict[str, float] = field(default_factory=dict)


def exact_surrogate_error(policy_a: TabularPolicy, policy_b: TabularPolicy, reward_table: ArrayLike) -> ExactCheck:
    """Enumerate all V**T sequences: J(b), L(b) around the rollout policy ``policy_a``, and every bound.

    ``policy_a`` is pi_roll (it samples), ``policy_b`` is pi_theta (it is trained); ``reward_table[n]`` is the
    reward of the sequence whose base-V digits are ``n``, in [0, 1]. The surrogate is computed twice, from the
    importance-weighted form and from the advantage form, and the two must agree.
    """
    V, T = policy_a.vocab, policy_a.horizon
    if (policy_b.vocab, policy_b.horizon) != (V, T):
        raise ValueError("both policies need the same vocabulary and horizon")
    reward = np.asarray(reward_table, dtype=float)
    if reward.shape != (V**T,):
        raise ValueError(f"reward_table must have V**T = {V**T} entries, got shape {reward.shape}")
    if not np.isfinite(reward).all():
        raise ValueError("reward_table holds NaN or inf; rewards must be finite numbers in [0, 1]")
    if reward.min() < 0 or reward.max() > 1:
        raise ValueError("rewards must lie in [0, 1] (the bounds assume it)")
    for name, policy in (("policy_a", policy_a), ("policy_b", policy_b)):
        if not all(np.isfinite(row).all() for row in policy.logits):
            raise ValueError(f"{name} has NaN or inf logits; every context needs a finite logit row")
    lp_a, lp_b = policy_a.log_probs(), policy_b.log_probs()
    tok_a, tok_b = _sequence_log_probs(policy_a), _sequence_log_probs(policy_b)
    p_a, p_b = np.exp(tok_a.sum(1)), np.exp(tok_b.sum(1))
    j_roll, j_theta = float(p_a @ reward), float(p_b @ reward)
    rho = np.exp(tok_b - tok_a)
    surrogate = float(p_a @ ((1.0 + (rho - 1.0).sum(1)) * reward))

    # backward pass: Q_t, V_t, advantages under pi_roll; forward pass: context distributions d_t^roll
    q = reward.reshape(V ** (T - 1), V)
    q_rows: list[np.ndarray] = [np.empty(0)] * T
    eps = 0.0
    for t in range(T - 1, -1, -1):
        q_rows[t] = q
        value = (np.exp(lp_a[t]) * q).sum(-1)
        eps = max(eps, float(np.abs(q - value[:, None]).max()))
        if t:
            q = value.reshape(V ** (t - 1), V)
    d_t = np.ones(1)
    surrogate_q, d_seq, d_max, tv_max = j_roll, 0.0, 0.0, 0.0
    for t in range(T):
        pa, pb = np.exp(lp_a[t]), np.exp(lp_b[t])
        kl = (pa * (lp_a[t] - lp_b[t])).sum(-1)
        d_max, tv_max = max(d_max, float(kl.max())), max(tv_max, float(0.5 * np.abs(pa - pb).sum(-1).max()))
        d_seq += float(d_t @ kl)
        surrogate_q += float(d_t @ ((pb - pa) * q_rows[t]).sum(-1))
        d_t = (d_t[:, None] * pa).reshape(-1)
    if not math.isclose(surrogate, surrogate_q, rel_tol=1e-9, abs_tol=1e-12):
        raise AssertionError(f"surrogate forms disagree: {surrogate} vs {surrogate_q}")
    d_max = max(d_max, 0.0)
    bounds = {
        "classical": float(classical(T, d_max, eps)),
        "pinsker_marginal": float(pinsker_marginal(T, d_max, eps)),
        "mixed": float(mixed(T, d_max, eps)),
        "mixed_dseq": float(mixed(T, d_max, eps, d_seq=max(d_seq, 0.0))),
    }
    return ExactCheck(j_theta, j_roll, surrogate, abs(j_theta - surrogate), d_max, tv_max, d_seq, eps, bounds)
