"""``maxnreg``: Triton's cap on registers per thread, tuned over like the warps.

A cap is a compile option, so these tests follow it from ``make`` to the
configurations, the compile call, the persisted tuning table and the JAX
launch (which cannot apply it and must not tune the same configuration twice).
"""

from __future__ import annotations

from typing import Any

import pytest

import ninetoothed
from ninetoothed import Tensor, block_size
from ninetoothed.errors import CodegenError
from nt_triton import _tuning as tuning
from nt_triton._launch import compiled
from nt_triton.tuner import _core as core


def application(x, y):
    y = x  # noqa: F841


def make(block: Any, **options: Any) -> Any:
    return ninetoothed.make(
        lambda x, y: (x.tile((block,)), y.tile((block,))),
        application,
        (Tensor(1), Tensor(1)),
        **options,
    )


def test_every_configuration_is_tried_with_every_cap():
    symbol = block_size(lower_bound=64, upper_bound=128)
    plain = make(symbol, num_warps=4, max_num_configs=100).generated.configurations
    capped = make(symbol, num_warps=4, max_num_configs=100, maxnreg=(None, 96))
    configurations = capped.generated.configurations
    assert len(configurations) == 2 * len(plain)
    assert {c.maxnreg for c in configurations} == {None, 96}
    for config in plain:
        assert {
            c.maxnreg
            for c in configurations
            if (c.values, c.num_stages) == (config.values, config.num_stages)
        } == {None, 96}
    assert all(c.maxnreg is None for c in plain)


def test_a_pinned_configuration_takes_its_cap_or_the_kernels():
    symbol = block_size()
    kernel = make(symbol, configs=[{symbol.name: 64, "maxnreg": 80}, {symbol.name: 32}])
    first, second = kernel.generated.configurations
    assert (first.maxnreg, second.maxnreg) == (80, None)
    other = block_size()
    given = make(other, maxnreg=72, configs=[{other.name: 64}])
    assert given.generated.configurations[0].maxnreg == 72
    misspelt = block_size()
    with pytest.raises(CodegenError, match="unknown \\['maxnregs'\\]"):
        make(misspelt, configs=[{misspelt.name: 64, "maxnregs": 80}])


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("128", TypeError, "maxnreg must be an int, None or a tuple"),
        (300, ValueError, "maxnreg must be between 24 and 255, got 300"),
        ((), ValueError, "maxnreg is an empty tuple"),
        ((None, 2.5), TypeError, "got float 2.5"),
    ],
)
def test_a_bad_cap_is_refused_at_make_naming_maxnreg(value, error, message):
    with pytest.raises(error, match=message):
        make(block_size(), maxnreg=value)


@pytest.mark.parametrize(
    ("cap", "error", "message"),
    [
        (300, ValueError, "maxnreg must be between 24 and 255, got 300"),
        ((None, 96), TypeError, "configs\\[0\\]\\['maxnreg'\\] is one cap"),
        ("96", TypeError, "maxnreg must be an int, None or a tuple"),
    ],
)
def test_a_bad_cap_in_a_pinned_configuration_is_refused_at_make(cap, error, message):
    symbol = block_size()
    with pytest.raises(error, match=message):
        make(symbol, configs=[{symbol.name: 64, "maxnreg": cap}])


def test_the_cap_reaches_tritons_compile_options(monkeypatch):
    import triton

    seen: list[dict[str, Any]] = []

    def compile(source: Any, target: Any = None, options: Any = None) -> str:
        seen.append(dict(options))
        return "compiled"

    class Source:
        def source(self, function: Any) -> str:
            return "source"

    monkeypatch.setattr(triton, "compile", compile)
    compiled.compile_kernel(None, Source(), None, 4, 3, 128)  # type: ignore[arg-type]
    compiled.compile_kernel(None, Source(), None, 8, 2)  # type: ignore[arg-type]
    assert seen == [
        {"num_warps": 4, "num_stages": 3, "maxnreg": 128},
        {"num_warps": 8, "num_stages": 2},
    ]


def test_the_tuning_table_keeps_the_cap():
    config = tuning.Configuration({"B": 64}, 4, 3, {}, 128)
    assert core.from_entry(core.configuration_entry(config)) == config
    uncapped = tuning.Configuration({"B": 64}, 4, 3)
    entry = core.configuration_entry(uncapped)
    assert core.from_entry(entry) == uncapped
    del entry["maxnreg"]  # a table written before caps existed
    assert core.from_entry(entry) == uncapped


def test_jax_tunes_configurations_that_differ_only_in_their_cap_once():
    from nt_jax import triton_call

    symbol = block_size(lower_bound=64, upper_bound=128)
    kernel = make(symbol, num_warps=4, num_stages=2, max_num_configs=100, maxnreg=(None, 96))
    configs: list[tuple[Any, ...]] = []

    def config(values: Any, num_warps: int, num_stages: int) -> tuple[Any, ...]:
        configs.append((tuple(sorted(values.items())), num_warps, num_stages))
        return configs[-1]

    def autotune(configs: Any, key: Any) -> Any:
        return lambda function: function

    triton_call._autotuned(kernel.generated, lambda: None, ["n"], autotune, config)
    assert len(configs) == len(set(configs)) == len(kernel.generated.configurations) // 2
