"""``ninetoothed.build`` on a machine without a GPU: variants, dispatcher, tuning, rebuilds.

The stand-in driver also times launches (a launch costs grid x threads), so
build-time tuning runs here for real: the fastest variant of each key must
be the one the dispatcher launches and the CSV records.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from support import aot_kernels as k
from support.aot import tensor

import ninetoothed
from ninetoothed._aot.build import LazyKernel
from ninetoothed._aot.kernel import load_library
from ninetoothed.aot import Status
from ninetoothed.errors import LaunchError

pytestmark = pytest.mark.interpreter_only

ROOT = Path(__file__).resolve().parents[2]


def build(directory, configs=k.AXPY_CONFIGS, premake=k.axpy_premake, **options):
    arguments = {
        "meta_parameters": ("block_size",),
        "kernel_name": "axpy",
        "output_dir": directory,
        "target": "sm_90",
        **options,
    }
    return ninetoothed.build(premake, configs, **arguments)


@pytest.fixture(scope="module")
def axpy(tmp_path_factory, fake_cuda):
    return build(tmp_path_factory.mktemp("build") / "new")


def _call(kernel, key, size=1127):
    tensors = [tensor(0x100000 * (i + 1), (size,)) for i in range(3)]
    alpha = ctypes.c_double(2.0)
    from ninetoothed.aot import NineToothedTensor

    arguments = [
        tensors[0],
        tensors[1],
        NineToothedTensor(ctypes.addressof(alpha), None, None),
        tensors[2],
    ]
    handle = load_library(kernel.library.library)
    status = handle.launch_axpy(ctypes.c_void_p(0), *arguments, *(ctypes.c_int(v) for v in key))
    handle.ninetoothed_last_error.restype = ctypes.c_char_p
    return status, handle.ninetoothed_last_error().decode()


def test_the_dispatcher_launches_each_key_s_fastest_variant(axpy, fake_cuda):
    directory = axpy.library.library.parent
    header = (directory / "axpy.h").read_text()
    assert (
        "NineToothedResult launch_axpy(NineToothedStream stream, NineToothedTensor input, "
        "NineToothedTensor other, NineToothedTensor alpha, NineToothedTensor output, "
        "int size_, int dtype_);"
    ) in header
    # float16 (NINETOOTHED_FLOAT16 = 8): block_size 256 with 4 warps costs 5 x 128, the least
    assert _call(axpy, (1127, 8)) == (0, "")
    assert fake_cuda.launch()["grid"] == (5, 1, 1) and fake_cuda.launch()["threads"] == 128
    assert _call(axpy, (1127, 10))[0] == 0  # float32: its one variant, block_size 512
    assert fake_cuda.launch()["grid"] == (3, 1, 1)
    status, message = _call(axpy, (1127, 11))
    assert status == Status.NO_VARIANT
    assert message == (
        "axpy: no variant was built for size_=1127, dtype_=11; built: size=1127, "
        "dtype=float16; size=1127, dtype=float32"
    )
    rows = (directory / "axpy.csv").read_text().splitlines()
    assert rows[0] == "size_,dtype_,launched,milliseconds,candidates"
    assert rows[1].startswith('1127,8,"block_size=256, num_warps=4",0.64') and rows[1].endswith(
        ",3"
    )
    assert rows[2].startswith("1127,10,block_size=512,")


def test_the_python_callable_takes_the_key_after_the_tensors(axpy, fake_cuda, monkeypatch):
    from nt_torch.adapter import TorchAdapter

    describe = TorchAdapter.describe
    monkeypatch.setattr(
        TorchAdapter, "describe", lambda s, o: describe(s, o)._replace(device="cuda:0")
    )
    monkeypatch.setattr(
        TorchAdapter,
        "aot_reads",
        lambda self: (lambda t: (t.shape, t.dtype), torch.Tensor.data_ptr),
    )
    monkeypatch.setattr(TorchAdapter, "current_stream", lambda self, device: 0)
    monkeypatch.setattr(TorchAdapter, "device_guard", lambda self, device: None)
    x = torch.empty(1127, dtype=torch.float16)
    axpy(x, x, torch.tensor(2.0, dtype=torch.float64), x, 1127, ninetoothed.float16)
    assert fake_cuda.launch()["grid"] == (5, 1, 1)
    y = x.float()
    axpy(y, y, 0.5, y, 1127, ninetoothed.float32)
    assert fake_cuda.launch()["grid"] == (3, 1, 1)
    with pytest.raises(LaunchError, match=r"parameter 'input' expects dtype float32, got float16"):
        axpy(x, x, 0.5, x, 1127, ninetoothed.float32)  # the key's variant checks the call
    with pytest.raises(
        LaunchError, match=r"no variant was built for the key values \(1127, 'float64'\)"
    ):
        axpy(x, x, 0.5, x, 1127, "float64")
    with pytest.raises(
        LaunchError, match=r"takes 4 kernel arguments, then the key values \(size_, dtype_\)"
    ):
        axpy(x, x, 0.5, x, 1127)


def test_an_unchanged_build_loads_what_is_there_and_a_change_rebuilds(axpy):
    library = axpy.library.library
    before = library.stat().st_mtime_ns
    began = time.perf_counter()
    again = build(library.parent)
    assert time.perf_counter() - began <= 1.0
    assert library.stat().st_mtime_ns == before and again.library == axpy.library
    changed = build(library.parent, k.AXPY_CONFIGS[:-1])  # one configuration fewer
    assert library.stat().st_mtime_ns != before
    assert changed.library.built == ("size=1127, dtype=float16",)


def test_without_a_gpu_each_key_takes_its_first_configuration(tmp_path, fake_cuda):
    fake_cuda.set("fake_devices", 0)
    try:
        with pytest.warns(UserWarning, match=r"no GPU here to tune on"):
            kernel = build(tmp_path)
    finally:
        fake_cuda.set("fake_devices", 1)
    assert _call(kernel, (1127, 8))[0] == 0
    assert fake_cuda.launch()["grid"] == (18, 1, 1)  # block_size 64, the first
    assert (tmp_path / "axpy.csv").read_text().splitlines()[
        1
    ] == '1127,8,"block_size=64, num_warps=4",,3'


def test_without_meta_parameters_every_value_is_a_key(tmp_path, fake_cuda):
    configs = (k.AXPY_CONFIGS[0], k.AXPY_CONFIGS[3])
    kernel = build(tmp_path, configs, meta_parameters=None)
    names = [p.name for p in kernel.library.parameters if p.kind == "key"]
    assert names == ["size_", "dtype_", "block_size_", "num_warps"]
    handle = load_library(kernel.library.library)
    assert _call(kernel, (1127, 8, 64, 4))[0] == 0 and fake_cuda.launch()["grid"] == (18, 1, 1)
    assert _call(kernel, (1127, 10, 512, 7))[0] == 0  # it set no num_warps: any value
    assert _call(kernel, (1127, 8, 64, 8))[0] == Status.NO_VARIANT
    del handle


def test_lazy_builds_at_the_first_call(tmp_path):
    kernel = build(tmp_path / "lazy", lazy=True)
    assert isinstance(kernel, LazyKernel) and not (tmp_path / "lazy").exists()
    assert kernel.kernel.library.library.is_file()


def test_a_module_that_builds_at_import_time_imports(tmp_path, fake_cuda_path):
    module = tmp_path / "builds_on_import.py"
    module.write_text(
        textwrap.dedent(f"""
        import ninetoothed
        from support import aot_kernels as k
        kernel = ninetoothed.build(k.axpy_premake, k.AXPY_CONFIGS, meta_parameters=("block_size",),
                                   kernel_name="axpy", output_dir={str(tmp_path / "out")!r},
                                   target="sm_90")
    """)
    )
    environment = dict(os.environ, NINETOOTHED_LIBCUDA=str(fake_cuda_path))
    environment["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT / "tests")])
    result = subprocess.run(
        [sys.executable, "-c", "import builds_on_import; print('imported')"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=240,
    )
    assert result.stdout.strip() == "imported", result.stderr[-2000:]


@pytest.mark.parametrize(
    ("configs", "options", "error", "pattern"),
    [
        (
            [((), {"size": 1, "blok_size": 2}, {})],
            {},
            TypeError,
            r"configs\[0\] does not fit premake\(size=None, .*, pattern=None\)",
        ),
        (
            [((), {"size": 1}, {"num_warp": 4})],
            {},
            TypeError,
            r"configs\[0\]'s compilation configurations set num_warp; they may set num_warps",
        ),
        (
            k.AXPY_CONFIGS,
            {"meta_parameters": ("block",)},
            ValueError,
            r"meta_parameters names 'block', which premake\(.*\) does not take",
        ),
        (
            [k.AXPY_CONFIGS[0], k.AXPY_CONFIGS[0]],
            {},
            ValueError,
            r"configs\[0\] and configs\[1\] are the same variant",
        ),
        (
            [((), {"size": 8, "dtype": ninetoothed.float16}, {})],
            {"meta_parameters": ("block_size",)},
            ValueError,
            r"meta_parameters names 'block_size', but no configuration gives it a value",
        ),
        (
            [
                (
                    (),
                    {"size": 8, "dtype": ninetoothed.float16, "block_size": 8, "pattern": (1, 2)},
                    {},
                )
            ],
            {},
            TypeError,
            r"gives pattern=\(1, 2\), which cannot select a variant at run time",
        ),
        (
            k.AXPY_CONFIGS,
            {"kernel_name": "axpy fast"},
            ValueError,
            r"'axpy fast' is not a C identifier",
        ),
        ([], {}, ValueError, r"configs is empty"),
        ([(1, 2)], {}, TypeError, r"configs\[0\] must be an \(args, kwargs, compilation_configs\)"),
    ],
)
def test_bad_builds_are_refused_naming_what_is_wrong(configs, options, error, pattern, tmp_path):
    options = {"meta_parameters": None, **options}
    with pytest.raises(error, match=pattern):
        build(tmp_path, configs, k.axpy_premake_with_pattern, **options)


def test_repeated_calls_of_a_build_compare_the_key_values(axpy, fake_cuda, on_gpu):
    """The fast path of a dispatcher: the key values are part of what a repeated call
    must match (they reach C in the packed array's data fields), the tensors' dtypes too."""
    axpy._fast = None
    for dtype, key, grid in ((torch.float16, ninetoothed.float16, 5), (torch.float32, 10, 3)) * 2:
        x = torch.empty(1127, dtype=dtype)
        axpy(x, x, 0.5, x, 1127, key)
        assert fake_cuda.launch()["grid"] == (grid, 1, 1)
        assert fake_cuda.parameters([".u64"]) == [x.data_ptr()]
    assert len(axpy._fast.plans) == 2
    x = torch.empty(1127, dtype=torch.float16)
    with pytest.raises(LaunchError, match=r"parameter 'input' expects dtype float32, got float16"):
        axpy(x, x, 0.5, x, 1127, ninetoothed.float32)
