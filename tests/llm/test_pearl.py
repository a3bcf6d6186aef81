"""PEARL private decoding: accounting against exact closed forms and dp-accounting, the mechanism's exact
neighbouring log-ratio, hash partitions, batched streams against unbatched forwards, metrics on constructed
cases, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.llm.pearl import (
    ByteTokenizer,
    PartitionedBM25,
    PEARLAllocator,
    PearlDecoder,
    PrivacyLedger,
    PrivateRAGDecoder,
    SparseVector,
    Step,
    SVTAllocator,
    UniformAllocator,
    confidence_gap,
    exp_topk_distribution,
    factual_em,
    hash_partition,
    kov_delta,
    max_log_ratio,
    pii_leakage,
    questions,
    synthetic_records,
    unsupported_rate,
)
from icml26.llm.pearl.accounting import BudgetExceededError


# ------------------------------------------------------------------------------------------------ accounting
@pytest.mark.parametrize(("eps0", "k"), [(0.3, 20), (1.0, 5), (0.1, 50)])
def test_dp_accounting_pld_matches_the_exact_optimal_composition(eps0, k):
    """k-fold composition of eps0-DP: dp-accounting's PLD delta(eps) equals Kairouz-Oh-Viswanath's closed form
    (pessimistic discretisation of 1e-4: never below it, within 1% relative)."""
    ledger = PrivacyLedger(epsilon=k * eps0 + 1e-9, delta=1e-5)
    for t in range(k):
        ledger.charge(eps0, f"token {t}")
    from dp_accounting.pld import privacy_loss_distribution as pld
    from dp_accounting.pld.common import DifferentialPrivacyParameters

    one = pld.from_privacy_parameters(DifferentialPrivacyParameters(eps0, 0.0))
    total = one
    for _ in range(k - 1):
        total = total.compose(one)
    for eps in np.linspace(0.2, k * eps0 * 0.9, 5):
        exact = kov_delta(eps0, k, eps)
        assert exact - 1e-9 <= total.get_delta_for_epsilon(eps) <= exact * 1.01 + 1e-7
    # the ledger's eps(delta) is the smallest eps whose exact delta is <= delta, up to discretisation
    e = ledger.pld_epsilon(1e-5)
    assert kov_delta(eps0, k, e + 1e-3) <= 1e-5 < kov_delta(eps0, k, e - 0.02)
    assert e <= ledger.spent + 1e-9


def test_kov_closed_form_edges():
    assert kov_delta(0.5, 1, 0.5) == pytest.approx(0.0, abs=1e-15)  # one eps0-DP event: delta(eps0) = 0
    assert kov_delta(0.5, 1, 0.0) == pytest.approx((math.exp(0.5) - 1) / (1 + math.exp(0.5)))
    assert kov_delta(0.2, 10, 2.0) == pytest.approx(0.0, abs=1e-15)  # basic composition is exact at sum eps


def test_ledger_never_exceeds_its_budget():
    ledger = PrivacyLedger(1.0)
    ledger.charge(0.6, "a")
    with pytest.raises(BudgetExceededError):
        ledger.charge(0.5, "b")
    ledger.charge(0.4, "c")
    assert ledger.spent == pytest.approx(1.0) and ledger.remaining == 0.0
    with pytest.raises(ValueError, match="finite"):
        ledger.charge(float("nan"), "d")


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        PrivacyLedger(bad)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 2.0])
def test_bad_delta(bad):
    with pytest.raises(ValueError, match=r"delta must lie in \(0, 1\)"):
        PrivacyLedger(1.0, bad)


# ------------------------------------------------------------------------------------------------- mechanism
def _dists(rng, m, v):
    p = rng.dirichlet(np.full(v, 0.3), size=m + 1)
    return p[0], p[1:]


@settings(max_examples=60)
@given(seed=st.integers(0, 10_000), eps=st.floats(0.01, 20.0), m=st.integers(1, 6), topk=st.integers(1, 40))
def test_exponential_mechanism_exact_neighbouring_log_ratio(seed, eps, m, topk):
    """Replace one partition's distribution by any other (add/remove one document touches one partition): the
    exact max log-ratio over every candidate is <= eps."""
    rng = np.random.default_rng(seed)
    p_pub, parts = _dists(rng, m, 40)
    neighbour = parts.copy()
    neighbour[rng.integers(m)] = rng.dirichlet(np.full(40, 0.1))
    assert max_log_ratio(p_pub, parts, neighbour, eps, topk) <= eps + 1e-9


def test_exponential_mechanism_bound_is_nearly_attained():
    """Worst case: one partition moves all its mass between two candidates; the log-ratio reaches eps/2 at least
    (so the factor 2 of the sensitivity is not slack we could silently drop)."""
    v, m, eps = 8, 4, 2.0
    p_pub = np.full(v, 1 / v)
    parts = np.zeros((m, v))
    parts[:, 0] = 1.0
    neighbour = parts.copy()
    neighbour[0] = np.eye(v)[1]
    ratio = max_log_ratio(p_pub, parts, neighbour, eps, v)
    assert eps / 2 - 1e-9 <= ratio <= eps


def test_exponential_mechanism_limits():
    rng = np.random.default_rng(0)
    p_pub, parts = _dists(rng, 4, 50)
    cand, q0 = exp_topk_distribution(p_pub, parts, 0.0, 10)
    np.testing.assert_allclose(q0, p_pub[cand] / p_pub[cand].sum())  # eps = 0: public decoding, top-k
    assert list(cand) == list(np.argsort(-p_pub)[:10])
    _, q_big = exp_topk_distribution(p_pub, parts, 1e4, 10)
    assert cand[np.argmax(q_big)] == cand[np.argmax(parts[:, cand].mean(0))]  # eps -> inf: argmax of p-bar
    assert q_big.max() > 0.99


def test_confidence_gap_closed_form():
    import torch

    v = 16
    pub = torch.zeros(v)  # uniform: entropy log v
    priv = torch.full((v,), -1e4)
    priv[3] = 0.0  # one-hot: entropy 0
    assert confidence_gap(pub, priv).item() == pytest.approx(math.log(v))
    assert confidence_gap(priv, pub).item() == pytest.approx(-math.log(v))
    z = np.random.default_rng(1).normal(size=(3, v))
    np.testing.assert_allclose(confidence_gap(z, z), 0.0, atol=1e-12)
    np.testing.assert_allclose(
        confidence_gap(torch.tensor(z), torch.tensor(z[::-1].copy())).numpy(), confidence_gap(z, z[::-1])
    )


# ----------------------------------------------------------------------------------------------- partitions
def test_hash_partitions_are_stable_under_insertion_and_retrieval_changes_in_one_partition_only():
    records = synthetic_records(30, seed=3)
    docs = [(r.doc_id, r.text) for r in records]
    before = {d: hash_partition(d, 4) for d, _ in docs}
    bigger = docs + [(f"new-{i}", f"Patient Zed {i}, asthma.") for i in range(10)]
    assert all(hash_partition(d, 4) == before[d] for d, _ in bigger[: len(docs)])
    assert PartitionedBM25(bigger, 4).partitions[before[docs[0][0]]][0] == next(
        x for x in docs if before[x[0]] == before[docs[0][0]]
    )
    query = f"{records[0].name} phone"
    a = PartitionedBM25(docs, 4).retrieve(query)
    b = PartitionedBM25(docs[1:], 4).retrieve(query)  # remove one document
    changed = [i for i in range(4) if a[i] != b[i]]
    assert changed == [before[docs[0][0]]]  # only the removed document's partition retrieves differently
    assert docs[0][1] in [t for _, t in a[changed[0]]]


def test_no_documents_and_empty_retrieval_are_clear_errors():
    with pytest.raises(ValueError, match="no documents"):
        PartitionedBM25([], 4)
    index = PartitionedBM25([("a", "asthma clinic"), ("b", "migraine clinic")], 2)
    with pytest.raises(ValueError, match="empty retrieval"):
        index.retrieve("zebra xylophone")


# -------------------------------------------------------------------------------------------------- metrics
def test_pii_leakage_on_constructed_cases():
    canaries = ["525-601-2309", "143-37-2290", "jo@example.net"]
    assert pii_leakage("his number is 525-601-2309.", canaries) == {"exact": 1.0, "partial": 1.0}
    assert pii_leakage("call 525 601 2399", canaries) == {"exact": 0.0, "partial": 1.0}  # 6 digits 525601
    assert pii_leakage("call 525-60", canaries) == {"exact": 0.0, "partial": 0.0}  # 5 digits only
    assert pii_leakage("mail jo@example.net", canaries)["exact"] == 1.0
    assert pii_leakage("nothing here 123", canaries) == {"exact": 0.0, "partial": 0.0}


def test_unsupported_rate_and_fact_em_on_constructed_cases():
    context = ["Patient Ann Lee, phone 555-123-4567. Treated at Oakwood Clinic."]
    assert unsupported_rate("Ann Lee is treated at Oakwood Clinic.", context) == 0.0
    assert unsupported_rate("Ann Lee lives in Paris, phone 999-000-1111.", context) == pytest.approx(2 / 4)
    assert unsupported_rate("I do not know.", context) == 0.0
    assert factual_em("It is the oakwood clinic.", "Oakwood Clinic") == 1.0
    assert factual_em("It is the Cedar Clinic.", "Oakwood Clinic") == 0.0
    assert factual_em("Oakwood Clinic or Cedar Clinic", "Oakwood Clinic", ["Cedar Clinic", "Oakwood Clinic"]) == 0.0
    assert factual_em("Oakwood Clinic.", "Oakwood Clinic", ["Cedar Clinic", "Oakwood Clinic"]) == 1.0


def test_questions_and_records_are_deterministic_and_well_formed():
    r1, r2 = synthetic_records(20, 5), synthetic_records(20, 5)
    assert r1 == r2 and len({r.name for r in r1}) == 20 and len({r.phone for r in r1}) == 20
    qs = questions(r1, 1, 2, 2, seed=5)
    assert [q.kind for q in qs] == ["repeat", "targeted", "targeted", "fact", "fact"]
    assert all(q.answer == q.target.phone for q in qs if q.kind == "targeted")
    clinic = {r.diagnosis: r.clinic for r in r1}
    assert all(q.answer == clinic[q.retrieval_query] for q in qs if q.kind == "fact")


# ------------------------------------------------------------------------------------------------ allocators
def _step(h, pii=False, start=False, t=0, private=lambda name: 0.0):
    return Step(t, 20, 4, 32, h, pii, start, private)


@settings(max_examples=40)
@given(
    seed=st.integers(0, 1000), eps=st.floats(0.1, 20.0), kind=st.sampled_from(["uniform", "svt", "pearl", "pearl_svt"])
)
def test_allocators_never_exceed_the_budget(seed, eps, kind):
    rng = np.random.default_rng(seed)
    alloc = {
        "uniform": UniformAllocator(),
        "svt": SVTAllocator(),
        "pearl": PEARLAllocator(),
        "pearl_svt": PEARLAllocator(privatize="svt"),
    }[kind]
    ledger = PrivacyLedger(eps)
    alloc.start(ledger, 20, rng)
    for t in range(20):
        step = _step(
            float(rng.uniform(0, 4)),
            bool(rng.random() < 0.3),
            bool(rng.random() < 0.2),
            t,
            lambda n: float(rng.integers(0, 5)),
        )
        e = alloc.decide(step)
        assert e >= 0
        ledger.charge(e, f"token {t}")  # raises if over budget
    assert ledger.spent <= eps + 1e-9


def test_pearl_allocator_rules():
    alloc = PEARLAllocator(h_gate=1.0, planned_tokens=2, sentence_share=0.5, pii_factor=0.25)
    alloc.start(PrivacyLedger(8.0), 20, np.random.default_rng(0))
    assert alloc.decide(_step(0.5, start=True)) == 0.0  # confident public step: free, greedy
    full = alloc.decide(_step(math.log(32)))  # sentence budget 4, weight 1: 4 / 2
    assert full == pytest.approx(2.0)
    assert alloc.decide(_step(math.log(32), pii=True)) == pytest.approx(0.5)  # PII-like: a quarter
    assert alloc.decide(_step(math.log(32))) == pytest.approx(1.5)  # what is left of the sentence's 4
    assert alloc.decide(_step(math.log(32))) == 0.0


def test_sparse_vector_charges_once_and_halts_after_c_positives():
    ledger = PrivacyLedger(5.0)
    svt = SparseVector(ledger, 1.0, c=2, threshold=0.0, rng=np.random.default_rng(0))
    assert ledger.spent == pytest.approx(1.0)
    answers = [svt.above(1e6) for _ in range(5)]
    assert answers == [True, True, False, False, False] and svt.halted
    assert ledger.spent == pytest.approx(1.0)
    quiet = SparseVector(PrivacyLedger(5.0), 1.0, c=2, threshold=1e6, rng=np.random.default_rng(0))
    assert not any(quiet.above(0.0) for _ in range(50))


# -------------------------------------------------------------------------------------------------- decoder
@pytest.fixture(scope="module")
def tiny():
    from icml26.models import tiny_llama

    return tiny_llama(seed=0, vocab_size=128, max_position_embeddings=1024), ByteTokenizer()


@pytest.fixture(scope="module")
def corpus():
    return [(r.doc_id, r.text) for r in synthetic_records(12, seed=0)]


def test_batched_left_padded_streams_match_unbatched_forwards(tiny):
    import torch

    from icml26.llm.pearl.decoder import _Streams

    model, tok = tiny
    prompts = ["short prompt", "a much longer prompt with more tokens in it"]
    streams = _Streams(model, tok, prompts)
    streams.step(65)
    streams.step(66)
    for i, p in enumerate(prompts):
        ids = torch.tensor([tok(p)["input_ids"] + [65, 66]])
        with torch.no_grad():
            ref = model(input_ids=ids).logits[0, -1].double()
        torch.testing.assert_close(streams.logits[i], ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(
    "allocator", [UniformAllocator(), SVTAllocator(), PEARLAllocator(), PEARLAllocator(privatize="svt")]
)
def test_decoder_spends_at_most_epsilon_and_reports_every_token(tiny, corpus, allocator):
    model, tok = tiny
    dec = PrivateRAGDecoder(model, tok, corpus, epsilon=2.0, allocator=allocator, seed=1)
    out = dec.generate("What is the phone number of the asthma patient?", max_new_tokens=6)
    assert out.eps_spent <= 2.0 + 1e-9 and out["eps_spent"] == out.eps_spent
    assert out.eps_pld <= out.eps_spent + 1e-9
    assert math.fsum(out.per_token_eps) <= out.eps_spent + 1e-9  # SVT cost is charged on top of the tokens
    assert len(out.per_token_eps) == len(out.cg) == len(out.public_entropy) >= 1
    assert isinstance(out.text, str)


def test_decoder_is_reproducible_and_pearl_is_the_default_allocator(tiny, corpus):
    model, tok = tiny
    a = PearlDecoder(model, tok, corpus, epsilon=5.0, seed=3).generate("asthma clinic?", 5)
    b = PearlDecoder(model, tok, corpus, epsilon=5.0, seed=3).generate("asthma clinic?", 5)
    assert a.text == b.text and a.per_token_eps == b.per_token_eps
    assert isinstance(PearlDecoder(model, tok, corpus).allocator, PEARLAllocator)


def test_decoder_bad_inputs(tiny, corpus):
    model, tok = tiny
    with pytest.raises(ValueError, match="epsilon must be"):
        PearlDecoder(model, tok, corpus, epsilon=0.0)
    with pytest.raises(ValueError, match="delta must lie"):
        PearlDecoder(model, tok, corpus, delta=1.5)
    with pytest.raises(ValueError, match="no documents"):
        PearlDecoder(model, tok, [])
    dec = PearlDecoder(model, tok, corpus)
    with pytest.raises(ValueError, match="empty retrieval"):
        dec.generate("zzz qqq", 4)
    with pytest.raises(ValueError, match="max_new_tokens"):
        dec.generate("asthma", 0)
    with pytest.raises(ValueError, match="privatize"):
        PEARLAllocator(privatize="true_cg")


def test_nonprivate_and_public_arms(tiny, corpus):
    model, tok = tiny
    dec = PrivateRAGDecoder(model, tok, corpus)
    nonprivate = dec.generate_nonprivate("asthma clinic?", 4)
    public = dec.generate_public("asthma clinic?", 4)
    assert math.isinf(nonprivate.eps_spent) and public.eps_spent == 0.0
    assert public.cg == [0.0] * len(public.cg)  # the public stream against itself
    assert nonprivate.documents and not public.documents


def test_exp_topk_distribution_refuses_mismatched_vocabularies_and_nan():
    """Review: a partition over another vocabulary, or a NaN probability, gave silently wrong probabilities."""
    from icml26.llm.pearl.mechanism import exp_topk_distribution

    p_pub = np.full(8, 1 / 8)
    with pytest.raises(ValueError, match="same vocabulary"):
        exp_topk_distribution(p_pub, np.full((2, 9), 1 / 9), 1.0, 4)
    bad = np.full((2, 8), 1 / 8)
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        exp_topk_distribution(p_pub, bad, 1.0, 4)
    cand, q = exp_topk_distribution(p_pub, np.full((2, 8), 1 / 8), 1.0, 4)
    assert len(cand) == 4 and np.isclose(q.sum(), 1.0)
