"""Tokenisation: every scalar of a hierarchical simulation is one token.

A token carries its value, a variable label (which global parameter, which local parameter, which observed
variable), its site (-1 for global parameters), its functional input t (an observation's time; 0 otherwise),
whether it is a target (its velocity is learned) or a condition, and whether it is padding. The attention mask
lets a site's tokens see only their own site and the globals; global tokens see everything.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["GLOBAL_SITE", "Tokens", "attention_mask", "tokenise"]

GLOBAL_SITE = -1


@dataclass(frozen=True)
class Tokens:
    """A batch of token sequences, every field ``[B, L]``."""

    value: torch.Tensor  # float
    label: torch.Tensor  # long: 0..Dg-1 globals, Dg..Dg+Dl-1 locals, Dg+Dl.. observed variables
    site: torch.Tensor  # long: GLOBAL_SITE or 0..S-1
    time: torch.Tensor  # float: functional input
    target: torch.Tensor  # bool
    pad: torch.Tensor  # bool

    def __post_init__(self) -> None:
        shape = self.value.shape
        for name in ("label", "site", "time", "target", "pad"):
            if getattr(self, name).shape != shape:
                raise ValueError(f"token field {name!r} has shape {tuple(getattr(self, name).shape)}, value {shape}")

    def with_values(self, value: torch.Tensor) -> Tokens:
        return Tokens(value, self.label, self.site, self.time, self.target, self.pad)

    def repeat(self, n: int) -> Tokens:
        """Each sequence repeated n times (row i*n + k is a copy of row i)."""
        return Tokens(*(f.repeat_interleave(n, 0) for f in self.fields()))

    def fields(self) -> tuple[torch.Tensor, ...]:
        return self.value, self.label, self.site, self.time, self.target, self.pad

    def __getitem__(self, idx) -> Tokens:
        return Tokens(*(f[idx] for f in self.fields()))


def attention_mask(site: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
    """``[B, L, L]`` bool, True where query i may attend to key j.

    Site tokens see their own site and the globals; globals see every real token; nobody sees padding; every
    token sees itself (so that padding rows stay finite).
    """
    si, sj = site[:, :, None], site[:, None, :]
    allowed = (si == sj) | (si == GLOBAL_SITE) | (sj == GLOBAL_SITE)
    allowed = allowed & ~pad[:, None, :]
    eye = torch.eye(site.shape[1], dtype=torch.bool, device=site.device)
    return allowed | eye


def tokenise(
    theta_global: torch.Tensor,
    theta_local: torch.Tensor,
    x: torch.Tensor,
    times: torch.Tensor,
    mode: str,
    site_mask: torch.Tensor | None = None,
) -> Tokens:
    """Tokens of ``N`` sets: ``theta_global [N, Dg]``, ``theta_local [N, S, Dl]``, ``x``/``times [N, S, n_obs]``.

    ``mode="posterior"``: the parameters are targets, the observations conditions; ``mode="likelihood"``: the
    reverse. ``site_mask [N, S]`` (True = the site exists) pads absent sites, so one batch may mix site counts.
    The order is: globals, then site 0's locals and observations, site 1's, ... (site-major).
    """
    if mode not in ("posterior", "likelihood"):
        raise ValueError(f"mode must be 'posterior' or 'likelihood', got {mode!r}")
    if theta_global.ndim != 2 or theta_local.ndim != 3 or x.ndim != 3:
        raise ValueError(
            "expected theta_global [N, Dg], theta_local [N, S, Dl], x [N, S, n_obs]; got "
            f"{tuple(theta_global.shape)}, {tuple(theta_local.shape)}, {tuple(x.shape)}"
        )
    n, n_sites, dl = theta_local.shape
    dg, n_obs = theta_global.shape[1], x.shape[2]
    if theta_global.shape[0] != n or x.shape[:2] != (n, n_sites) or times.shape != x.shape:
        raise ValueError(
            "mismatched token shapes: theta_global, theta_local, x and times must share N (and S, n_obs); got "
            f"{tuple(theta_global.shape)}, {tuple(theta_local.shape)}, {tuple(x.shape)}, {tuple(times.shape)}"
        )
    dev = x.device
    site_mask = torch.ones(n, n_sites, dtype=torch.bool, device=dev) if site_mask is None else site_mask
    per_site = dl + n_obs
    local_vals = torch.cat([theta_local, x], dim=2)  # [N, S, Dl + n_obs]
    local_time = torch.cat([torch.zeros_like(theta_local), times], dim=2)
    local_label = torch.cat([torch.arange(dg, dg + dl), torch.full((n_obs,), dg + dl)]).to(dev)
    local_is_param = torch.cat([torch.ones(dl, dtype=torch.bool), torch.zeros(n_obs, dtype=torch.bool)]).to(dev)
    is_param = torch.cat([torch.ones(dg, dtype=torch.bool, device=dev), local_is_param.repeat(n_sites)])
    value = torch.cat([theta_global, local_vals.reshape(n, n_sites * per_site)], dim=1)
    time = torch.cat([torch.zeros_like(theta_global), local_time.reshape(n, n_sites * per_site)], dim=1)
    label = torch.cat([torch.arange(dg, device=dev), local_label.repeat(n_sites)]).expand(n, -1)
    site = torch.cat(
        [torch.full((dg,), GLOBAL_SITE, device=dev), torch.arange(n_sites, device=dev).repeat_interleave(per_site)]
    ).expand(n, -1)
    pad = torch.cat(
        [torch.zeros(n, dg, dtype=torch.bool, device=dev), (~site_mask).repeat_interleave(per_site, dim=1)], dim=1
    )
    target = (is_param if mode == "posterior" else ~is_param).expand(n, -1) & ~pad
    return Tokens(value, label.contiguous(), site.contiguous(), time, target.contiguous(), pad)
