"""Training loops at a fixed trajectory budget: TB (on-policy, epsilon-uniform, tempered), an RND-explorer
baseline, and ACE. Every trainer draws ``batch_size`` trajectories per iteration from its behaviour policy, counts
every one of them (explorer trajectories included) against the budget, and trains the canonical GFlowNet on all
of them (off-policy where the behaviour is not the canonical policy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from icml26.decision.ace_gflownet.envs import DiscreteEnv
from icml26.decision.ace_gflownet.gflownet import GFlowNet, make_optimizer
from icml26.decision.ace_gflownet.losses import (
    detailed_balance_loss,
    divergent_log_target,
    subtrajectory_balance_loss,
    trajectory_balance_loss,
)
from icml26.decision.ace_gflownet.metrics import ModeTracker, exact_l1
from icml26.decision.ace_gflownet.sampling import (
    StepLogProbs,
    Trajectories,
    sample_trajectories,
    trajectory_log_probs,
)

__all__ = ["ACETrainer", "History", "RNDTrainer", "TBTrainer"]

LOSSES = ("tb", "db", "subtb")


@dataclass
class History:
    """What a run recorded. ``trajectories[i]`` is the budget spent when row i was taken."""

    trajectories: list[int] = field(default_factory=list)
    l1: list[float] = field(default_factory=list)
    mode_states_found: list[int] = field(default_factory=list)
    modes_found: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    log_z: list[float] = field(default_factory=list)
    explore_share: list[float] = field(default_factory=list)

    def as_rows(self) -> list[dict[str, float]]:
        keys = ("trajectories", "l1", "mode_states_found", "modes_found", "loss", "log_z", "explore_share")
        return [dict(zip(keys, row, strict=True)) for row in zip(*(getattr(self, k) for k in keys), strict=True)]


def _seeded(seed: int, build):  # type: ignore[no-untyped-def]
    """Build modules under a local seed without touching the global torch generator."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


class _Trainer:
    """Shared loop: sample a batch from the behaviour policy, update, track modes and the exact L1."""

    def __init__(
        self,
        env: DiscreteEnv,
        *,
        hidden: int = 64,
        n_layers: int = 2,
        learn_pb: bool = False,
        lr: float = 1e-3,
        lr_log_z: float = 0.1,
        loss: str = "tb",
        subtb_lambda: float = 0.9,
        seed: int = 0,
    ) -> None:
        if not isinstance(env, DiscreteEnv):
            raise TypeError(f"env must be a DiscreteEnv (HyperGrid, BitSequence), got {type(env).__name__}")
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        self.env, self.loss_name, self.subtb_lambda, self.seed = env, loss, subtb_lambda, int(seed)
        self._net_kw = dict(hidden=hidden, n_layers=n_layers, learn_pb=learn_pb)
        self._lr = (lr, lr_log_z)
        self.canonical = _seeded(self.seed, lambda: GFlowNet(env, **self._net_kw))
        self.optimizer = make_optimizer(self.canonical, lr, lr_log_z)
        self.generator = torch.Generator().manual_seed(self.seed + 7919)
        self.tracker = ModeTracker(env)
        self.spent = 0

    # subclasses: one iteration on ``batch_size`` trajectories; returns (batch, loss value, explorer share)
    def _iteration(self, batch_size: int) -> tuple[Trajectories, float, float]:
        raise NotImplementedError

    def _canonical_loss(self, traj: Trajectories, scores: StepLogProbs | None = None) -> torch.Tensor:
        gfn = self.canonical
        if self.loss_name == "tb":
            return trajectory_balance_loss(gfn, traj, scores)
        if self.loss_name == "db":
            return detailed_balance_loss(gfn, traj, scores)
        return subtrajectory_balance_loss(gfn, traj, self.subtb_lambda, scores)

    def sampler(self) -> GFlowNet:
        """The canonical GFlowNet: the sampler of the target R/Z (what every metric evaluates)."""
        return self.canonical

    def train(self, n_trajectories: int, batch_size: int = 16, eval_every: int | None = None) -> History:
        """Spend ``n_trajectories`` (rounded down to whole batches) and return the recorded history.

        ``eval_every`` (trajectories; default: 20 checkpoints) sets how often the exact L1 of the canonical
        sampler is computed (small, enumerable environments only; else it is NaN)."""
        if not (isinstance(batch_size, int) and batch_size >= 1):
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not (isinstance(n_trajectories, int) and n_trajectories >= batch_size):
            raise ValueError(f"n_trajectories must be an integer >= batch_size = {batch_size}, got {n_trajectories!r}")
        iterations = n_trajectories // batch_size
        every = max(1, (eval_every or max(batch_size, n_trajectories // 20)) // batch_size)
        enumerable = self.env.n_states <= 200_000
        hist = History()
        for it in range(1, iterations + 1):
            traj, loss, share = self._iteration(batch_size)
            if not math.isfinite(loss):
                raise FloatingPointError(f"{type(self).__name__}: the loss became {loss} at iteration {it}")
            self.spent += batch_size
            found = self.tracker.update(traj.terminal)
            if it % every == 0 or it == iterations:
                hist.trajectories.append(self.spent)
                hist.l1.append(exact_l1(self.canonical) if enumerable else math.nan)
                hist.mode_states_found.append(found)
                hist.modes_found.append(len(self.tracker.modes))
                hist.loss.append(loss)
                hist.log_z.append(self.canonical.log_z.item())
                hist.explore_share.append(share)
        return hist


class TBTrainer(_Trainer):
    """The canonical GFlowNet alone: on-policy (default), epsilon-uniform (``epsilon``) or tempered
    (``temperature`` divides the logits when sampling). Loss: TB (default), DB or SubTB."""

    def __init__(self, env: DiscreteEnv, *, epsilon: float = 0.0, temperature: float = 1.0, **kw) -> None:  # type: ignore[no-untyped-def]
        if not (0.0 <= epsilon <= 1.0):
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon!r}")
        if not (temperature > 0 and math.isfinite(temperature)):
            raise ValueError(f"temperature must be a positive finite number, got {temperature!r}")
        super().__init__(env, **kw)
        self.epsilon, self.temperature = float(epsilon), float(temperature)

    def _iteration(self, batch_size: int) -> tuple[Trajectories, float, float]:
        traj = sample_trajectories(
            self.env,
            self.canonical,
            batch_size,
            epsilon=self.epsilon,
            temperature=self.temperature,
            generator=self.generator,
        )
        loss = self._canonical_loss(traj)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return traj, loss.item(), 0.0


class _ExplorerTrainer(_Trainer):
    """Canonical + exploration GFlowNet; each trajectory comes from the explorer with probability alpha."""

    def __init__(self, env: DiscreteEnv, *, alpha: float = 0.5, **kw) -> None:  # type: ignore[no-untyped-def]
        if not (0.0 <= alpha <= 1.0):
            raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
        super().__init__(env, **kw)
        self.alpha = float(alpha)
        lr, lr_log_z = self._lr
        self.explorer = _seeded(self.seed + 1, lambda: GFlowNet(env, **self._net_kw))
        self.explorer_optimizer = make_optimizer(self.explorer, lr, lr_log_z)

    def current_alpha(self) -> float:
        return self.alpha

    def _sample(self, batch_size: int) -> Trajectories:
        alpha = self.current_alpha()
        source = (torch.rand(batch_size, generator=self.generator) < alpha).long()
        return sample_trajectories(
            self.env, [self.canonical, self.explorer], batch_size, source=source, generator=self.generator
        )

    def _explorer_loss(self, traj: Trajectories, canonical_scores: StepLogProbs) -> torch.Tensor:
        raise NotImplementedError

    def _iteration(self, batch_size: int) -> tuple[Trajectories, float, float]:
        traj = self._sample(batch_size)
        scores = trajectory_log_probs(self.canonical, traj)
        loss_c = self._canonical_loss(traj, scores)
        loss_e = self._explorer_loss(traj, scores)
        self.optimizer.zero_grad()
        self.explorer_optimizer.zero_grad()
        (loss_c + loss_e).backward()
        self.optimizer.step()
        self.explorer_optimizer.step()
        return traj, loss_c.item(), float(traj.source.float().mean())


class ACETrainer(_ExplorerTrainer):
    """Adaptive Complementary Exploration (ACE): a canonical GFlowNet trained by TB (or DB / SubTB) on every
    trajectory, and an exploration GFlowNet trained by divergent TB towards the reward flow the canonical sampler
    does not yet cover (see :func:`~icml26.decision.ace_gflownet.losses.divergent_log_target`).

    Behaviour: each trajectory comes from the explorer with probability ``alpha`` (the paper's mixture; 0.5 by
    default), else from the canonical policy. ``adaptive=True`` (our reading of "adaptive") uses
    ``alpha_t = clip(Z_E / (Z_E + Z_C), min_alpha, alpha)``: the share of reward flow still uncovered, so that
    exploration fades as the canonical sampler converges. ``floor`` (nats) clamps the explorer's target where the
    canonical sampler already covers a trajectory.

        trainer = ACETrainer(HyperGrid(2, 20), alpha=0.5, seed=0)
        history = trainer.train(n_trajectories=32_000, batch_size=16)
        exact_l1(trainer.sampler())
    """

    def __init__(
        self,
        env: DiscreteEnv,
        *,
        alpha: float = 0.5,
        floor: float = 10.0,
        adaptive: bool = False,
        min_alpha: float = 0.05,
        **kw,  # type: ignore[no-untyped-def]
    ) -> None:
        if not (math.isfinite(floor) and floor > 0):
            raise ValueError(f"floor must be a positive finite number of nats, got {floor!r}")
        if adaptive and not (0.0 <= min_alpha <= alpha):
            raise ValueError(f"min_alpha must lie in [0, alpha = {alpha}], got {min_alpha!r}")
        super().__init__(env, alpha=alpha, **kw)
        self.floor, self.adaptive, self.min_alpha = float(floor), bool(adaptive), float(min_alpha)

    def current_alpha(self) -> float:
        if not self.adaptive:
            return self.alpha
        share = torch.sigmoid(self.explorer.log_z - self.canonical.log_z).item()  # Z_E / (Z_E + Z_C)
        return min(self.alpha, max(self.min_alpha, share))

    def _explorer_loss(self, traj: Trajectories, canonical_scores: StepLogProbs) -> torch.Tensor:
        with torch.no_grad():
            target = divergent_log_target(
                traj.log_reward,
                canonical_scores.traj_log_pb,
                self.canonical.log_z,
                canonical_scores.traj_log_pf,
                self.floor,
            )
        scores = trajectory_log_probs(self.explorer, traj)
        return (self.explorer.log_z + scores.traj_log_pf - target).pow(2).mean()


class RNDTrainer(_ExplorerTrainer):
    """Baseline: an exploration GFlowNet trained by TB on an extrinsic reward times a novelty bonus (the abstract's
    "self-supervised random network distillation"; Burda et al. 2019, Pan et al. 2023):
    ``R_E(x) = R(x) exp(bonus * n(x) / mean_n)`` (``form="multiplicative"``, the default) or GAFN's additive
    ``R(x) + bonus * n(x) / mean_n`` (``form="additive"``), with n(x) = ||g(x) - g_fixed(x)||^2 the error of a
    predictor g trained to match a fixed random network on every sampled object, normalised by the running mean
    of its batch means. Same behaviour mixture (``alpha``), budget and canonical training as ACE."""

    def __init__(
        self,
        env: DiscreteEnv,
        *,
        alpha: float = 0.5,
        bonus: float = 1.0,
        form: str = "multiplicative",
        rnd_dim: int = 16,
        rnd_lr: float = 1e-3,
        **kw,  # type: ignore[no-untyped-def]
    ) -> None:
        if not (math.isfinite(bonus) and bonus >= 0):
            raise ValueError(f"bonus must be finite and >= 0, got {bonus!r}")
        if form not in ("additive", "multiplicative"):
            raise ValueError(f"form must be 'additive' or 'multiplicative', got {form!r}")
        super().__init__(env, alpha=alpha, **kw)
        self.bonus, self.form = float(bonus), form
        hidden = int(self._net_kw["hidden"])

        def mlp() -> nn.Module:
            return nn.Sequential(
                nn.Linear(env.n_features, hidden),
                nn.LeakyReLU(),
                nn.Linear(hidden, hidden),
                nn.LeakyReLU(),
                nn.Linear(hidden, rnd_dim),
            )

        self.rnd_target = _seeded(self.seed + 2, mlp).requires_grad_(False)
        self.rnd_predictor = _seeded(self.seed + 3, mlp)
        self.rnd_optimizer = torch.optim.Adam(self.rnd_predictor.parameters(), lr=rnd_lr)
        self.novelty_scale: float | None = None

    def novelty(self, states: torch.Tensor) -> torch.Tensor:
        """The RND error of each object (differentiable in the predictor)."""
        x = self.env.encode(states)
        return (self.rnd_predictor(x) - self.rnd_target(x)).pow(2).sum(1)

    def _explorer_loss(self, traj: Trajectories, canonical_scores: StepLogProbs) -> torch.Tensor:
        nov = self.novelty(traj.terminal)
        with torch.no_grad():
            batch_mean = float(nov.mean())
            old = batch_mean if self.novelty_scale is None else self.novelty_scale
            self.novelty_scale = 0.9 * old + 0.1 * batch_mean
            intrinsic = self.bonus * nov / max(self.novelty_scale, 1e-12)
            if self.form == "additive":
                log_target = torch.logaddexp(traj.log_reward, torch.log(intrinsic.clamp(min=1e-30)))
            else:
                log_target = traj.log_reward + intrinsic
        loss_e = trajectory_balance_loss(self.explorer, traj, log_reward=log_target)
        self.rnd_optimizer.zero_grad()
        nov.mean().backward()
        self.rnd_optimizer.step()
        return loss_e
