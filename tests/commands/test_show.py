"""``ninetoothed show FILE:KERNEL``: a kernel's arrangement, grid, source and configuration."""

from __future__ import annotations

import pytest
from support.base import ON_GPU

ADD = """
    import torch

    import ninetoothed
    from helpers import BLOCK_SIZE  # a sibling module: FILE's folder comes first on the path
    from ninetoothed import Tensor


    def arrangement(x, y, z, BLOCK_SIZE=BLOCK_SIZE):
        return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


    def application(x, y, z):
        z = x + y


    kernel = ninetoothed.make(
        arrangement, application, (Tensor(1), Tensor(1), Tensor(1)),
        configs=[{"BLOCK_SIZE": 32}, {"BLOCK_SIZE": 64, "num_warps": 2}],
    )
    not_a_kernel = 3

    if __name__ == "__main__":
        x = torch.arange(100.0, device="cuda" if torch.cuda.is_available() else "cpu")
        z = torch.empty_like(x)
        kernel(x, x, z)
        print("called:", bool((z == 2 * x).all()))
"""


@pytest.fixture
def add(write):
    """``add.py`` and its helper module, in a folder of their own below the working one."""
    write("kernels/helpers.py", "import ninetoothed\nBLOCK_SIZE = ninetoothed.block_size()\n")
    return write("kernels/add.py", ADD)


def test_show_describes_the_arrangement_grid_configurations_and_source(add, ninetoothed):
    result = ninetoothed("show", "kernels/add.py:kernel")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "(kernels/add.py:kernel)" in out.splitlines()[0]
    tiles = "((x.shape[0] + BLOCK_SIZE - 1) // BLOCK_SIZE,)"
    assert f"  x: (x.shape[0],) as {tiles} -> (BLOCK_SIZE,)" in out
    assert f"grid (one program per element): {tiles}" in out
    assert "symbols, meta (tuned, or pinned at the call): BLOCK_SIZE" in out
    assert "configurations (2):\n  BLOCK_SIZE=32; num_warps=4" in out
    assert "  BLOCK_SIZE=64; num_warps=2" in out
    assert "configuration in use: none yet: the kernel was not called" in out
    assert "called:" not in out  # loaded as a module: the __main__ part did not run
    source_path = next(line for line in out.splitlines() if line.startswith("generated source:"))
    with open(source_path.split(": ", 1)[1]) as file:
        assert file.read().rstrip() in out  # the whole generated source, as on disk
    assert "@triton.jit" in out


def test_show_run_runs_the_file_and_reports_the_configuration_its_call_used(add, ninetoothed):
    result = ninetoothed("show", "kernels/add.py:kernel", "--run", "--no-source", script=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("called: True\n")
    if ON_GPU:  # two configurations: the tuner chose one of them
        assert "(the most recent call's, chosen by the tuner or its cache)" in result.stdout
        assert "configuration in use: BLOCK_SIZE=" in result.stdout
    else:
        assert (
            "configuration in use: BLOCK_SIZE=32; num_warps=4, num_stages=3 "
            "(interpreter: first configuration, not tuned)" in result.stdout
        )
    assert "@triton.jit" not in result.stdout


def test_show_names_the_symbols_a_call_gives(write, ninetoothed):
    write(
        "scale.py",
        """
        import ninetoothed
        from ninetoothed import Symbol, Tensor

        B = Symbol("B", constexpr=True)

        def application(x, factor, y):
            y = x * factor

        kernel = ninetoothed.make(
            lambda x, factor, y: (x.tile((B, 4)), factor, y.tile((B, 4))),
            application, (Tensor(2), Tensor(0), Tensor(2)),
        )
        """,
    )
    result = ninetoothed("show", "scale.py:kernel", "--no-source")
    assert result.returncode == 0, result.stderr
    assert "  factor: a scalar" in result.stdout
    assert "  x: (x.shape[0], x.shape[1]) as (" in result.stdout
    assert "symbols, constexpr (given at the call, compiled in): B" in result.stdout
    assert "configuration in use: none yet" in result.stdout


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("kernels/add.py", "expected FILE:KERNEL (e.g. add.py:kernel), got 'kernels/add.py'"),
        ("missing.py:kernel", "no such file: 'missing.py'"),
        ("kernels/add.py:kernle", "kernels/add.py defines no 'kernle'; did you mean kernel?"),
        ("kernels/add.py:not_a_kernel", "kernels/add.py:not_a_kernel is an int, not a kernel"),
        ("kernels/add.py:arrangement", "kernels/add.py:arrangement is a function, not a kernel"),
    ],
)
def test_show_refuses_a_bad_reference_in_one_line(add, ninetoothed, argument, message):
    result = ninetoothed("show", argument)
    assert result.returncode == 1
    assert result.stderr.startswith(f"ninetoothed show: {message}")
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_show_reports_an_error_in_the_file_with_its_traceback(write, ninetoothed):
    write("broken.py", "import ninetoothed\n\nkernel = 1 / 0\n")
    result = ninetoothed("show", "broken.py:kernel")
    assert result.returncode == 1
    assert result.stderr.startswith("ninetoothed show: loading broken.py failed:\nTraceback")
    assert 'broken.py", line 3, in <module>' in result.stderr
    assert result.stderr.rstrip().endswith("ZeroDivisionError: division by zero")


def test_a_file_the_interactive_interpreter_cannot_read_fails_as_make_says(write, ninetoothed):
    # The README's reason for files: make reads the application's source.
    write(
        "inline.py",
        """
        import ninetoothed
        from ninetoothed import Tensor

        source = "def application(x, y):\\n    y = x\\n"
        namespace = {}
        exec(source, namespace)  # a function with no file behind it, as under python -c
        kernel = ninetoothed.make(
            lambda x, y: (x.tile((4,)), y.tile((4,))), namespace["application"],
            (Tensor(1), Tensor(1)),
        )
        """,
    )
    result = ninetoothed("show", "inline.py:kernel")
    assert result.returncode == 1
    assert "must be defined in files" in result.stderr
