"""Claims, profiles and cells: how a paper states what it measures.

A paper's ``reproduce.py`` exposes a :class:`PaperCard` whose :class:`Claim` objects say, for each headline claim of
the abstract: the statement, the metric and which way is better, the method and the baseline(s) it beats (or a
reference value), the statistical test and its minimum effect or margin, and three :class:`Profile` objects
(``smoke``, ``quick``, ``full``) that list the settings and the number of seeds.

A run expands a claim into cells, one per (setting, seed). A cell is a pure function call,
``claim.run(cell) -> {"metrics": {method: {metric: value}}, ...}``, that evaluates the method *and* every
baseline on the same data, so every comparison is paired. Cells are seeded only by ``cell.seed``.

Everything here is torch-free: a CARD can be imported to list, show or plan a paper without its heavy
dependencies; the cell function imports them when it runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, get_args

from icml26._core.io import canonical_json, stable_hash

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "GROUPS",
    "PROFILES",
    "Cell",
    "Claim",
    "Direction",
    "PaperCard",
    "Profile",
    "Test",
    "profiles",
]

PROFILES: tuple[str, ...] = ("smoke", "quick", "full")
GROUPS: tuple[str, ...] = (
    "quant",
    "serving",
    "llm",
    "probabilistic",
    "stats",
    "causal",
    "decision",
    "science",
    "vision",
)
Direction = Literal["higher", "lower"]
Test = Literal["superiority", "noninferiority", "equivalence"]
_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class ClaimError(ValueError):
    """A CARD or claim that is malformed (raised when the CARD is built, not when it runs)."""


@dataclass(frozen=True)
class Profile:
    """The grid a claim runs at one budget: ``settings`` x ``seeds`` cells.

    ``settings`` are JSON-able dicts handed to the cell function (sizes, hyper-parameters, scenario names);
    ``seeds`` is how many seeds (0, 1, ..., seeds-1) each setting runs. ``cell_seconds`` is the expected wall time
    of one cell in seconds on one core of the 2-core reference machine (declared, then checked loosely against
    measured runs): it is how the quick profile's budget is planned. It is not part of the card's config.
    """

    settings: tuple[Mapping[str, Any], ...] = (MappingProxyType({}),)
    seeds: int = 3
    cell_seconds: float | None = None

    def __post_init__(self) -> None:
        settings = tuple(self.settings)
        if not settings:
            raise ClaimError("a profile needs at least one setting (use ({},) for a single default)")
        for s in settings:
            if not isinstance(s, Mapping):
                raise ClaimError(f"a setting must be a mapping, got {type(s).__name__}")
            canonical_json(s)  # raises if not JSON-able
        if not isinstance(self.seeds, int) or self.seeds < 1:
            raise ClaimError(f"seeds must be a positive integer, got {self.seeds!r}")
        if self.cell_seconds is not None and not (math.isfinite(self.cell_seconds) and self.cell_seconds > 0):
            raise ClaimError(f"cell_seconds must be a positive number of seconds, got {self.cell_seconds!r}")
        object.__setattr__(self, "settings", tuple(MappingProxyType(dict(s)) for s in settings))


@dataclass(frozen=True)
class Cell:
    """One unit of work: a cell function at one setting and one seed. Picklable; ``spec()`` is its JSON form.

    Claims that share a cell function, a profile and settings share their cells: the work is done once.
    """

    paper: str
    claim: str
    profile: str
    setting: Mapping[str, Any]
    seed: int
    revision: int = 1
    expects: tuple[str, ...] = ()  # (metric, method, *baselines): what the claim reads from the output
    version: str = field(default_factory=lambda: _package_version())
    function: str = ""  # module.qualname of the cell function

    def spec(self) -> dict[str, Any]:
        """What the result depends on (and so the cache key): not the claim id, not what a claim reads."""
        return {
            "paper": self.paper,
            "function": self.function,
            "profile": self.profile,
            "setting": dict(self.setting),
            "seed": self.seed,
            "revision": self.revision,
            "version": self.version,
        }

    @property
    def key(self) -> str:
        """Stable hash of the spec: the name under which a finished cell is cached (resume).

        It changes with the cell function, the setting, the seed, the claim's revision (bump it when the cell's
        code changes) and the package version; ``--force`` recomputes regardless. A cached cell is reused only
        if it still reports everything the claim reads.
        """
        return stable_hash(self.spec())

    def rng(self, by_setting: bool = False) -> np.random.Generator:
        """A numpy Generator for this cell: every method in the cell must draw its data from it (pairing).

        By default it depends on the seed only, so settings that differ in a size or a hyper-parameter reuse
        the same random stream (common random numbers across settings). ``by_setting=True`` mixes in the
        setting's hash, for settings that must be independent of one another.
        """
        import numpy as np

        if by_setting:
            return np.random.default_rng([self.seed, int(stable_hash(dict(self.setting)), 16)])
        return np.random.default_rng(self.seed)

    def __getitem__(self, name: str) -> Any:
        """``cell["n"]`` reads a setting; a clear KeyError names what the setting lacks."""
        try:
            return self.setting[name]
        except KeyError:
            raise KeyError(f"setting {dict(self.setting)} of {self.paper}/{self.claim} has no {name!r}") from None

    def get(self, name: str, default: Any = None) -> Any:
        return self.setting.get(name, default)


def _package_version() -> str:
    from icml26 import __version__

    return __version__


CellFunction = Callable[[Cell], Mapping[str, Any]]
PlotFunction = Callable[..., None]


@dataclass(frozen=True)
class Claim:
    """One headline claim and how to test it.

    Comparison. In each successful cell the effect is ``d = s * (method - baseline)`` with ``s = +1`` if higher
    is better and ``-1`` if lower is better (so ``d > 0`` means the method is better); with ``relative=True``
    it is divided by ``|baseline|``. ``reference`` replaces a baseline method by a constant (e.g. a nominal
    level ``alpha``). Pairs are pooled over settings and seeds; the verdict rule (``_core.verdict``) then reads
    the mean effect and its 95% paired-bootstrap interval:

    - ``superiority``: the method is better by at least ``min_effect``;
    - ``noninferiority``: the method is worse by less than ``min_effect`` (a margin, e.g. Monte Carlo error);
    - ``equivalence``: the two agree within +/- ``min_effect``.

    ``deterministic=True`` marks exact claims (no sampling noise: one run decides); otherwise at least
    ``min_pairs`` pairs are needed before anything but ``inconclusive`` can be said.
    """

    id: str
    statement: str
    metric: str
    direction: Direction
    method: str
    run: CellFunction
    profiles: Mapping[str, Profile]
    baselines: tuple[str, ...] = ()
    reference: float | None = None
    test: Test = "superiority"
    min_effect: float = 0.0
    relative: bool = False
    paper_figure: str | None = None
    unit: str = ""
    deterministic: bool = False
    min_pairs: int = 3
    revision: int = 1
    data: tuple[str, ...] = ()
    plot: PlotFunction | None = field(default=None, compare=False)
    notes: str = ""

    def __post_init__(self) -> None:
        where = f"claim {self.id!r}"
        if not _ID.match(self.id):
            raise ClaimError(f"{where}: id must be an identifier like 'C1'")
        if self.direction not in get_args(Direction):
            raise ClaimError(f"{where}: direction must be one of {get_args(Direction)}, got {self.direction!r}")
        if self.test not in get_args(Test):
            raise ClaimError(f"{where}: test must be one of {get_args(Test)}, got {self.test!r}")
        object.__setattr__(self, "baselines", tuple(self.baselines))
        object.__setattr__(self, "data", tuple(self.data))
        if (self.reference is None) == (not self.baselines):
            raise ClaimError(f"{where}: give baselines (method names) or a reference value, exactly one of them")
        if self.method in self.baselines:
            raise ClaimError(f"{where}: the method {self.method!r} cannot be its own baseline")
        if self.reference is not None and not math.isfinite(self.reference):
            raise ClaimError(f"{where}: reference must be finite")
        if not (math.isfinite(self.min_effect) and self.min_effect >= 0):
            raise ClaimError(f"{where}: min_effect must be finite and >= 0, got {self.min_effect!r}")
        if self.test != "superiority" and self.min_effect == 0:
            raise ClaimError(f"{where}: a {self.test} test needs a positive margin (min_effect)")
        if self.relative and self.reference == 0:
            raise ClaimError(f"{where}: a relative effect against a reference of 0 is undefined")
        if self.min_pairs < 1:
            raise ClaimError(f"{where}: min_pairs must be >= 1")
        if not callable(self.run):
            raise ClaimError(f"{where}: run must be the cell function")
        missing = [p for p in PROFILES if p not in self.profiles]
        extra = [p for p in self.profiles if p not in PROFILES]
        if missing or extra:
            raise ClaimError(f"{where}: profiles must be exactly {PROFILES}; missing {missing}, unknown {extra}")
        for name, prof in self.profiles.items():
            if not isinstance(prof, Profile):
                raise ClaimError(f"{where}: profile {name!r} must be a Profile")
        object.__setattr__(self, "profiles", MappingProxyType(dict(self.profiles)))

    @property
    def methods(self) -> tuple[str, ...]:
        """The method followed by its baselines: every name a cell must report the metric for."""
        return (self.method, *self.baselines)

    def describe(self) -> dict[str, Any]:
        """The claim as JSON (everything but the functions): part of every card and of the config hash."""
        return {
            "id": self.id,
            "statement": self.statement,
            "metric": self.metric,
            "direction": self.direction,
            "test": self.test,
            "method": self.method,
            "baselines": list(self.baselines),
            "reference": self.reference,
            "min_effect": self.min_effect,
            "relative": self.relative,
            "paper_figure": self.paper_figure,
            "unit": self.unit,
            "deterministic": self.deterministic,
            "min_pairs": self.min_pairs,
            "revision": self.revision,
            "data": list(self.data),
            "notes": self.notes,
        }

    def cells(self, paper: str, profile: str, seeds: int | None = None) -> list[Cell]:
        """Expand the profile into its cells (settings x seeds), in a stable order."""
        prof = self.profiles[profile]
        n_seeds = prof.seeds if seeds is None else seeds
        return [
            Cell(
                paper,
                self.id,
                profile,
                dict(setting),
                seed,
                self.revision,
                (self.metric, *self.methods),
                function=f"{self.run.__module__}.{self.run.__qualname__}",
            )
            for setting in prof.settings
            for seed in range(n_seeds)
        ]


@dataclass(frozen=True)
class PaperCard:
    """What the registry knows of a paper: identity, public API, extra, and its claims.

    ``status`` is ``"planned"`` for a paper whose room (``icml26/<group>/<slug>/``) does not exist yet:
    it is listed but not run.
    """

    slug: str
    title: str
    group: str
    api: str
    extra: str
    claims: tuple[Claim, ...] = ()
    status: Literal["planned", "implemented"] = "implemented"
    summary: str = ""

    def __post_init__(self) -> None:
        if not _ID.match(self.slug) or self.slug != self.slug.lower():
            raise ClaimError(f"paper slug must be lower_snake_case, got {self.slug!r}")
        if self.group not in GROUPS:
            raise ClaimError(f"paper {self.slug!r}: unknown group {self.group!r}; groups are {GROUPS}")
        object.__setattr__(self, "claims", tuple(self.claims))
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ClaimError(f"paper {self.slug!r}: duplicate claim ids {ids}")
        if self.status == "implemented" and not self.claims:
            raise ClaimError(f"paper {self.slug!r}: an implemented paper states at least one claim")

    @property
    def package(self) -> str:
        return f"icml26.{self.group}.{self.slug}"

    def claim(self, claim_id: str) -> Claim:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise KeyError(f"paper {self.slug!r} has no claim {claim_id!r}; it has {[c.id for c in self.claims]}")

    def describe(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "title": self.title,
            "group": self.group,
            "api": self.api,
            "extra": self.extra,
            "status": self.status,
        }

    def plan(self, profile: str, seeds: int | None = None) -> list[tuple[Claim, list[Cell]]]:
        return [(c, c.cells(self.slug, profile, seeds)) for c in self.claims]


Settings = Mapping[str, Any] | Sequence[Mapping[str, Any]]


def profiles(
    smoke: Settings,
    quick: Settings,
    full: Settings,
    seeds: tuple[int, int, int],
    cell_seconds: tuple[float | None, float | None, float | None] = (None, None, None),
) -> dict[str, Profile]:
    """The three profiles of a claim from their settings (one mapping or a sequence), seed counts and expected
    seconds per cell (see :class:`Profile`)."""

    def one(settings: Settings, n: int, cost: float | None) -> Profile:
        grid = (settings,) if isinstance(settings, Mapping) else tuple(settings)
        return Profile(settings=grid, seeds=n, cell_seconds=cost)

    return {
        "smoke": one(smoke, seeds[0], cell_seconds[0]),
        "quick": one(quick, seeds[1], cell_seconds[1]),
        "full": one(full, seeds[2], cell_seconds[2]),
    }
