"""The auto-tuning space (``nt_triton.tuning``): bounds, limits, the cap, pinned configurations."""

from __future__ import annotations

import pytest

import ninetoothed
from ninetoothed import Symbol, Tensor, block_size
from ninetoothed.errors import CodegenError
from nt_triton import tuning


def application(x, y):
    y = x  # noqa: F841


def make(block, **options):
    return ninetoothed.make(
        lambda x, y: (x.tile((block,)), y.tile((block,))),
        application,
        (Tensor(1), Tensor(1)),
        **options,
    )


def test_block_size_values_are_powers_of_two_within_bounds():
    assert tuning.symbol_values(block_size(lower_bound=20, upper_bound=128)) == [32, 64, 128]
    with pytest.raises(CodegenError, match="no power of two between 65 and 100"):
        tuning.symbol_values(Symbol("B", meta=True, lower_bound=65, upper_bound=100))


def test_configurations_are_capped(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "3")
    kernel = make(block_size(lower_bound=16, upper_bound=1024))
    assert len(kernel.generated.configurations) == 3
    sizes = [next(iter(c.values.values())) for c in kernel.generated.configurations]
    assert max(sizes) == 1024 and min(sizes) == 16


def test_tile_limit_prunes():
    big = block_size(lower_bound=1 << 16, upper_bound=1 << 17)
    with pytest.raises(CodegenError, match="exceeds the tile limits"):
        make(big)


def test_no_tuning_without_meta_symbols():
    kernel = make(Symbol("B", constexpr=True), num_warps=2)
    assert [(c.values, c.num_warps) for c in kernel.generated.configurations] == [({}, 2)]


def test_pinned_configurations():
    symbol = block_size()
    kernel = make(symbol, configs=[{symbol.name: 64, "num_warps": 2}])
    (config,) = kernel.generated.configurations
    assert config.values == {symbol.name: 64} and config.num_warps == 2
    with pytest.raises(CodegenError, match="missing"):
        make(block_size(), configs=[{"num_warps": 2}])


def test_inputs_and_outputs_are_recorded():
    kernel = make(block_size())
    assert kernel.generated.inputs == ("x",)
    assert kernel.generated.outputs == ("y",)


def test_pinned_meta_values_must_be_powers_of_two():
    symbol = block_size()
    with pytest.raises(CodegenError, match="powers of two"):
        make(symbol, configs=[{symbol.name: 48}])


def test_one_configuration_fits_float32_shared_memory(monkeypatch):
    """A kernel with a pipelined loop keeps a configuration that fits 4-byte elements."""
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "1")
    from ninetoothed.library import mm

    premade = mm.premake()
    kernel = ninetoothed.make(premade.arrangement, premade.application, premade.tensors)
    (config,) = kernel.generated.configurations
    m, n, k = (config.values[symbol.name] for symbol in mm.arrangement.__defaults__)
    pipelined = (m * k + k * n) * 4 * config.num_stages
    assert pipelined <= tuning.SHARED_MEMORY_BYTES
