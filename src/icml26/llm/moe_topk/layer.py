"""The top-K mixture-of-experts layer: softmax router, top-K selection, renormalised gates, SwiGLU experts computed
by one grouped matrix product over tokens sorted by expert, and the Switch-style load-balancing loss."""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["EXPERTS_IMPLEMENTATIONS", "TopKMoE", "load_balancing_loss", "route"]

EXPERTS_IMPLEMENTATIONS = ("grouped_mm", "eager")


def _check_k(num_experts_per_tok: Any, num_experts: int) -> int:
    if isinstance(num_experts_per_tok, bool) or not isinstance(num_experts_per_tok, int):
        raise TypeError(f"num_experts_per_tok must be an int, got {num_experts_per_tok!r}")
    if num_experts_per_tok < 1:
        raise ValueError(f"num_experts_per_tok (K) must be >= 1, got {num_experts_per_tok}")
    if num_experts_per_tok > num_experts:
        raise ValueError(
            f"num_experts_per_tok (K = {num_experts_per_tok}) cannot exceed num_experts (M = {num_experts}): "
            "a token cannot use more experts than the layer has"
        )
    return num_experts_per_tok


def route(
    router_logits: torch.Tensor, top_k: int, norm_topk_prob: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Top-K routing of ``(N, M)`` router logits.

    Returns ``(weights, experts, probs)``: the gates ``(N, K)`` (softmax probabilities of the K selected experts,
    renormalised to sum to one over them when ``norm_topk_prob``), the selected expert indices ``(N, K)`` in
    decreasing order of probability, and the full softmax ``(N, M)`` (what the load-balancing loss reads).
    The softmax is taken in float32 whatever the input dtype, as Mixtral does.
    """
    k = _check_k(top_k, router_logits.shape[-1])
    probs = torch.softmax(router_logits.float(), dim=-1)
    weights, experts = torch.topk(probs, k, dim=-1)
    if norm_topk_prob:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, experts, probs


def load_balancing_loss(probs: torch.Tensor, experts: torch.Tensor, num_experts: int) -> torch.Tensor:
    """Switch-Transformer load-balancing loss, normalised so that perfectly balanced routing gives 1 at every K.

    ``(M / K) * sum_e f_e * P_e`` with ``f_e`` the number of selections of expert e per token (sums to K) and
    ``P_e`` the mean router probability of e (sums to 1). transformers' ``load_balancing_loss_func`` (Mixtral,
    Qwen2-MoE) computes ``M * sum_e f_e P_e``, which is K at balance; dividing by K keeps the coefficient's meaning
    the same for every K (ours), so runs that differ only in K are balanced equally hard.
    """
    n, k = experts.shape
    if n == 0:
        return probs.new_zeros(())
    counts = torch.bincount(experts.reshape(-1), minlength=num_experts).to(probs.dtype)
    return num_experts / k * torch.sum(counts / n * probs.mean(dim=0))


class TopKMoE(nn.Module):
    """A top-K mixture-of-experts feed-forward block (dropless; Mixtral's SwiGLU experts).

    Arguments follow transformers' MoE configs: ``hidden_size``, ``intermediate_size`` (of one expert;
    Qwen2-MoE calls it ``moe_intermediate_size``), ``num_experts`` (Mixtral: ``num_local_experts``),
    ``num_experts_per_tok`` (K), ``router_aux_loss_coef``, ``norm_topk_prob`` (renormalise the K gates; Mixtral
    always does). ``experts_implementation``: ``"grouped_mm"`` (default: the N*K (token, expert) pairs sorted by
    expert, one grouped matrix product per projection, no Python loop over experts) or ``"eager"`` (a reference
    loop over the experts, as transformers' eager Mixtral block; for checks only).

    ``forward(hidden_states)`` takes ``(..., hidden_size)`` and returns ``(output, aux_loss)``, the output of the
    input's shape and ``aux_loss`` = ``router_aux_loss_coef`` * :func:`load_balancing_loss` (add it to the task
    loss); with ``output_router_logits=True`` it returns ``(output, aux_loss, router_logits)``.
    """

    def __init__(
        self,
        hidden_size: int,
        intermediate_size: int,
        num_experts: int,
        num_experts_per_tok: int,
        router_aux_loss_coef: float = 0.01,
        norm_topk_prob: bool = True,
        experts_implementation: str = "grouped_mm",
    ) -> None:
        super().__init__()
        for name, value in (
            ("hidden_size", hidden_size),
            ("intermediate_size", intermediate_size),
            ("num_experts", num_experts),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.num_experts_per_tok = _check_k(num_experts_per_tok, num_experts)
        if not (isinstance(router_aux_loss_coef, int | float) and math.isfinite(router_aux_loss_coef)):
            raise ValueError(f"router_aux_loss_coef must be a finite number, got {router_aux_loss_coef!r}")
        if router_aux_loss_coef < 0:
            raise ValueError(f"router_aux_loss_coef must be >= 0, got {router_aux_loss_coef}")
        if experts_implementation not in EXPERTS_IMPLEMENTATIONS:
            raise ValueError(f"experts_implementation must be one of {EXPERTS_IMPLEMENTATIONS}")
        if experts_implementation == "grouped_mm" and not hasattr(F, "grouped_mm"):
            warnings.warn("torch has no grouped_mm; falling back to the eager expert loop", stacklevel=2)
            experts_implementation = "eager"
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_experts = num_experts
        self.router_aux_loss_coef = float(router_aux_loss_coef)
        self.norm_topk_prob = bool(norm_topk_prob)
        self.experts_implementation = experts_implementation
        self.gate = nn.Linear(hidden_size, num_experts, bias=False)  # the router (transformers' name)
        # (expert, in, out) layouts, ready for grouped_mm: x @ gate_up_proj[e] -> [gate | up]
        self.gate_up_proj = nn.Parameter(torch.empty(num_experts, hidden_size, 2 * intermediate_size))
        self.down_proj = nn.Parameter(torch.empty(num_experts, intermediate_size, hidden_size))
        self.reset_parameters()

    @classmethod
    def from_config(cls, config: Any, **overrides: Any) -> TopKMoE:
        """Build from a transformers MoE config (Mixtral, Qwen2-MoE, OLMoE) or any object with those fields."""

        def pick(*names: str, default: Any = None) -> Any:
            for n in names:
                if getattr(config, n, None) is not None:
                    return getattr(config, n)
            if default is None:
                raise ValueError(f"config has none of {names}")
            return default

        kwargs = {
            "hidden_size": pick("hidden_size"),
            "intermediate_size": pick("moe_intermediate_size", "intermediate_size"),
            "num_experts": pick("num_local_experts", "num_experts"),
            "num_experts_per_tok": pick("num_experts_per_tok"),
            "router_aux_loss_coef": pick("router_aux_loss_coef", default=0.01),
            "norm_topk_prob": pick("norm_topk_prob", default=True),
        }
        return cls(**(kwargs | overrides))

    def reset_parameters(self) -> None:
        """nn.Linear's default initialisation, per expert: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        nn.init.kaiming_uniform_(self.gate.weight, a=math.sqrt(5))
        nn.init.uniform_(self.gate_up_proj, -1 / math.sqrt(self.hidden_size), 1 / math.sqrt(self.hidden_size))
        bound = 1 / math.sqrt(self.intermediate_size)
        nn.init.uniform_(self.down_proj, -bound, bound)

    def extra_repr(self) -> str:
        return (
            f"hidden_size={self.hidden_size}, intermediate_size={self.intermediate_size}, "
            f"num_experts={self.num_experts}, num_experts_per_tok={self.num_experts_per_tok}, "
            f"norm_topk_prob={self.norm_topk_prob}, router_aux_loss_coef={self.router_aux_loss_coef}, "
            f"experts_implementation={self.experts_implementation!r}"
        )

    def forward(self, hidden_states: torch.Tensor, output_router_logits: bool = False) -> tuple[torch.Tensor, ...]:
        if not isinstance(hidden_states, torch.Tensor):
            raise TypeError(f"hidden_states must be a torch.Tensor, got {type(hidden_states).__name__}")
        if hidden_states.ndim == 0 or hidden_states.shape[-1] != self.hidden_size:
            raise ValueError(
                f"hidden_states must have shape (..., hidden_size={self.hidden_size}), got {tuple(hidden_states.shape)}"
            )
        if not hidden_states.is_floating_point():
            raise TypeError(f"hidden_states must be a floating-point tensor, got {hidden_states.dtype}")
        dtype = self.gate.weight.dtype
        if hidden_states.dtype != dtype and not torch.is_autocast_enabled(hidden_states.device.type):
            raise TypeError(f"hidden_states are {hidden_states.dtype} but the layer is {dtype}: cast one to the other")
        shape = hidden_states.shape
        x = hidden_states.reshape(-1, self.hidden_size)
        router_logits = self.gate(x)
        if x.shape[0] and not bool(torch.isfinite(router_logits).all()):
            raise ValueError("hidden_states hold NaN or inf (the router logits are not finite)")
        weights, experts, probs = route(router_logits, self.num_experts_per_tok, self.norm_topk_prob)
        if self.experts_implementation == "grouped_mm":
            out = self._experts_grouped(x, experts, weights.to(x.dtype))
        else:
            out = self._experts_eager(x, experts, weights.to(x.dtype))
        aux = self.router_aux_loss_coef * load_balancing_loss(probs, experts, self.num_experts)
        out = out.reshape(shape)
        return (out, aux, router_logits) if output_router_logits else (out, aux)

    def _swiglu(self, gate_up: torch.Tensor, width: int | None = None) -> torch.Tensor:
        gate, up = gate_up.split(width or self.intermediate_size, dim=-1)
        return F.silu(gate) * up

    def _experts_grouped(self, x: torch.Tensor, experts: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Sort the N*K (token, expert) pairs by expert; each projection is one grouped_mm over the groups."""
        k = experts.shape[1]
        flat = experts.reshape(-1)
        order = torch.argsort(flat, stable=True)
        token = order // k  # pair n*K + j belongs to token n
        ends = torch.bincount(flat, minlength=self.num_experts).cumsum(0).to(torch.int32)
        xs = x.index_select(0, token)
        gate_up, down, pad_h = self._aligned_weights(x.element_size())
        if pad_h:
            xs = F.pad(xs, (0, pad_h))
        hidden = self._swiglu(F.grouped_mm(xs, gate_up, offs=ends), gate_up.shape[-1] // 2)
        ys = F.grouped_mm(hidden, down, offs=ends)[:, : self.hidden_size]
        ys = ys * weights.reshape(-1, 1).index_select(0, order)
        return torch.zeros_like(x).index_add_(0, token, ys)

    def _aligned_weights(self, element_size: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        """grouped_mm needs 16-byte row strides: zero-pad hidden and intermediate sizes to a multiple (exact: the
        padded rows and columns contribute nothing, silu(0) * 0 = 0). A no-op at aligned sizes."""
        step = max(1, 16 // element_size)
        h, i, e = self.hidden_size, self.intermediate_size, self.num_experts
        pad_h, pad_i = -h % step, -i % step
        if not (pad_h or pad_i):
            return self.gate_up_proj, self.down_proj, 0
        gate_up = F.pad(self.gate_up_proj.view(e, h, 2, i), (0, pad_i, 0, 0, 0, pad_h)).reshape(e, h + pad_h, -1)
        down = F.pad(self.down_proj, (0, pad_h, 0, pad_i))
        return gate_up, down, pad_h

    def _experts_eager(self, x: torch.Tensor, experts: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Reference: a Python loop over the experts that received tokens (transformers' eager Mixtral path)."""
        out = torch.zeros_like(x)
        for e in torch.unique(experts).tolist():
            token, slot = torch.where(experts == e)
            y = self._swiglu(x[token] @ self.gate_up_proj[e]) @ self.down_proj[e]
            out = out.index_add(0, token, y * weights[token, slot, None])
        return out
