"""The verdict rule: numbers in, one of ``reproduced`` / ``not_reproduced`` / ``inconclusive`` out.

Verdicts are never set by hand. For each comparison, with ``[lo, hi]`` the 95% interval of the mean effect
(positive = the method is better) and ``e`` the claim's ``min_effect``:

=================  =============================  ================================
test               reproduced                     not_reproduced
=================  =============================  ================================
superiority        lo > 0 and mean >= e           hi < e  (an effect of e is excluded)
noninferiority     lo > -e                        hi < -e (worse by more than e)
equivalence        -e < lo and hi < e             lo >= e or hi <= -e
=================  =============================  ================================

Everything else is ``inconclusive``, as is a comparison with fewer than ``min_pairs`` pairs (unless the claim
is deterministic) or a claim with failed cells. A claim with several baselines is reproduced only if it is
reproduced against each of them, and not reproduced as soon as one comparison says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from icml26._core.fmt import num
from icml26._core.stats import Comparison

__all__ = ["VERDICTS", "Verdict", "combine", "judge"]

Verdict = Literal["reproduced", "not_reproduced", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = ("reproduced", "not_reproduced", "inconclusive")


def judge(
    c: Comparison, *, test: str, min_effect: float, min_pairs: int = 3, deterministic: bool = False
) -> tuple[Verdict, str]:
    """Apply the rule above to one comparison; returns the verdict and a one-line reason."""
    if c.n == 0 or math.isnan(c.effect):
        return "inconclusive", "no successful paired runs"
    if not deterministic and c.n < min_pairs:
        return "inconclusive", f"only {c.n} paired run(s); at least {min_pairs} are needed"
    lo, hi, e = c.ci_low, c.ci_high, min_effect
    if deterministic and c.n == 1:
        span = f"effect {num(c.effect)} (deterministic: one exact run)"
    else:
        span = f"effect {num(c.effect)}, 95% CI [{num(lo)}, {num(hi)}]"
    if test == "superiority":
        if lo > 0 and c.effect >= e:
            return "reproduced", f"{span}: better than {c.baseline}" + (f" by at least {e:g}" if e else "")
        if hi < e:
            return "not_reproduced", f"{span}: an improvement of {e:g} over {c.baseline} is excluded"
        return "inconclusive", f"{span}: the interval straddles the decision bounds (0, {e:g})"
    if test == "noninferiority":
        if lo > -e:
            return "reproduced", f"{span}: not worse than {c.baseline} by more than {e:g}"
        if hi < -e:
            return "not_reproduced", f"{span}: worse than {c.baseline} by more than {e:g}"
        return "inconclusive", f"{span}: the interval contains the margin -{e:g}"
    if test == "equivalence":
        if -e < lo and hi < e:
            return "reproduced", f"{span}: within ±{e:g} of {c.baseline}"
        if lo >= e or hi <= -e:
            return "not_reproduced", f"{span}: differs from {c.baseline} by more than {e:g}"
        return "inconclusive", f"{span}: the interval crosses the margin ±{e:g}"
    raise ValueError(f"unknown test {test!r}")


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """All comparisons must reproduce; any ``not_reproduced`` decides; otherwise inconclusive."""
    if not verdicts:
        return "inconclusive"
    if "not_reproduced" in verdicts:
        return "not_reproduced"
    if all(v == "reproduced" for v in verdicts):
        return "reproduced"
    return "inconclusive"
