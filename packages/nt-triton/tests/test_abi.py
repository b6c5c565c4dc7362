"""The kernel ABI (``nt_triton._abi``): every parameter's kind, in order, once.

One kernel has a parameter of every kind: pointers, used sizes and strides,
a scalar, a run-time and a constexpr symbol, a tile size padded on the host,
the 64-bit flag, a meta symbol and a padded size derived from it.
"""

from __future__ import annotations

import pytest

from ninetoothed import Symbol, Tensor
from ninetoothed.spec._build import build_spec
from nt_triton import _codegen as codegen
from nt_triton import _tuning as tuning
from nt_triton._abi import KernelSignature, ParameterKind

K = ParameterKind
C = Symbol("C", constexpr=True)
S = Symbol("S")
B = Symbol("B", meta=True)


def application(x, alpha, y, z):
    y = x * alpha  # noqa: F841
    z = x  # noqa: F841


def arrangement(x, alpha, y, z):
    return x.tile((C,), strides=(S,)), alpha, y.tile((C,), strides=(S,)), z.tile((C,))


@pytest.fixture(scope="module")
def signature() -> KernelSignature:
    tensors = (Tensor(1), Tensor(0), Tensor(1), Tensor(1))
    spec = build_spec(application, tensors, arrangement(*tensors))
    return codegen.generate(spec).signature


def test_every_kind_in_order(signature: KernelSignature) -> None:
    described = [(p.name, p.kind, p.constexpr, p.tensor_index, p.dim) for p in signature]
    assert described == [
        ("x_pointer", K.POINTER, False, 0, None),
        ("y_pointer", K.POINTER, False, 1, None),
        ("z_pointer", K.POINTER, False, 2, None),
        ("x_size_0", K.SIZE, False, 0, 0),
        ("x_stride_0", K.STRIDE, False, 0, 0),
        ("y_size_0", K.SIZE, False, 1, 0),
        ("y_stride_0", K.STRIDE, False, 1, 0),
        ("z_size_0", K.SIZE, False, 2, 0),
        ("z_stride_0", K.STRIDE, False, 2, 0),
        ("alpha", K.SCALAR, False, None, None),
        ("S", K.SYMBOL, False, None, None),
        ("C", K.SYMBOL, True, None, None),
        ("x_padded_size_1_0", K.PADDED_SIZE, True, None, None),
        ("y_padded_size_1_0", K.PADDED_SIZE, True, None, None),
        ("z_padded_size_1_0", K.PADDED_SIZE, True, None, None),
        ("ninetoothed_int64", K.INT64_FLAG, True, None, None),
    ]
    assert signature.tensor_parameters == ("x", "y", "z")
    assert str(signature.by_name["x_padded_size_1_0"].expression) == "C"


def test_host_and_meta_split(signature: KernelSignature) -> None:
    assert signature.meta == ()
    assert signature.host == signature.parameters
    assert [p.name for p in signature.pointers] == ["x_pointer", "y_pointer", "z_pointer"]


def test_meta_parameters_and_derived_padded_sizes() -> None:
    def copy(x, y):
        y = x  # noqa: F841

    tensors = (Tensor(1), Tensor(1))
    spec = build_spec(copy, tensors, (tensors[0].tile((B * 3,)), tensors[1].tile((B * 3,))))
    signature = codegen.generate(spec).signature
    meta = [(p.name, p.kind, p.constexpr, str(p.expression)) for p in signature.meta]
    assert meta == [
        ("B", K.META, True, "None"),
        ("x_padded_size_1_0", K.META, True, "B * 3"),
        ("y_padded_size_1_0", K.META, True, "B * 3"),
    ]
    assert all(p.passed_by_host for p in signature.host)
    assert tuning.derived_meta_values(signature, {"B": 16}) == {
        "x_padded_size_1_0": 64,
        "y_padded_size_1_0": 64,
    }


def test_kinds_read_as_strings(signature: KernelSignature) -> None:
    """The core's protocol sees kinds as strings (``"pointer"`` …)."""
    assert [p.kind == "pointer" for p in signature][:4] == [True, True, True, False]
