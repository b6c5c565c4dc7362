"""The lean launcher's parameter layout against Triton 3.6's launcher rules, by hand.

Triton 3.6 passes every non-constexpr argument in signature order (constexprs
and ints specialised to 1 are compiled in), then the global-scratch and
profile-scratch pointers, each parameter in its C type's bytes.
"""

from __future__ import annotations

import struct

import pytest

from nt_triton._launch.layout import pack, parameter_layout

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
