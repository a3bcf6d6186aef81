"""Sites, the transformed fake-quantised Linear, calibration (``fit_latmix``) and ``quantize_``."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from icml26.quant._common import mx_qdq
from icml26.quant.latmix.config import LATMiXConfig, MXConfig
from icml26.quant.latmix.transforms import SiteTransform

__all__ = [
    "SiteFit",
    "TransformedQuantLinear",
    "find_sites",
    "fit_latmix",
    "fit_site",
    "fold_and_quantize",
    "quantize_",
]

# Linear layers that read the same input: one transform serves them (Llama/Mistral/Qwen naming)
_SHARED = ({"q_proj", "k_proj", "v_proj"}, {"gate_proj", "up_proj"})


def find_sites(model: nn.Module, skip: tuple[str, ...] = ("lm_head",)) -> dict[str, list[str]]:
    """Transform sites: site name -> names of the Linear layers that consume its input.

    q/k/v share one site (``...self_attn.qkv``) and gate/up another (``...mlp.gate_up``); every other Linear
    (o_proj, down_proj, ...) not matched by ``skip`` is a site of its own. A Llama layer has four sites.
    """
    sites: dict[str, list[str]] = {}
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear) or any(name.endswith(s) for s in skip):
            continue
        parent, _, leaf = name.rpartition(".")
        group = next((g for g in _SHARED if leaf in g), None)
        site = f"{parent}.{'qkv' if 'q_proj' in group else 'gate_up'}" if group else name
        sites.setdefault(site, []).append(name)
    return sites


def fold_and_quantize(
    weight: torch.Tensor, bias: torch.Tensor | None, transform: SiteTransform | None, config: MXConfig
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(Q(W A^{-T}), bias - b Q(W A^{-T})^T) of one consumer Linear, in fp32, detached."""
    with torch.no_grad():
        w = weight.detach().float()
        folded = w if transform is None else transform.fold(w)
        q = mx_qdq(folded, config.elem, config.block_size, config.scale_mode) if config.weights else folded
        shift = None if transform is None else transform.shift()
        new_bias = None if bias is None else bias.detach().float().clone()
        if shift is not None:
            correction = -(shift.detach() @ q.T)
            new_bias = correction if new_bias is None else new_bias + correction
        return q, new_bias


class TransformedQuantLinear(nn.Module):
    """y = (Q(x A + b) - b) Q(W A^{-T})^T + bias: an online transform, the folded MX weight, the bias correction.

    ``transform`` (frozen: its parameters no longer require grad) may be shared by several layers (q/k/v). The
    weight is folded and quantised once, in fp32; the constant -b Q(W A^{-T})^T is merged into the bias, so with
    quantisation off the layer equals the original up to float rounding.
    """

    def __init__(self, linear: nn.Linear, transform: SiteTransform | None, config: MXConfig) -> None:
        super().__init__()
        self.config = config
        self.in_features, self.out_features = linear.in_features, linear.out_features
        if transform is not None:
            transform.requires_grad_(False)
        self.transform = transform
        weight, bias = fold_and_quantize(linear.weight, linear.bias, transform, config)
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.bias = None if bias is None else nn.Parameter(bias, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.config
        z = x if self.transform is None else self.transform(x)  # x A + b, what the quantiser sees
        if c.activations:
            z = mx_qdq(z, c.elem, c.block_size, c.scale_mode)
        # (Q(xA + b) - b) W'^T = Q(xA + b) W'^T - b W'^T: the second term is already in the bias
        return nn.functional.linear(z, self.weight, self.bias)

    def extra_repr(self) -> str:
        c = self.config
        kind = "none" if self.transform is None else type(self.transform).__name__
        return f"in={self.in_features}, out={self.out_features}, {c.fmt}, transform={kind}"


@dataclass
class SiteFit:
    """What fitting one site did: relative layer-output error (calibration tokens, every row) at the start and at
    the kept transform, the step kept (``steps``, or 0 when the start scored lower and was kept), cond(A) and the
    seconds it took."""

    site: str
    start_loss: float
    final_loss: float
    best_step: int
    cond: float
    seconds: float


def _site_loss(
    transform: SiteTransform,
    x: torch.Tensor,
    w: torch.Tensor,
    y: torch.Tensor,
    config: Any,
    rows: torch.Tensor | None = None,
) -> torch.Tensor:
    """Relative squared error of the quantised site output (Q(xA + b) - b) Q(W A^{-T})^T against y = x W^T,
    on the output rows ``rows`` of W (all when None)."""
    if rows is not None:
        w, y = w[rows], y[:, rows]
    denom = (y**2).sum().clamp_min(1e-30)
    block_x = x.shape[-1] if config.objective == "row_scale" else config.block_size
    z = transform(x)
    shift = transform.shift()
    zq = mx_qdq(z, config.elem, block_x, config.scale_mode, ste=config.ste) if config.activations else z
    if shift is not None:
        zq = zq - shift
    wf = transform.fold(w)
    wq = mx_qdq(wf, config.elem, block_x, config.scale_mode, ste=config.ste) if config.weights else wf
    loss = ((zq @ wq.T - y) ** 2).sum() / denom
    if config.cond_penalty > 0:
        s = torch.linalg.svdvals(transform.blocks())
        loss = loss + config.cond_penalty * torch.log(s[:, 0] / s[:, -1]).mean()
    return loss


def fit_site(transform: SiteTransform, x: torch.Tensor, weight: torch.Tensor, config: Any, site: str = "") -> SiteFit:
    """Fit one site's transform in place: Adam on :func:`_site_loss` with straight-through gradients through
    both MX quantisers. ``x``: (tokens, d) FP inputs of the site; ``weight``: its consumers' weights stacked
    (out, d). An :class:`InvertibleAffine`'s bias starts at -mean(x A) (the translation that centres the
    transformed activations) on the scale ``bias_scale`` = rms(x A)."""
    import time

    start = time.perf_counter()
    x, weight = x.detach().float(), weight.detach().float()
    with torch.no_grad():
        y = x @ weight.T
        if getattr(transform, "beta", None) is not None:
            z = transform(x)
            transform.bias_scale.fill_(float(z.pow(2).mean().sqrt().clamp_min(1e-12)))
            transform.beta.copy_(-z.mean(0) / transform.bias_scale)
    params = [p for p in transform.parameters() if p.requires_grad]
    start_params = [p.detach().clone() for p in params]
    with torch.no_grad():
        start_loss = float(_site_loss(transform, x, weight, y, config))
    n_rows = weight.shape[0]
    generator = torch.Generator().manual_seed(config.seed + zlib.crc32(site.encode()))
    sample = config.max_rows is not None and config.max_rows < n_rows
    if params and config.steps:
        opt = torch.optim.Adam(params, lr=config.lr)
        with torch.enable_grad():
            for step in range(config.steps):
                rows = torch.randperm(n_rows, generator=generator)[: config.max_rows] if sample else None
                loss = _site_loss(transform, x, weight, y, config, rows)
                if not math.isfinite(float(loss.detach())):
                    raise ValueError(f"site {site!r}: the calibration loss became {float(loss)} at step {step}")
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
    with torch.no_grad():
        final_loss = float(_site_loss(transform, x, weight, y, config))  # every row, like the start
        kept = config.steps
        if not math.isfinite(final_loss) or (config.keep_best and start_loss < final_loss):
            for p, p0 in zip(params, start_params, strict=True):
                p.copy_(p0)
            final_loss, kept = start_loss, 0
        for p in params:
            p.requires_grad_(False)
    return SiteFit(site, start_loss, final_loss, kept, transform.cond(), time.perf_counter() - start)


def _calibration_tokens(calib_ids: Any, n_tokens: int) -> torch.Tensor:
    """(rows, length) LongTensor holding at least ``n_tokens`` tokens, with one clear error for bad input."""
    if calib_ids is None:
        raise ValueError("a learned transform needs calibration text: pass calib_ids (token ids, (n, length))")
    if not isinstance(calib_ids, torch.Tensor) or calib_ids.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"calib_ids must be an integer torch.Tensor of token ids, got {type(calib_ids).__name__}")
    ids = calib_ids[None] if calib_ids.ndim == 1 else calib_ids
    if ids.ndim != 2:
        raise ValueError(f"calib_ids must have shape (length,) or (n, length), got {tuple(calib_ids.shape)}")
    if ids.numel() < n_tokens:
        raise ValueError(
            f"the calibration text is too short: {ids.numel()} tokens, n_calib_tokens={n_tokens} needed "
            "(pass more text or lower n_calib_tokens)"
        )
    rows = -(-n_tokens // ids.shape[1])
    return ids[:rows].long()


def fit_latmix(
    model: nn.Module,
    calib_ids: torch.Tensor,
    config: Any = None,
    log: list[SiteFit] | None = None,
    progress: Callable[[SiteFit], None] | None = None,
) -> dict[str, SiteTransform]:
    """Fit one transform per site on the FP model's activations of ``calib_ids`` (layer-wise: every site sees
    full-precision inputs). Returns site name -> fitted transform; ``log`` (a list) receives one
    :class:`SiteFit` per site. ``config``: :class:`LATMiXConfig` (default) or :class:`CayleyConfig`."""
    config = LATMiXConfig() if config is None else config
    if not getattr(config, "learned", False):
        raise TypeError(f"fit_latmix needs a LATMiXConfig or CayleyConfig, got {type(config).__name__}")
    ids = _calibration_tokens(calib_ids, config.n_calib_tokens)
    sites = find_sites(model, config.skip)
    if not sites:
        raise ValueError("the model has no nn.Linear layer to transform (or all are in config.skip)")
    transforms: dict[str, SiteTransform] = {}
    hooks = []

    def hook(site: str, index: int, names: list[str]) -> Callable[..., None]:
        def fit(module: nn.Module, args: tuple[Any, ...]) -> None:
            x = args[0].detach().reshape(-1, args[0].shape[-1])[: config.n_calib_tokens]
            weight = torch.cat([model.get_submodule(n).weight for n in names], 0)
            transform = config.make_transform(x.shape[-1], index)
            record = fit_site(transform, x, weight, config, site)
            transforms[site] = transform
            if log is not None:
                log.append(record)
            if progress is not None:
                progress(record)

        return fit

    for index, (site, names) in enumerate(sites.items()):
        hooks.append(model.get_submodule(names[0]).register_forward_pre_hook(hook(site, index, names)))
    try:
        with torch.no_grad():
            model(input_ids=ids)
    finally:
        for h in hooks:
            h.remove()
    missing = [s for s in sites if s not in transforms]
    if missing:
        raise RuntimeError(f"sites never reached by the forward pass: {missing[:5]}")
    return transforms


def quantize_(
    model: nn.Module,
    config: MXConfig,
    calib_ids: torch.Tensor | None = None,
    transforms: dict[str, SiteTransform] | None = None,
) -> nn.Module:
    """Replace, in place, every Linear (but ``config.skip``) with a :class:`TransformedQuantLinear`.

    Learned configs (LATMiX, Cayley) fit their transforms on ``calib_ids`` first (or take ``transforms`` from
    :func:`fit_latmix`); fixed ones (:class:`MXConfig`, :class:`HadamardConfig`) need no calibration. Raises,
    one clear error each, on a model already quantised, hidden sizes not divisible by the block, a singular or
    ill-conditioned transform (cond(A) above ``max_cond``), and missing or too-short calibration text.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"quantize_ takes a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(config, MXConfig):
        raise TypeError(
            f"config must be an MXConfig, HadamardConfig, CayleyConfig or LATMiXConfig, got {type(config).__name__}"
        )
    if any(isinstance(m, TransformedQuantLinear) for m in model.modules()):
        raise ValueError("the model is already quantised; quantise a fresh full-precision copy instead")
    sites = find_sites(model, config.skip)
    if not sites:
        raise ValueError("the model has no nn.Linear layer to quantise (or all are in config.skip)")
    bad = [n for names in sites.values() for n in names if model.get_submodule(n).in_features % config.block_size]
    if bad:
        raise ValueError(
            f"in_features not a multiple of the MX block size {config.block_size} in {bad[:5]}; add them to skip"
        )
    if transforms is None:
        if config.learned:
            transforms = fit_latmix(model, calib_ids, config)
        else:
            transforms = {}
            for index, (site, names) in enumerate(sites.items()):
                t = config.make_transform(model.get_submodule(names[0]).in_features, index)
                if t is not None:
                    transforms[site] = t
    max_cond = getattr(config, "max_cond", math.inf)
    for site, t in transforms.items():
        if site not in sites:
            raise ValueError(f"transforms names a site the model does not have: {site!r}")
        cond = t.cond()
        if not cond <= max_cond:
            raise ValueError(
                f"the transform of site {site!r} is singular or ill-conditioned: cond(A) = {cond:.3g} > "
                f"max_cond = {max_cond:g}; refit with cond_penalty > 0 or a smaller lr"
            )
    for site, names in sites.items():
        for name in names:
            parent, _, leaf = name.rpartition(".")
            owner = model.get_submodule(parent) if parent else model
            setattr(owner, leaf, TransformedQuantLinear(owner.get_submodule(leaf), transforms.get(site), config))
    return model
