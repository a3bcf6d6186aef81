"""PEARL decoding speed: tokens/s of private decoding (m + 1 = 5 batched streams with a KV cache) against
non-private decoding with the same model, and our batched stream loop against transformers' own ``generate``.

Rows (each timed with interleaved medians, one torch thread):
- PEARL private decoding vs transformers ``generate`` (greedy, KV cache) on the non-private prompt holding every
  retrieved document: the price of privacy in throughput (the anchor is the field's own decoding loop);
- our non-private greedy loop (the ``_Streams`` machinery, 2 streams: public + full context, as the reproduction
  runs it) vs the same ``generate``: the overhead of our loop and of the extra public stream.
Sizes: tiny and quick use the tiny random Llama with a byte tokenizer; full uses SmolLM2-135M-Instruct
(Q4_1-dequantised), the reproduction's model.
"""

from __future__ import annotations

import sys

from icml26._core import single_torch_thread
from icml26._core.bench import BenchRow, interleaved_medians, print_rows

_SIZES = {  # model, new tokens, repeats
    "tiny": ("tiny", 6, 2),
    "quick": ("tiny", 24, 3),
    "full": ("smollm2", 20, 3),
}


def _model(name: str):
    if name == "tiny":
        from icml26.llm.pearl import ByteTokenizer
        from icml26.models import tiny_llama

        return tiny_llama(seed=0, vocab_size=128, max_position_embeddings=2048), ByteTokenizer()
    from icml26.models import load_smollm2

    return load_smollm2()


def rows(size: str = "full") -> list[BenchRow]:
    import torch

    from icml26.llm.pearl import PearlDecoder, questions, synthetic_records
    from icml26.llm.pearl.decoder import format_prompt

    model_name, tokens, repeat = _SIZES[size]
    with single_torch_thread():
        model, tok = _model(model_name)
        records = synthetic_records(40, seed=0)
        q = questions(records, 0, 1, 0, seed=0)[0]
        decoder = PearlDecoder(model, tok, [(r.doc_id, r.text) for r in records], epsilon=5.0, seed=0)
        docs = [d for part in decoder.documents(q.retrieval_query) for d in part]
        ids = torch.tensor([tok(format_prompt(tok, q.text, docs), add_special_tokens=False)["input_ids"]])
        counts: dict[str, int] = {}

        def pearl() -> None:
            counts["pearl"] = len(decoder.generate(q.text, tokens, retrieval_query=q.retrieval_query).per_token_eps)

        def ours_nonprivate() -> None:
            counts["ours_np"] = len(decoder.generate_nonprivate(q.text, tokens, retrieval_query=q.retrieval_query).cg)

        def hf_generate() -> None:
            with torch.no_grad():
                out = model.generate(
                    ids, attention_mask=torch.ones_like(ids), max_new_tokens=tokens, do_sample=False,
                    pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else 0,
                )  # fmt: skip
            counts["hf"] = out.shape[1] - ids.shape[1]

        t = interleaved_medians({"pearl": pearl, "ours_np": ours_nonprivate, "hf": hf_generate}, repeat=repeat)
    rate = {k: counts[k] / t[k] for k in t}
    workload = f"{model_name}, one targeted question, <= {tokens} new tokens, m = 4"
    return [
        BenchRow(
            "pearl", workload, "transformers generate (greedy, non-private)", rate["pearl"], rate["hf"], "tokens/s",
            better="higher", ours_name="PEARL (5 streams)",
            notes="privacy's throughput price: m + 1 streams, entropies and the mechanism per token; prefill included",
        ),
        BenchRow(
            "pearl", workload, "transformers generate (greedy, non-private)", rate["ours_np"], rate["hf"], "tokens/s",
            better="higher", ours_name="our non-private loop (2 streams)",
            notes="same prompt; ours also runs the public stream (for the confidence gap)",
        ),
    ]  # fmt: skip


if __name__ == "__main__":
    print_rows(rows(sys.argv[1] if len(sys.argv) > 1 else "full"))
