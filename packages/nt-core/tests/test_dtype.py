"""The dtype table: canonical names, upstream's constants, declared dtypes normalised."""

from __future__ import annotations

import numpy as np
import pytest

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor
from ninetoothed.arrangement import dtype
from ninetoothed.errors import DeclaredDtypeWarning, MetaOperationError
from ninetoothed.spec._build import build_spec


class FrameworkDtype:
    """Stands for a framework's dtype object: ``str`` gives ``framework.name``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def test_upstream_constants_are_exported() -> None:
    for name in ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64"):
        assert getattr(ninetoothed, name) == name
    for name in ("uint8", "uint16", "uint32", "uint64"):
        assert getattr(ninetoothed, name) is getattr(dtype, name)
    assert repr(ninetoothed.float16) == "ninetoothed.float16"
    assert ninetoothed.float16.name == "float16" and type(ninetoothed.float16.name) is str


@pytest.mark.parametrize(
    "declared",
    [
        ninetoothed.float16,
        "float16",
        "fp16",  # upstream NineToothed's constant
        ntl.float16,
        np.float16,
        np.dtype("float16"),
        FrameworkDtype("torch.float16"),
        FrameworkDtype("paddle.float16"),
    ],
)
def test_declared_dtypes_become_canonical(declared: object) -> None:
    tensor = Tensor(1, dtype=declared)
    assert tensor.dtype is ninetoothed.float16


def test_triton_spellings_map_to_canonical_names() -> None:
    assert dtype.canonical(ntl.float8e4nv) is dtype.float8_e4m3fn
    assert dtype.canonical(ntl.int1) is dtype.bool_
    assert dtype.canonical("bf16") is ninetoothed.bfloat16
    assert dtype.triton_name("bool") == "int1"
    assert dtype.triton_name("float8_e5m2") == "float8e5"


def test_an_unknown_dtype_warns_and_declares_none() -> None:
    # Upstream never reads it just in time, and ntops's ``max`` passes a block size there.
    with pytest.warns(DeclaredDtypeWarning, match="complex64.*ninetoothed.float16"):
        assert Tensor(1, dtype=FrameworkDtype("torch.complex64")).dtype is None
    for value in ("half", 1024, float):
        with pytest.warns(DeclaredDtypeWarning, match="taken as declaring no dtype"):
            assert Tensor(1, dtype=value).dtype is None
    with pytest.raises(MetaOperationError, match="not an element type"):
        dtype.canonical("half")  # where a dtype is required (ahead of time)


def test_declared_dtype_reaches_the_call_checks() -> None:
    def application(x, y):
        y = x  # noqa: F841

    source = (Tensor(1, dtype=FrameworkDtype("torch.float16")), Tensor(1, dtype=ntl.float32))
    spec = build_spec(application, source, source)
    assert [check.dtype for check in spec.call_checks] == ["float16", "float32"]


def test_name_of_framework_dtypes() -> None:
    assert dtype.name_of(FrameworkDtype("paddle.bfloat16")) == "bfloat16"
    assert dtype.name_of(np.dtype("uint8")) == "uint8"
    assert dtype.name_of(FrameworkDtype("torch.complex64")) == "complex64"
    assert "complex64" not in dtype.TRITON_DTYPES
    assert set(dtype.CANONICAL_NAMES) == dtype.TRITON_DTYPES
