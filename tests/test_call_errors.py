"""Ordinary mistakes at call time get a clear LaunchError, on every framework.

Each of these used to fail inside Triton (``'NoneType' object has no
attribute 'dtype'``, ``OverflowError``, ``ZeroDivisionError``) or, worse, run
without a word (a tile of -8 left the output untouched; an output with zero
strides was written by every program at once).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.tutorial import add, elementwise

from ninetoothed.errors import LaunchError


def vectors(framework, count=3, size=8):
    rng = np.random.default_rng()
    return [framework.from_numpy(rng.standard_normal(size).astype("float32")) for _ in range(count)]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, r"'alpha' is a scalar .* got None"),
        (2**70, r"'alpha' .* does not fit in 64 bits"),
        (-(2**64), r"'alpha' .* does not fit in 64 bits"),
    ],
)
def test_bad_scalar_values(framework, value, message):
    x, _, y = vectors(framework)
    with pytest.raises(LaunchError, match=message):
        framework.call(elementwise.scale_kernel, [x, value, y], {}, outputs=[2])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, r"'BLOCK_SIZE' .* tile size .* positive int, got int 0"),
        (-8, r"'BLOCK_SIZE' .* tile size .* positive int, got int -8"),
        (8.0, r"'BLOCK_SIZE' .* tile size .* positive int, got float 8.0"),
        (True, r"'BLOCK_SIZE' .* tile size .* positive int, got bool True"),
    ],
)
def test_bad_constexpr_tile_sizes(framework, value, message):
    with pytest.raises(LaunchError, match=message):
        framework.call(add.constexpr_kernel, vectors(framework), {"BLOCK_SIZE": value}, [2])


@pytest.mark.parametrize("value", [8.0, True])
def test_meta_values_must_be_ints(framework, value):
    names = sorted(add.kernel.spec.meta_symbols)
    with pytest.raises(LaunchError, match=rf"meta symbol {names[0]!r} .* got"):
        framework.call(add.kernel, vectors(framework), {names[0]: value}, [2])


def test_an_output_with_zero_strides_is_refused():
    import torch
    from support.base import ON_GPU

    device = "cuda" if ON_GPU else "cpu"
    x = torch.randn(8, device=device)
    overlapping = torch.zeros(1, device=device).expand(8)
    with pytest.raises(LaunchError, match=r"'z' .* stride 0 .* overlap"):
        add.kernel(x, x, overlapping)
    assert overlapping[0] == 0
    # An input with zero strides (a broadcast) stays fine.
    z = torch.full((8,), float("nan"), device=device)
    add.kernel(overlapping, x, z)
    torch.testing.assert_close(z, x)


def test_meta_tensors_are_refused_naming_the_parameter():
    """A meta tensor has a shape but no data: refused by name, on the GPU's path and the
    interpreter's (which failed in torch's copy: "Cannot copy out of meta tensor")."""
    import torch

    x, y, z = (torch.empty(8, device="meta") for _ in range(3))
    with pytest.raises(LaunchError, match=r"'x' is a tensor on the meta device"):
        add.kernel(x, y, z)
