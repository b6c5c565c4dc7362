"""``ninetoothed build FILE:PREMAKE``: ``ninetoothed.build`` from the shell, for a named target."""

from __future__ import annotations

import pytest

AXPY = """
    import functools

    import ninetoothed
    from ninetoothed import Tensor


    def arrangement(x, alpha, y, output, block_size):
        return x.tile((block_size,)), alpha, y.tile((block_size,)), output.tile((block_size,))


    def application(x, alpha, y, output):
        output = alpha * x + y


    def premake(dtype, block_size):
        vector = functools.partial(Tensor, 1, dtype=dtype)
        tensors = (vector(), Tensor(0, dtype=ninetoothed.float32), vector(), vector())
        return functools.partial(arrangement, block_size=block_size), application, tensors


    configs = [
        ((), {"dtype": dtype, "block_size": 256}, {"num_warps": 4})
        for dtype in (ninetoothed.float16, ninetoothed.float32)
    ]
    single = configs[:1]
"""

# Compiling for a named architecture needs no GPU (Triton's ptxas and the C compiler).
pytestmark = pytest.mark.interpreter_only


def test_build_writes_a_library_for_the_named_target(write, ninetoothed, folder):
    write("axpy.py", AXPY)
    result = ninetoothed(
        "build", "axpy.py:premake", "--meta-parameters", "block_size",
        "--kernel-name", "axpy", "--output-dir", "out", "--target", "sm_90",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "built launch_axpy (2 variants)"
    assert f"  library: {folder / 'out' / 'axpy.so'}" in result.stdout
    header = (folder / "out" / "axpy.h").read_text()
    assert "NineToothedResult launch_axpy(NineToothedStream stream" in header
    assert (folder / "out" / "axpy.so").stat().st_size > 0


def test_build_takes_the_configs_named_and_defaults_the_name_to_premake(write, ninetoothed):
    write("axpy.py", AXPY)
    result = ninetoothed(
        "build", "axpy.py:premake", "--configs", "single", "--output-dir", "out",
        "--target", "sm_80", script=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "built launch_premake (1 variant)"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("axpy.py:premake", "--configs", "nothing"), "axpy.py defines no 'nothing'"),
        (("axpy.py:premake", "--configs", "a-b"), "--configs takes a name defined in FILE"),
        (("axpy.py:configs",), "axpy.py:configs is a list, not a function"),
        (("axpy.py",), "expected FILE:PREMAKE"),
    ],
)
def test_build_refuses_bad_arguments_in_one_line(write, ninetoothed, arguments, message):
    write("axpy.py", AXPY)
    result = ninetoothed("build", *arguments, "--target", "sm_90")
    assert result.returncode == 1
    assert result.stderr.startswith(f"ninetoothed build: {message}")
