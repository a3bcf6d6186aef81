"""A deliberately mismatched rollout engine, to create the off-policy data TRM is for.

Real pipelines sample with an inference engine (vLLM, SGLang) and train with another (FSDP, Megatron); the two
disagree. :class:`MismatchedRollout` reproduces the four sources the paper names, on any policy that exposes
``step(tokens, state) -> (logits, state)`` (e.g. :class:`GRUPolicy`) or any causal LM returning ``.logits``:

1. **precision**: logits rounded to bfloat16 before sampling (``precision="bf16"``);
2. **routing spikes**: with probability ``spike_p`` per position, N(0, spike_sd^2) noise on every logit of that
   position (a Mixture-of-Experts routing flip, a kernel discontinuity);
3. **top-p at rollout only** (``top_p < 1``): the trainer scores the untruncated distribution;
4. **staleness**: the engine samples with the weights from ``staleness`` calls to :meth:`sync` ago
   (asynchronous RL), while the trainer differentiates the current ones.

The engine returns, per sampled token, the log-probability *under the distribution it actually sampled from*
(what vLLM reports as ``logprobs``), and that full distribution's logits, so both the sample-based detectors and
the exact KL of :func:`icml26.llm.trm.token_divergence` can be computed.
"""

from __future__ import annotations

import copy
import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

__all__ = ["GRUPolicy", "MismatchedRollout", "Rollout"]


class GRUPolicy(nn.Module):
    """A tiny autoregressive policy: embedding -> GRU -> linear head, started from a BOS token (id ``vocab``).

    ``forward(tokens)`` returns ``(B, T, V)`` next-token logits by teacher forcing (position t predicts
    ``tokens[:, t]`` from BOS and ``tokens[:, :t]``); ``step`` advances one token for sampling.
    """

    def __init__(self, vocab: int, hidden: int = 32, embed: int = 16):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab + 1, embed)
        self.gru = nn.GRU(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        bos = torch.full((tokens.shape[0], 1), self.vocab, dtype=torch.long, device=tokens.device)
        hidden, _ = self.gru(self.embed(torch.cat([bos, tokens[:, :-1]], dim=1)))
        return self.head(hidden)

    def initial_tokens(self, batch: int) -> torch.Tensor:
        return torch.full((batch,), self.vocab, dtype=torch.long, device=self.head.weight.device)

    def step(self, tokens: torch.Tensor, state: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """One token: ``(B,)`` previous tokens and ``(B, hidden)`` state (None at the start) -> logits, state.

        The GRU's own weights through ``torch.gru_cell`` (the same arithmetic as one step of ``nn.GRU``, without
        its per-call sequence overhead: sampling is a Python loop over T)."""
        if state is None:
            state = torch.zeros(tokens.shape[0], self.gru.hidden_size, device=tokens.device)
        g = self.gru
        state = torch.gru_cell(self.embed(tokens), state, g.weight_ih_l0, g.weight_hh_l0, g.bias_ih_l0, g.bias_hh_l0)
        return self.head(state), state

    def token_log_probs(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(log pi(y_t | c_t) of the given tokens (B, T), full log-softmax (B, T, V))."""
        logp = torch.log_softmax(self(tokens), dim=-1)
        return logp.gather(-1, tokens[..., None])[..., 0], logp


@dataclass(frozen=True)
class Rollout:
    """What the engine sampled: tokens ``(B, T)``, their log-probs under the engine's own distribution
    ``(B, T)``, that distribution's logits ``(B, T, V)`` (-inf outside top-p) and where spikes hit ``(B, T)``."""

    tokens: torch.Tensor
    logp_roll: torch.Tensor
    logits_roll: torch.Tensor
    spiked: torch.Tensor


def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Nucleus filter: keep the smallest set of most likely tokens whose mass reaches ``top_p``; -inf elsewhere."""
    if top_p >= 1.0:
        return logits
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    cumulative = sorted_logits.softmax(-1).cumsum(-1)
    drop_sorted = (cumulative - sorted_logits.softmax(-1)) >= top_p  # mass before this token already suffices
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, -torch.inf)


class MismatchedRollout:
    """Sample from a corrupted copy of ``policy`` (see the module docstring for the four corruptions)."""

    def __init__(
        self,
        policy: nn.Module,
        *,
        precision: str = "bf16",
        spike_p: float = 0.0,
        spike_sd: float = 0.0,
        top_p: float = 1.0,
        staleness: int = 0,
        temperature: float = 1.0,
    ):
        if precision not in ("bf16", "fp32"):
            raise ValueError(f"precision must be 'bf16' or 'fp32', got {precision!r}")
        if not 0.0 <= spike_p <= 1.0:
            raise ValueError(f"spike_p must be a probability in [0, 1], got {spike_p!r}")
        if not (math.isfinite(spike_sd) and spike_sd >= 0):
            raise ValueError(f"spike_sd must be finite and >= 0, got {spike_sd!r}")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
        if not (isinstance(staleness, int) and staleness >= 0):
            raise ValueError(f"staleness must be an integer >= 0 (syncs of delay), got {staleness!r}")
        if not (math.isfinite(temperature) and temperature > 0):
            raise ValueError(
                f"temperature must be finite and > 0, got {temperature!r} (a negative one would invert the "
                "distribution; greedy decoding, temperature 0, has no sampling distribution to correct for)"
            )
        self.policy, self.precision, self.spike_p, self.spike_sd = policy, precision, spike_p, spike_sd
        self.top_p, self.staleness, self.temperature = top_p, staleness, temperature
        self._engine = copy.deepcopy(policy).eval()
        self._snapshots: deque[dict[str, torch.Tensor]] = deque(maxlen=staleness + 1)
        self.sync()

    def sync(self) -> None:
        """Hand the current trainer weights to the engine; it will use them ``staleness`` syncs from now."""
        self._snapshots.append({k: v.detach().clone() for k, v in self.policy.state_dict().items()})

    def corrupt(self, logits: torch.Tensor, generator: torch.Generator | None = None) -> tuple[torch.Tensor, Any]:
        """Apply precision, spikes, temperature and top-p to a ``(..., V)`` batch of logits."""
        out = logits.float() / self.temperature
        if self.precision == "bf16":
            out = out.to(torch.bfloat16).float()
        spiked = torch.zeros(out.shape[:-1], dtype=torch.bool, device=out.device)
        if self.spike_p > 0 and self.spike_sd > 0:
            spiked = torch.rand(out.shape[:-1], generator=generator, device=out.device) < self.spike_p
            noise = self.spike_sd * torch.randn(out.shape, generator=generator, device=out.device)
            out = out + noise * spiked[..., None]
        return top_p_filter(out, self.top_p), spiked

    @staticmethod
    def _draw(logits: torch.Tensor, generator: torch.Generator | None, gumbel: torch.Tensor | None) -> torch.Tensor:
        if gumbel is not None:  # Gumbel-max with caller-supplied noise: common random numbers across engines
            return (logits + gumbel).argmax(-1)
        return torch.multinomial(logits.softmax(-1), 1, generator=generator)[:, 0]

    @torch.no_grad()
    def sample(
        self,
        batch: int,
        horizon: int,
        generator: torch.Generator | None = None,
        prompt: torch.Tensor | None = None,
        gumbel: torch.Tensor | None = None,
    ) -> Rollout:
        """Sample ``batch`` completions of ``horizon`` tokens (after ``prompt`` (B, P) for causal LMs).

        ``gumbel`` (B, T, V), optional: standard Gumbel noise to sample by Gumbel-max; two engines given the same
        noise draw coupled samples (identical until their distributions first disagree).
        With ``staleness=0`` the engine always uses the trainer's current weights.
        """
        if self.staleness == 0:
            self.sync()
        self._engine.load_state_dict(self._snapshots[0])
        tokens, logps, all_logits, spikes = [], [], [], []
        if hasattr(self._engine, "step"):
            current, state = self._engine.initial_tokens(batch), None
            for t in range(horizon):
                raw, state = self._engine.step(current, state)
                logits, spiked = self.corrupt(raw, generator)
                current = self._draw(logits, generator, None if gumbel is None else gumbel[:, t])
                tokens.append(current)
                logps.append(torch.log_softmax(logits, -1).gather(-1, current[:, None])[:, 0])
                all_logits.append(logits)
                spikes.append(spiked)
        else:  # a causal LM: re-run the prefix each step (fine for the small models this is meant for)
            if prompt is None:
                raise ValueError("a causal LM engine needs a prompt (B, P) of token ids")
            ids = prompt
            for t in range(horizon):
                logits, spiked = self.corrupt(self._engine(input_ids=ids).logits[:, -1], generator)
                current = self._draw(logits, generator, None if gumbel is None else gumbel[:, t])
                ids = torch.cat([ids, current[:, None]], dim=1)
                tokens.append(current)
                logps.append(torch.log_softmax(logits, -1).gather(-1, current[:, None])[:, 0])
                all_logits.append(logits)
                spikes.append(spiked)
        return Rollout(
            torch.stack(tokens, 1), torch.stack(logps, 1), torch.stack(all_logits, 1), torch.stack(spikes, 1)
        )
