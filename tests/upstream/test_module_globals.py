"""Module-level names an application or arrangement uses.

Upstream writes the application into a generated file holding the module's
imports, the application with its plain helpers inlined, and the source of
the ``triton.jit`` functions of its module; any other global (``SCALE = 3``)
is a ``NameError`` when the kernel runs.  An arrangement is plain Python and
sees its globals.  Here numbers, bools, strings, None, tuples of them and
``tl.constexpr`` values become literals, symbols of the kernel its
parameters, helpers are inlined (decorated ones: the function they wrap),
and anything else is refused at ``make`` with an error naming the global.
"""

import functools
import os

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor
from ninetoothed.errors import CodegenError

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

TILE = (8, 16)
SCALE = 3
HALF = 0.5
NEGATIVE = -2
SCALE_CONSTEXPR = tl.constexpr(4)
NUMPY_SCALE = np.int64(5)
FLIP = True
MODE = "scale"
NOTHING = None
ROWS = Symbol("ROWS", constexpr=True)


def arrangement(x, y):
    # A global in the arrangement: plain Python, as upstream.
    return x.tile(TILE), y.tile(TILE)


def symbol_arrangement(x, y):
    return x.tile((ROWS, 16)), y.tile((ROWS, 16))


def scaled(x, y):
    y = x * SCALE  # noqa: F841


def halved(x, y):
    y = x * HALF + NEGATIVE  # noqa: F841


def constexpr_scaled(x, y):
    y = x * SCALE_CONSTEXPR  # noqa: F841


def numpy_scaled(x, y):
    y = x * NUMPY_SCALE  # noqa: F841


def chosen(x, y):
    if FLIP and MODE == "scale" and NOTHING is None:
        y = x * 2  # noqa: F841
    else:
        y = x  # noqa: F841


def plus_rows(x, y):
    y = x + ROWS  # noqa: F841


ROW_TILE = (ROWS, 16)


def zeros_of_a_global_shape(x, y):
    y = x + ntl.zeros(ROW_TILE, dtype=ntl.float32)  # noqa: F841


def triton_spelled(x, y):
    # Triton's own names, imported as Triton users import them.
    y = tl.cast(x, triton.language.float32) * 2 + libdevice.exp(x) - tl.exp(x)  # noqa: F841


def doubled(a):
    return a * 2


def _foreign_decorator():
    """A decorator whose module (its globals) lacks the helper's names."""
    namespace = {"functools": functools}
    exec(  # noqa: S102
        "def deco(fn):\n"
        "    @functools.wraps(fn)\n"
        "    def wrapper(*args):\n"
        "        return fn(*args)\n"
        "    return wrapper\n",
        namespace,
    )
    return namespace["deco"]


@_foreign_decorator()
def wrapped_scaled(a):
    return a * SCALE


@functools.cache
def cached_scaled(a):
    return a * SCALE


@triton.jit
def jit_scaled(a):
    return a * 3


def with_helper(x, y):
    y = doubled(x) + wrapped_scaled(x) + cached_scaled(x) + jit_scaled(x)  # noqa: F841


CASES = {
    "int": (arrangement, scaled, {}, lambda x: x * 3),
    "float and negative int": (arrangement, halved, {}, lambda x: x * 0.5 - 2),
    "tl.constexpr": (arrangement, constexpr_scaled, {}, lambda x: x * 4),
    "numpy int": (arrangement, numpy_scaled, {}, lambda x: x * 5),
    "bool, str and None": (arrangement, chosen, {}, lambda x: x * 2),
    "symbol of the kernel": (symbol_arrangement, plus_rows, {"ROWS": 4}, lambda x: x + 4),
    "tuple of a symbol": (symbol_arrangement, zeros_of_a_global_shape, {"ROWS": 4}, lambda x: x),
    "triton names": (arrangement, triton_spelled, {}, lambda x: x * 2),
    "helpers": (arrangement, with_helper, {}, lambda x: x * 11),
}


@pytest.mark.parametrize("case", CASES)
def test_globals_a_kernel_can_use(case):
    arrange, application, symbols, reference = CASES[case]
    kernel = ninetoothed.make(arrange, application, (Tensor(2), Tensor(2)))
    # 37 x 50 in tiles of 8 (or 4) x 16: 5 (or 10) x 4 programs, ragged edges.
    x = torch.randn(37, 50, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    kernel(x, y, **symbols)

    torch.testing.assert_close(y, reference(x))


WEIGHTS = [1.0, 2.0]
TABLE = torch.ones(3)
OTHER = Symbol("OTHER", constexpr=True)
TWICE = lambda a: a * 2  # noqa: E731


def uses_list(x, y):
    y = x * WEIGHTS[1]  # noqa: F841


def uses_tensor(x, y):
    y = x * TABLE  # noqa: F841


def uses_foreign_symbol(x, y):
    y = x + OTHER  # noqa: F841


def uses_lambda(x, y):
    y = TWICE(x)  # noqa: F841


AT = r" \(at \S*test_module_globals.py:\d+\), "
"""Where the global is read: the file and line."""

REFUSED = {
    "list": (uses_list, rf"uses the global 'WEIGHTS'{AT}a list \(\[1\.0, 2\.0\]\)"),
    "tensor": (uses_tensor, rf"uses the global 'TABLE'{AT}a Tensor"),
    "symbol": (uses_foreign_symbol, rf"'OTHER'{AT}the symbol OTHER, which is not among the kernel"),
    "lambda": (uses_lambda, r"not a plain function definition \(a lambda\?\): 'TWICE = lambda"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_other_globals_are_refused_at_make_by_name(case):
    application, message = REFUSED[case]
    with pytest.raises(CodegenError, match=message):
        ninetoothed.make(arrangement, application, (Tensor(2), Tensor(2)))


def test_a_global_changed_after_make_is_not_seen():
    """Globals are read when the kernel is generated, as constants."""
    global SCALE
    kernel = ninetoothed.make(arrangement, scaled, (Tensor(2), Tensor(2)))
    x = torch.randn(37, 50, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    SCALE, before = 7, SCALE
    try:
        kernel(x, y)
    finally:
        SCALE = before
    torch.testing.assert_close(y, x * 3)


def test_ntl_names_at_module_level_are_references():
    assert repr(ntl.float16) == "ninetoothed.language.float16"
