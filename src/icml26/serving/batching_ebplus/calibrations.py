"""The official repository's published step-cost constants, with provenance (data only; no code is shared).

Two kinds of numbers are published by the authors in weifang231/eb-vllm, ``reproduce/calibration/``:

1. **Step calibrations** ``pd_calibration_<model>_<GPU>.json``: prefill T_p = alpha_p + beta_p L and decode
   T_d = alpha_d + beta_d k, each an ordinary least-squares line through the median GPU time (CUDA events around
   one ``execute_model`` call, ``enforce_eager=True``, fp16) of single steps: one prefill of L in
   {256, 512, 1024, 2048, 4096} tokens, or one decode step of k in {16, ..., 1024} requests at 512 tokens of
   context (20 timed repeats after 5 warm-ups; ``vllm/v1/core/sched/calibration.py``). These are *step-level*
   (kernel) costs. Fourteen (model, GPU) pairs are published; all are below.
2. **Mixed-batching fits** ``beta_mb_Qwen3-8B_<GPU>.json``: beta_MB(r) = a + b r + c r^2, "least-squares
   quadratic on 1/tok_throughput vs decode_ratio r" over three *end-to-end* vLLM v1 (mixed batching) runs
   (decode-heavy, balanced, prefill-heavy synthetic loads; the H200 file lists them). It is an inverse
   end-to-end throughput, not a step cost: ``cost.LinearStepCost`` explains what that means for a simulator.
   Only Qwen3-8B on H200 and RTX PRO 6000 is published.

Keys are normalised names: the model's Hugging Face id without its organisation, lower case, ``-`` and ``.``
as ``_`` (``Qwen/Qwen3-8B`` -> ``qwen3_8b``), and our GPU preset names (``h200``, ``rtx_pro_6000``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OFFICIAL_MB_FITS",
    "OFFICIAL_STEP_CALIBRATIONS",
    "MixedBatchFit",
    "StepCalibration",
    "calibration_key",
    "official_mb_fit",
    "official_step_calibration",
]

_SOURCE = "weifang231/eb-vllm, reproduce/calibration/"


@dataclass(frozen=True)
class StepCalibration:
    """alpha_p, beta_p (s, s/token) and alpha_d, beta_d (s, s/request) of one (model, GPU), as published."""

    model: str
    gpu: str
    alpha_p: float
    beta_p: float
    alpha_d: float
    beta_d: float
    device_name: str
    timestamp: str
    prefill_r2: float
    decode_r2: float
    source: str

    @property
    def provenance(self) -> str:
        return f"{self.source} (device {self.device_name!r}, measured {self.timestamp}, fp16, eager)"


@dataclass(frozen=True)
class MixedBatchFit:
    """beta_MB(r) = a + b r + c r^2 (s/token): inverse end-to-end MB throughput against the decode share r."""

    model: str
    gpu: str
    coeffs: tuple[float, float, float]
    source: str
    fit_points: tuple[tuple[float, float], ...] = ()  # (r, end-to-end tokens/s) where the file lists them

    def inverse_throughput(self, r: float) -> float:
        a, b, c = self.coeffs
        return a + b * r + c * r * r


_H200, _RTX = "NVIDIA H200", "NVIDIA RTX PRO 6000 Blackwell Server Edition"


def _cal(model: str, gpu: str, file_model: str, file_gpu: str, values: tuple[float, ...], when: str) -> StepCalibration:
    ap, bp, ad, bd, r2p, r2d = values
    device = _H200 if gpu == "h200" else _RTX
    return StepCalibration(
        model, gpu, ap, bp, ad, bd, device, when, r2p, r2d, f"{_SOURCE}pd_calibration_{file_model}_{file_gpu}.json"
    )


# (alpha_p, beta_p, alpha_d, beta_d, prefill R^2, decode R^2), transcribed from the published JSON files.
OFFICIAL_STEP_CALIBRATIONS: dict[tuple[str, str], StepCalibration] = {
    (c.model, c.gpu): c
    for c in (
        _cal("qwen3_8b", "h200", "Qwen3-8B", "H200",
             (1.2785933415095027e-3, 2.4852551825304505e-5, 8.921181622454422e-3, 4.586467522217373e-5,
              0.9968100479612307, 0.9827051743169257), "2026-04-30"),
        _cal("qwen3_8b", "rtx_pro_6000", "Qwen3-8B", "RTXPRO6000",
             (4.691170692443847e-3, 5.007938367705191e-5, 1.0375998928844651e-2, 1.0388105329650523e-4,
              0.9999902393631898, 0.9948090179708354), "2026-05-17"),
        _cal("qwen3_30b_a3b", "h200", "Qwen3-30B-A3B", "H200",
             (1.7539635260899862e-2, 1.3469461722159253e-5, 2.4418378779002728e-2, 2.427040676401368e-5,
              0.9653034519923194, 0.9252576309982744), "2026-05-14"),
        _cal("qwen3_30b_a3b", "rtx_pro_6000", "Qwen3-30B-A3B", "RTXPRO6000",
             (3.113881095250448e-2, 2.690142090682701e-5, 2.2419668588803864e-2, 1.2194415172550724e-4,
              0.9936058647733919, 0.9715175897919968), "2026-05-17"),
        _cal("llama_3_1_8b_instruct", "h200", "Llama-3.1-8B-Instruct", "H200",
             (3.467386563619085e-4, 2.4204084930080235e-5, 6.790685528010598e-3, 4.439905141646743e-5,
              0.998012882631373, 0.9903094205789555), "2026-05-14"),
        _cal("llama_3_1_8b_instruct", "rtx_pro_6000", "Meta-Llama-3.1-8B-Instruct", "RTXPRO6000",
             (2.0509098370870144e-3, 4.9872168950656396e-5, 9.764624062893613e-3, 9.502570318690851e-5,
              0.999609778038592, 0.9914566536532566), "2026-05-18"),
        _cal("mistral_7b_v0_1", "h200", "Mistral-7B-v0.1", "H200",
             (1.0030984878540983e-4, 2.4207941707103482e-5, 6.682228413061882e-3, 4.1605711188719805e-5,
              0.9979660460955366, 0.9871337023984256), "2026-05-14"),
        _cal("mistral_7b_v0_1", "rtx_pro_6000", "Mistral-7B-v0.1", "RTXPRO6000",
             (1.559536576271059e-3, 4.9322068556061666e-5, 1.0375998928844651e-2, 2.2730061297666343e-4,
              0.9996351818548412, 0.9674840886863232), "2026-05-18"),
        _cal("mathstral_7b_v0_1", "h200", "Mathstral-7B-v0.1", "H200",
             (7.691303888966716e-6, 2.4394032865842816e-5, 6.754543391117803e-3, 4.1342122525437196e-5,
              0.9976925320821995, 0.9880244115298025), "2026-05-14"),
        _cal("mathstral_7b_v0_1", "rtx_pro_6000", "Mathstral-7B-v0.1", "RTXPRO6000",
             (1.617078304290781e-3, 4.9749701253829454e-5, 9.310562751346153e-3, 9.099712823263966e-5,
              0.999606101735627, 0.9958306007829167), "2026-05-18"),
        _cal("qwen2_5_coder_7b", "h200", "Qwen2.5-Coder-7B", "H200",
             (1.1742031574249467e-4, 2.350349425368251e-5, 6.229377358415772e-3, 3.246559941385152e-5,
              0.9981808316178389, 0.984568998519028), "2026-05-14"),
        _cal("qwen2_5_coder_7b", "rtx_pro_6000", "Qwen2.5-Coder-7B", "RTXPRO6000",
             (3.2626255353292166e-3, 4.5646888454274455e-5, 9.601563404374607e-3, 6.943932264451717e-5,
              0.9993608992882262, 0.9932201896050387), "2026-05-18"),
        _cal("deepseek_r1_distill_qwen_7b", "h200", "DeepSeek-R1-Distill-Qwen-7B", "H200",
             (2.400831977526427e-4, 2.3310424862629777e-5, 6.202432205466764e-3, 3.244240193495329e-5,
              0.9981448330357982, 0.9854168504992578), "2026-05-14"),
        _cal("deepseek_r1_distill_qwen_7b", "rtx_pro_6000", "DeepSeek-R1-Distill-Qwen-7B", "RTXPRO6000",
             (3.434715787569695e-3, 4.5009022673732164e-5, 9.534108326106249e-3, 6.914207053262485e-5,
              0.9992494221712385, 0.9936011274881132), "2026-05-18"),
    )
}  # fmt: skip

OFFICIAL_MB_FITS: dict[tuple[str, str], MixedBatchFit] = {
    ("qwen3_8b", "h200"): MixedBatchFit(
        "qwen3_8b",
        "h200",
        (2.493675e-05, 5.192856e-05, 1.477785e-05),
        f"{_SOURCE}beta_mb_Qwen3-8B_H200.json (2026-05-16; data: v1 e2e grid search, pre-KV-aware)",
        ((0.889, 12081.0), (0.5, 18317.0), (0.111, 32374.0)),
    ),
    ("qwen3_8b", "rtx_pro_6000"): MixedBatchFit(
        "qwen3_8b",
        "rtx_pro_6000",
        (6.29342675989941e-05, 1.9689261661008702e-04, 9.8989734316548e-06),
        f"{_SOURCE}beta_mb_Qwen3-8B_RTXPRO6000.json (fit points not listed in the file)",
    ),
}


def calibration_key(model: str, gpu: str) -> tuple[str, str]:
    """Normalise ``("Qwen/Qwen3-8B", "RTX PRO 6000")`` to ``("qwen3_8b", "rtx_pro_6000")``."""
    if not (isinstance(model, str) and isinstance(gpu, str)):
        raise TypeError(f"model and gpu must be strings, got {model!r}, {gpu!r}")
    name = model.rsplit("/", 1)[-1].lower()
    name = re.sub(r"^meta_", "", re.sub(r"[-. ]", "_", name))
    return name, re.sub(r"[-. ]", "_", gpu.lower())


def _lookup(table: dict[tuple[str, str], Any], model: str, gpu: str, what: str) -> Any:
    key = calibration_key(model, gpu)
    if key not in table:
        known = ", ".join(f"{m}/{g}" for m, g in sorted(table))
        raise ValueError(f"no {what} for {model!r} on {gpu!r}; published: {known}")
    return table[key]


def official_step_calibration(model: str, gpu: str) -> StepCalibration:
    """The published (alpha_p, beta_p, alpha_d, beta_d) of ``model`` on ``gpu``; a clear error if none exists."""
    return _lookup(OFFICIAL_STEP_CALIBRATIONS, model, gpu, "official step calibration")


def official_mb_fit(model: str, gpu: str) -> MixedBatchFit:
    """The published end-to-end beta_MB(r) fit; only Qwen3-8B on H200 and RTX PRO 6000 exist."""
    return _lookup(OFFICIAL_MB_FITS, model, gpu, "published mixed-batching fit")
