"""Arguments that share the memory a kernel writes: refused as torch refuses them, or in place.

A tensor the kernel writes may share no element with another argument, nor
with itself (torch: "some elements of the input tensor and the written-to
tensor refer to a single memory location"): otherwise the result depends on
the order the programs run in.  One exception, torch's in-place calls: the
very same view passed for a parameter the kernel writes and one it only
reads, where every program reads exactly the elements it writes
(``add(x, y, x)``).  Where other programs read what one writes (a transpose
in place), the call is refused.  JAX arrays have no views and a JAX kernel
returns new arrays: the same array given as input and output is read as it
was, on either launcher.
"""

from __future__ import annotations

import numpy as np
import pytest

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.errors import LaunchError

BLOCK = 4
"""Small tiles: several programs in every dimension."""

RNG = np.random.default_rng()

SHARED = r"refer to a single memory location"


def tiles(x, y):
    return x.tile((BLOCK,)), y.tile((BLOCK,))


def add_one(x, y):
    y = x + 1  # noqa: F841


def tiles_2d(x, y):
    return x.tile((BLOCK, BLOCK)), y.tile((BLOCK, BLOCK))


def transposed(x, y):
    return x.permute((1, 0)).tile((BLOCK, BLOCK)), y.tile((BLOCK, BLOCK))


def copy(x, y):
    y = x  # noqa: F841


def add_tiles(x, y, z):
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


def add(x, y, z):
    z = x + y  # noqa: F841


def copy_and_add_one(x, y, z):
    y = x  # noqa: F841
    z = x + 1  # noqa: F841


shift = ninetoothed.make(tiles, add_one, (Tensor(1), Tensor(1)))
copy_2d = ninetoothed.make(tiles_2d, copy, (Tensor(2), Tensor(2)))
transpose = ninetoothed.make(transposed, copy, (Tensor(2), Tensor(2)))
add_kernel = ninetoothed.make(add_tiles, add, (Tensor(1), Tensor(1), Tensor(1)))
two_outputs = ninetoothed.make(add_tiles, copy_and_add_one, (Tensor(1), Tensor(1), Tensor(1)))


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def views_of(framework, values: np.ndarray, *layouts):
    """The base tensor of ``values`` and views ``(shape, strides, offset)`` of it; None
    where the framework has no views (JAX)."""
    base = framework.from_numpy(values.copy())  # torch.from_numpy would share ``values``
    views = [framework.view(base, *layout) for layout in layouts]
    return None if views[0] is None else (base, *views)


def without_views(framework):
    if framework.name == "jax":
        pytest.skip("JAX arrays have no views (see test_jax_reads_an_output_array_as_it_was)")


def test_a_written_view_overlapping_an_input_is_refused(framework):
    without_views(framework)
    values = floats(41)
    base, x, y = views_of(framework, values, ((40,), (1,), 0), ((40,), (1,), 1))
    with pytest.raises(LaunchError, match=rf"'x' \(read.* and 'y' \(written.* {SHARED}"):
        shift(x, y)  # y = x + 1 over one buffer: each program's result depends on the order
    np.testing.assert_array_equal(framework.to_numpy(base), values)


@pytest.mark.parametrize("offset", [6, 0])
def test_two_outputs_sharing_memory_are_refused(framework, offset):
    without_views(framework)
    values = floats(20)
    x = framework.from_numpy(floats(12))
    base, y, z = views_of(framework, values, ((12,), (1,), 0), ((12,), (1,), offset))
    with pytest.raises(LaunchError, match=rf"'y' \(written.* and 'z' \(written.* {SHARED}"):
        two_outputs(x, y, z)  # which store lands last is up to the order of the programs
    np.testing.assert_array_equal(framework.to_numpy(base), values)


def test_an_output_overlapping_itself_is_refused(framework):
    without_views(framework)
    values = floats(64)
    x = framework.from_numpy(floats(8, 6))
    base, y = views_of(framework, values, ((8, 6), (2, 1), 0))
    with pytest.raises(LaunchError, match=r"output 'y' .*\(8, 6\).*\(2, 1\).* overlaps itself"):
        copy_2d(x, y)
    np.testing.assert_array_equal(framework.to_numpy(base), values)


def test_an_interleaved_output_that_does_not_overlap_is_written(framework):
    without_views(framework)
    # Offsets 2i + 3j: 0, 3, 2, 5, 4, 7 -- distinct, though no stride spans the other.
    values = np.full(8, np.nan, dtype="float32")
    x_values = floats(3, 2)
    base, y = views_of(framework, values, ((3, 2), (2, 3), 0))
    copy_2d(framework.from_numpy(x_values), y)
    np.testing.assert_array_equal(framework.to_numpy(y), x_values)


def test_the_same_view_read_and_written_runs_in_place(framework):
    without_views(framework)
    x_values, y_values = floats(37), floats(37)
    x, y = framework.from_numpy(x_values.copy()), framework.from_numpy(y_values.copy())
    add_kernel(x, y, x)
    np.testing.assert_allclose(framework.to_numpy(x), x_values + y_values, rtol=1e-6)
    shift(y, y)
    np.testing.assert_allclose(framework.to_numpy(y), y_values + 1, rtol=1e-6)


def halves_by_the_input_width(x, y):
    # ntops's rope: both tiled by the *input's* last size, so y's positions name x's.
    def rows_of_halves(t):
        arranged = t.tile((1, x.shape[-1] // 2)).tile((1, -1))
        arranged.dtype = arranged.dtype.squeeze(0)
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze(0)
        return arranged

    return rows_of_halves(x), rows_of_halves(y)


def swap_halves(x, y):
    first = x[0]
    second = x[1]
    y[0] = second
    y[1] = first


swap = ninetoothed.make(halves_by_the_input_width, swap_halves, (Tensor(2), Tensor(2)))


def test_in_place_where_the_output_is_tiled_by_the_inputs_sizes(framework):
    without_views(framework)
    values = floats(5, 8)
    x = framework.from_numpy(values.copy())
    swap(x, x)
    np.testing.assert_array_equal(framework.to_numpy(x), np.roll(values, 4, axis=1))


def test_in_place_where_programs_read_what_others_write_is_refused(framework):
    without_views(framework)
    values = floats(8, 8)
    x = framework.from_numpy(values.copy())
    with pytest.raises(LaunchError, match=r"'x' and 'y'.* other programs"):
        transpose(x, x)  # program (i, j) reads tile (j, i), which program (j, i) writes
    np.testing.assert_array_equal(framework.to_numpy(x), values)
    y = framework.from_numpy(np.full((8, 8), np.nan, dtype="float32"))
    transpose(x, y)
    np.testing.assert_array_equal(framework.to_numpy(y), values.T)


def test_the_same_memory_in_another_layout_is_refused(framework):
    without_views(framework)
    values = floats(8, 8)
    base, x, y = views_of(framework, values, ((8, 8), (8, 1), 0), ((8, 8), (1, 8), 0))
    with pytest.raises(LaunchError, match=rf"'x' \(read.* and 'y' \(written.* {SHARED}"):
        copy_2d(x, y)
    np.testing.assert_array_equal(framework.to_numpy(base), values)


def test_inputs_may_share_memory_and_empty_views_overlap_nothing(framework):
    without_views(framework)
    values = floats(41)
    base, x, y = views_of(framework, values, ((40,), (1,), 0), ((40,), (1,), 1))
    z = framework.from_numpy(np.full(40, np.nan, dtype="float32"))
    add_kernel(x, y, z)
    np.testing.assert_allclose(framework.to_numpy(z), values[:-1] + values[1:], rtol=1e-6)
    _, empty_in, empty_out = views_of(framework, values, ((0,), (1,), 3), ((0,), (1,), 3))
    shift(empty_in, empty_out)


@pytest.mark.parametrize("launcher", ["auto", "callback"])
def test_jax_reads_an_output_array_as_it_was(launcher, monkeypatch):
    pytest.importorskip("jax")
    from support.jax_support import JaxSupport

    monkeypatch.setenv("NINETOOTHED_JAX_LAUNCHER", launcher)
    framework = JaxSupport()
    values = floats(8, 8)
    x = framework.from_numpy(values)
    (result,) = framework.call(transpose, [x, x], {}, outputs=[1])
    np.testing.assert_array_equal(result, values.T)
    np.testing.assert_array_equal(framework.to_numpy(x), values)
    (result,) = framework.call(shift, [x[0], x[0]], {}, outputs=[1])
    np.testing.assert_allclose(result, values[0] + 1, rtol=1e-6)


@pytest.mark.interpreter_only  # the stand-in GPU runs on CPU tensors
def test_the_fast_path_checks_the_pointers_of_every_call(counted):
    torch = pytest.importorskip("torch")
    from support.stub_gpu import stubbed_gpu

    with stubbed_gpu() as launches:
        kernel = ninetoothed.make(tiles, add_one, (Tensor(1), Tensor(1)))
        t, a, b = torch.randn(80), torch.randn(40), torch.empty(40)
        kernel(a, b)
        kernel(a, b)  # from the plan
        assert (counted["plan"], len(launches)) == (1, 2)
        # The layouts of the plan, but pointers 4 bytes apart: refused by validation.
        with pytest.raises(LaunchError, match=SHARED):
            kernel(t[:40], t[1:41])
        assert (counted["bind"], len(launches)) == (2, 2)
        kernel(b, b)  # one view, in place: from the plan
        kernel(t[:40], t[40:])  # adjacent, not overlapping
        assert (counted["bind"], counted["plan"], len(launches)) == (2, 2, 4)  # no new plan

        square = ninetoothed.make(transposed, copy, (Tensor(2), Tensor(2)))
        x, y = torch.randn(8, 8), torch.empty(8, 8)
        square(x, y)
        square(x, y)
        with pytest.raises(LaunchError, match="other programs"):
            square(x, x)  # the plan's layouts: the pointers decide
        assert len(launches) == 6
