"""The registry: the explicit list of the 28 papers, and where their CARDs live.

Each paper has a room ``icml26/<group>/<slug>/`` whose ``reproduce.py`` defines ``CARD`` (a
:class:`icml26._core.claims.PaperCard`). A paper without a room is *planned*: it is listed, but not run.
Whether a room exists is read from the file system, so listing papers imports no paper code (and no torch);
only :func:`load_card` imports a ``reproduce.py``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from icml26._core.claims import GROUPS, PaperCard

__all__ = ["PAPERS", "Entry", "RegistryError", "entry", "load_card", "room", "slugs"]

_ROOT = Path(__file__).resolve().parent


class RegistryError(LookupError):
    """An unknown slug, or a CARD that disagrees with its registry entry."""


@dataclass(frozen=True)
class Entry:
    slug: str
    group: str
    title: str
    api: str
    extra: str

    @property
    def package(self) -> str:
        return f"icml26.{self.group}.{self.slug}"


def _e(group: str, slug: str, title: str, api: str) -> Entry:
    return Entry(slug=slug, group=group, title=title, api=f"icml26.{group}.{slug}.{api}", extra=group)


# One line per paper, in the order of ../shared/papers/README.md. The API is the main entry point a user calls.
PAPERS: tuple[Entry, ...] = (
    _e("causal", "ifci_completion", "I-FCI completion", "ifci"),
    _e("decision", "ace_gflownet", "ACE for GFlowNets", "ACETrainer"),
    _e("decision", "aes", "Adaptive Entropy Scheduling", "AdaptiveEntropySchedule"),
    _e("decision", "evo_moe", "Evolution with a mixture of control experts", "EvoMoE"),
    _e(
        "decision",
        "unanimous_lottery",
        "Unanimous lotteries by accept/reject queries",
        "find_unanimous_lottery",
    ),
    _e("llm", "lora_etf", "LoRA with ETF initialisation", "apply_etf_init"),
    _e("llm", "moe_topk", "Optimal top-K for MoE", "optimal_topk"),
    _e("llm", "pearl", "PEARL private decoding", "PearlDecoder"),
    _e("llm", "tie_aware_alignment", "Tie-aware (silent-aware) preference alignment", "tie_aware_loss"),
    _e("llm", "trm", "Trust Region Masking", "trust_region_mask"),
    _e("quant", "latmix", "LATMiX", "LATMiXConfig"),
    _e("quant", "mixfp4", "MixFP4", "MixFP4Config"),
    _e("probabilistic", "mmfld", "Mirror mean-field Langevin dynamics", "MirrorMFLD"),
    _e("probabilistic", "msflow", "MS-Flow", "MSFlow"),
    _e("probabilistic", "pvi", "Predictive variational inference", "PredictiveVI"),
    _e("probabilistic", "tfmpe", "TFMPE hierarchical SBI", "TFMPE"),
    _e("probabilistic", "tilt_matching", "Tilt Matching", "TiltMatching"),
    _e("science", "antic", "ANTIC", "ANTIC"),
    _e("science", "triforces", "TriForces", "TriForces"),
    _e("serving", "batching_ebplus", "EB+ (exclusive vs mixed batching)", "EBPlusScheduler"),
    _e(
        "serving",
        "config_selection",
        "SP-UCB-OLP (configuration selection with admission control)",
        "SPUCBOLP",
    ),
    _e("serving", "fatigue_index", "Fatigue Index", "fatigue_index"),
    _e("stats", "equivariant_spectral", "Equivariant spectral representation learning", "EquivariantSpectral"),
    _e("stats", "ksos_conformal", "Asymmetric kernel-SoS conformal bands", "KSoSConformal"),
    _e("stats", "nammd", "NAMMD closeness test", "NAMMDClosenessTest"),
    _e("stats", "source_screening", "Source screening for shared subspaces", "screen_sources"),
    _e("vision", "detailmaster", "DetailMaster", "DetailMaster"),
    _e("vision", "grounding_3d", "TFT + DSG 3D visual grounding", "TFTGrounding"),
)
_BY_SLUG = {e.slug: e for e in PAPERS}
assert len(_BY_SLUG) == len(PAPERS), "duplicate slug in PAPERS"
assert all(e.group in GROUPS for e in PAPERS), "unknown group in PAPERS"


def slugs() -> tuple[str, ...]:
    return tuple(e.slug for e in PAPERS)


def entry(slug: str) -> Entry:
    try:
        return _BY_SLUG[slug]
    except KeyError:
        close = [s for s in _BY_SLUG if slug.lower() in s or s in slug.lower()]
        hint = f" (did you mean {', '.join(close)}?)" if close else " (see `icml26 list`)"
        raise RegistryError(f"unknown paper {slug!r}{hint}") from None


def room(slug: str) -> Path:
    """The paper's folder, ``icml26/<group>/<slug>/`` (it may not exist yet)."""
    e = entry(slug)
    return _ROOT / e.group / e.slug


def is_implemented(slug: str) -> bool:
    return (room(slug) / "reproduce.py").is_file()


def planned_card(e: Entry) -> PaperCard:
    return PaperCard(slug=e.slug, title=e.title, group=e.group, api=e.api, extra=e.extra, status="planned")


def load_card(slug: str) -> PaperCard:
    """The paper's CARD (importing its ``reproduce.py``), or a planned card if it has no room yet."""
    e = entry(slug)
    if not is_implemented(slug):
        return planned_card(e)
    module = importlib.import_module(f"{e.package}.reproduce")
    card = getattr(module, "CARD", None)
    if not isinstance(card, PaperCard):
        raise RegistryError(f"{e.package}.reproduce must define CARD = PaperCard(...)")
    mismatched = [f for f in ("slug", "group", "title", "api", "extra") if getattr(card, f) != getattr(e, f)]
    if mismatched:
        raise RegistryError(f"{slug}: CARD and registry disagree on {', '.join(mismatched)}")
    return card
