"""Errors about a kernel begin with its label: ``kernel 'add' (add.py:12)``.

The label is the kernel's name and the file base name and line of its
application function, on every path that raises: ``make`` and ``jit``
(arrangement, spec and code generation), and calls through each framework's
adapter.  A call short of arguments names each parameter it leaves out.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from support.tutorial import add

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.errors import CodegenError, LaunchError, MetaOperationError


def defined_at(path: str, definition: str) -> int:
    """The line of ``definition`` in the file ``path``, read from the text itself."""
    lines = Path(path).read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.startswith(definition))


def label(name: str, path: str, definition: str, then: str = ": ") -> str:
    """The label an error of the kernel ``name`` must begin with (and ``then``), as a
    pattern."""
    return re.escape(f"kernel {name!r} ({Path(path).name}:{defined_at(path, definition)}){then}")


MADE = label("application", add.__file__, "def application(")
"""``add.kernel``'s label: made by ``make``, named after its application."""

JITTED = label("add_kernel", add.__file__, "@ninetoothed.jit")
"""``add.add_kernel``'s label: a ``jit`` kernel's site is its decorator's line."""


def vectors(framework, *sizes):
    rng = np.random.default_rng()
    return [framework.from_numpy(rng.standard_normal(size).astype("float32")) for size in sizes]


@pytest.mark.parametrize("jitted", [False, True], ids=["make", "jit"])
def test_a_call_error_names_the_kernel_on_every_framework(framework, jitted):
    kernel, pattern = (add.add_kernel, JITTED) if jitted else (add.kernel, MADE)
    x, y = vectors(framework, 8, 8)
    matrix = framework.from_numpy(np.zeros((2, 4), dtype="float32"))
    with pytest.raises(LaunchError, match="^" + pattern + r"parameter 'z' expects 1 dimensions"):
        framework.call(kernel, [x, y, matrix], {"BLOCK_SIZE": 4} if jitted else {}, [2])


def test_a_jax_call_traced_by_jit_names_the_kernel():
    pytest.importorskip("jax")
    from support.jax_support import JaxSupport

    jax = JaxSupport()
    x, y = vectors(jax, 8, 8)
    matrix = jax.from_numpy(np.zeros((2, 4), dtype="float32"))
    with pytest.raises(LaunchError, match="^" + MADE + r"parameter 'z' expects 1 dimensions"):
        jax.jit_call(add.kernel, [x, y, matrix], {}, [2])


@pytest.mark.parametrize(
    ("given", "missing"),
    [(2, r"missing parameter 'z'\n?"), (1, r"missing parameters 'y', 'z'\n?")],
)
def test_a_short_call_names_each_missing_parameter(framework, given, missing):
    arguments = vectors(framework, 8, 8, 8)[:given]
    with pytest.raises(
        LaunchError,
        match="^"
        + label("application", add.__file__, "def application(", " takes 3 positional ")
        + rf"arguments \(x, y, z\), got {given}; {missing}",
    ):
        framework.call(add.kernel, arguments, {}, [])


def arrangement(x, y):
    return x.tile((4, 4)), y.tile((4,))


def mismatched(x, y):
    y = x  # noqa: F841


def undefined(x, y):
    y = x + not_defined_anywhere  # noqa: F821, F841


def test_a_make_error_names_the_kernel_once():
    with pytest.raises(
        MetaOperationError,
        match="^" + label("mismatched", __file__, "def mismatched(") + r"arrangement: tile",
    ):
        ninetoothed.make(arrangement, mismatched, (Tensor(1), Tensor(1)))


def test_a_code_generation_error_names_the_kernel_once():
    pattern = label("renamed", __file__, "def undefined(") + "not_defined_anywhere is not defined"
    with pytest.raises(CodegenError, match="^" + pattern):
        ninetoothed.make(
            lambda x, y: (x.tile((4,)), y.tile((4,))),
            undefined,
            (Tensor(1), Tensor(1)),
            name="renamed",
        )
