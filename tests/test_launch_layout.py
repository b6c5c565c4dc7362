"""The lean launcher's parameter layout against Triton 3.6's launcher rules, by hand.

Triton 3.6 passes every non-constexpr argument in signature order (constexprs
and ints specialised to 1 are compiled in), then the global-scratch and
profile-scratch pointers, each parameter in its C type's bytes.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from nt_triton._launch.layout import TensorMap, pack, parameter_layout

ZERO = bytes(8)


def q(value: int) -> bytes:
    return struct.pack("<Q", value)


def test_pointers_scalars_and_bound_constants_in_signature_order() -> None:
    signature = ["*fp16", "i32", "constexpr", "i64", "fp32", "*fp32", "u1", "i32"]
    order = ["p0", "a0", "a1", "p2", "p3", "p1", "a2", "a3"]
    layout = parameter_layout(signature, order, [100, 128, True, -3])
    assert layout is not None
    # 7 kernel parameters (the constexpr is none) and the two scratch pointers.
    assert layout.constants == b"".join(
        [ZERO, q(100), ZERO, ZERO, ZERO, q(1), q(0xFFFFFFFD), ZERO, ZERO]
    )
    assert layout.slots == ((0, 0, "p"), (2, 2, "q"), (3, 3, "f"), (4, 1, "p"))
    assert layout.arity == 4


def test_a_per_call_value_compiled_in_is_counted_but_not_passed() -> None:
    # An int specialised to 1 is a constexpr: the launch still receives it per call.
    layout = parameter_layout(["*fp32", "constexpr", "i32"], ["p0", "p1", "p2"], [])
    assert layout is not None
    assert layout.slots == ((0, 0, "p"), (1, 2, "i"))
    assert layout.arity == 3
    assert len(layout.constants) == 8 * (2 + 2)  # the two scratch pointers


def test_a_kernel_of_constexprs_only_takes_the_scratch_pointers() -> None:
    layout = parameter_layout(["constexpr", "constexpr"], ["a0", "a1"], [4, 8])
    assert layout is not None
    assert layout.constants == ZERO * 2  # the two scratch pointers
    assert layout.slots == ()
    assert layout.arity == 0


@pytest.mark.parametrize(
    ("code", "value", "expected"),
    [
        ("i", -1, q(0xFFFFFFFF)),
        ("q", -1, q(2**64 - 1)),
        ("q", 2**40, q(2**40)),
        ("Q", 2**64 - 1, q(2**64 - 1)),
        ("I", 2**32 + 5, q(5)),  # unsigned types truncate, as Triton's "I" format does
        ("B", True, q(1)),
        ("h", -2, q(0xFFFE)),
        ("f", 1.5, struct.pack("<f", 1.5) + bytes(4)),
        ("f", 1e300, struct.pack("<f", float("inf")) + bytes(4)),
        ("d", 0.1, struct.pack("<d", 0.1)),
        ("e", 0.1, struct.pack("<e", 0.1) + bytes(6)),
        ("E", 1.0, b"\x80\x3f" + bytes(6)),  # bf16 1.0 = 0x3f80
        ("E", 1.00390625 + 2**-10, b"\x80\x3f" + bytes(6)),  # truncated, not rounded
        ("p", 0xDEADBEEF000, q(0xDEADBEEF000)),
    ],
)
def test_constants_are_packed_as_triton_converts_them(
    code: str, value: object, expected: bytes
) -> None:
    assert pack(code, value) == expected


def test_signed_constants_out_of_range_raise() -> None:
    with pytest.raises(OverflowError, match="i32"):
        pack("i", 2**31)


@pytest.mark.parametrize(
    "signature",
    [["tensordesc<fp16[16, 16]>"], ["nvTmaDesc"], [("i32", "i32")], ["fp8e4nv"]],
)
def test_kinds_it_does_not_lay_out_take_tritons_launcher(signature: list[object]) -> None:
    assert parameter_layout(signature, ["a0"], [0]) is None  # type: ignore[arg-type]


def test_a_bound_value_that_does_not_fit_takes_tritons_launcher() -> None:
    assert parameter_layout(["i32"], ["a0"], [2**31]) is None


def test_signature_and_order_must_match() -> None:
    with pytest.raises(ValueError, match="2 signature types for 1 arguments"):
        parameter_layout(["i32", "i32"], ["a0"], [1])


def _map(**changes: Any) -> TensorMap:
    fields: dict[str, Any] = {
        "data_type": 9, "swizzle": 3, "fill": 0, "element_size": 2, "shape": (300, 520),
        "strides": (520, 1), "block": (128, 64),
    }  # fmt: skip
    fields.update(changes)
    return TensorMap(**fields)


def test_a_tensor_descriptor_is_its_map_then_its_sizes_and_strides() -> None:
    # Triton 3.6: the 128-byte map (encoded per call from the address), the sizes as
    # i32, the strides as i64; the map's encoding is innermost first, strides in bytes.
    signature = ["tensordesc<bf16[128, 64]>", "*fp32", "i32", "constexpr"]
    layout = parameter_layout(signature, ["p1", "p0", "a0", "a1"], [77, 4], [_map()])
    assert layout is not None
    assert layout.constants == b"".join(
        [ZERO, q(300), q(520), q(520), q(1), ZERO, q(77), ZERO, ZERO]
    )
    assert layout.slots == ((5, 0, "p"),)
    assert layout.maps == ((0, 1, 9, 3, 0, (520, 300), (1040,), (64, 128)),)
    assert layout.arity == 2


def test_a_map_of_three_dimensions_lists_the_outer_strides_innermost_first() -> None:
    described = _map(element_size=4, shape=(2, 3, 4), strides=(12, 4, 1), block=(1, 2, 4), fill=1)
    assert described.encoding() == (9, 3, 1, (4, 3, 2), (16, 48), (4, 2, 1))


@pytest.mark.parametrize(
    ("order", "maps"),
    [
        (["a0", "p0"], [_map()]),  # a bound descriptor: its map would be encoded once, wrongly
        (["p0", "p1"], []),  # a descriptor without its description
        (["p0", "p1"], [_map(), _map()]),  # more descriptions than descriptors
        (["p0", "p1"], [_map(shape=(2**31, 1))]),  # a size past Triton's i32
    ],
)
def test_descriptors_without_one_description_each_have_no_layout(
    order: list[str], maps: list[TensorMap]
) -> None:
    signature = ["tensordesc<fp16[64, 64]>", "*fp16"]
    assert parameter_layout(signature, order, [0], maps) is None
