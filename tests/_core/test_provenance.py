"""Provenance records the machine's CPU so that a card's float results can be traced to the kernels that made them."""

from __future__ import annotations

import pytest

from icml26._core import provenance as prov


def test_provenance_names_cpu_and_isa():
    record = prov.provenance()
    assert set(record) >= {"icml26", "python", "numpy", "platform", "cpu", "cpu_isa", "threads", "created"}
    assert record["cpu"] is None or isinstance(record["cpu"], str)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("fpu sse4_2 avx avx2 avx512f avx512bw", "AVX512"),
        ("fpu sse4_2 avx avx2", "AVX2"),
        ("fpu sse4_2", "SSE4.2"),
        ("fp asimd", "NEON"),
        ("fpu", None),
    ],
)
def test_isa_is_the_best_level_the_flags_offer(monkeypatch, flags, expected):
    monkeypatch.setattr(prov, "_cpuinfo_field", lambda name: flags if name == "flags" else None)
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    monkeypatch.delitem(__import__("sys").modules, "torch", raising=False)
    assert prov.cpu_isa() == expected


def test_forced_torch_capability_is_named(monkeypatch):
    monkeypatch.setattr(prov, "_cpuinfo_field", lambda name: "avx avx2 avx512f" if name == "flags" else None)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    monkeypatch.delitem(__import__("sys").modules, "torch", raising=False)
    assert prov.cpu_isa() == "AVX512 (torch kernels: AVX2)"
