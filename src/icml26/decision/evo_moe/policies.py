"""Controllers: the latent-gated mixture of experts and its two baselines, plus the shared critic.

Every actor is called as ``actor(obs, z, design_index) -> (mean, log_std, gate)`` (gate None where there is none),
so that one PPO update serves all arms. Actions are Gaussian with a state-independent log std.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

__all__ = [
    "BatchedMLP",
    "Critic",
    "LatentGatedMoEPolicy",
    "MonolithicPolicy",
    "PerRobotPolicies",
    "SingleExpert",
    "count_parameters",
    "matched_hidden",
]


def count_parameters(module: nn.Module, trainable_only: bool = True) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


class BatchedMLP(nn.Module):
    """``n`` independent tanh MLPs of the same sizes, evaluated in one batched matmul per layer.

    ``forward(x)``: x of shape (B, in) (every net sees it) or (n, B, in) -> (n, B, out). ``gather(x, index)``:
    sample b goes through net ``index[b]`` -> (B, out). Init as ``nn.Linear`` (uniform +/- 1/sqrt(fan_in)); the
    last layer is scaled by ``out_scale`` (small policy means at the start, as PPO implementations do).
    """

    def __init__(
        self, n: int, sizes: tuple[int, ...], out_scale: float = 1.0, generator: torch.Generator | None = None
    ):
        super().__init__()
        if n < 1 or len(sizes) < 2:
            raise ValueError(f"need n >= 1 and at least two sizes, got {n}, {sizes}")
        self.n, self.sizes = int(n), tuple(int(s) for s in sizes)
        self.weights, self.biases = nn.ParameterList(), nn.ParameterList()
        for i, (a, b) in enumerate(zip(self.sizes[:-1], self.sizes[1:], strict=True)):
            bound = 1.0 / math.sqrt(a)
            scale = out_scale if i == len(self.sizes) - 2 else 1.0
            w = (2 * torch.rand(n, a, b, generator=generator) - 1) * bound * scale
            bias = (2 * torch.rand(n, 1, b, generator=generator) - 1) * bound * scale
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(bias))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.expand(self.n, *x.shape) if x.dim() == 2 else x
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = torch.baddbmm(b, h, w)
            if i < last:
                h = torch.tanh(h)
        return h

    def gather(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        h = x[:, None, :]
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = torch.baddbmm(b[index], h, w[index])
            if i < last:
                h = torch.tanh(h)
        return h[:, 0, :]


class SingleExpert(nn.Module):
    """One expert as a plain module ``obs (B, obs_dim) -> action mean (B, act_dim)`` (what ``add_expert`` takes)."""

    def __init__(self, net: BatchedMLP):
        super().__init__()
        if net.n != 1:
            raise ValueError(f"a SingleExpert wraps a bank of one net, got {net.n}")
        self.net = net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)[0]


def _check_inputs(obs: torch.Tensor, z: torch.Tensor, obs_dim: int, z_dim: int) -> None:
    if not (isinstance(obs, torch.Tensor) and isinstance(z, torch.Tensor)):
        raise TypeError(f"obs and z must be torch tensors (torch.as_tensor(...)), got {type(obs).__name__}, "
                        f"{type(z).__name__}")  # fmt: skip
    if obs.dim() != 2 or obs.shape[1] != obs_dim:
        raise ValueError(f"obs must have shape (B, {obs_dim}), got {tuple(obs.shape)}")
    if z.dim() != 2 or z.shape != (obs.shape[0], z_dim):
        raise ValueError(
            f"z must have shape ({obs.shape[0]}, {z_dim}) (one latent per observation), got {tuple(z.shape)}"
        )
    if not (torch.isfinite(obs).all() and torch.isfinite(z).all()):
        raise ValueError("obs and z must be finite (NaN or inf would give NaN actions and gate weights)")


class LatentGatedMoEPolicy(nn.Module):
    """pi(a | s, z) = N( sum_e g_e(z) mu_e(s), diag(sigma^2) ), g(z) = softmax(MLP(z)).

    The gate reads the design latent only, never the observation; experts read the observation only (our reading;
    the abstract leaves it open). ``add_expert(module, frozen=True)`` plugs a pretrained expert in (evo by demo):
    its parameters get no gradient and no optimiser update; the gate gains one output for it.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        z_dim: int,
        n_experts: int = 4,
        hidden: int = 32,
        gate_hidden: int = 16,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        if n_experts < 1:
            raise ValueError(f"n_experts must be >= 1, got {n_experts}")
        self.obs_dim, self.act_dim, self.z_dim = obs_dim, act_dim, z_dim
        self.experts = BatchedMLP(n_experts, (obs_dim, hidden, hidden, act_dim), out_scale=0.01, generator=generator)
        self.plugged = nn.ModuleList()
        self.gate_hidden = nn.Linear(z_dim, gate_hidden)
        self.gate_out = nn.Linear(gate_hidden, n_experts)
        if generator is not None:  # seeded init of the gate too
            for lin in (self.gate_hidden, self.gate_out):
                bound = 1.0 / math.sqrt(lin.in_features)
                with torch.no_grad():
                    lin.weight.copy_((2 * torch.rand(lin.weight.shape, generator=generator) - 1) * bound)
                    lin.bias.copy_((2 * torch.rand(lin.bias.shape, generator=generator) - 1) * bound)
        self.log_std = nn.Parameter(torch.full((act_dim,), -0.5))

    @property
    def n_experts(self) -> int:
        return self.experts.n + len(self.plugged)

    def gate(self, z: torch.Tensor) -> torch.Tensor:
        """Gate weights (B, n_experts) from the latents alone."""
        return torch.softmax(self.gate_out(torch.tanh(self.gate_hidden(z))), dim=-1)

    def forward(
        self, obs: torch.Tensor, z: torch.Tensor, design_index: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        _check_inputs(obs, z, self.obs_dim, self.z_dim)
        means = self.experts(obs)  # (E, B, act)
        if len(self.plugged):
            means = torch.cat([means, torch.stack([m(obs) for m in self.plugged])], 0)
        g = self.gate(z)
        mean = torch.einsum("be,eba->ba", g, means)
        return mean, self.log_std.expand_as(mean), g

    def add_expert(self, module: nn.Module, frozen: bool = True) -> None:
        """Plug a module ``obs (B, obs_dim) -> (B, act_dim)`` in as one more expert (a deep copy)."""
        module = copy.deepcopy(module)
        with torch.no_grad():
            probe = module(torch.zeros(2, self.obs_dim))
        if probe.shape != (2, self.act_dim):
            raise ValueError(f"an expert must map (B, {self.obs_dim}) to (B, {self.act_dim}); got {tuple(probe.shape)}")
        if frozen:
            for p in module.parameters():
                p.requires_grad_(False)
        self.plugged.append(module)
        old = self.gate_out
        new = nn.Linear(old.in_features, old.out_features + 1)
        with torch.no_grad():  # the old logits unchanged; the new one starts at their mean bias, flat in z
            new.weight[:-1] = old.weight
            new.bias[:-1] = old.bias
            new.weight[-1] = 0.0
            new.bias[-1] = old.bias.mean()
        self.gate_out = new


class MonolithicPolicy(nn.Module):
    """The universal controller baseline: one tanh MLP of [obs, z] -> action mean (z concatenated to the input).

    ``hidden=None`` picks the width whose parameter count is closest to ``match`` (a mixture's count)."""

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        z_dim: int,
        hidden: int | None = None,
        match: int | None = None,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        if hidden is None:
            if match is None:
                raise ValueError("give hidden or the parameter count to match")
            hidden = matched_hidden(match, obs_dim + z_dim, act_dim)
        self.obs_dim, self.act_dim, self.z_dim, self.hidden = obs_dim, act_dim, z_dim, hidden
        self.net = BatchedMLP(1, (obs_dim + z_dim, hidden, hidden, act_dim), out_scale=0.01, generator=generator)
        self.log_std = nn.Parameter(torch.full((act_dim,), -0.5))

    def forward(
        self, obs: torch.Tensor, z: torch.Tensor, design_index: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, None]:
        _check_inputs(obs, z, self.obs_dim, self.z_dim)
        mean = self.net(torch.cat([obs, z], 1))[0]
        return mean, self.log_std.expand_as(mean), None


class PerRobotPolicies(nn.Module):
    """The per-design baseline: a fresh small policy (one expert's size, its own log std) for each design."""

    def __init__(
        self, obs_dim: int, act_dim: int, n_designs: int, hidden: int = 32, generator: torch.Generator | None = None
    ):
        super().__init__()
        self.obs_dim, self.act_dim, self.n_designs = obs_dim, act_dim, n_designs
        self.nets = BatchedMLP(n_designs, (obs_dim, hidden, hidden, act_dim), out_scale=0.01, generator=generator)
        self.log_std = nn.Parameter(torch.full((n_designs, act_dim), -0.5))

    def forward(
        self, obs: torch.Tensor, z: torch.Tensor | None, design_index: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, None]:
        if design_index is None or design_index.shape != obs.shape[:1]:
            raise ValueError("per-robot policies need design_index: one design per observation")
        if obs.dim() != 2 or obs.shape[1] != self.obs_dim:
            raise ValueError(f"obs must have shape (B, {self.obs_dim}), got {tuple(obs.shape)}")
        return self.nets.gather(obs, design_index), self.log_std[design_index], None


class Critic(nn.Module):
    """V(s, z): the same critic for every arm (it is not the controller under test), a tanh MLP of [obs, z]."""

    def __init__(self, obs_dim: int, z_dim: int, hidden: int = 64, generator: torch.Generator | None = None):
        super().__init__()
        self.net = BatchedMLP(1, (obs_dim + z_dim, hidden, hidden, 1), generator=generator)

    def forward(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([obs, z], 1))[0, :, 0]


def matched_hidden(target: int, in_dim: int, out_dim: int) -> int:
    """Width H of a 2-hidden-layer MLP in -> H -> H -> out whose parameter count is closest to ``target``."""
    # H^2 + (in + out + 2) H + out (+ out for the log std) = target
    b = in_dim + out_dim + 2
    h = (-b + math.sqrt(b * b + 4 * max(target - 2 * out_dim, 1))) / 2
    cands = [max(1, math.floor(h)), math.ceil(h)]
    cost = lambda w: abs(w * w + b * w + 2 * out_dim - target)  # noqa: E731
    return min(cands, key=cost)
