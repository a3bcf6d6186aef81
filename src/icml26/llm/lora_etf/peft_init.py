"""Plug ETF initialisation into PEFT: re-initialise LoRA's A after ``get_peft_model``.

PEFT 0.21 has no hook for a new ``init_lora_weights``, so the plug-in pattern is:

1. ``get_peft_model(model, LoraConfig(init_lora_weights=True, ...))`` (kaiming A, zero B; DoRA's magnitude is
   the per-output-feature norm of W0 + s B A = W0, which does not depend on A while B = 0);
2. walk the :class:`peft.tuners.lora.LoraLayer` modules whose adapter is a Linear ``lora_A`` (embedding LoRA
   layers swap the roles, A = 0 and B random, and are skipped; conv layers are skipped too);
3. under ``torch.no_grad()``, overwrite ``lora_A[adapter].weight`` (r x in_features) with a scaled frame and
   check that ``lora_B`` is still zero, so the adapter stays a no-op at init.

**Scale.** A frame rescaled to another norm is also a learning-rate change (the first update is
ΔW ∝ −∇f(W) AᵀA, quadratic in the scale of A). To credit the *shape* of A, every row of A gets the expected
row norm of the baseline it replaces:

- ``"match_kaiming"`` (default): PEFT's default A ~ U(−b, b) with b = 1/√n (kaiming-uniform, a = √5) has
  E‖row‖² = n · b²/3 = 1/3;
- ``"match_gaussian"``: PEFT's ``"gaussian"`` A ~ N(0, 1/r²) has E‖row‖² = n/r²;
- a float: the root-mean-square row norm itself.

A tight frame has equal row norms, so each row gets exactly the target; the simplex ablation too.

**Frames per layer.** Layers with the same (r, n) share one constructed frame (the coherence descent is the
expensive part), and each layer gets it under its own random signed column permutation: A Π S has the same
A Aᵀ, column norms and coherence, so layers get distinct frames at no cost.

**Saving.** The adapter weights carry the initialisation only until training changes them; which init was
used is recorded in ``etf_init.json`` next to PEFT's files by :func:`save_etf_adapter` (read it back with
:func:`read_etf_sidecar`).
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from icml26.llm.lora_etf.frames import FRAME_KINDS, _as_int, _check_seed, etf_matrix, frame_stats

__all__ = [
    "SIDECAR",
    "apply_etf_init",
    "lora_a_init",
    "lora_linear_layers",
    "peft_default_lora_a",
    "read_etf_sidecar",
    "save_etf_adapter",
    "target_row_norm",
]

SIDECAR = "etf_init.json"
_RECORD = "_icml26_etf_init"  # attribute on the PEFT model: {adapter_name: record}


def target_row_norm(n: int, r: int, scale: str | float = "match_kaiming") -> float:
    """The row norm every row of A gets: √(1/3) (PEFT default), √n / r (PEFT "gaussian") or ``scale``."""
    if isinstance(scale, str) and scale == "match_kaiming":
        return math.sqrt(1.0 / 3.0)
    if isinstance(scale, str) and scale == "match_gaussian":
        return math.sqrt(n) / r
    if isinstance(scale, numbers.Real) and not isinstance(scale, bool):
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"a numeric scale is the target row norm and must be positive, got {scale}")
        return float(scale)
    raise ValueError(f"scale must be 'match_kaiming', 'match_gaussian' or a positive float, got {scale!r}")


def scale_rows(A: torch.Tensor, row_norm: float) -> torch.Tensor:
    """A rescaled so that its root-mean-square row norm is ``row_norm`` (‖A‖_F² = r · row_norm²)."""
    return A * (row_norm * math.sqrt(A.shape[0]) / A.norm().clamp_min(1e-30))


def peft_default_lora_a(r: int, n: int, kind: str = "kaiming", generator: torch.Generator | None = None) -> Any:
    """A baseline A drawn like PEFT draws it: ``"kaiming"`` U(−1/√n, 1/√n) (``init_lora_weights=True``) or
    ``"gaussian"`` N(0, 1/r²). Not frames: never pass them off as ETFs."""
    if kind == "kaiming":
        bound = 1.0 / math.sqrt(n)
        return (torch.rand(r, n, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    if kind == "gaussian":
        return torch.randn(r, n, generator=generator, dtype=torch.float64) / r
    raise ValueError(f"kind must be 'kaiming' or 'gaussian', got {kind!r}")


def lora_a_init(kind: str, r: int, n: int, seed: int, scale: str | float = "match_kaiming") -> torch.Tensor:
    """One r x n LoRA A of any kind, rows at the common target norm (float64): a frame (``"untf"``,
    ``"simplex"``, ``"orthogonal"``) or a PEFT baseline (``"kaiming"``, ``"gaussian"``) rescaled to the same
    Frobenius norm, so that initialisations differ in shape only (the norm-matched comparison)."""
    if kind not in (*FRAME_KINDS, "kaiming", "gaussian"):
        raise ValueError(f"kind must be one of {(*FRAME_KINDS, 'kaiming', 'gaussian')}, got {kind!r}")
    row_norm = target_row_norm(n, r, scale)
    if kind in FRAME_KINDS:
        A = etf_matrix(r, n, kind, seed=seed, dtype=torch.float64)
    else:
        A = peft_default_lora_a(
            _as_int(r, "r"), _as_int(n, "n"), kind, torch.Generator().manual_seed(_as_int(seed, "seed"))
        )
    return scale_rows(A, row_norm)


def _is_peft_lora(peft_model: Any) -> bool:
    config = getattr(peft_model, "peft_config", None)
    if not isinstance(config, dict) or not config:
        return False
    return all(getattr(c, "peft_type", None) is not None and str(c.peft_type.value) == "LORA" for c in config.values())


def lora_linear_layers(peft_model: Any, adapter_name: str = "default") -> Iterator[tuple[str, Any]]:
    """(name, layer) for every LoRA layer holding ``adapter_name`` as a Linear ``lora_A`` (embedding and conv
    LoRA layers, whose A is not an r x in_features Linear, are not yielded)."""
    from peft.tuners.lora import LoraLayer

    for name, module in peft_model.named_modules():
        if not isinstance(module, LoraLayer) or adapter_name not in module.lora_A:
            continue
        lora_a = module.lora_A[adapter_name]
        if isinstance(lora_a, torch.nn.Linear) and adapter_name in module.lora_B:
            yield name, module


def _signed_permutation(A: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A Π S: a random permutation and random signs of the columns. A Aᵀ, the column norms, the coherence and
    the rank are unchanged, so every layer gets its own frame with the same certified properties."""
    n = A.shape[1]
    perm = torch.randperm(n, generator=gen)
    signs = torch.randint(0, 2, (n,), generator=gen, dtype=torch.float64) * 2 - 1
    return A.double()[:, perm] * signs


def apply_etf_init(
    peft_model: Any,
    adapter_name: str = "default",
    kind: str = "untf",
    scale: str | float = "match_kaiming",
    seed: int | None = None,
    coherence_iters: int = 100,
) -> Any:
    """Re-initialise every Linear LoRA A of ``adapter_name`` with a scaled frame; B must still be zero.

    ``kind``: ``"untf"`` (exact ETF where one is known, else a minimum-coherence UNTF; the paper's method),
    ``"simplex"`` or ``"orthogonal"`` (ablations). ``scale``: see the module docstring. ``seed`` makes the
    frames reproducible (default: drawn from torch's global generator, like PEFT's own inits). Works for LoRA,
    DoRA and rsLoRA adapters. Returns the model (modified in place); the per-shape frame statistics are stored
    on it and written by :func:`save_etf_adapter`.
    """
    if kind not in FRAME_KINDS:
        raise ValueError(f"kind must be one of {FRAME_KINDS}, got {kind!r}")
    if not _is_peft_lora(peft_model):
        raise ValueError("apply_etf_init needs a PEFT model with LoRA adapters (get_peft_model with a LoraConfig)")
    if adapter_name not in peft_model.peft_config:
        raise ValueError(f"no adapter {adapter_name!r}; the model has {sorted(peft_model.peft_config)}")
    layers = list(lora_linear_layers(peft_model, adapter_name))
    if not layers:
        raise ValueError(f"adapter {adapter_name!r} has no Linear LoRA layer (embedding/conv LoRA is not supported)")
    coherence_iters = _as_int(coherence_iters, "coherence_iters")
    if coherence_iters < 0:
        raise ValueError(f"coherence_iters must be >= 0 (0 skips the coherence descent), got {coherence_iters}")
    target_row_norm(1, 1, scale)  # a bad scale fails here, before any layer is touched
    seed = _check_seed(seed)
    if seed is None:
        seed = int(torch.randint(0, 2**62, (1,)).item())
    gen = torch.Generator().manual_seed(seed)
    frames: dict[tuple[int, int], torch.Tensor] = {}
    stats: dict[str, dict[str, Any]] = {}
    with torch.no_grad():
        for name, layer in layers:
            if getattr(layer, "num_experts", 1) > 1:  # PEFT's ParamWrapper stacks r x num_experts rows in one A
                raise ValueError(f"{name}: LoRA on stacked MoE expert weights (target_parameters) is not supported")
            weight_b = layer.lora_B[adapter_name].weight
            if torch.count_nonzero(weight_b):
                raise ValueError(f"{name}: lora_B is not zero; apply_etf_init re-initialises a fresh adapter only")
            weight_a = layer.lora_A[adapter_name].weight
            r, n = weight_a.shape
            if (r, n) not in frames:
                frames[r, n] = etf_matrix(r, n, kind, coherence_iters, seed=seed, dtype=torch.float64)
                stats[f"{r}x{n}"] = frame_stats(frames[r, n])
            A = scale_rows(_signed_permutation(frames[r, n], gen), target_row_norm(n, r, scale))
            weight_a.copy_(A.to(weight_a.dtype))
    record = {
        "kind": kind,
        "scale": scale,
        "seed": seed,
        "coherence_iters": coherence_iters,
        "layers": len(layers),
        "frames": stats,
    }
    records = dict(getattr(peft_model, _RECORD, {}))
    records[adapter_name] = record
    object.__setattr__(peft_model, _RECORD, records)  # a plain attribute, outside nn.Module's registries
    return peft_model


def save_etf_adapter(peft_model: Any, save_directory: str | Path, **kwargs: Any) -> Path:
    """``peft_model.save_pretrained(save_directory, **kwargs)`` plus ``etf_init.json`` in each adapter's folder
    (PEFT saves the default adapter at the top, others in ``<dir>/<adapter_name>``)."""
    save_directory = Path(save_directory)
    peft_model.save_pretrained(save_directory, **kwargs)
    for adapter, record in getattr(peft_model, _RECORD, {}).items():
        folder = save_directory if adapter == "default" else save_directory / adapter
        if folder.is_dir():
            (folder / SIDECAR).write_text(json.dumps(_jsonable(record), indent=2, sort_keys=True) + "\n")
    return save_directory


def read_etf_sidecar(adapter_directory: str | Path) -> dict[str, Any] | None:
    """The record :func:`save_etf_adapter` wrote next to an adapter, or None if it was not ETF-initialised."""
    path = Path(adapter_directory) / SIDECAR
    return json.loads(path.read_text()) if path.exists() else None


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x
