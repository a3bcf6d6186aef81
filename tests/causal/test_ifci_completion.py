"""Tests of I-FCI, the enumeration completion and the new rules against exact ground truth (oracle: no noise)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.causal.ifci_completion import (
    ADMG,
    ARROW,
    CIRCLE,
    PAG,
    TAIL,
    augment,
    check_environments,
    complete_by_enumeration,
    fci_pag_from_sepsets,
    ifci,
    is_realisable,
    is_valid_mag,
    learn_skeleton,
    oracle_from_admg,
    true_ipag_bruteforce,
)
from icml26.causal.ifci_completion.random_graphs import random_admg, random_targets
from icml26.causal.ifci_completion.study import (
    FIXTURE_CAUSALLEARN,
    FIXTURE_RULES_CLOSE,
    FIXTURE_RULES_OPEN,
    wrong_marks,
)


@pytest.fixture(scope="module")
def classes():
    return true_ipag_bruteforce()


def _sample(classes, step):
    return classes[::step]


# ------------------------------------------------------------------------------------------ PAG / causal-learn
def test_causallearn_convention_on_a_directed_edge():
    """a -> b: causal-learn stores the mark AT a in graph[a, b] (tail = -1) and the mark at b in graph[b, a]."""
    pytest.importorskip("causallearn")
    marks = np.zeros((3, 3), np.int8)
    marks[0, 1], marks[1, 0] = ARROW, TAIL  # X0 -> X1 (ours: marks[a, b] is the mark at b)
    marks[2, 1], marks[1, 2] = ARROW, CIRCLE  # X2 o-> X1: arrow at X1, circle at X2
    pag = PAG(marks, ["X0", "X1", "X2"])
    g = pag.to_causallearn()
    assert g.graph[0, 1] == -1 and g.graph[1, 0] == 1
    assert g.graph[2, 1] == 2 and g.graph[1, 2] == 1
    nodes = g.get_nodes()
    assert g.is_directed_from_to(nodes[0], nodes[1]) and not g.is_directed_from_to(nodes[1], nodes[0])
    assert str(g.get_edge(nodes[1], nodes[2])) in ("X1 <-o X2", "X2 o-> X1")


def test_causallearn_round_trip_random_pags():
    pytest.importorskip("causallearn")
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = 6
        marks = np.zeros((n, n), np.int8)
        for a in range(n):
            for b in range(a + 1, n):
                if rng.random() < 0.6:
                    marks[a, b], marks[b, a] = rng.choice([CIRCLE, ARROW, TAIL], size=2)
        pag = PAG(marks, [f"V{i}" for i in range(n)])
        back = PAG.from_causallearn(pag.to_causallearn())
        assert back.same_graph(pag)


def test_causallearn_fci_output_reads_back_sound(classes):
    """causal-learn's FCI (d-separation oracle + background knowledge) read through our converter: no wrong mark."""
    pytest.importorskip("causallearn")
    from icml26.causal.ifci_completion.baselines import causallearn_fci

    for c in _sample(classes, 60):
        out = causallearn_fci(oracle_from_admg(c.representative(), [{0}]).graph)
        assert wrong_marks(out.marks, c.truth) == 0
        assert out.n_circles() >= int((c.truth == CIRCLE).sum())


# ------------------------------------------------------------------------------------------ m-separation
def test_m_separation_matches_networkx_d_separation_on_latent_dags():
    import networkx as nx

    from icml26.causal.ifci_completion.baselines import latent_dag

    rng = np.random.default_rng(1)
    for _ in range(15):
        g = random_admg(6, rng, p_directed=0.4, p_bidirected=0.3)
        dag = latent_dag(g)
        for _ in range(20):
            x, y = rng.choice(6, 2, replace=False)
            z = {int(v) for v in range(6) if v not in (x, y) and rng.random() < 0.4}
            assert g.m_separated(int(x), int(y), z) == nx.is_d_separator(dag, {int(x)}, {int(y)}, z)


def test_mag_of_fixture_and_validity():
    d, b, t = FIXTURE_CAUSALLEARN
    aug = augment(ADMG.from_edges(4, d, b), t)
    mag = aug.to_mag()
    assert is_valid_mag(mag)
    assert str(mag) == "X0 --> X2; X0 <-> X3; X0 <-- F01; X1 <-> X2; X1 <-> X3; X2 <-- X3"


# ------------------------------------------------------------------------------------------ brute force
def test_bruteforce_classes(classes):
    assert len(classes) == 1135
    assert sum(c.n_admgs for c in classes) == 34752  # acyclic ADMGs with bows on 4 nodes
    for c in classes:
        # F-edges are always F -> Y: no circle at Y (truth[4, y]) nor at F (truth[y, 4])
        assert not (c.truth[4] == CIRCLE).any() and not (c.truth[:, 4] == CIRCLE).any()


def test_ifci_is_sound_and_matches_bruteforce_at_n4(classes):
    """Soundness on every 5th class; at n = 4 with one target, interleaved I-FCI leaves no compelled circle."""
    for c in _sample(classes, 5):
        pag = ifci(oracle_from_admg(c.representative(), [{0}]))
        assert wrong_marks(pag.marks, c.truth) == 0
        assert np.array_equal(pag.marks, c.truth)


def test_completion_equals_bruteforce_from_weaker_input(classes):
    """A harder input than I-FCI's: plain FCI (no F knowledge) with only the F-edges set to F -> Y afterwards.

    The completion must still recover the exact I-PAG, orienting what Rule 9 and the interleaving would have.
    """
    from icml26.causal.ifci_completion.ifci import rule_f_exogenous

    resolved = 0
    for c in _sample(classes, 6):
        weak = fci_pag_from_sepsets(learn_skeleton(oracle_from_admg(c.representative(), [{0}])))
        rule_f_exogenous(weak)
        completed, report = complete_by_enumeration(weak, max_circles=12)
        if report.skipped:
            continue
        assert np.array_equal(completed.marks, c.truth), (str(weak), str(completed), str(c.true_ipag()))
        resolved += int(weak.n_circles() > completed.n_circles())
    assert resolved >= 20  # not vacuous: the completion had real work on many classes


# ------------------------------------------------------------------------------------------ fixtures
def test_causallearn_fixture_is_confirmed_by_bruteforce(classes):
    """The spec's candidate fixture: a one-member class, fully oriented; I-FCI orients it, causal-learn does not."""
    from icml26.causal.ifci_completion.ground_truth import m_separation_signature

    d, b, t = FIXTURE_CAUSALLEARN
    oracle = oracle_from_admg(ADMG.from_edges(4, d, b), t)
    cls = next(c for c in classes if c.signature == m_separation_signature(oracle.graph))
    assert len(cls.mags) == 1 and not (cls.truth == CIRCLE).any()
    assert np.array_equal(ifci(oracle).marks, cls.truth)
    pytest.importorskip("causallearn")
    from icml26.causal.ifci_completion.baselines import causallearn_fci

    cl = causallearn_fci(oracle.graph)
    assert cl.n_circles() == 2 and cl.marks[2, 1] == CIRCLE and cl.marks[3, 1] == CIRCLE  # X1 o-> X2, X1 o-> X3


@pytest.mark.parametrize(("fixture", "circles"), [(FIXTURE_RULES_CLOSE, (3, 1, 1)), (FIXTURE_RULES_OPEN, (3, 3, 2))])
def test_ifci_incomplete_fixtures_at_n5(fixture, circles):
    d, b, t = fixture
    g = ADMG.from_edges(5, d, b)
    pag = ifci(oracle_from_admg(g, t))
    rules = ifci(oracle_from_admg(g, t), new_rules=True)
    completed, _ = complete_by_enumeration(pag)
    assert (pag.n_circles(), rules.n_circles(), completed.n_circles()) == circles
    assert wrong_marks(rules.marks, completed.marks) == 0


def test_rules_never_beyond_completion_on_random_graphs():
    """truth <= rules <= I-FCI in circles, and the rules never set a mark the completion does not."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        g = random_admg(5, rng)
        t = random_targets(5, rng, max_target_size=2)
        pag = ifci(oracle_from_admg(g, t))
        rules = ifci(oracle_from_admg(g, t), new_rules=True)
        completed, report = complete_by_enumeration(pag)
        assert not report.skipped and report.members >= 1
        # the generating I-MAG is a class member: realisable, and it agrees with every non-circle mark
        generating = oracle_from_admg(g, t).graph.to_mag()
        assert is_realisable(generating)
        for out in (pag, rules, completed):
            assert wrong_marks(out.marks, completed.marks, generating.marks) == 0
        assert completed.n_circles() <= rules.n_circles() <= pag.n_circles()


def test_completion_cap_is_reported():
    pag = learn_skeleton(oracle_from_admg(ADMG.from_edges(4, [(1, 2), (2, 3), (1, 3)], []), [{0}]))
    out, report = complete_by_enumeration(pag, max_circles=2)
    assert report.skipped and out.same_graph(pag)


# ------------------------------------------------------------------------------------------ bad input
def test_bad_inputs_raise_clear_value_errors():
    with pytest.raises(ValueError, match="cycle"):
        ADMG.from_edges(3, [(0, 1), (1, 2), (2, 0)])
    g = ADMG.from_edges(3, [(0, 1)])
    with pytest.raises(ValueError, match="unknown variable"):
        augment(g, [{"X7"}])
    with pytest.raises(ValueError, match="out of range"):
        augment(g, [{5}])
    with pytest.raises(ValueError, match="same targets"):
        augment(g, [{0}, {0}])
    with pytest.raises(ValueError, match="same variables"):
        check_environments([["A", "B"], ["A", "C"]], [[], ["A"]])
    with pytest.raises(ValueError, match="unknown variables"):
        check_environments([["A", "B"], ["B", "A"]], [[], ["Z"]])
    assert check_environments([["A", "B"], ["B", "A"]], [[], ["B"]]) == (["A", "B"], [set(), {1}])
    pag = ifci(oracle_from_admg(ADMG.from_edges(3, [(0, 1)]), [{0}]))
    pag.sepsets = {}
    pag.marks[pag.marks == ARROW] = CIRCLE
    pag.marks[pag.marks == TAIL] = CIRCLE
    with pytest.raises(ValueError, match="sepsets"):
        complete_by_enumeration(pag)


def test_causallearn_unsound_tail_is_a_real_error():
    """causal-learn's FCI + background knowledge orients X0 --> X4 here, but a realisable I-MAG with X0 <-> X4
    has exactly the same m-separations over V u F: the tail is not compelled. I-FCI and the completion keep a
    circle there."""
    from icml26.causal.ifci_completion.completion import mag_as_admg
    from icml26.causal.ifci_completion.ground_truth import m_separation_signature
    from icml26.causal.ifci_completion.study import FIXTURE_CAUSALLEARN_UNSOUND

    d, b, t = FIXTURE_CAUSALLEARN_UNSOUND
    oracle = oracle_from_admg(ADMG.from_edges(6, d, b), t)
    true_mag = oracle.graph.to_mag()
    assert true_mag.marks[4, 0] == TAIL  # the true MAG has X0 --> X4 (a bow in the ADMG)
    rival = true_mag.copy()
    rival.marks[4, 0] = ARROW  # X0 <-> X4
    assert is_valid_mag(rival) and is_realisable(rival)
    assert m_separation_signature(mag_as_admg(rival)) == m_separation_signature(oracle.graph)
    pag = ifci(oracle)
    assert pag.marks[4, 0] == CIRCLE
    assert complete_by_enumeration(pag)[0].marks[4, 0] == CIRCLE
    pytest.importorskip("causallearn")
    from icml26.causal.ifci_completion.baselines import causallearn_fci

    assert causallearn_fci(oracle.graph).marks[4, 0] == TAIL


def test_finite_sample_fisher_z_and_bad_environments():
    from icml26.causal.ifci_completion.data import FisherZOracle, simulate_linear_sem

    rng = np.random.default_rng(3)
    g = ADMG.from_edges(3, [(0, 1), (1, 2)])
    data = simulate_linear_sem(g, [{0}], 20000, rng)
    envs = [frozenset(), frozenset({0})]
    pag = ifci(FisherZOracle(data, envs, alpha=0.01), conflicts="keep")
    truth = ifci(oracle_from_admg(g, [{0}]))
    assert pag.same_graph(truth)  # X0 -> X1 -> X2 with F -> X0: fully oriented by Rule 9 + R1
    with pytest.raises(ValueError, match="different numbers of variables"):
        FisherZOracle([data[0], data[1][:, :2]], envs)
    with pytest.raises(ValueError, match="unknown variable"):
        FisherZOracle(data, [frozenset(), frozenset({7})])


def test_each_new_rule_on_its_own_fixture():
    """F-host closes a gap F-anc cannot, and vice versa; each alone stays within the completion."""
    from icml26.causal.ifci_completion.ifci import IFCI_RULES
    from icml26.causal.ifci_completion.orientation import orient
    from icml26.causal.ifci_completion.rules import rule_f_unique_ancestor_target, rule_f_unique_host_target
    from icml26.causal.ifci_completion.study import FIXTURE_HOST_ONLY

    def circles(fixture, rule):
        d, b, t = fixture
        skeleton = learn_skeleton(oracle_from_admg(ADMG.from_edges(5, d, b), t))
        out = orient(skeleton.copy(), (*IFCI_RULES, rule) if rule else IFCI_RULES)
        completed, _ = complete_by_enumeration(orient(skeleton.copy(), IFCI_RULES))
        assert wrong_marks(out.marks, completed.marks) == 0
        return out.n_circles()

    assert (circles(FIXTURE_HOST_ONLY, None), circles(FIXTURE_HOST_ONLY, rule_f_unique_host_target)) == (2, 0)
    assert circles(FIXTURE_HOST_ONLY, rule_f_unique_ancestor_target) == 2
    assert circles(FIXTURE_RULES_CLOSE, rule_f_unique_ancestor_target) < circles(FIXTURE_RULES_CLOSE, None)


def test_ifci_estimator_front_end():
    from icml26.causal.ifci_completion import IFCI
    from icml26.causal.ifci_completion.data import simulate_linear_sem

    g = ADMG.from_edges(3, [(0, 1), (1, 2)])
    data = simulate_linear_sem(g, [{0}], 20000, np.random.default_rng(4))
    est = IFCI(alpha=0.01, new_rules=True).fit(data, [{0}])
    assert est.pag_.same_graph(IFCI().fit(oracle=oracle_from_admg(g, [{0}])).pag_)
    with pytest.raises(ValueError, match="interventional target sets"):
        IFCI().fit(data, [{0}, {1}])


# ------------------------------------------------------------------------------------------ adjacency search
def _orient_like_ifci(skeleton):
    from icml26.causal.ifci_completion.ifci import IFCI_RULES
    from icml26.causal.ifci_completion.orientation import orient

    return orient(skeleton.copy(), IFCI_RULES)


def _small_families():
    """n <= 6 families: two-target brute-force classes at n = 3, a slice of n = 4, random n = 5, 6 graphs."""
    from icml26.causal.ifci_completion.ground_truth import TWO_TARGETS
    from icml26.causal.ifci_completion.study import n4_cases, random_cases

    return n4_cases(None, TWO_TARGETS, n=3) + n4_cases(40) + random_cases(5, 25, 3) + random_cases(6, 10, 3)


def test_pc_search_gives_the_exhaustive_searchs_pag_on_small_families():
    """Same PAG as the reference search (every subset of the other nodes), and the I-MAG's skeleton, with fewer
    tests. (scripts run on every n <= 6 family of the study and the tests: 1,890 graphs, all identical.)"""
    from icml26.causal.ifci_completion import learn_skeleton_exhaustive

    fewer = 0
    for case in _small_families():
        pc_oracle, ref_oracle = oracle_from_admg(case.admg, case.targets), oracle_from_admg(case.admg, case.targets)
        pc = learn_skeleton(pc_oracle)
        ref = learn_skeleton_exhaustive(ref_oracle)
        assert np.array_equal(pc.marks != 0, pc_oracle.graph.to_mag().marks != 0), case.label
        assert np.array_equal(_orient_like_ifci(pc).marks, _orient_like_ifci(ref).marks), case.label
        fewer += pc_oracle.queries < ref_oracle.queries
    assert fewer > 50


# Found by a random search (n = 6, seed 6, #860): the PC stage keeps X3 - X5; only possible-D-SEP removes it.
FIXTURE_POSSIBLE_DSEP = ([(0, 1), (0, 5), (1, 5), (2, 1), (4, 3)], [(0, 2), (1, 4), (2, 3), (4, 5)], [{2}])


def test_possible_dsep_stage_removes_what_the_pc_stage_cannot():
    from icml26.causal.ifci_completion import learn_skeleton_exhaustive

    d, b, t = FIXTURE_POSSIBLE_DSEP
    g = ADMG.from_edges(6, d, b)
    pc_only = learn_skeleton(oracle_from_admg(g, t), possible_dsep=False)
    full = learn_skeleton(oracle_from_admg(g, t))
    mag = oracle_from_admg(g, t).graph.to_mag()
    assert pc_only.adjacent(3, 5) and not mag.adjacent(3, 5)
    assert not full.adjacent(3, 5) and np.array_equal(full.marks != 0, mag.marks != 0)
    assert full.sepset(3, 5) is not None
    ref = learn_skeleton_exhaustive(oracle_from_admg(g, t))
    assert np.array_equal(_orient_like_ifci(full).marks, _orient_like_ifci(ref).marks)


def test_max_cond_size_caps_both_stages_and_is_checked():
    rng = np.random.default_rng(11)
    for _ in range(10):
        g, t = random_admg(6, rng), random_targets(6, rng)
        oracle = oracle_from_admg(g, t)
        capped = learn_skeleton(oracle, max_cond_size=1)
        full = learn_skeleton(oracle_from_admg(g, t))
        assert ((full.marks != 0) <= (capped.marks != 0)).all()  # a cap only keeps more edges
        f_nodes = set(capped.f_targets)
        assert all(len(s - f_nodes) <= 1 for s in capped.sepsets.values())
    with pytest.raises(ValueError, match="max_cond_size"):
        learn_skeleton(oracle, max_cond_size=-1)
    with pytest.raises(TypeError, match="max_cond_size"):
        ifci(oracle, max_cond_size=1.5)


def test_skeleton_on_data_does_not_depend_on_the_column_order():
    """PC-stable: relabelling the variables relabels the learned skeleton (Fisher-z tests, finite samples)."""
    from icml26.causal.ifci_completion import IFCI
    from icml26.causal.ifci_completion.data import simulate_linear_sem

    rng = np.random.default_rng(5)
    for _ in range(3):
        g, t = random_admg(6, rng), random_targets(6, rng)
        data = simulate_linear_sem(g, t, 1500, rng)
        perm = rng.permutation(6)
        inverse = np.argsort(perm)
        base = IFCI(alpha=0.05).fit(data, t).pag_
        moved = IFCI(alpha=0.05).fit([d[:, perm] for d in data], [{int(inverse[v]) for v in s} for s in t]).pag_
        adj = base.marks[:6, :6] != 0
        assert np.array_equal(adj[np.ix_(perm, perm)], moved.marks[:6, :6] != 0)


def test_oracle_cache_can_be_switched_off():
    g = ADMG.from_edges(4, [(0, 1), (1, 2), (2, 3)])
    cached, uncached = oracle_from_admg(g, [{0}]), oracle_from_admg(g, [{0}], cache=False)
    for oracle in (cached, uncached):
        for _ in range(3):
            oracle(0, 2, {1})
    assert (cached.queries, uncached.queries) == (1, 3)
    assert ifci(oracle_from_admg(g, [{0}], cache=False)).same_graph(ifci(oracle_from_admg(g, [{0}])))


# ------------------------------------------------------------------------------------------ two targets, realisability
def test_completion_equals_bruteforce_with_two_targets_at_n3():
    """Three F-nodes (F01 -> X0, F02 -> X1, F12 -> {X0, X1}): every class, both inputs, I-FCI sound."""
    from icml26.causal.ifci_completion.ground_truth import TWO_TARGETS
    from icml26.causal.ifci_completion.study import complete_from_weak_input, n4_cases

    classes = true_ipag_bruteforce(TWO_TARGETS, n=3)
    assert len(classes) == 81 and sum(c.n_admgs for c in classes) == 200
    assert all(len(c.true_ipag().f_targets) == 3 for c in classes)
    resolved = 0
    for case in n4_cases(None, TWO_TARGETS, n=3):
        pag = ifci(oracle_from_admg(case.admg, case.targets))
        assert wrong_marks(pag.marks, case.truth) == 0
        assert np.array_equal(complete_by_enumeration(pag)[0].marks, case.truth)
        weak, report = complete_from_weak_input(case, 14)
        assert not report.skipped and np.array_equal(weak.marks, case.truth), case.label
        resolved += int(report.circles_in > weak.n_circles())  # the completion had work to do
    assert resolved >= 20


def _realisable_by_all_subsets(mag):
    """Reference: try every subset of bows on the MAG's directed V-edges (small graphs only)."""
    from itertools import combinations

    m = mag.marks
    observed = [v for v in range(mag.n) if v not in mag.f_targets]
    directed = (m == ARROW) & (m.T == TAIL)
    bidirected = (m == ARROW) & (m.T == ARROW)
    for f, targets in mag.f_targets.items():
        directed[f, :] = directed[:, f] = bidirected[f, :] = bidirected[:, f] = False
        directed[f, list(targets)] = True
    bows = [(a, b) for a in observed for b in observed if directed[a, b]]
    assert len(bows) <= 10
    for size in range(len(bows) + 1):
        for chosen in combinations(bows, size):
            b2 = bidirected.copy()
            for a, b in chosen:
                b2[a, b] = b2[b, a] = True
            try:
                g = ADMG(list(mag.names), directed, b2, dict(mag.f_targets))
            except ValueError:
                return False
            if np.array_equal(g.to_mag().marks, m):
                return True
    return False


def test_realisability_search_is_exact_without_a_bow_cap():
    """is_realisable (branch over maximal harmless bow sets) agrees with trying every subset of bows."""
    from itertools import product

    from icml26.causal.ifci_completion.completion import _resolutions

    rng = np.random.default_rng(2)
    checked = {True: 0, False: 0}
    for _ in range(25):
        g, t = random_admg(4, rng, p_directed=0.5, p_bidirected=0.4), random_targets(4, rng)
        pag = ifci(oracle_from_admg(g, t))
        edges, options = _resolutions(pag)
        for choice in list(product(*options))[:40]:
            cand = pag.copy()
            for (a, b), (at_b, at_a) in zip(edges, choice, strict=True):
                cand.marks[a, b], cand.marks[b, a] = at_b, at_a
            if not is_valid_mag(cand):
                continue
            got = is_realisable(cand)
            assert got == _realisable_by_all_subsets(cand)
            checked[got] += 1
    assert checked[True] >= 20 and checked[False] >= 5


# ------------------------------------------------------------------------------------------ data front end
@pytest.fixture(scope="module")
def chain_data():
    from icml26.causal.ifci_completion.data import simulate_linear_sem

    return simulate_linear_sem(ADMG.from_edges(3, [(0, 1), (1, 2)]), [{0}], 3000, np.random.default_rng(9))


@pytest.mark.parametrize("alpha", [2, 0, 1.0, -0.1, float("nan"), "0.05", True])
def test_alpha_outside_the_unit_interval_is_refused(alpha):
    from icml26.causal.ifci_completion import IFCI

    with pytest.raises(ValueError, match="alpha"):
        IFCI(alpha=alpha)


def test_bad_data_gets_one_clear_error_each(chain_data):
    from icml26.causal.ifci_completion import IFCI

    obs, itv = chain_data
    nan = obs.copy()
    nan[3, 1] = np.nan
    constant = itv.copy()
    constant[:, 2] = 1.0
    cases = [
        (([nan, itv], [{0}]), "NaN or infinite"),
        (([obs, np.empty((0, 3))], [{0}]), "empty"),
        (([obs[:, 0], itv[:, 0]], [{0}]), "2-D"),
        (([obs[:3], itv[:3]], [{0}]), "at least 6"),
        (([obs, itv[:, :2]], [{0}]), "different numbers of variables"),
        (([obs, constant], [{0}]), "constant"),
        (([obs], []), "at least two environments"),
        ((obs, [{0}]), "one .* array per environment"),
        (([obs, itv], {0}), "one target set per interventional environment"),
        (([obs, itv], [0]), "one target set per interventional environment"),
        (([obs, itv], [{7}]), "not a column index"),
        (([obs, itv], [set()]), "no targets"),
        (([obs, itv], [{0}, {1}]), "need 1 interventional target"),
        (([obs, itv, itv], [{0}, {0}]), "same targets"),
        (([obs.astype(str).astype(object), itv], [{0}]), None),  # numeric strings are numbers: accepted
    ]
    for (datasets, targets), message in cases:
        if message is None:
            IFCI().fit(datasets, targets)
            continue
        with pytest.raises(ValueError, match=message):
            IFCI().fit(datasets, targets)
    with pytest.raises(ValueError, match="not both"):
        IFCI().fit([obs, itv], [{0}], oracle=oracle_from_admg(ADMG.from_edges(3, [(0, 1)]), [{0}]))


def test_no_f_nodes_is_plain_fci_and_is_warned_about():
    from icml26.causal.ifci_completion.ifci import MSeparationOracle

    plain = MSeparationOracle(ADMG.from_edges(3, [(0, 1), (2, 1)]))
    with pytest.warns(UserWarning, match="no F-nodes"):
        pag = ifci(plain)
    assert pag.marks[0, 1] == ARROW and pag.marks[2, 1] == ARROW


def test_fit_is_invariant_to_location_and_scale(chain_data):
    from icml26.causal.ifci_completion import IFCI

    base = IFCI().fit(chain_data, [{0}]).pag_
    moved = IFCI().fit([1e4 + 250.0 * d for d in chain_data], [{0}]).pag_
    assert moved.same_graph(base) and base.n_circles() == 0


def test_fisher_z_oracle_matches_the_direct_test(chain_data):
    from icml26.causal.ifci_completion.data import FisherZOracle, fisher_z_pvalue

    oracle = FisherZOracle(list(chain_data), [frozenset(), frozenset({0})])
    pooled = np.vstack(chain_data)
    env = np.r_[np.zeros(len(chain_data[0])), np.ones(len(chain_data[1]))][:, None]
    direct = fisher_z_pvalue(np.hstack([pooled, env]), 0, 2, [1, 3])
    assert oracle.pvalue(0, 2, {1, 3}) == pytest.approx(direct, rel=1e-9, abs=1e-12)
    direct_f = fisher_z_pvalue(np.hstack([pooled, env]), 3, 2, [1])
    assert oracle.pvalue(3, 2, {1}) == pytest.approx(direct_f, rel=1e-9, abs=1e-12)


# ------------------------------------------------------------------------------------------ drawing
def test_pag_plot_draws_every_mark():
    from matplotlib.patches import Circle, FancyArrowPatch, Rectangle

    from icml26.causal.ifci_completion.draw import CIRCLE_RADIUS

    d, b, t = FIXTURE_RULES_OPEN
    pag = ifci(oracle_from_admg(ADMG.from_edges(5, d, b), t))
    ax = pag.plot()
    circles = [p for p in ax.patches if isinstance(p, Circle) and p.get_radius() == CIRCLE_RADIUS]
    nodes = [p for p in ax.patches if isinstance(p, Circle) and p.get_radius() != CIRCLE_RADIUS]
    squares = [p for p in ax.patches if isinstance(p, Rectangle)]
    edges = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert len(circles) == pag.n_circles() == 3
    assert (len(nodes), len(squares), len(edges)) == (5, 3, len(pag.edges()))
    heads = sum(str(e.get_arrowstyle()).count("CurveFilled") for e in edges)
    assert heads >= 1
    with pytest.raises(ValueError, match="share a position"):
        pag.plot(pos={name: (0.0, 0.0) for name in pag.names})


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(4, 7), interventions=st.integers(1, 2))
def test_property_pc_search_recovers_the_imag_skeleton(seed, n, interventions):
    """For any latent graph and targets: the skeleton is the I-MAG's, every removed pair has a sepset that
    separates it, and the PAG equals the one oriented from the exhaustive search."""
    from icml26.causal.ifci_completion import learn_skeleton_exhaustive

    rng = np.random.default_rng(seed)
    g = random_admg(n, rng, p_directed=0.35, p_bidirected=0.3)
    t = random_targets(n, rng, n_interventions=interventions)
    oracle = oracle_from_admg(g, t)
    skeleton = learn_skeleton(oracle)
    assert np.array_equal(skeleton.marks != 0, oracle.graph.to_mag().marks != 0)
    for (a, b), sep in skeleton.sepsets.items():
        assert oracle.graph.m_separated(a, b, sep)
    ref = learn_skeleton_exhaustive(oracle_from_admg(g, t))
    assert np.array_equal(_orient_like_ifci(skeleton).marks, _orient_like_ifci(ref).marks)


# ------------------------------------------------------------------------------------------ unknown targets
def test_unknown_targets_is_a_sound_coarsening_of_known_targets():
    """Psi-FCI style: same skeleton, only Rule 8; every mark it sets agrees with the known-target class (its
    generating I-MAG), it never orients more, and every true target is among F's possible targets."""
    rng = np.random.default_rng(21)
    coarser = 0
    for _ in range(30):
        g, t = random_admg(5, rng), random_targets(5, rng)
        known = ifci(oracle_from_admg(g, t))
        unknown = ifci(oracle_from_admg(g, t), known_targets=False)
        mag = oracle_from_admg(g, t).graph.to_mag()
        assert np.array_equal(unknown.marks != 0, known.marks != 0)
        assert wrong_marks(unknown.marks, mag.marks) == 0
        assert unknown.n_circles() >= known.n_circles()
        coarser += unknown.n_circles() > known.n_circles()
        for f, targets in oracle_from_admg(g, t).graph.f_targets.items():
            assert not unknown.f_targets[f]
            assert set(targets) <= set(unknown.possible_targets(f))
    assert coarser >= 5  # not vacuous: the targets do orient marks
    with pytest.raises(ValueError, match="known_targets=True"):
        ifci(oracle_from_admg(g, t), known_targets=False, new_rules=True)
    with pytest.raises(ValueError, match="known"):
        complete_by_enumeration(unknown)


def test_unknown_targets_on_data(chain_data):
    from icml26.causal.ifci_completion import IFCI

    known = IFCI().fit(chain_data, [{0}]).pag_
    unknown = IFCI().fit(chain_data, "unknown").pag_
    assert np.array_equal(unknown.marks != 0, known.marks != 0)
    assert unknown.possible_targets(3) == [0] and unknown.f_targets == {3: frozenset()}
    with pytest.raises(ValueError, match="'unknown'"):
        IFCI().fit(chain_data, "all")
    with pytest.raises(ValueError, match="targets='unknown'"):
        IFCI().fit(chain_data, [])
