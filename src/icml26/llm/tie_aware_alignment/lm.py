"""Claim C3 on a real language model: self-generated pairs, a programmatic true reward, LoRA-DPO through TRL.

1. **Candidates.** The reference model samples ``K`` short continuations of each prompt ("My honest opinion of
   <subject>:"), for training prompts and, separately, for held-out evaluation prompts.
2. **True reward** (programmatic, known): ``r*(y) = (#positive - #negative lexicon words) - length_cost * #words``
   (a sentiment lexicon written here; the true reward slightly dislikes length). Many pairs have the same sentiment
   count: indistinguishable pairs are prevalent, as the abstract observes.
3. **Labels** by :class:`~icml26.llm.tie_aware_alignment.ResolutionLimitedLabeler` on ``r*`` with the response's
   length in characters as the spurious feature: silent (ties) or forced with the longer response winning.
4. **Training**: LoRA on the top decoder layers, TRL 1.16 ``DPOTrainer`` (forced labels; silent labels with the
   ties dropped) or :class:`~icml26.llm.tie_aware_alignment.TiesDPOTrainer` (silent labels, ties modelled), same
   pairs, steps, batch, learning rate and seed.
5. **Evaluation** on the held-out prompts' candidates (samples of the reference): the learned implicit reward
   ``h(y) = log pi_theta(y|x) - log pi_ref(y|x)`` tilts the empirical reference, ``pi_s(y_k) ~ exp(s h(y_k))``,
   and the normalised true reward is read at a matched KL (:func:`~.world.reward_at_matched_kl`), as in the toy.

The smoke and quick profiles run the same pipeline on a tiny random Llama with a word-level vocabulary built from
the lexicon (a plumbing check: one seed, so their verdict is inconclusive by design); the full profile runs
SmolLM2-135M-Instruct (Q4_1-dequantised).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from icml26.llm.tie_aware_alignment.world import ResolutionLimitedLabeler, reward_at_matched_kl

__all__ = ["NEGATIVE", "POSITIVE", "SUBJECTS", "lexicon_reward", "run_lm_claim", "word_tokenizer"]

POSITIVE = frozenset(
    [
        "good",
        "great",
        "excellent",
        "wonderful",
        "amazing",
        "lovely",
        "nice",
        "best",
        "beautiful",
        "fantastic",
        "happy",
        "love",
        "loved",
        "enjoy",
        "enjoyed",
        "perfect",
        "brilliant",
        "pleasant",
        "delightful",
        "awesome",
        "fun",
        "favorite",
        "favourite",
        "charming",
        "superb",
        "impressive",
        "glad",
        "fine",
        "sweet",
        "warm",
        "bright",
        "fresh",
        "friendly",
        "helpful",
        "clean",
        "calm",
        "inspiring",
        "exciting",
        "remarkable",
        "solid",
    ]
)
NEGATIVE = frozenset(
    [
        "bad",
        "terrible",
        "awful",
        "poor",
        "worst",
        "boring",
        "ugly",
        "hate",
        "hated",
        "sad",
        "disappointing",
        "disappointed",
        "annoying",
        "horrible",
        "dull",
        "mediocre",
        "broken",
        "dirty",
        "rude",
        "slow",
        "painful",
        "weak",
        "mess",
        "waste",
        "wrong",
        "angry",
        "cold",
        "noisy",
        "expensive",
        "unpleasant",
        "bland",
        "tired",
        "lazy",
        "stupid",
        "useless",
    ]
)
SUBJECTS = (
    "the new library",
    "my neighbour's garden",
    "the morning train",
    "this small cafe",
    "the local museum",
    "the city park",
    "our new kitchen",
    "the hotel breakfast",
    "the school concert",
    "the old bookshop",
    "the summer festival",
    "my first bicycle",
    "the beach at dawn",
    "the winter market",
    "this family film",
    "the hiking trail",
    "the football match",
    "my new phone",
    "the village bakery",
    "the art exhibition",
    "the jazz club",
    "the science fair",
    "the river cruise",
    "the night bus",
    "the mountain hut",
    "the farmers market",
    "the comedy show",
    "my office chair",
    "the swimming pool",
    "the train station",
    "the pizza place",
    "the botanical garden",
    "the student canteen",
    "the book club",
    "the ferry ride",
    "the new stadium",
    "the street food stall",
    "the public library app",
    "the dance class",
    "the rainy weekend",
    "the museum cafe",
    "the yoga retreat",
    "the city tour",
    "the music festival",
    "the tea house",
    "the camping trip",
    "the new restaurant",
    "the board game night",
    "the zoo visit",
    "the theatre play",
    "the coffee machine",
    "the garden party",
    "the harbour walk",
    "the sports club",
    "the wedding dinner",
    "the cooking course",
    "the shopping centre",
    "the online course",
    "the bike path",
    "the ice rink",
    "the night market",
    "the castle tour",
    "the school trip",
    "the film festival",
    "the pottery class",
    "the cinema seats",
    "the island ferry",
    "the bakery bread",
    "the late train",
    "the hostel room",
    "the lake cabin",
    "the craft fair",
)
_WORD = re.compile(r"[a-z']+")


def lexicon_reward(text: str, length_cost: float = 0.02) -> float:
    """The programmatic true reward: positive minus negative lexicon words, minus ``length_cost`` per word."""
    words = _WORD.findall(text.lower())
    return float(sum(w in POSITIVE for w in words) - sum(w in NEGATIVE for w in words) - length_cost * len(words))


def _prompt(subject: str) -> str:
    return f"My honest opinion of {subject}:"


# ---------------------------------------------------------------------------------------------- models
def word_tokenizer(words: list[str]) -> Any:
    """A word-level fast tokenizer over ``words`` (``<pad>``, ``<eos>``, ``<unk>`` first, ids 0, 1, 2), split on
    whitespace and punctuation: for tiny random models in tests, benchmarks and the plumbing profiles."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = list(dict.fromkeys(["<pad>", "<eos>", "<unk>", *words]))
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


def _tiny_lm(seed: int = 0) -> tuple[Any, Any]:
    """A tiny random Llama and a word-level tokenizer over the prompts' and the lexicon's words (plumbing only)."""
    from icml26.models import tiny_llama

    prompt_words = {w for s in SUBJECTS for w in _WORD.findall(_prompt(s).lower())} | {":"}
    fillers = ["the", "a", "it", "was", "and", "but", "very", "quite", "so", "really", "not"]
    tokenizer = word_tokenizer([*sorted(prompt_words), *sorted(POSITIVE), *sorted(NEGATIVE), *fillers])
    model = tiny_llama(seed, vocab_size=len(tokenizer), pad_token_id=0, eos_token_id=1, bos_token_id=1)
    return model, tokenizer


def _load(source: str) -> tuple[Any, Any]:
    if source == "tiny":
        return _tiny_lm()
    if source == "smollm2":
        from icml26.models import load_smollm2

        return load_smollm2()
    raise ValueError(f"source must be 'tiny' or 'smollm2', got {source!r}")


# ------------------------------------------------------------------------------------------ generation
def generate_candidates(
    model: Any, tokenizer: Any, prompts: list[str], k: int, max_new_tokens: int, seed: int, batch: int = 64
) -> list[list[str]]:
    """``k`` sampled continuations (temperature 1) of every prompt, decoded without special tokens."""
    tokenizer.padding_side = "left"
    torch.manual_seed(seed)
    out: list[list[str]] = []
    per_batch = max(1, batch // k)
    for start in range(0, len(prompts), per_batch):
        chunk = prompts[start : start + per_batch]
        enc = tokenizer(chunk, return_tensors="pt", padding=True, return_token_type_ids=False)
        with torch.no_grad():
            ids = model.generate(
                **enc,
                do_sample=True,
                temperature=1.0,
                top_k=0,
                top_p=1.0,
                max_new_tokens=max_new_tokens,
                num_return_sequences=k,
                pad_token_id=tokenizer.pad_token_id,
            )
        texts = tokenizer.batch_decode(ids[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        out.extend(texts[i * k : (i + 1) * k] for i in range(len(chunk)))
    return [[" " + t.strip() if t.strip() else " ." for t in row] for row in out]


def completion_logps(model: Any, tokenizer: Any, prompts: list[str], completions: list[str], batch: int = 16) -> Any:
    """Summed log-prob of each completion (with the EOS TRL appends) given its prompt, tokenised as TRL does for
    non-conversational data (the completion starts where prompt and prompt+completion tokenisations diverge)."""
    rows = []
    for prompt, completion in zip(prompts, completions, strict=True):
        p = tokenizer(prompt)["input_ids"]
        full = tokenizer(prompt + completion + tokenizer.eos_token)["input_ids"]
        n = next((i for i, (x, y) in enumerate(zip(p, full, strict=False)) if x != y), min(len(p), len(full)))
        rows.append((full, n))
    out = torch.empty(len(rows), dtype=torch.float64)
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        width = max(len(f) for f, _ in chunk)
        ids = torch.full((len(chunk), width), tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, (full, _) in enumerate(chunk):
            ids[i, : len(full)] = torch.tensor(full)
            mask[i, : len(full)] = 1
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits.float()
        logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
        for i, (full, n) in enumerate(chunk):
            out[start + i] = logp[i, max(n - 1, 0) : len(full) - 1].double().sum()
    return out


# -------------------------------------------------------------------------------------------- training
def _dataset(prompts: list[str], a: list[str], b: list[str], labels: np.ndarray, keep_ties: bool) -> Any:
    """TRL rows: label +1 keeps (a, b), -1 swaps them, 0 is a tie (kept with is_tie=True, or dropped)."""
    from datasets import Dataset

    rows: dict[str, list[Any]] = {"prompt": [], "chosen": [], "rejected": [], "is_tie": []}
    for p, ya, yb, lab in zip(prompts, a, b, labels, strict=True):
        if lab == 0 and not keep_ties:
            continue
        chosen, rejected = (yb, ya) if lab == -1 else (ya, yb)
        rows["prompt"].append(p)
        rows["chosen"].append(chosen)
        rows["rejected"].append(rejected)
        rows["is_tie"].append(bool(lab == 0))
    return Dataset.from_dict(rows)


@contextlib.contextmanager
def _quiet() -> Any:
    """TRL and datasets print progress bars, log lines and warnings per map and step: keep cell logs readable."""
    previous = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"
    loggers = [logging.getLogger(n) for n in ("transformers", "trl", "datasets", "accelerate", "peft")]
    levels = [lg.level for lg in loggers]
    try:
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stderr(io.StringIO()),
            contextlib.redirect_stdout(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            from datasets.utils.logging import disable_progress_bar

            disable_progress_bar()
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
        if previous is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = previous


def train_arm(
    source: str, dataset: Any, setting: Mapping[str, Any], seed: int, tie_model: str | None, workdir: str
) -> Any:
    """LoRA-DPO on a fresh copy of the model: TRL's ``DPOTrainer`` (``tie_model=None``) or ``TiesDPOTrainer``."""
    from peft import LoraConfig
    from trl import DPOConfig, DPOTrainer

    from icml26.llm.tie_aware_alignment.trainer import TiesDPOConfig, TiesDPOTrainer

    model, tokenizer = _load(source)
    tokenizer.padding_side = "left"
    n_layers = model.config.num_hidden_layers
    lora = LoraConfig(
        r=int(setting["lora_r"]),
        lora_alpha=2 * int(setting["lora_r"]),
        lora_dropout=0.0,
        target_modules=["q_proj", "v_proj"],
        layers_to_transform=list(range(n_layers - int(setting["lora_layers"]), n_layers)),
    )
    common = {
        "output_dir": workdir,
        "per_device_train_batch_size": int(setting["batch"]),
        "max_steps": int(setting["steps"]),
        "learning_rate": float(setting["lr"]),
        "lr_scheduler_type": "constant",
        "beta": float(setting["beta"]),
        "report_to": "none",
        "use_cpu": True,
        "save_strategy": "no",
        "logging_steps": max(1, int(setting["steps"]) // 4),
        "seed": seed,
        "data_seed": seed,
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
    }
    if tie_model is None:
        args = DPOConfig(**common)
        trainer = DPOTrainer(
            model=model, args=args, train_dataset=dataset.remove_columns("is_tie"), processing_class=tokenizer,
            peft_config=lora,
        )  # fmt: skip
    else:
        args = TiesDPOConfig(**common, tie_model=tie_model, nu=float(setting["nu"]))
        trainer = TiesDPOTrainer(
            model=model, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=lora
        )
    trainer.train()
    return trainer


# ------------------------------------------------------------------------------------------ evaluation
def _implicit_reward(trainer: Any, tokenizer: Any, prompts: list[str], completions: list[str], ref: Any) -> Any:
    model = trainer.model
    model.eval()
    return completion_logps(model, tokenizer, prompts, completions) - ref


ARMS: dict[str, tuple[bool, str, str | None]] = {  # arm -> (forced, tiebreak, tie model; None = TRL's DPOTrainer)
    "silent_weak": (False, "random", "davidson"),
    "silent_weak_drop": (False, "random", None),
    "forced_weak_spurious": (True, "spurious", None),
}


def run_lm_claim(setting: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """C3, one seed: candidates, labels, one LoRA-DPO run per arm of :data:`ARMS` (or of ``setting["arms"]``, a
    subset: the full profile skips the shown-only ``silent_weak_drop`` for time), matched-KL evaluation."""
    import tempfile

    source = str(setting["source"])
    rng = np.random.default_rng(seed)
    subjects = list(SUBJECTS)
    rng.shuffle(subjects)
    n_train, n_eval, k = int(setting["train_prompts"]), int(setting["eval_prompts"]), int(setting["candidates"])
    if n_train + n_eval > len(subjects):
        raise ValueError(f"train_prompts + eval_prompts must be <= {len(subjects)}")
    train_prompts = [_prompt(s) for s in subjects[:n_train]]
    eval_prompts = [_prompt(s) for s in subjects[n_train : n_train + n_eval]]
    base, tokenizer = _load(source)
    tokens = int(setting["max_new_tokens"])
    with _quiet():
        train_cands = generate_candidates(base, tokenizer, train_prompts, k, tokens, seed)
        eval_cands = generate_candidates(base, tokenizer, eval_prompts, k, tokens, seed + 10_000)
    cost = float(setting["length_cost"])
    # pairs: `pairs_per_prompt` distinct candidate pairs of each training prompt, in random order
    pa, pb, pp = [], [], []
    for i, prompt in enumerate(train_prompts):
        for _ in range(int(setting["pairs_per_prompt"])):
            x, y = rng.choice(k, size=2, replace=False)
            pa.append(train_cands[i][x])
            pb.append(train_cands[i][y])
            pp.append(prompt)
    ra = np.array([lexicon_reward(t, cost) for t in pa])
    rb = np.array([lexicon_reward(t, cost) for t in pb])
    la, lb = np.array([len(t) for t in pa], float), np.array([len(t) for t in pb], float)
    noise, coin = rng.standard_normal(len(pa)), int(rng.integers(2**32))
    flat_prompts = [p for p in eval_prompts for _ in range(k)]
    flat_cands = [c for row in eval_cands for c in row]
    eval_rewards = torch.tensor([[lexicon_reward(c, cost) for c in row] for row in eval_cands], dtype=torch.float64)
    ref = completion_logps(base, tokenizer, flat_prompts, flat_cands)
    del base
    budget = float(setting["kl_budget"])
    metrics: dict[str, dict[str, float]] = {}
    info: dict[str, Any] = {"pairs": len(pa), "eval_prompts": n_eval, "candidates": k}
    arms = list(setting.get("arms", ARMS))
    if unknown := [a for a in arms if a not in ARMS]:
        raise ValueError(f"unknown arms {unknown}; choose from {list(ARMS)}")
    for arm in arms:
        forced, tiebreak, tie_model = ARMS[arm]
        labeler = ResolutionLimitedLabeler(float(setting["sigma"]), float(setting["tau"]), forced, tiebreak)  # type: ignore[arg-type]
        labels = labeler.label(ra, rb, spurious_a=la, spurious_b=lb, noise=noise, rng=np.random.default_rng(coin))
        dataset = _dataset(pp, pa, pb, labels, keep_ties=tie_model is not None)
        with tempfile.TemporaryDirectory() as workdir, _quiet():
            trainer = train_arm(source, dataset, setting, seed, tie_model, workdir)
            h = _implicit_reward(trainer, trainer.processing_class, flat_prompts, flat_cands, ref)
        scores = h.reshape(n_eval, k)
        loss = [r["loss"] for r in trainer.state.log_history if "loss" in r]
        metrics[arm] = {
            "reward_at_kl": float(reward_at_matched_kl(scores, eval_rewards, budget)),
            "tie_fraction": float(np.mean(labels == 0)),
            "pairs_trained_on": float(len(dataset)),
            **({"final_loss": float(loss[-1])} if loss else {}),
            "implicit_reward_sd": float(scores.std()),
        }
        corr = np.corrcoef(scores.flatten().numpy(), [len(c) for c in flat_cands])[0, 1]
        info[f"{arm}_length_corr"] = float(np.nan_to_num(corr))
    info["eval_reward_mean"] = float(eval_rewards.mean())
    info["eval_reward_best"] = float(eval_rewards.max(dim=1).values.mean())
    info["sub_resolution_pairs"] = float(np.mean(np.abs(ra - rb) < float(setting["tau"])))
    return {"metrics": metrics, "info": info}
