"""The shared offline model and text helpers."""

import math

import pytest

from icml26.models import shakespeare
from icml26.models.smollm2 import smollm2_cache_path, smollm2_gguf


def test_shakespeare_is_plain_verse():
    text = shakespeare("tragedies", ("hamlet",))
    assert text.startswith("Who's there?")
    assert "**" not in text and "\n_" not in text and "# " not in text
    assert len(text) > 100_000
    with pytest.raises(ValueError, match="no such tragedies"):
        shakespeare("tragedies", ("hamlet2",))
    with pytest.raises(ValueError, match="kind must be"):
        shakespeare("sonnets")


def test_the_gguf_ships_in_the_wheel():
    path = smollm2_gguf()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


@pytest.mark.slow
def test_smollm2_loads_offline_and_scores_text():
    """Converts the GGUF once (~45 s on 2 cores) into the user cache, then reloads it; a fixed window of Hamlet
    scores a perplexity in a sane range for a 135M model (recorded: 62 on the first four windows)."""
    from icml26.models import load_smollm2, token_windows, window_nll

    model, tokenizer = load_smollm2()
    assert (smollm2_cache_path() / "config.json").exists()
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    windows = token_windows(tokenizer, shakespeare("tragedies", ("hamlet",)), 256, n_windows=2)
    nll = window_nll(model, windows)
    assert nll.shape == (2,)
    assert 10 < math.exp(float(nll.mean())) < 300
    with pytest.raises(ValueError, match="shorter than one window"):
        token_windows(tokenizer, "too short", 256)
