"""Constexprs a call gives, and constexpr sizes, in C libraries (stand-in driver).

A just-in-time kernel compiles these per call; a library compiles them for
values chosen at build time (``make(..., constexprs=...)``, ``build``'s
configurations) and selects by the call's values, or makes them run-time
values (sizes), with whole-dimension tiles compiled per power of two.
"""

from __future__ import annotations

import ctypes
import math

import pytest
import torch
from support import aot_kernels as k
from support.aot import binaries, scalar, tensor
from support.aot_parity import make_aot

import ninetoothed
from ninetoothed import Tensor
from ninetoothed._aot.kernel import load_library
from ninetoothed._aot.sizes import run_time_sizes
from ninetoothed.aot import Status
from ninetoothed.errors import CodegenError, LaunchError

pytestmark = pytest.mark.interpreter_only

FAR = 1 << 40


@pytest.fixture(scope="module")
def made(tmp_path_factory, fake_cuda):
    directory = tmp_path_factory.mktemp("constexprs")
    return {
        "blocks": make_aot(
            k.given_block_arrangement,
            k.add_application,
            k.add_tensors(),
            directory,
            "blocks",
            constexprs={"BLOCK": (16, 32)},
        ),
        "flagged": make_aot(
            k.scale_arrangement,
            k.scale_application,
            k.flagged_tensors(),
            directory,
            "flagged",
            constexprs={"flag": (False, True)},
        ),
        "rows": make_aot(
            k.row_arrangement, k.row_sum_application, k.row_tensors(), directory, "rows"
        ),
    }


class _C:
    """A library's launch function and last error, through ctypes."""

    def __init__(self, kernel):
        self.handle = load_library(kernel.library.library)
        self.function = getattr(self.handle, kernel.library.function)
        self.handle.ninetoothed_last_error.restype = ctypes.c_char_p

    def __call__(self, *arguments):
        status = int(self.function(ctypes.c_void_p(0), *arguments))
        return status, self.handle.ninetoothed_last_error().decode() if status else ""


def test_a_symbol_given_at_the_call_selects_its_variant(made, fake_cuda):
    blocks = made["blocks"]
    header = blocks.library.header.read_text()
    assert "NineToothedTensor z, int BLOCK_);" in header
    call = _C(blocks)
    for size, block in ((100, 16), (100, 32), (1, 32), (4096, 16)):
        tensors = [tensor((i + 1) * FAR, (size,)) for i in range(3)]
        assert call(*tensors, ctypes.c_int(block)) == (0, "")
        assert fake_cuda.launch()["grid"] == (math.ceil(size / block), 1, 1)
    tensors = [tensor((i + 1) * FAR, (100,)) for i in range(3)]
    assert call(*tensors, ctypes.c_int(64)) == (
        Status.NO_VARIANT,
        "blocks: no variant was built for BLOCK_=64; built: BLOCK=16; BLOCK=32",
    )


def test_the_python_callable_takes_a_symbol_as_a_just_in_time_call_does(made, fake_cuda, on_gpu):
    blocks = made["blocks"]
    x, y, z = (torch.empty(100, dtype=torch.float16) for _ in range(3))
    blocks(x, y, z, 16)
    assert fake_cuda.launch()["grid"] == (7, 1, 1)
    blocks(x, y, z, BLOCK=32)
    assert fake_cuda.launch()["grid"] == (4, 1, 1)
    blocks(x, y, z, 16)  # the fast path: remembered with its key
    assert fake_cuda.launch()["grid"] == (7, 1, 1)
    with pytest.raises(
        LaunchError, match=r"no variant was built for the key values \(64,\); built"
    ):
        blocks(x, y, z, 64)
    with pytest.raises(LaunchError, match=r"then the key values \(BLOCK_\)"):
        blocks(x, y, z)


def test_a_constexpr_scalar_selects_the_variant_compiled_for_its_value(made, fake_cuda):
    flagged = made["flagged"]
    directory = flagged.library.library.parent
    header = flagged.library.header.read_text()
    assert "flag: a scalar: data points to a double in host memory" in header
    assert "int" not in header.split("launch_flagged(")[1].split(")")[0]  # no key
    images = {flag: binaries(directory / f"flagged_{int(flag)}.c") for flag in (False, True)}
    assert not set(images[False]) & set(images[True])
    call = _C(flagged)
    x, y = tensor(FAR, (256,)), tensor(2 * FAR, (256,))
    for flag in (True, False, True):
        assert call(x, scalar(2.0), scalar(float(flag)), y) == (0, "")
        assert fake_cuda.image(fake_cuda.launch()["module"]) in images[flag]
    assert call(x, scalar(2.0), scalar(2.0), y) == (
        Status.NO_VARIANT,
        "flagged: no variant of the library serves the call: built for flag=False; flag=True",
    )


def test_the_python_callable_passes_a_constexpr_scalar_s_value(made, fake_cuda, on_gpu):
    flagged = made["flagged"]
    directory = flagged.library.library.parent
    x, y = torch.empty(64), torch.empty(64)
    for flag in (True, False, True):  # the full path, then the fast one
        flagged(x, 0.5, flag, y)
        image = fake_cuda.image(fake_cuda.launch()["module"])
        assert image in binaries(directory / f"flagged_{int(flag)}.c")
    with pytest.raises(LaunchError, match=r"built for flag=False; flag=True"):
        flagged(x, 0.5, 3, y)


def test_whole_dimension_tiles_compile_per_power_of_two(made, fake_cuda):
    """Rows of 17 to 64 elements (``lower_bound``, ``upper_bound``): padded to 32 or 64."""
    rows = made["rows"]
    built = rows.library.built
    assert [b.rsplit("=", 1)[1] for b in built] == ["32]"] * 4 + ["64]"] * 4
    images = binaries(rows.library.source)
    call = _C(rows)
    for length, padded in ((17, 32), (32, 32), (33, 64), (64, 64), (40, 64)):
        assert call(tensor(FAR, (3, length)), tensor(2 * FAR, (3,))) == (0, "")
        index = images.index(fake_cuda.image(fake_cuda.launch()["module"]))
        assert built[index].endswith(f"x_padded_size_1_0={padded}]"), (length, built[index])
    for length, padded in ((16, 16), (65, 128)):
        assert call(tensor(FAR, (3, length)), tensor(2 * FAR, (3,))) == (
            Status.NO_VARIANT,
            f"{rows.spec.label}: the call's tiles as large as a dimension pad to "
            "(x_padded_size_1_0) = "
            f"({padded}), but the library was compiled for (32,), (64,) only",
        )


def test_constexpr_sizes_are_run_time_sizes_in_a_library(tmp_path, fake_cuda):
    """One library serves every size; the just-in-time kernel computes the same grid."""
    options = {"constexpr": True}
    tensors = tuple(Tensor(1, dtype=ninetoothed.float16, shape_options=options) for _ in "xyz")
    kernel = make_aot(k.add_arrangement, k.add_application, tensors, tmp_path, "sized")
    assert tensors[0].shape[0].constexpr  # the caller's tensors are left alone
    call = _C(kernel)
    for size in (100, 257, 4096):
        assert call(*(tensor((i + 1) * FAR, (size,)) for i in range(3))) == (0, "")
        assert fake_cuda.launch()["grid"] == (math.ceil(size / 256), 1, 1)
    relaxed = run_time_sizes(tensors, upper_bound=512)
    assert [t.name for t in relaxed] == [t.name for t in tensors]
    assert not relaxed[0].shape[0].constexpr and relaxed[0].shape[0].upper_bound == 512
    assert relaxed[0].dtype == tensors[0].dtype


def test_a_build_configuration_may_give_a_symbol(tmp_path, fake_cuda):
    configs = [((), {"BLOCK": block}, {}) for block in (16, 32)]
    kernel = ninetoothed.build(
        k.given_block_premake,
        configs,
        kernel_name="built_blocks",
        output_dir=tmp_path,
        target="sm_90",
    )
    assert [p.name for p in kernel.library.parameters if p.kind == "key"] == ["dtype_", "BLOCK_"]
    call = _C(kernel)
    tensors = [tensor((i + 1) * FAR, (100,)) for i in range(3)]
    assert call(*tensors, ctypes.c_int(8), ctypes.c_int(32)) == (0, "")
    assert fake_cuda.launch()["grid"] == (4, 1, 1)
    assert call(*tensors, ctypes.c_int(8), ctypes.c_int(8))[0] == Status.NO_VARIANT


@pytest.mark.parametrize(
    ("constexprs", "error", "pattern"),
    [
        (None, CodegenError, r"the constexpr\(s\) BLOCK are given at the call, .*constexprs="),
        ({"BLOCK": (16,), "SIZE": 3}, CodegenError, r"constexprs names SIZE, which the kernel"),
        ({"BLOCK": ()}, TypeError, r"constexprs gives 'BLOCK' no value to build for"),
        ([16], TypeError, r"constexprs must map each constexpr's name to its values"),
        ({"BLOCK": (16.5,)}, TypeError, r"BLOCK=16.5, which cannot select a variant"),
    ],
    ids=repr,
)
def test_constexprs_that_do_not_fit_are_refused(tmp_path, constexprs, error, pattern):
    options = {} if constexprs is None else {"constexprs": constexprs}
    with pytest.raises(error, match=pattern):
        make_aot(
            k.given_block_arrangement, k.add_application, k.add_tensors(), tmp_path, "b", **options
        )


def test_constexprs_without_caller_cuda_are_refused():
    with pytest.raises(TypeError, match=r"constexprs=\{'BLOCK': 16\} are for ahead-of-time"):
        ninetoothed.make(
            k.given_block_arrangement, k.add_application, k.add_tensors(), constexprs={"BLOCK": 16}
        )


def test_whole_dimension_tiles_need_a_bound_and_few_combinations(tmp_path):
    with pytest.raises(CodegenError, match=r"of run-time size \(x_size_1\) .* give it one"):
        make_aot(k.row_arrangement, k.row_sum_application, k.row_tensors(0, None), tmp_path, "u")

    def arrangement(x, y):
        return k.row_arrangement(x, Tensor(1))[0], k.row_arrangement(y, Tensor(1))[0]

    wide = Tensor(2, dtype=ninetoothed.float32, shape_options=(None, {"upper_bound": 4096}))
    narrow = Tensor(2, dtype=ninetoothed.float32, shape_options=(None, {"upper_bound": 2048}))
    with pytest.raises(CodegenError, match=r"13 values, 12 values\): 156 combinations"):
        make_aot(arrangement, k.copy_application, (wide, narrow), tmp_path, "pairs")


def test_a_variant_may_keep_a_constexpr_size_and_name_its_value(tmp_path, fake_cuda):
    """A build variant that names a constexpr size's value compiles it in; a call of
    another size is refused before anything (its dispatcher tries the next variant)."""
    from ninetoothed._aot.sizes import run_time_sizes
    from ninetoothed.aot import BuildVariant
    from ninetoothed.runtime import plugins
    from ninetoothed.runtime._arranging import make_spec

    variants = []
    for length in (32, 64):
        tensors = run_time_sizes(k.row_tensors(), keep=[(0, 1)])
        spec = make_spec(k.row_arrangement, k.row_sum_application, tensors, "exact", {})
        label = f"length={length}"
        variants.append(BuildVariant(spec, (), (), label, "", sizes=(("x", 1, length),)))
    builder = plugins.ahead_of_time_builder("cuda")
    library = builder.build(
        variants, key_names=(), kernel_name="exact", output_dir=tmp_path, target="sm_90"
    )
    images = {n: binaries(tmp_path / f"exact_{n}.c") for n in (32, 64)}
    call = _C(type("Made", (), {"library": library})())
    for length in (32, 64):
        assert call(tensor(FAR, (3, length)), tensor(2 * FAR, (3,))) == (0, "")
        assert fake_cuda.image(fake_cuda.launch()["module"]) in images[length]
    assert call(tensor(FAR, (3, 40)), tensor(2 * FAR, (3,))) == (
        Status.NO_VARIANT,
        "exact: no variant of the library serves the call: built for x.shape[1]=32; x.shape[1]=64",
    )
    unit = load_library(library.library).launch_exact_32
    assert int(unit(ctypes.c_void_p(0), tensor(FAR, (3, 40)), tensor(2 * FAR, (3,)))) == 1
