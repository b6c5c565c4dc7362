"""Code generation (``nt_triton._codegen``): golden excerpts of generated kernels.

The kernels are built here with named symbols, so their source is stable;
each test asserts on the lines that carry meaning (addressing, masks, hoisted
loads, the grid decomposition), not on whole files.
"""

from __future__ import annotations

import dataclasses

import pytest

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor
from ninetoothed.spec._build import build_spec
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import _codegen as codegen

BLOCK = Symbol("BLOCK", meta=True)
BLOCK_M = Symbol("BLOCK_M", meta=True)
BLOCK_N = Symbol("BLOCK_N", meta=True)
BLOCK_K = Symbol("BLOCK_K", meta=True)


def spec_of(arrangement, application, tensors) -> KernelSpec:
    tensors = tuple(tensors)
    return build_spec(application, tensors, tuple(arrangement(*tensors)))


def add(x, y, z):
    z = x + y  # noqa: F841


def add_arrangement(x, y, z):
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


def matmul(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])
    output = accumulator  # noqa: F841


def matmul_arrangement(input, other, output):
    output_arranged = output.tile((BLOCK_M, BLOCK_N))
    input_arranged = input.tile((BLOCK_M, BLOCK_K)).tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    other_arranged = other.tile((BLOCK_K, BLOCK_N)).tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)
    return input_arranged, other_arranged, output_arranged


@pytest.fixture(scope="module")
def add_kernel() -> codegen.GeneratedSource:
    return codegen.generate(spec_of(add_arrangement, add, (Tensor(1) for _ in range(3))))


@pytest.fixture(scope="module")
def matmul_kernel() -> codegen.GeneratedSource:
    return codegen.generate(spec_of(matmul_arrangement, matmul, (Tensor(2) for _ in range(3))))


def lines(generated: codegen.GeneratedSource) -> list[str]:
    return [line.strip() for line in generated.source.splitlines()]


def test_add_signature(add_kernel: codegen.GeneratedSource) -> None:
    assert (
        "def add_kernel(x_pointer, y_pointer, z_pointer, x_size_0, x_stride_0, y_size_0, "
        "y_stride_0, z_size_0, z_stride_0, ninetoothed_int64: tl.constexpr, "
        "ninetoothed_aligned_0: tl.constexpr, ninetoothed_aligned_1: tl.constexpr, "
        "ninetoothed_aligned_2: tl.constexpr, BLOCK: tl.constexpr):"
    ) in lines(add_kernel)


def test_add_loads_are_hoisted_masked_and_stored(add_kernel: codegen.GeneratedSource) -> None:
    body = lines(add_kernel)
    for excerpt in [
        "ninetoothed_grid_index_0 = ninetoothed_program_id",
        "x_arange_1_0 = tl.arange(0, BLOCK)",
        "x_pointers_0 = x_pointer + (ninetoothed_grid_index_0 * BLOCK + x_arange_1_0) * x_stride_0",
        # The range check vanishes where the host finds BLOCK dividing x_size_0.
        "x_mask_1 = (ninetoothed_grid_index_0 * BLOCK + x_arange_1_0 < x_size_0) "
        "| (ninetoothed_aligned_0 % BLOCK == 0)",
        "x_tile_2 = tl.load(x_pointers_0, mask=x_mask_1)",
        "tl.store(z_pointers_6, ninetoothed_add(x_tile_2, y_tile_5), mask=z_mask_7)",
        "x_stride_0 = tl.cast(x_stride_0, tl.int64)",
    ]:
        assert excerpt in body, excerpt
    assert sum("tl.load(" in line for line in body) == 2, "z is stored, never loaded"


def bias_rows_arrangement(x, bias, y):
    tile = (BLOCK_M, BLOCK_N)
    return x.tile(tile), bias.expand((x.shape[0], -1)).tile(tile), y.tile(tile)


def add_bias(x, bias, y):
    y = x + bias  # noqa: F841


def test_a_broadcast_tile_is_loaded_once_along_its_varying_dimensions() -> None:
    """A (1, n) bias expanded over the rows: one (1, BLOCK_N) load, broadcast in
    registers, not a (BLOCK_M, BLOCK_N) load of repeated addresses; the rows' check
    is applied after the load (the lanes past the rows get the fill, zero here)."""
    tensors = (Tensor(2) for _ in range(3))
    generated = codegen.generate(spec_of(bias_rows_arrangement, add_bias, tensors))
    body = lines(generated)
    loads = [line for line in body if line.startswith("bias_tile_")]
    assert len(loads) == 1, body
    (load,) = loads
    assert load.split(" = ", 1)[1].startswith(
        "tl.broadcast_to(ninetoothed_spread(tl.load(bias_pointers_"
    ), load
    assert load.endswith(", (BLOCK_M, BLOCK_N))"), load
    pointers = next(line for line in body if line.startswith("bias_pointers_"))
    assert "broadcast_to" not in pointers and "bias_arange_1_0" not in pointers, pointers
    keep = next(line for line in body if line.startswith("bias_keep_"))
    assert "bias_arange_1_0" in keep and "bias_arange_1_1" not in keep, keep
    assert "def ninetoothed_spread(value, keep, other):" in body
    x_load = next(line for line in body if line.startswith("x_tile_"))
    assert x_load.split(" = ", 1)[1].startswith("tl.load(x_pointers_"), "x varies in both"


def test_add_product(add_kernel: codegen.GeneratedSource) -> None:
    assert (add_kernel.inputs, add_kernel.outputs) == (("x", "y"), ("z",))
    assert [str(size) for size in add_kernel.grid] == ["(x_size_0 + BLOCK - 1) // BLOCK"]
    assert [check.parameter for check in add_kernel.shape_checks] == ["y", "z"]
    assert add_kernel.requirements == ()
    assert add_kernel.footprint.tiles == ((BLOCK,),) * 3
    assert not add_kernel.footprint.has_loop and add_kernel.footprint.loop_tiles == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        add_kernel.source = ""


def test_matmul_grid_decomposition(matmul_kernel: codegen.GeneratedSource) -> None:
    body = lines(matmul_kernel)
    # A product: the two grid dimensions are walked in groups (codegen.ordering).
    columns = "((output_size_1 + BLOCK_N - 1) // BLOCK_N)"
    assert f"ninetoothed_group_width = 8 * {columns}" in body
    assert "ninetoothed_group_local = ninetoothed_program_id" in body
    assert (
        "ninetoothed_grid_index_0 = ninetoothed_group_first + ninetoothed_group_local "
        "% ninetoothed_group_width % ninetoothed_group_rows"
    ) in body
    assert (
        "ninetoothed_grid_index_1 = ninetoothed_group_local % ninetoothed_group_width "
        "// ninetoothed_group_rows"
    ) in body
    assert "input_arange_2_0 = tl.arange(0, BLOCK_M)[:, None]" in body
    assert "input_arange_2_1 = tl.arange(0, BLOCK_K)[None, :]" in body


def test_matmul_loop_loads_tiles_per_iteration(matmul_kernel: codegen.GeneratedSource) -> None:
    source = matmul_kernel.source
    body = [line.strip() for line in source[source.index("accumulator = ") :].splitlines()]
    # Whole tiles of K first (codegen.ragged_loops): their loads check M and N alone.
    assert "ninetoothed_bound_6 = (input_size_1 + BLOCK_K - 1) // BLOCK_K" in body
    assert "for k in range(0, ninetoothed_whole_tiles_7):" in body
    assert (
        "input_pointers_0 = input_pointer + ((ninetoothed_grid_index_0 * BLOCK_M + "
        "input_arange_2_0) * input_stride_0 + (k * BLOCK_K + input_arange_2_1) * input_stride_1)"
    ) in body
    assert (
        "input_mask_1 = (ninetoothed_grid_index_0 * BLOCK_M + input_arange_2_0 < input_size_0) "
        "| (ninetoothed_aligned_0 % BLOCK_M == 0)"
    ) in body
    # Then the ragged tail, only where K is ragged: its loads check K too.
    tail = "for k in range(tl.maximum(0, ninetoothed_whole_tiles_7), ninetoothed_bound_6):"
    assert tail in body
    assert body[body.index(tail) - 1] == (
        "if not (ninetoothed_aligned_1 % BLOCK_K == 0) & (ninetoothed_aligned_2 % BLOCK_K == 0):"
    )
    assert (
        "input_mask_9 = ((ninetoothed_grid_index_0 * BLOCK_M + input_arange_2_0 < input_size_0) "
        "| (ninetoothed_aligned_0 % BLOCK_M == 0)) & ((k * BLOCK_K + input_arange_2_1 < "
        "input_size_1) | (ninetoothed_aligned_1 % BLOCK_K == 0))"
    ) in body
    assert "accumulator += tl.dot(input_tile_2, other_tile_5)" in body
    assert "accumulator += tl.dot(input_tile_10, other_tile_13)" in body
    store = "tl.store(output_pointers_14, accumulator, mask=output_mask_15)"
    assert store in body and body.index(store) > body.index(
        "accumulator += tl.dot(input_tile_10, other_tile_13)"
    )


def test_matmul_footprint_for_tuning(matmul_kernel: codegen.GeneratedSource) -> None:
    footprint = matmul_kernel.footprint
    assert footprint.has_loop
    assert footprint.loop_tiles == ((BLOCK_M, BLOCK_K), (BLOCK_K, BLOCK_N))
    assert (BLOCK_M, BLOCK_N) in footprint.tiles
    assert matmul_kernel.outputs == ("output",) and matmul_kernel.inputs == ("input", "other")


def test_dtype_constants_name_triton_dtypes() -> None:
    def cast(x, y):
        y = ntl.cast(x, ninetoothed.float16) + ntl.zeros(x.shape, dtype=ninetoothed.bfloat16)  # noqa: F841

    generated = codegen.generate(
        spec_of(lambda x, y: (x.tile((BLOCK,)), y.tile((BLOCK,))), cast, (Tensor(1), Tensor(1)))
    )
    assert "tl.cast(x_tile_2, tl.float16)" in generated.source
    assert "dtype=tl.bfloat16" in generated.source


def test_padded_tile_sizes() -> None:
    C = Symbol("C", constexpr=True)

    def copy(x, y):
        y = x  # noqa: F841

    generated = codegen.generate(
        spec_of(lambda x, y: (x.tile((C,)), y.tile((C,))), copy, (Tensor(1), Tensor(1)))
    )
    assert "x_arange_1_0 = tl.arange(0, x_padded_size_1_0)" in lines(generated)
    # The padding is masked: the tile's own index stays below the real size.
    assert "x_arange_1_0 < C" in generated.source
