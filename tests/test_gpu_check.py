"""Under the interpreter, ``make`` refuses kernels that would not compile for a GPU.

Triton's interpreter runs these applications and returns results; the GPU
compiler rejects them.  Each is refused at ``make`` naming the construct,
unless ``NINETOOTHED_GPU_CHECK=0``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor
from ninetoothed.errors import CodegenError

pytestmark = pytest.mark.interpreter_only


def arrangement(x, y):
    return x.tile((4,)), y.tile((4,))


def list_comprehension(x, y):
    y = [x for _ in range(2)][0]  # noqa: F841


def dictionary(x, y):
    y = {"value": x}["value"]  # noqa: F841


def try_statement(x, y):
    try:
        y = x  # noqa: F841
    except ValueError:
        pass


def condition_on_a_tile(x, y):
    if x > 0:
        y = x  # noqa: F841


def numpy_on_a_tile(x, y):
    y = np.exp(x)  # noqa: F841


def unknown_language_function(x, y):
    y = ntl.no_such_function(x)  # noqa: F841


def integers_only(x, y):
    y = (x >> 1) & 3  # noqa: F841


def floats(x, y):
    y = ntl.exp(x) + ntl.sum(x)  # noqa: F841


REFUSED = {
    "list comprehension": (list_comprehension, "comprehension"),
    "dict": (dictionary, "Dict|dict"),
    "try": (try_statement, "Try|try"),
    "condition on a tile": (condition_on_a_tile, "ambiguous|scalar|condition|block"),
    "numpy call on a tile": (numpy_on_a_tile, "np is not defined"),
    # Refused at make with the generated line (the interpreter would fail only when run).
    # (An undefined name is refused before generation: tests/test_errors.py.)
    "unknown ntl function": (unknown_language_function, "has no attribute 'no_such_function'"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_interpreter_only_code_is_refused_at_make(case, monkeypatch):
    monkeypatch.delenv("NINETOOTHED_GPU_CHECK", raising=False)
    application, construct = REFUSED[case]
    with pytest.raises(CodegenError, match=f"(?s)does not compile for a GPU.*({construct})"):
        ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1)))


def test_the_refusal_names_where_the_application_is(monkeypatch):
    """The generated line is not the user's: the message says which function, in
    which file and at which line, holds the application."""
    monkeypatch.delenv("NINETOOTHED_GPU_CHECK", raising=False)
    line = numpy_on_a_tile.__code__.co_firstlineno
    where = rf"the application is numpy_on_a_tile at \S*test_gpu_check.py:{line}\)"
    with pytest.raises(CodegenError, match=where):
        ninetoothed.make(arrangement, numpy_on_a_tile, (Tensor(1), Tensor(1)))


@pytest.mark.parametrize("case", REFUSED)
def test_the_knob_turns_the_check_off(case, monkeypatch):
    monkeypatch.setenv("NINETOOTHED_GPU_CHECK", "0")
    application, _ = REFUSED[case]
    ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1)))


@pytest.mark.parametrize("application", [integers_only, floats])
def test_kernels_that_compile_pass(application, monkeypatch):
    monkeypatch.delenv("NINETOOTHED_GPU_CHECK", raising=False)
    ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1)))


def test_a_size_of_one_compiles_as_triton_specialises_it():
    """Triton compiles an int argument equal to 1 as a constant: a mask term built
    from such a size (an expanded dimension of size 1 at run time) must compile
    then too (it failed on the GPU with "'constexpr_type' object has no attribute
    'is_block'" when it was broadcast with tl.broadcast_to)."""
    from nt_triton import _gpu_check as gpu_check
    from tests.upstream import test_expand

    kernel = ninetoothed.make(
        test_expand.row_of_a_matrix,
        test_expand.add_row_application,
        (Tensor(2), Tensor(2), Tensor(2)),
    )
    generated = kernel.generated
    types, constants = gpu_check._types(generated.spec, generated.signature, {}, "fp32")
    (index,) = [i for i, p in enumerate(generated.signature) if p.name == "row_size_0"]
    types["row_size_0"], constants[(index,)] = "constexpr", 1
    function = gpu_check._compilable(generated.function, gpu_check._MADE)
    gpu_check._front_end(function, types, constants)


def test_a_gather_of_undeclared_dtypes_compiles_at_make(monkeypatch):
    """No single default element type fits int64 indices beside float data: make
    accepts the kernel when it compiles with its index tensor as int64, and the
    first call checks it with the call's own types."""
    from tests.upstream import test_index_tensors as gather

    monkeypatch.delenv("NINETOOTHED_GPU_CHECK", raising=False)
    kernel = ninetoothed.make(
        gather.rows_arrangement,
        gather.exp_of_rows_application,
        (Tensor(1), Tensor(2), Tensor(2)),
    )
    index = torch.tensor([3, 0, 3, 5])
    table = torch.randn(6, 5)
    output = torch.full((4, 5), float("nan"))

    kernel(index, table, output)

    torch.testing.assert_close(output, table.double()[index].exp().float())
