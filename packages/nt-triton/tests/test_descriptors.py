"""Tensor-descriptor loads and stores in persistent programs: which tiles get them
(code generation) and which calls may take them (the host's flags)."""

from __future__ import annotations

import pytest

from ninetoothed import Tensor
from ninetoothed.library import mm
from ninetoothed.runtime.aliasing import Aliasing
from ninetoothed.runtime.hookspecs import TensorInfo
from ninetoothed.spec._build import build_spec
from nt_triton import _codegen as codegen
from nt_triton import _describable
from nt_triton._abi import ParameterKind
from nt_triton._describable import describable
from nt_triton._host import compile_host, host_source

BLOCK = 16


def product_arrangement(input, other, output):
    """The library's matrix product in tiles of 16."""
    return mm.arrangement(input, other, output, BLOCK, BLOCK, BLOCK)


product = mm.application


def generated(arrangement, application, tensors, persistent=True) -> codegen.GeneratedSource:
    tensors = tuple(tensors)
    spec = build_spec(
        application, tensors, tuple(arrangement(*tensors)), options={"persistent": persistent}
    )
    return codegen.generate(spec)


def flags(source: codegen.GeneratedSource) -> list[str]:
    return [p.name for p in source.signature.of_kind(ParameterKind.DESCRIPTOR_FLAG)]


def test_a_persistent_product_copies_every_tile_through_descriptors() -> None:
    source = generated(product_arrangement, product, (Tensor(2) for _ in range(3)))
    names = ("input", "other", "output")
    assert flags(source) == [f"ninetoothed_descriptors_{name}" for name in names]
    text = source.source
    assert text.count("tl.make_tensor_descriptor(") == 3, text
    assert "input_descriptor_0.load([" in text and "other_descriptor_1.load([" in text, text
    assert "output_descriptor_2.store([" in text, text
    # Only where the innermost side is a multiple of 16 bytes (what a copy needs).
    inner = "(16 * input_pointer.dtype.element_ty.primitive_bitwidth % 128 == 0)"
    assert f"if ninetoothed_descriptors_input & {inner}:" in text, text
    # Each keeps its pointer form in the other branch of the compile-time choice.
    assert text.count("else tl.load(") >= 2 and "tl.store(output_pointers_" in text, text


def test_programs_one_per_tile_keep_pointer_loads() -> None:
    source = generated(product_arrangement, product, (Tensor(2) for _ in range(3)), False)
    assert flags(source) == [] and "make_tensor_descriptor" not in source.source


def transposed_arrangement(a, b, c):
    a_tiled = a.tile((BLOCK, BLOCK))
    a_tiled.dtype = a_tiled.dtype.permute((1, 0))  # each tile read across its source
    return a_tiled, b.tile((BLOCK, BLOCK)), c.tile((BLOCK, BLOCK))


def add_rows(a, b, c):
    c = a + b  # noqa: F841


def test_tiles_that_are_not_boxes_in_order_keep_pointer_loads() -> None:
    """A tile read across its source's dimensions (permuted), one read with a fill other
    than zero, and one whose size is not a power of two (a padding check) are not boxes."""
    source = generated(transposed_arrangement, add_rows, (Tensor(2) for _ in range(3)))
    assert flags(source) == ["ninetoothed_descriptors_b", "ninetoothed_descriptors_c"]
    tensors = (Tensor(2, other=float("-inf")), Tensor(2), Tensor(2))
    source = generated(product_arrangement, product, tensors)
    assert "ninetoothed_descriptors_input" not in flags(source)

    def ragged(a, b, c):
        return a.tile((3, BLOCK)), b.tile((3, BLOCK)), c.tile((3, BLOCK))

    source = generated(ragged, add_rows, (Tensor(2) for _ in range(3)))
    assert flags(source) == []


def infos(a_strides=(40, 1), b_strides=(56, 1), dtype="float32", pointer=0, shape_scale=1):
    return [
        TensorInfo((37 * shape_scale, 40), a_strides, dtype, "cpu", pointer),
        TensorInfo((40, 56), b_strides, dtype, "cpu", 0),
        TensorInfo((37 * shape_scale, 56), (56, 1), dtype, "cpu", 0),
    ]


@pytest.fixture(scope="module")
def host():
    tensors = tuple(Tensor(2) for _ in range(3))
    spec = build_spec(
        product, tensors, tuple(product_arrangement(*tensors)), options={"persistent": True}
    )
    source = codegen.generate(spec)
    aliasing = Aliasing.of(spec, source.outputs)
    function = compile_host(host_source(spec, source), spec, source.signature, aliasing)
    names = [p.name for p in source.signature.host]

    def called(tensors):
        plan = function(tensors, [t.data_ptr for t in tensors], {})
        return [value for name, value in zip(names, plan.arguments) if "descriptors_" in name]

    return called


def test_the_host_allows_descriptors_where_the_layout_does(host, monkeypatch) -> None:
    """Innermost stride 1, others and the address 16-byte aligned, no 64-bit offsets,
    a type that is not bool, and the switch on (under the interpreter: no GPU asked)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert host(infos()) == [True, True, True]
    assert host(infos(a_strides=(41, 1))) == [False, True, True]  # 164-byte rows
    assert host(infos(b_strides=(1, 40))) == [True, False, True]  # transposed
    assert host(infos(b_strides=(112, 2))) == [True, False, True]  # every other column
    assert host(infos(a_strides=(0, 1))) == [False, True, True]  # a broadcast row
    assert host(infos(a_strides=(-40, 1))) == [False, True, True]  # rows reversed
    assert host(infos(pointer=4)) == [False, True, True]  # misaligned address
    assert host(infos(dtype="bool", a_strides=(48, 1), b_strides=(64, 1)))[:2] == [False, False]
    assert host(infos(dtype="float16", a_strides=(44, 1))) == [False, True, True]
    assert host(infos(shape_scale=2**26)) == [False, False, False]  # 64-bit offsets
    monkeypatch.setenv("NINETOOTHED_TENSOR_DESCRIPTORS", "off")
    assert host(infos()) == [False, False, False]


def test_a_launch_without_int_pointers_keeps_pointer_loads(monkeypatch) -> None:
    """jax-triton's and Inductor's launches pass arrays, not addresses: they give the
    kernel no scratch memory for descriptors, so they keep pointer loads.  Ours pass
    the address as an int, whose own alignment decides."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(_describable, "_copy_engine", lambda: True)  # a Hopper GPU
    info = infos()[0]
    assert describable(info, 1 << 20)
    assert not describable(info, object())
    assert not describable(info, (1 << 20) + 4)  # the address, not the host's record
