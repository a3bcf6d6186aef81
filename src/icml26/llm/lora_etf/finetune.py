"""Cheap real fine-tuning: LoRA on the top layers of a Llama model, trained on cached frozen hidden states.

The layers below the adapted ones are frozen, so their output is computed once per example and cached
(:func:`cache_hidden`); training then runs only the top ``n_top`` decoder layers (:func:`top_logits`). The
last layer is evaluated at the *query* positions only (the positions whose next-token prediction is scored):
its keys and values need every position, but its queries, output projection and MLP need only those, which
makes a step ~10x cheaper than running the layer on the whole sequence.

Tasks (offline, from the ``gensim`` wheel's test data; see :func:`polarity_task` and :func:`analogy_task`):

- **polarity**: Pang & Lee sentences, verbaliser " positive" / " negative": the loss is the cross-entropy over
  the two verbaliser tokens at the last prompt position; accuracy = argmax over the two.
- **analogy** (a ``questions-words.txt`` category, e.g. ``gram7-past-tense``): prompt "<a> ->", answer " <b>",
  teacher-forced cross-entropy over the full vocabulary on the answer tokens; exact match = every answer token
  is the argmax (identical to greedy decoding producing the answer).
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "EncodedTask",
    "analogy_task",
    "cache_hidden",
    "encode",
    "evaluate",
    "polarity_task",
    "top_hidden",
    "top_logits",
    "train_top_lora",
]


def _gensim_test_data() -> Path:
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the text tasks come from gensim's test data: pip install 'icml26[llm]'")
    return Path(next(iter(spec.submodule_search_locations))) / "test" / "test_data"


def polarity_task() -> list[tuple[str, int]]:
    """(sentence, label) for the 200 Pang & Lee sentences (label 1 = positive), file order."""
    rows = []
    for line in (_gensim_test_data() / "pang_lee_polarity.cor").read_text(encoding="latin-1").splitlines():
        label, _, text = line.strip().partition(" ")
        if label in ("__label__pos", "__label__neg") and text:
            rows.append((text.strip(), int(label == "__label__pos")))
    return rows


def analogy_task(category: str = "gram7-past-tense") -> list[tuple[str, str]]:
    """Unique (a, b) word pairs of one ``questions-words.txt`` category (each line a b c d gives (a,b), (c,d))."""
    pairs: dict[str, str] = {}
    current = None
    for line in (_gensim_test_data() / "questions-words.txt").read_text().splitlines():
        if line.startswith(":"):
            current = line[1:].strip()
            continue
        if current == category:
            w = line.split()
            for a, b in ((w[0], w[1]), (w[2], w[3])):
                pairs.setdefault(a, b)
    if not pairs:
        raise ValueError(f"no category {category!r} in questions-words.txt")
    return sorted(pairs.items())


@dataclass
class EncodedTask:
    """Right-padded token ids, the scored (query) positions and their targets.

    ``ids`` (N, T); ``query`` (N, Q) positions whose next token is scored, ``target`` (N, Q) the target index
    (into ``candidates`` if given, else the vocabulary), ``mask`` (N, Q) which query slots are real.
    """

    ids: torch.Tensor
    query: torch.Tensor
    target: torch.Tensor
    mask: torch.Tensor
    candidates: torch.Tensor | None = None

    def subset(self, index: torch.Tensor) -> EncodedTask:
        return EncodedTask(self.ids[index], self.query[index], self.target[index], self.mask[index], self.candidates)


def encode(
    tokenizer: Any, prompts: list[str], answers: list[str] | list[int], candidates: list[str] | None = None
) -> EncodedTask:
    """Encode prompt + answer pairs. With ``candidates`` (verbaliser words) the answers are class indices and
    one query per example scores the candidates' first tokens; otherwise every answer token is scored."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    seqs, queries, targets = [], [], []
    cand_ids = None
    if candidates is not None:
        cand_ids = torch.tensor([tokenizer(c, add_special_tokens=False)["input_ids"][0] for c in candidates])
    for prompt, answer in zip(prompts, answers, strict=True):
        p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        if candidates is not None:
            seqs.append(p)
            queries.append([len(p) - 1])
            targets.append([int(answer)])
        else:
            a = tokenizer(str(answer), add_special_tokens=False)["input_ids"]
            seqs.append(p + a)
            queries.append([len(p) - 1 + i for i in range(len(a))])
            targets.append(a)
    T, Q = max(map(len, seqs)), max(map(len, queries))
    ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    query = torch.zeros(len(seqs), Q, dtype=torch.long)
    target = torch.zeros(len(seqs), Q, dtype=torch.long)
    mask = torch.zeros(len(seqs), Q, dtype=torch.bool)
    for i, (s, q, t) in enumerate(zip(seqs, queries, targets, strict=True)):
        ids[i, : len(s)] = torch.tensor(s)
        query[i, : len(q)] = torch.tensor(q)
        target[i, : len(t)] = torch.tensor(t)
        mask[i, : len(q)] = True
    return EncodedTask(ids, query, target, mask, cand_ids)


def _llama(model: Any) -> Any:
    """The inner LlamaModel of a CausalLM or of a PEFT-wrapped one."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return inner.model


class _Stop(Exception):
    """Raised by the pre-hook of the first adapted layer once its input is captured: the rest is not needed."""


def cache_hidden(
    model: Any, ids: torch.Tensor, n_top: int, batch: int = 32, lengths: torch.Tensor | None = None
) -> torch.Tensor:
    """Hidden states entering layer L − n_top (frozen below it), (N, T, d), computed once without gradients and
    without running the layers above. With ``lengths`` (the positions each example needs, e.g. its last query
    position + 1) examples are batched by length and each batch is cut to its longest: causal attention makes
    the kept positions independent of the cut ones (positions beyond a batch's longest are left at zero)."""
    llama = _llama(model)
    N, T = ids.shape
    order = torch.argsort(lengths) if lengths is not None else torch.arange(N)
    out = torch.zeros(N, T, llama.config.hidden_size)
    captured: list[torch.Tensor] = []

    def capture(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        captured.append(args[0] if args else kwargs["hidden_states"])
        raise _Stop

    handle = llama.layers[len(llama.layers) - n_top].register_forward_pre_hook(capture, with_kwargs=True)
    try:
        with torch.no_grad():
            for start in range(0, N, batch):
                rows = order[start : start + batch]
                width = int(lengths[rows].max()) if lengths is not None else T
                with contextlib.suppress(_Stop):
                    llama(input_ids=ids[rows, :width])
                out[rows, :width] = captured.pop()
    finally:
        handle.remove()
    return out


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _layer_at(layer: Any, h: torch.Tensor, query: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> Any:
    """One Llama decoder layer evaluated at the ``query`` positions only (B, Q): keys and values from every
    position, causal (a query at position p sees keys 0..p). Returns the layer output at the query positions."""
    attn = layer.self_attn
    B, T, d = h.shape
    hd, n_kv = attn.head_dim, attn.config.num_key_value_heads
    n_q = attn.config.num_attention_heads
    x = layer.input_layernorm(h)
    gather = query[..., None].expand(-1, -1, d)
    xq, hq = x.gather(1, gather), h.gather(1, gather)
    Q = query.shape[1]
    k = attn.k_proj(x).view(B, T, n_kv, hd).transpose(1, 2)
    v = attn.v_proj(x).view(B, T, n_kv, hd).transpose(1, 2)
    q = attn.q_proj(xq).view(B, Q, n_q, hd).transpose(1, 2)
    k = k * cos[:, None] + _rotate_half(k) * sin[:, None]
    cq = cos[0][query][:, None]
    sq = sin[0][query][:, None]
    q = q * cq + _rotate_half(q) * sq
    rep = n_q // n_kv
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    scores = (q @ k.transpose(-1, -2)) * attn.scaling  # (B, H, Q, T)
    future = torch.arange(T)[None, None, :] > query[:, :, None]  # (B, Q, T)
    scores = scores.masked_fill(future[:, None], float("-inf"))
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, Q, n_q * hd)
    hq = hq + attn.o_proj(out)
    return hq + layer.mlp(layer.post_attention_layernorm(hq))


def top_hidden(model: Any, hidden: torch.Tensor, task: EncodedTask, n_top: int) -> torch.Tensor:
    """Final-norm hidden states at the query positions (B, Q, d) from hidden states entering layer L − n_top.
    Lower top layers run on every position, the last one at the query positions only."""
    llama = _llama(model)
    hidden = hidden[:, : int(task.query.max()) + 1]  # causal: later positions never reach a query
    B, T, _ = hidden.shape
    positions = torch.arange(T)[None]
    cos, sin = llama.rotary_emb(hidden, positions)
    h = hidden
    every = positions.expand(B, T)
    for layer in llama.layers[len(llama.layers) - n_top : -1]:
        h = _layer_at(layer, h, every, cos, sin)
    return llama.norm(_layer_at(llama.layers[-1], h, task.query, cos, sin))


def _head(model: Any, task: EncodedTask) -> torch.Tensor:
    """The output embedding rows scored: the verbaliser candidates', else the whole vocabulary's."""
    head = model.get_output_embeddings().weight
    return head[task.candidates] if task.candidates is not None else head


def top_logits(model: Any, hidden: torch.Tensor, task: EncodedTask, n_top: int) -> torch.Tensor:
    """Logits at the query positions (B, Q, V) from hidden states entering layer L − n_top; V is the number of
    candidates for a verbaliser task, else the vocabulary."""
    return top_hidden(model, hidden, task, n_top) @ _head(model, task).T


def _loss_and_hits(model: Any, h: torch.Tensor, task: EncodedTask) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy over the real query slots, and per-example exact match (all real slots argmax-correct).
    Logits are formed for the real slots only (padding slots would cost a vocabulary-sized product each)."""
    logits = h[task.mask] @ _head(model, task).T
    target = task.target[task.mask]
    loss = torch.nn.functional.cross_entropy(logits, target)
    correct = torch.ones_like(task.mask)
    correct[task.mask] = logits.argmax(-1) == target
    return loss, correct.all(1)


def evaluate(model: Any, hidden: torch.Tensor, task: EncodedTask, n_top: int) -> dict[str, float]:
    with torch.no_grad():
        loss, hits = _loss_and_hits(model, top_hidden(model, hidden, task, n_top), task)
    return {"loss": float(loss), "accuracy": float(hits.float().mean())}


def train_top_lora(
    model: Any,
    train: tuple[torch.Tensor, EncodedTask],
    test: tuple[torch.Tensor, EncodedTask],
    n_top: int,
    optimiser: str,
    lr: float,
    steps: int,
    batch: int,
    seed: int,
) -> dict[str, Any]:
    """Train the trainable (LoRA) parameters of ``model`` on cached hidden states; minibatch order from ``seed``
    (identical across inits of a cell). Returns the train-loss curve and held-out loss and accuracy."""
    params = [p for p in model.parameters() if p.requires_grad]
    if optimiser == "adamw":
        opt: torch.optim.Optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    elif optimiser == "sgd":
        opt = torch.optim.SGD(params, lr=lr)
    else:
        raise ValueError(f"optimiser must be 'adamw' or 'sgd', got {optimiser!r}")
    hidden, task = train
    gen = torch.Generator().manual_seed(seed)
    n = hidden.shape[0]
    order = torch.cat([torch.randperm(n, generator=gen) for _ in range(math.ceil(steps * batch / n) + 1)])
    curve = []
    for step in range(steps):
        index = order[step * batch : (step + 1) * batch]
        batch_task = task.subset(index)
        loss, _ = _loss_and_hits(model, top_hidden(model, hidden[index], batch_task, n_top), batch_task)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        curve.append(float(loss.detach()))
    final = evaluate(model, *test, n_top)
    return {"train_curve": curve, "eval_loss": final["loss"], "eval_accuracy": final["accuracy"]}
