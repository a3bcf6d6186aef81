"""Oracle I-FCI + new rules against causal-learn's FCI with background knowledge, on the same graphs.

Anchor: ``causallearn.search.ConstraintBased.FCI.fci(..., "d_separation", true_dag=..., background_knowledge=F
exogenous)`` -- the baseline a user would pick. Both run on an exact m-separation oracle over the augmented graph
(fresh caches per method). We time three things per graph family:

- causal-learn FCI + background knowledge (its skeleton search, possible-D-SEP, and R0-R10);
- our I-FCI (skeleton over V u F, Zhang's rules interleaved with F-rules 8 and 9);
- our I-FCI + the new local rules, and the orientation phase alone with and without the new rules (the rules
  touch only the orientation phase; the goal is that they add at most 20% to FCI's time).

    .venv/bin/python benchmarks/bench_ifci_completion.py
"""

from __future__ import annotations

import time

import numpy as np

from icml26.causal.ifci_completion.baselines import causallearn_fci
from icml26.causal.ifci_completion.ifci import IFCI_RULES, ifci, learn_skeleton, oracle_from_admg
from icml26.causal.ifci_completion.orientation import orient
from icml26.causal.ifci_completion.random_graphs import random_admg, random_targets
from icml26.causal.ifci_completion.rules import NEW_RULES

FAMILIES = ((5, 100), (6, 60), (7, 30))


def clock(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    print(
        f"{'n':>2} {'graphs':>6} {'causal-learn':>13} {'I-FCI':>8} {'I-FCI+rules':>12} {'ours/cl':>10} "
        f"{'orient':>8} {'orient+rules':>13} {'orient ovh':>10}"
    )
    for n, count in FAMILIES:
        rng = np.random.default_rng(n)
        cases = [(random_admg(n, rng), random_targets(n, rng)) for _ in range(count)]
        t = {"cl": 0.0, "ifci": 0.0, "rules": 0.0, "orient": 0.0, "orient_rules": 0.0}
        for g, targets in cases:
            t["cl"] += clock(lambda g=g, tg=targets: causallearn_fci(oracle_from_admg(g, tg).graph))
            t["ifci"] += clock(lambda g=g, tg=targets: ifci(oracle_from_admg(g, tg)))
            t["rules"] += clock(lambda g=g, tg=targets: ifci(oracle_from_admg(g, tg), new_rules=True))
            skeleton = learn_skeleton(oracle_from_admg(g, targets))
            t["orient"] += clock(lambda s=skeleton: orient(s.copy(), extra_rules=IFCI_RULES))
            t["orient_rules"] += clock(lambda s=skeleton: orient(s.copy(), extra_rules=(*IFCI_RULES, *NEW_RULES)))
        print(
            f"{n:>2} {count:>6} {t['cl']:>12.3f}s {t['ifci']:>7.3f}s {t['rules']:>11.3f}s "
            f"{t['rules'] / t['cl']:>9.1%} {t['orient']:>7.3f}s {t['orient_rules']:>12.3f}s "
            f"{t['orient_rules'] / t['orient'] - 1:>+9.1%}"
        )


if __name__ == "__main__":
    main()
