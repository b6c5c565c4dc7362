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


def test_one_configuration_is_the_middle_of_the_space(monkeypatch):
    """With room for one configuration, tuning takes the middle, never the largest tile."""
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "1")
    from ninetoothed.library import mm

    premade = mm.premake()
    kernel = ninetoothed.make(premade.arrangement, premade.application, premade.tensors)
    (config,) = kernel.generated.configurations
    m, n, k = (config.values[name] for name in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"))
    assert m * n < 1024 * 1024 and (m, n, k) != (16, 16, 16)
    # A pipelined loop keeps a configuration that fits 4-byte elements.
    pipelined = (m * k + k * n) * 4 * config.num_stages
    assert pipelined <= tuning.SHARED_MEMORY_BYTES


def test_block_sizes_take_the_arrangement_parameters_names():
    from ninetoothed.library import mm

    premade = mm.premake()
    kernel = ninetoothed.make(premade.arrangement, premade.application, premade.tensors)
    assert set(kernel.spec.meta_symbols) == {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"}


def test_the_space_counts_sizes_at_their_bounds_and_dot_accumulators(monkeypatch):
    """Upstream's attention: the head dimension counts at its upper bound (128), the q @ k.T
    accumulator counts too, so no configuration holds 1024 x 1024 tiles (issue 12)."""
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "1000")
    from tests.upstream import test_attention as attention

    options = (None, None, {"constexpr": True}, {"constexpr": True, "upper_bound": 128})
    tensors = tuple(Tensor(4, shape_options=options) for _ in range(4))
    kernel = ninetoothed.make(attention.arrangement, attention.application, tensors)
    configurations = kernel.generated.configurations
    assert configurations
    for config in configurations:
        m, n = config.values["BLOCK_SIZE_M"], config.values["BLOCK_SIZE_N"]
        # q, o: m x 128; k, v: n x 128 (fp16); the accumulators m x n and m x 128 (fp32)
        held = (2 * m * 128 + 2 * n * 128) * 2 + max(m * n, m * 128) * 4
        assert held / 4 / (32 * config.num_warps) <= tuning.MAX_REGISTERS
    first = configurations[0].values
    largest = max(configurations, key=lambda c: c.values["BLOCK_SIZE_M"] * c.values["BLOCK_SIZE_N"])
    assert first != largest.values


def test_a_call_with_wider_elements_prunes_what_no_longer_fits():
    from ninetoothed.library import mm

    premade = mm.premake()
    kernel = ninetoothed.make(
        premade.arrangement, premade.application, premade.tensors, max_num_configs=1000
    )
    generated = kernel.generated
    sizing = generated._sizing
    assert all(tuning.fits(c, sizing, {}, 2) for c in generated.configurations)
    wide = [c for c in generated.configurations if not tuning.fits(c, sizing, {}, 8)]
    assert wide, "float64 elements must not fit every float16 configuration"


def test_tuples_of_warps_and_stages_are_crossed_with_the_meta_values():
    symbol = block_size(lower_bound=64, upper_bound=128)
    kernel = make(symbol, num_warps=(2, 4), num_stages=(1, 2), max_num_configs=100)
    combos = {(c.num_warps, c.num_stages) for c in kernel.generated.configurations}
    assert combos == {(2, 1), (2, 2), (4, 1), (4, 2)}
