"""Without tuning (``NINETOOTHED_TUNING`` off or cached without a result), a call takes the
space's first configuration that fits it (``Tuner.untuned``): a space is sized for 2-byte
elements, and its first may need more shared memory than a GPU has for float32 tiles."""

from __future__ import annotations

from typing import Any

import pytest

from nt_triton import _tuning as tuning
from nt_triton.tuner._core import Tuner

BLOCKS = (4096, 2048, 64)
"""Tiles of ``B`` x 8 elements loaded in a loop, 3 stages: 4096 fits 2-byte elements only
(192 KiB of shared memory, 384 KiB for 4-byte ones), 2048 fits 4-byte elements but not
8-byte ones, 64 fits every size."""


class _Sizing:
    """One pipelined tile of ``B`` x ``R`` elements (``R``: a constexpr size, 8 unless given)."""

    def tiles(self, values: dict[str, int]) -> tuning.Tiles:
        elements = values["B"] * values.get("R", 8)
        return tuning.Tiles((elements,), (), elements, 0)


def _tuner(blocks: tuple[int, ...] = BLOCKS, stem: str = "untuned") -> Tuner:
    configurations = [tuning.Configuration({"B": b}, 4, 3) for b in blocks]
    return Tuner("k", stem, configurations, _Sizing())


def _untuned_call() -> Any:
    pytest.fail("an untuned choice builds no tuning call")


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))


def test_the_fits_of_the_stand_in():
    sizing = _Sizing()
    fits = [
        [tuning.fits(tuning.Configuration({"B": b}, 4, 3), sizing, {}, size) for b in BLOCKS]
        for size in (2, 4, 8)
    ]
    assert fits == [[True, True, True], [False, True, True], [False, False, True]]


@pytest.mark.parametrize(("element_bytes", "chosen"), [(2, 4096), (4, 2048), (8, 64)])
def test_tuning_off_takes_the_first_configuration_that_fits_the_call(
    monkeypatch, element_bytes, chosen
):
    monkeypatch.setenv("NINETOOTHED_TUNING", "off")
    tuner = _tuner()
    got = tuner.choose(
        ("key", element_bytes), "gpu", _untuned_call, None, lambda: ({}, element_bytes)
    )
    assert got.values == {"B": chosen}


def test_the_call_s_constexpr_sizes_count(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_TUNING", "off")
    got = _tuner().choose(("key",), "gpu", _untuned_call, None, lambda: ({"R": 64}, 2))
    assert got.values == {"B": 64}  # 4096 and 2048 x 64 rows no longer fit


def test_cached_without_a_result_warns_and_takes_the_first_that_fits(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_TUNING", "cached")
    tuner = _tuner(stem="untuned_cached")
    with pytest.warns(UserWarning, match="first configuration that fits"):
        got = tuner.choose(("key",), "gpu", _untuned_call, None, lambda: ({}, 4))
    assert got.values == {"B": 2048}


def test_without_a_fit_or_with_none_fitting_the_first(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_TUNING", "off")
    assert _tuner().choose(("a",), "gpu", _untuned_call).values == {"B": 4096}
    none_fit = _tuner((4096, 2048))
    assert none_fit.choose(("b",), "gpu", _untuned_call, None, lambda: ({}, 8)).values == {
        "B": 4096
    }
