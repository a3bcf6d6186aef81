"""Discrete GFlowNet environments with batched transitions and exact targets: HyperGrid and BitSequence.

An environment is a DAG over integer states. Every method works on a batch of states (a long tensor of shape
``(B, *state_shape)``) at once, so a sampler steps all trajectories together. Forward actions are indexed
``0 .. n_actions - 1``; the last one is *exit* (stop and emit the current state as the object ``x``). Backward
actions undo a forward one: ``back_index(s, a)`` is the backward action at ``step(s, a)`` that leads back to ``s``.

Small instances enumerate every state (``all_states``) and give the exact target ``R(x) / Z`` over the
terminating states (``true_dist``), the exact ``log Z`` and the child of every (state, action) pair
(``child_table``), which is what the exact terminal distribution of a policy needs (``sampling.terminal_distribution``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from functools import cached_property

import torch

__all__ = ["BitSequence", "DiscreteEnv", "HyperGrid", "InvalidActionError"]

MAX_ENUMERABLE = 200_000  # states; beyond this the exact target is refused with a clear error


class InvalidActionError(ValueError):
    """An action that the state does not allow (off the grid, a filled slot, exit before the end)."""


class DiscreteEnv:
    """What a GFlowNet needs from a discrete environment (batched; subclasses fill it in)."""

    n_actions: int  # forward actions, the last one is exit
    n_back_actions: int
    state_shape: tuple[int, ...]
    n_features: int  # width of ``encode``'s output
    max_length: int  # the most actions (exit included) any trajectory takes

    # -- batched dynamics ---------------------------------------------------------------------------------
    def initial(self, n: int) -> torch.Tensor:
        raise NotImplementedError

    def forward_mask(self, states: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def backward_mask(self, states: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _apply(self, states: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def back_index(self, states: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def encode(self, states: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def log_reward(self, states: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """log R(x) of a batch of terminating states (float64 for the exact target)."""
        raise NotImplementedError

    def level(self, states: torch.Tensor) -> torch.Tensor:
        """Number of non-exit actions from ``s0`` to each state (all paths have the same length here)."""
        raise NotImplementedError

    def index(self, states: torch.Tensor) -> torch.Tensor:
        """The position of each state in ``all_states`` (a mixed-radix code)."""
        raise NotImplementedError

    @property
    def n_states(self) -> int:
        raise NotImplementedError

    def step(self, states: torch.Tensor, actions: torch.Tensor, check: bool = True) -> torch.Tensor:
        """The children of ``states`` under non-exit ``actions`` (a new tensor; exit leaves a state unchanged).

        ``check=True`` raises :class:`InvalidActionError` on any action the state does not allow."""
        actions = torch.as_tensor(actions, dtype=torch.long)
        if actions.shape != states.shape[:1]:
            raise ValueError(f"one action per state: {tuple(states.shape[:1])} states, actions {tuple(actions.shape)}")
        if check:
            if bool(((actions < 0) | (actions >= self.n_actions)).any()):
                raise InvalidActionError(f"actions must lie in [0, {self.n_actions}), got {actions.tolist()}")
            allowed = self.forward_mask(states).gather(1, actions[:, None])[:, 0]
            if not bool(allowed.all()):
                bad = torch.nonzero(~allowed)[:, 0][:5].tolist()
                raise InvalidActionError(
                    f"action(s) {actions[bad].tolist()} not allowed in state(s) {states[bad].tolist()} "
                    f"(rows {bad}; see forward_mask)"
                )
        moving = actions != self.n_actions - 1
        out = states.clone()
        if bool(moving.any()):
            out[moving] = self._apply(states[moving], actions[moving])
        return out

    # -- enumeration and the exact target -------------------------------------------------------------------
    def _check_enumerable(self) -> None:
        if self.n_states > MAX_ENUMERABLE:
            raise ValueError(
                f"{type(self).__name__} has {self.n_states:,} states, more than {MAX_ENUMERABLE:,}: the exact "
                "target and the exact terminal distribution are only available for small instances"
            )

    @cached_property
    def all_states(self) -> torch.Tensor:
        """Every state, in ``index`` order."""
        self._check_enumerable()
        return self._enumerate()

    def _enumerate(self) -> torch.Tensor:
        raise NotImplementedError

    @cached_property
    def terminating(self) -> torch.Tensor:
        """Boolean mask over ``all_states``: the states where exit is allowed (the objects x)."""
        return self.forward_mask(self.all_states)[:, -1]

    @cached_property
    def child_table(self) -> torch.Tensor:
        """``(n_states, n_actions)``: the index of the child under each allowed non-exit action, else -1."""
        s = self.all_states
        mask = self.forward_mask(s)
        table = torch.full((s.shape[0], self.n_actions), -1, dtype=torch.long)
        for a in range(self.n_actions - 1):  # a loop over actions, each one batched over all states
            rows = mask[:, a]
            if bool(rows.any()):
                acts = torch.full((int(rows.sum()),), a, dtype=torch.long)
                table[rows, a] = self.index(self._apply(s[rows], acts))
        return table

    @cached_property
    def _log_rewards_all(self) -> torch.Tensor:
        lr = torch.full((self.n_states,), -math.inf, dtype=torch.float64)
        lr[self.terminating] = self.log_reward(self.all_states[self.terminating], torch.float64)
        return lr

    @property
    def log_partition(self) -> float:
        """Exact log Z = log sum_x R(x) (small instances)."""
        return float(torch.logsumexp(self._log_rewards_all, 0))

    def true_dist(self) -> torch.Tensor:
        """Exact target R(x)/Z over ``all_states`` (zero on non-terminating states), float64."""
        return torch.softmax(self._log_rewards_all, 0)

    def mode_states(self) -> torch.Tensor:
        """Indices (into ``all_states``) of the maximal-reward states (the "mode states")."""
        lr = self._log_rewards_all
        return torch.nonzero(lr >= lr.max() - 1e-9)[:, 0]

    def is_mode(self, states: torch.Tensor) -> torch.Tensor:
        """Whether each state is a maximal-reward state (subclasses know the maximum of their own rewards)."""
        raise NotImplementedError

    def _is_max_reward(self, states: torch.Tensor) -> torch.Tensor:
        """For a user reward: terminating states whose log R reaches the enumerated maximum (small instances)."""
        top = float(self._log_rewards_all.max())
        out = torch.zeros(states.shape[0], dtype=torch.bool)
        can_exit = self.forward_mask(states)[:, -1]
        if bool(can_exit.any()):
            out[can_exit] = self.log_reward(states[can_exit], torch.float64) >= top - 1e-9
        return out

    # -- user rewards -----------------------------------------------------------------------------------------
    reward_fn: Callable[[torch.Tensor], torch.Tensor] | None = None

    def _user_log_reward(self, states: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """log R from a user's ``reward_fn`` (R >= 0 per object), with one clear error per bad reward."""
        assert self.reward_fn is not None
        r = torch.as_tensor(self.reward_fn(states)).double()
        if r.shape != states.shape[:1]:
            n = states.shape[0]
            raise ValueError(f"reward_fn must return one reward per state ({n}), got shape {tuple(r.shape)}")
        if not bool(torch.isfinite(r).all()):
            bad = torch.nonzero(~torch.isfinite(r))[:, 0][:3]
            raise ValueError(f"reward_fn returned a non-finite reward (NaN or inf) at state(s) {states[bad].tolist()}")
        if bool((r < 0).any()):
            bad = torch.nonzero(r < 0)[:, 0][:3]
            raise ValueError(
                f"rewards must be >= 0 (a GFlowNet samples x with probability R(x)/Z), got {r[bad].tolist()} at "
                f"state(s) {states[bad].tolist()}; shift or exponentiate the score (R = exp(score / T))"
            )
        if bool((r == 0).any()):
            bad = torch.nonzero(r == 0)[:, 0][:3]
            raise ValueError(
                f"reward_fn returned R(x) = 0 at state(s) {states[bad].tolist()}: log R = -inf and trajectory "
                "balance is undefined there; add a small positive floor (e.g. R0 = 1e-3)"
            )
        return torch.log(r).to(dtype)

    def _validate_user_reward(self) -> None:
        """Evaluate a user's reward on every object once (small instances): all-zero gets its own message."""
        if self.reward_fn is None or self.n_states > MAX_ENUMERABLE:
            return
        x = self.all_states[self.terminating]
        r = torch.as_tensor(self.reward_fn(x)).double()
        if r.shape == x.shape[:1] and bool(torch.isfinite(r).all()) and bool((r == 0).all()):
            raise ValueError("reward_fn is zero everywhere: there is no target distribution R/Z to sample (Z = 0)")
        self._user_log_reward(x)

    def _check_states(self, states: torch.Tensor) -> torch.Tensor:
        if not isinstance(states, torch.Tensor):
            states = torch.as_tensor(states)
        if states.dtype.is_floating_point or states.dtype == torch.bool:
            raise TypeError(f"states are integer tensors, got dtype {states.dtype}")
        if tuple(states.shape[1:]) != self.state_shape:
            shape = ", ".join(map(str, self.state_shape))
            raise ValueError(f"states must have shape (B, {shape}), got {tuple(states.shape)}")
        return states.long()


class HyperGrid(DiscreteEnv):
    """The HyperGrid of Bengio et al. (2021): states ``{0..H-1}^D``, start at the origin, increment one coordinate
    per step or exit anywhere. Reward (with ``a_d = |x_d / (H-1) - 1/2|``)::

        R(x) = R0 + R1 * prod_d 1[0.25 < a_d <= 0.5] + R2 * prod_d 1[0.3 < a_d < 0.4]

    The conditions are evaluated in exact integer arithmetic. Mode states are those with R = R0 + R1 + R2
    (16 of them at D = 2, H = 20); a *mode* is one of the 2^D corners that holds them. Backward actions:
    decrement coordinate d (allowed when ``x_d > 0``).
    """

    def __init__(
        self,
        ndim: int = 2,
        height: int = 8,
        R0: float = 1e-3,
        R1: float = 0.5,
        R2: float = 2.0,
        reward_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        if not (isinstance(ndim, int) and ndim >= 1):
            raise ValueError(f"ndim must be a positive integer, got {ndim!r}")
        if not (isinstance(height, int) and height >= 2):
            raise ValueError(f"height must be an integer >= 2, got {height!r}")
        for name, v in (("R0", R0), ("R1", R1), ("R2", R2)):
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be finite and >= 0 (a reward is never negative), got {v!r}")
        if R0 == 0 and reward_fn is None:
            if R1 == 0 and R2 == 0:
                raise ValueError("R0 = R1 = R2 = 0: the reward is zero everywhere, there is no target R/Z to sample")
            raise ValueError(
                "R0 = 0 gives zero reward to most states: log R = -inf there and trajectory balance is undefined; "
                "use a small positive R0 (the standard hard setting is R0 = 1e-3)"
            )
        self.ndim, self.height = ndim, height
        self.R0, self.R1, self.R2 = float(R0), float(R1), float(R2)
        self.n_actions = ndim + 1
        self.n_back_actions = ndim
        self.state_shape = (ndim,)
        self.n_features = ndim * height
        self.max_length = ndim * (height - 1) + 1
        self.reward_fn = reward_fn
        self._validate_user_reward()

    def __repr__(self) -> str:
        return f"HyperGrid(ndim={self.ndim}, height={self.height}, R0={self.R0:g}, R1={self.R1:g}, R2={self.R2:g})"

    @property
    def n_states(self) -> int:
        return self.height**self.ndim

    def initial(self, n: int) -> torch.Tensor:
        return torch.zeros((n, self.ndim), dtype=torch.long)

    def forward_mask(self, states: torch.Tensor) -> torch.Tensor:
        exit_ = torch.ones((states.shape[0], 1), dtype=torch.bool)
        return torch.cat([states < self.height - 1, exit_], dim=1)

    def backward_mask(self, states: torch.Tensor) -> torch.Tensor:
        return states > 0

    def _apply(self, states: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return states + torch.nn.functional.one_hot(actions, self.ndim)

    def back_index(self, states: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return actions

    def encode(self, states: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(states, self.height).flatten(1).float()

    def _rings(self, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h1 = self.height - 1
        dev = (2 * states - h1).abs()  # a_d = dev / (2 (H-1)), so each test is an integer comparison
        outer = (2 * dev > h1).all(dim=1)  # 0.25 < a_d (a_d <= 0.5 always)
        band = ((10 * dev > 6 * h1) & (10 * dev < 8 * h1)).all(dim=1)  # 0.3 < a_d < 0.4
        return outer, band

    def log_reward(self, states: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        states = self._check_states(states)
        if self.reward_fn is not None:
            return self._user_log_reward(states, dtype)
        outer, band = self._rings(states)
        r = self.R0 + self.R1 * outer.double() + self.R2 * band.double()
        return torch.log(r).to(dtype)

    def is_mode(self, states: torch.Tensor) -> torch.Tensor:
        if self.reward_fn is not None:
            return self._is_max_reward(states)
        return self.log_reward(states, torch.float64) >= self._max_log_reward - 1e-12

    @cached_property
    def _max_log_reward(self) -> float:
        """log of the largest reward on the grid: the rings are products over coordinates, so it is attained iff
        one coordinate value satisfies each ring (the band lies inside the outer ring)."""
        line = torch.arange(self.height)[:, None].expand(-1, self.ndim)
        outer, band = self._rings(line)
        r = self.R0 + self.R1 * float(outer.any()) + self.R2 * float(band.any())
        return math.log(r)

    def corner(self, states: torch.Tensor) -> torch.Tensor:
        """Which of the 2^D corners (modes) each state lies in: bit d set when x_d is in the upper half."""
        weights = 2 ** torch.arange(self.ndim)
        return ((2 * states > self.height - 1).long() * weights).sum(1)

    def level(self, states: torch.Tensor) -> torch.Tensor:
        return states.sum(1)

    def index(self, states: torch.Tensor) -> torch.Tensor:
        weights = self.height ** torch.arange(self.ndim - 1, -1, -1)
        return (states * weights).sum(1)

    def _enumerate(self) -> torch.Tensor:
        grid = torch.cartesian_prod(*[torch.arange(self.height)] * self.ndim)
        return grid.reshape(-1, self.ndim).long()


class BitSequence(DiscreteEnv):
    """Bit strings of ``n_bits`` built word by word, in any order (non-autoregressive), with planted modes.

    A state holds ``n_bits / word_size`` slots, each empty (-1) or a word in ``0 .. 2^k - 1``. Forward action
    ``slot * 2^k + word`` fills an empty slot; exit is allowed only when every slot is filled (and is then the only
    action). Backward action ``slot`` empties a filled slot, so a full string has ``L!`` trajectories and the
    backward policy matters. Reward: ``log R(x) = -beta * min_m d_H(x, m)`` over ``n_modes`` planted strings drawn
    with ``seed`` (Hamming distance in bits), as in torchgfn's BitSequence (whose order is append-only).
    Mode states are the planted strings.
    """

    def __init__(
        self,
        n_bits: int = 8,
        word_size: int = 2,
        n_modes: int = 4,
        beta: float = 1.0,
        seed: int = 0,
        reward_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        if not (isinstance(word_size, int) and word_size >= 1):
            raise ValueError(f"word_size must be a positive integer, got {word_size!r}")
        if not (isinstance(n_bits, int) and n_bits >= word_size and n_bits % word_size == 0):
            raise ValueError(f"n_bits must be a positive multiple of word_size = {word_size}, got {n_bits!r}")
        if not (isinstance(n_modes, int) and 1 <= n_modes <= 2**n_bits):
            raise ValueError(f"n_modes must be in [1, 2^n_bits], got {n_modes!r}")
        if not (math.isfinite(beta) and beta >= 0):
            raise ValueError(f"beta must be finite and >= 0, got {beta!r}")
        self.n_bits, self.word_size, self.beta, self.seed = n_bits, word_size, float(beta), seed
        self.n_slots = n_bits // word_size
        self.n_words = 2**word_size
        self.n_actions = self.n_slots * self.n_words + 1
        self.n_back_actions = self.n_slots
        self.state_shape = (self.n_slots,)
        self.n_features = self.n_slots * (self.n_words + 1)
        self.max_length = self.n_slots + 1
        g = torch.Generator().manual_seed(seed)
        codes = torch.randperm(2**n_bits, generator=g)[:n_modes]
        self.modes = ((codes[:, None] >> torch.arange(n_bits - 1, -1, -1)) & 1).to(torch.int8)
        self.reward_fn = reward_fn
        self._validate_user_reward()

    def __repr__(self) -> str:
        return (
            f"BitSequence(n_bits={self.n_bits}, word_size={self.word_size}, n_modes={self.modes.shape[0]}, "
            f"beta={self.beta:g}, seed={self.seed})"
        )

    @property
    def n_states(self) -> int:
        return (self.n_words + 1) ** self.n_slots

    def initial(self, n: int) -> torch.Tensor:
        return torch.full((n, self.n_slots), -1, dtype=torch.long)

    def forward_mask(self, states: torch.Tensor) -> torch.Tensor:
        empty = states < 0
        fill = empty[:, :, None].expand(-1, -1, self.n_words).reshape(states.shape[0], -1)
        return torch.cat([fill, (~empty).all(1, keepdim=True)], dim=1)

    def backward_mask(self, states: torch.Tensor) -> torch.Tensor:
        return states >= 0

    def _apply(self, states: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        out = states.clone()
        out[torch.arange(states.shape[0]), actions // self.n_words] = actions % self.n_words
        return out

    def back_index(self, states: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return actions // self.n_words

    def encode(self, states: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(states + 1, self.n_words + 1).flatten(1).float()

    def bits(self, states: torch.Tensor) -> torch.Tensor:
        """The bit strings of full states, shape ``(B, n_bits)``."""
        shifts = torch.arange(self.word_size - 1, -1, -1)
        return ((states.clamp(min=0)[:, :, None] >> shifts) & 1).flatten(1).to(torch.int8)

    def distance_to_modes(self, states: torch.Tensor) -> torch.Tensor:
        states = self._check_states(states)
        if bool((states < 0).any()):
            raise ValueError("the reward is defined on full strings only (every slot filled)")
        diff = self.bits(states)[:, None, :] != self.modes[None, :, :]
        return diff.sum(-1).min(1).values

    def log_reward(self, states: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        if self.reward_fn is not None:
            states = self._check_states(states)
            if bool((states < 0).any()):
                raise ValueError("the reward is defined on full strings only (every slot filled)")
            return self._user_log_reward(states, dtype)
        return -self.beta * self.distance_to_modes(states).to(dtype)

    def is_mode(self, states: torch.Tensor) -> torch.Tensor:
        if self.reward_fn is not None:
            return self._is_max_reward(states)
        full = (states >= 0).all(1)
        out = torch.zeros(states.shape[0], dtype=torch.bool)
        if bool(full.any()):
            out[full] = self.distance_to_modes(states[full]) == 0
        return out

    def level(self, states: torch.Tensor) -> torch.Tensor:
        return (states >= 0).sum(1)

    def index(self, states: torch.Tensor) -> torch.Tensor:
        weights = (self.n_words + 1) ** torch.arange(self.n_slots - 1, -1, -1)
        return ((states + 1) * weights).sum(1)

    def _enumerate(self) -> torch.Tensor:
        values = list(range(-1, self.n_words))
        return torch.tensor(list(itertools.product(values, repeat=self.n_slots)), dtype=torch.long)
