"""The auto-tuning space (``nt_triton._tuning``): bounds, limits, the cap, pinned configurations."""

from __future__ import annotations

import pytest

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor, block_size
from ninetoothed.arrangement.symbol import is_power_of_two
from ninetoothed.errors import CodegenError
from nt_triton import _tuning as tuning
from nt_triton._codegen.meta_values import symbol_values


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
    assert symbol_values(block_size(lower_bound=20, upper_bound=128)) == [32, 64, 128]
    with pytest.raises(CodegenError, match="no power of two between 65 and 100"):
        symbol_values(Symbol("B", meta=True, lower_bound=65, upper_bound=100))


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
        # q: m x 128, loaded before the loop; k, v: n x 128 in it (fp16); the larger
        # accumulator, m x n or m x 128 (fp32), whose value the stored o is
        held = (m * 128 + 2 * n * 128) * 2 + max(m * n, m * 128) * 4
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


def _gemm_space(monkeypatch, premade):
    """The configurations (block sizes, warps, stages) of a library GEMM, sized for a GPU."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    kernel = ninetoothed.make(
        premade.arrangement, premade.application, premade.tensors, max_num_configs=1000
    )
    return {
        (tuple(sorted(c.values.items())), c.num_warps, c.num_stages)
        for c in kernel.generated.configurations
    }


def test_an_epilogue_tile_does_not_count_with_the_loop_operands(monkeypatch):
    """addmm's input, loaded after the loop over k, never lives with that loop's operand
    tiles: its space is mm's, 128 x 256 x 64 blocks on 8 warps included (what mm picks on
    an H100; summing every tile pruned them and addmm ran at 0.67x the Triton baseline)."""
    from ninetoothed.library import addmm, mm

    gemm = _gemm_space(monkeypatch, mm.premake())
    best = (("BLOCK_SIZE_K", 64), ("BLOCK_SIZE_M", 128), ("BLOCK_SIZE_N", 256))
    assert {(best, 8, 3), (best, 8, 4)} <= gemm
    for pattern in ((None, None), (1, None), (None,)):
        assert _gemm_space(monkeypatch, addmm.premake(pattern)) == gemm


def test_phases_hold_the_tiles_loaded_before_a_loop_and_in_it():
    """A tile loaded in a loop dies with it; one loaded after it lives only at the end;
    one loaded before it (attention's q) lives through it and to the end."""
    from ninetoothed.library import addmm, mm
    from ninetoothed.library import scaled_dot_product_attention as sdpa

    def phases(premade):
        kernel = ninetoothed.make(premade.arrangement, premade.application, premade.tensors)
        return [
            [tuple(map(str, shape)) for shape in phase]
            for phase in kernel.generated._sizing.footprint.phases
        ]

    operands = [("BLOCK_SIZE_M", "BLOCK_SIZE_K"), ("BLOCK_SIZE_K", "BLOCK_SIZE_N")]
    assert phases(mm.premake()) == [operands, []]  # the output is the accumulator's value
    assert phases(addmm.premake((None, None))) == [operands, [("BLOCK_SIZE_M", "BLOCK_SIZE_N")]]
    *loops, end = phases(sdpa.premake())
    assert len(loops) == 2 and len(end) == 1  # the unmasked and the masked blocks of keys
    assert all(loop[0] == end[0] and len(loop) == 3 for loop in loops)  # q; k and v


def test_loops_one_after_another_do_not_add_up_their_pipelines():
    """Software pipelining keeps ``num_stages`` copies of a loop's tiles in shared memory
    while that loop runs; attention's two loops over key blocks (whole, then masked)
    run one after the other, so its pipeline holds one loop's key and value blocks,
    not both loops' (which pruned every 128 x 128 block of heads of 128)."""

    def loops_in_sequence(x, y):
        total = ntl.zeros(y.shape, dtype=ntl.float32)
        for i in range(x.shape[0]):
            total += x[i]
        for i in range(x.shape[0]):
            total += x[i] * 2
        y = total  # noqa: F841

    def loops_nested(x, y):
        total = ntl.zeros(y.shape, dtype=ntl.float32)
        for i in range(x.shape[0]):
            for j in range(x.shape[0]):
                total += x[i] + x[j]
        y = total  # noqa: F841

    def arrangement(x, y, BLOCK=block_size()):  # noqa: B008
        arranged = x.tile((1, BLOCK)).tile((-1, 1)).squeeze(0)  # per program: the rows
        arranged.dtype = arranged.dtype.squeeze(1)
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze(0)  # each row: (BLOCK,)
        return arranged, y.tile((BLOCK,))

    def pipelined(application):
        kernel = ninetoothed.make(arrangement, application, (Tensor(2), Tensor(1)))
        return kernel.generated._sizing.tiles({"BLOCK": 64}).pipelined

    assert pipelined(loops_in_sequence) == 64  # one loop's tile, not two
    assert pipelined(loops_nested) == 128  # one loop holding both tiles


def test_attention_pipelines_one_loops_key_and_value_blocks():
    from ninetoothed.library import scaled_dot_product_attention as sdpa

    premade = sdpa.premake(head_bound=128)
    kernel = ninetoothed.make(premade.arrangement, premade.application, premade.tensors)
    tiles = kernel.generated._sizing.tiles({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128})
    assert tiles.pipelined == 2 * 128 * 128  # a key block and a value block
    assert tiles.fits(2, num_warps=8, num_stages=3)


def test_attention_lists_fit_their_heads_and_start_with_one_for_float32():
    """Each head bound's measured list fits a GPU program at that bound for 2-byte
    elements (so tuning keeps every entry), and its first, which runs untuned or when
    the GPU tests cut each space to one, fits float32 too."""
    from ninetoothed.library import scaled_dot_product_attention as sdpa

    for bound in (16, 32, 64, 128, 256):
        premade = sdpa.premake(head_bound=bound)
        configs = premade.options["configs"]
        assert configs == sdpa.configurations(bound) and len(configs) <= 6
        kernel = ninetoothed.make(premade.arrangement, premade.application, premade.tensors)
        for index, config in enumerate(configs):
            blocks = {name: value for name, value in config.items() if name.startswith("BLOCK")}
            tiles = kernel.generated._sizing.tiles(blocks)
            warps, stages = config["num_warps"], config["num_stages"]
            assert tiles.fits(2, warps, stages), (bound, config)
            assert index or tiles.fits(4, warps, stages), (bound, config)


def test_conv2d_tunes_blocks_for_small_gemms(monkeypatch):
    """The paper's conv2d is a 576 x 512 GEMM (over 4608): 128 x 128 blocks make 20
    programs for an H100's 132 SMs, so its space holds 64 x 64 and 32-wide blocks too,
    and the 16 configurations tried keep small and large ones."""
    from ninetoothed.library import conv2d

    premade = conv2d.premake()
    blocks = {
        (dict(v)["BLOCK_SIZE_M"], dict(v)["BLOCK_SIZE_N"])
        for v, *_ in _gemm_space(monkeypatch, premade)
    }
    assert {(32, 64), (64, 32), (64, 64), (128, 128)} <= blocks
    kernel = ninetoothed.make(
        premade.arrangement, premade.application, premade.tensors, **premade.options
    )
    tried = [
        (c.values["BLOCK_SIZE_M"], c.values["BLOCK_SIZE_N"])
        for c in kernel.generated.configurations
    ]
    assert len(tried) == 16 and (64, 64) in tried and (128, 128) in tried
    assert min(m * n for m, n in tried) <= 32 * 64


def test_a_keyword_only_block_size_after_star_tensors_takes_its_name():
    """``def arrangement(*tensors, BLOCK_SIZE=block_size())``: ``*tensors`` takes every
    tensor, so the keyword-only parameter is renamed (it was counted as filled by a
    tensor, and kept a counter name that no call could pin)."""
    from ninetoothed.library import silu

    premade = silu.premake([(None,)], 1)
    kernel = ninetoothed.make(premade.arrangement, premade.application, premade.tensors)
    assert set(kernel.spec.meta_symbols) == {"BLOCK_SIZE"}

    def arrangement(x, *rest, BLOCK=block_size()):  # noqa: B008 - the DSL's idiom
        return (x.tile((BLOCK,)), *(t.tile((BLOCK,)) for t in rest))

    made = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1)))
    assert set(made.spec.meta_symbols) == {"BLOCK"}


def test_symbols_of_any_integer_are_thinned_past_the_combination_limit(monkeypatch):
    """Two symbols of 1009 integers each (power_of_two=False, default bounds) would be a
    million combinations; they are thinned evenly, ends kept, to at most 4096."""
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "1000")
    rows = Symbol("ROWS", meta=True, power_of_two=False)
    columns = Symbol("COLUMNS", meta=True, power_of_two=False)
    kernel = ninetoothed.make(
        lambda x, y: (x.tile((rows, columns)), y.tile((rows, columns))),
        application,
        (Tensor(2), Tensor(2)),
    )
    values = [c.values for c in kernel.generated.configurations]
    assert 0 < len(values) <= 1000
    seen = {name: {v[name] for v in values} for name in ("ROWS", "COLUMNS")}
    assert min(seen["ROWS"]) == 16 and any(not is_power_of_two(v) for v in seen["ROWS"])
    assert len(seen["ROWS"]) * len(seen["COLUMNS"]) <= tuning.MAX_COMBINATIONS
    # Powers of two are never thinned: every one of them stays beside a thinned symbol.
    wide = Symbol("WIDE", meta=True, power_of_two=False, lower_bound=1, upper_bound=4096)
    assert tuning._thinned(
        [list(range(1, 4097)), [16, 32, 64, 128, 256, 512, 1024]], [True, False], 100
    )[1] == [16, 32, 64, 128, 256, 512, 1024]
    assert symbol_values(wide)[-1] == 4096


def test_pinned_configurations_of_any_integer_symbols():
    rows = Symbol("ROWS", meta=True, power_of_two=False, lower_bound=3, upper_bound=5)
    kernel = make(rows, configs=[{"ROWS": 5}])
    assert [c.values for c in kernel.generated.configurations] == [{"ROWS": 5}]
    with pytest.raises(CodegenError, match="power_of_two=False takes any positive int"):
        make(rows, configs=[{"ROWS": 0}])
