"""Tile range checks vanish from the compiled loads and stores where sizes divide evenly.

Read on Triton IR after Triton's own TTIR passes (``gpu_check.triton_ir``, no
GPU needed): with every size alignment a multiple of its tile size, mm,
attention, a flattened element-wise kernel and softmax rows load and store
without masks, as hand-written kernels do; with one size ragged, its loads
and stores keep theirs, except in a loop over its tiles, whose whole tiles
load without them and whose ragged tail keeps them
(``nt_triton._codegen.ragged_loops``; a divisible call compiles no tail).  A
generator that ignored the alignments (or Triton not folding ``check |
True``) leaves every mask in place and fails here.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from support.divisible import FLAT_ADD, MM

from ninetoothed.library import mm, pinned_block_sizes, softmax
from ninetoothed.library import scaled_dot_product_attention as sdpa
from ninetoothed.library.ops import kernels
from nt_triton import _gpu_check as gpu_check
from nt_triton._abi import ParameterKind
from nt_triton._gpu_check import masked_memory_operations as masked
from nt_triton._kernel import TritonKernel


def generated(kernel: Any) -> TritonKernel:
    result = kernel.generated
    assert isinstance(result, TritonKernel)
    return result


def ir_with(kernel: TritonKernel, alignment: dict[str, int], **constants: int) -> str:
    """The kernel's TTIR with each size alignment from ``alignment`` (by the size it is
    of, default: divisible) and other constexprs from ``constants``."""
    values = dict(constants)
    for parameter in kernel.signature.of_kind(ParameterKind.SIZE_ALIGNMENT):
        values[parameter.name] = alignment.get(str(parameter.expression), 1 << 20)
    return gpu_check.triton_ir(kernel.spec, kernel.function, kernel.signature, values)


@pytest.fixture(scope="module")
def pinned_mm() -> TritonKernel:
    with pinned_block_sizes(16):
        return generated(kernels.kernel(mm))


def test_mm_loads_without_masks_when_every_size_divides(pinned_mm) -> None:
    assert masked(ir_with(pinned_mm, {})) == (0, 3)


def loops(ir: str) -> list[tuple[int, int]]:
    """:func:`masked` of each outermost ``scf.for`` loop of the function, in order."""
    found = re.finditer(r"^(    )(?:%\S+ = )?scf\.for .*\n(?:\1 .*\n)*", ir, re.MULTILINE)
    return [masked(match.group(0)) for match in found]


def test_a_ragged_size_keeps_its_masks(pinned_mm) -> None:
    # K (input's columns) ragged: the loop over K's whole tiles loads without masks,
    # the ragged tail with them (input's columns, other's rows).
    ragged = {"input_size_1": 1, "other_size_0": 1}
    assert masked(ir_with(pinned_mm, ragged)) == (2, 3)
    assert loops(ir_with(pinned_mm, ragged)) == [(0, 2), (2, 0)]
    # M ragged: input's loads and the output's store; K divides, so one loop.
    ragged = {"input_size_0": 8, "output_size_0": 8}
    assert masked(ir_with(pinned_mm, ragged)) == (2, 1)
    assert loops(ir_with(pinned_mm, ragged)) == [(1, 1)]


def test_a_divisible_product_compiles_one_loop(pinned_mm) -> None:
    """Every size divides: the tail's constexpr condition is false, no second loop."""
    assert loops(ir_with(pinned_mm, {})) == [(0, 2)]


def test_tuned_block_sizes_are_checked_in_the_kernel() -> None:
    """Meta tile sizes: the host's alignment is compared with each configuration's."""
    kernel = generated(kernels.kernel(mm))
    blocks = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32}
    assert masked(ir_with(kernel, {}, **blocks)) == (0, 3)
    # M divisible by 64 but not by the configuration's 128.
    ragged = {"input_size_0": 64, "output_size_0": 64}
    assert masked(ir_with(kernel, ragged, **blocks)) == (2, 1)


def test_a_product_made_directly() -> None:
    blocks = {"BM": 64, "BN": 64, "BK": 32}
    assert masked(ir_with(generated(MM), {}, **blocks)) == (0, 3)
    # Only a's columns ragged (b's rows say otherwise: each tensor has its alignment).
    # The loop over whole tiles of K loads both unmasked; the tail masks a's alone.
    assert masked(ir_with(generated(MM), {"a_size_1": 16}, **blocks)) == (1, 4)
    assert loops(ir_with(generated(MM), {"a_size_1": 16}, **blocks)) == [(0, 2), (1, 1)]


def head_dim(kernel: TritonKernel, size: int) -> dict[str, int]:
    """Constexpr values of a head dimension of ``size`` (padded to a power of two)."""
    values = {}
    for parameter in kernel.signature:
        if parameter.kind is ParameterKind.SIZE and parameter.constexpr:
            values[parameter.name] = size
        elif parameter.kind is ParameterKind.PADDED_SIZE:
            values[parameter.name] = 1 << (size - 1).bit_length()
    return values


def test_attention_loads_without_masks() -> None:
    with pinned_block_sizes(16):
        kernel = generated(kernels.kernel(sdpa))
    assert masked(ir_with(kernel, {}, **head_dim(kernel, 32))) == (0, 6)
    assert loops(ir_with(kernel, {}, **head_dim(kernel, 32))) == [(0, 2), (0, 2)]
    # Keys ragged: each of the kernel's two key loops (its unmasked blocks, then the
    # diagonal and the last) becomes a loop over whole key blocks, loading the keys
    # and values without masks, and a ragged tail that keeps them.
    ragged = {"k_size_2": 2, "v_size_2": 2}
    assert masked(ir_with(kernel, ragged, **head_dim(kernel, 32))) == (4, 6)
    assert loops(ir_with(kernel, ragged, **head_dim(kernel, 32))) == [(0, 2), (2, 0)] * 2
    # A head dimension padded from 24 to 32 stays masked everywhere.
    assert masked(ir_with(kernel, {}, **head_dim(kernel, 24))) == (6, 0)


def test_attention_multiplies_the_loaded_queries() -> None:
    """The scores' product takes the query block as loaded: a scaled copy is no load,
    so on Hopper Triton feeds it to the tensor cores from registers, re-reading it
    from shared memory on every key block (an H100 measured that 10% slower)."""
    with pinned_block_sizes(16):
        kernel = generated(kernels.kernel(sdpa))
    ir = ir_with(kernel, {}, **head_dim(kernel, 32))
    loaded = set(re.findall(r"^\s*(%\S+) = tt\.load ", ir, re.MULTILINE))
    products = re.findall(r"= tt\.dot (%[^,]+), %\S+, %cst", ir)  # a zero accumulator
    assert len(products) == 2  # one per key loop
    assert all(operand in loaded for operand in products), products


def test_flattened_elementwise_checks_the_product() -> None:
    kernel = generated(FLAT_ADD)
    sizes = [str(p.expression) for p in kernel.signature.of_kind(ParameterKind.SIZE_ALIGNMENT)]
    assert sizes == [f"{t}_size_0 * {t}_size_1" for t in "xyz"]
    assert masked(ir_with(kernel, {}, BLOCK=64)) == (0, 3)
    assert masked(ir_with(kernel, {"z_size_0 * z_size_1": 32}, BLOCK=64)) == (1, 2)


def test_softmax_rows_of_a_power_of_two() -> None:
    kernel = generated(kernels.kernel(softmax, ndim=2, dim=1))
    assert masked(ir_with(kernel, {}, **head_dim(kernel, 64))) == (0, 2)
    assert masked(ir_with(kernel, {}, **head_dim(kernel, 40))) == (2, 0)
