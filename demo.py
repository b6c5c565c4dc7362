"""NineToothed demo: three kernels from the tutorial, checked against PyTorch.

    python demo.py           # or: python3 dev.py demo (installs everything first)

Builds vector addition, matrix multiplication and softmax with
``ninetoothed.make``, runs them on torch tensors and compares each result with
torch's own operator.  On a machine where torch sees a CUDA GPU the kernels run
there; otherwise the demo sets ``TRITON_INTERPRET=1`` *before Triton is
imported* (Triton decides at import and decoration time whether kernels are
compiled or interpreted) and runs them in Triton's CPU interpreter, on small
shapes because the interpreter executes programs one by one in Python.

Exits with status 1, saying which kernel failed and why, if a kernel cannot be
built or launched or gives a wrong result.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Setup:
    """Where the kernels run and how big and precise their inputs are."""

    device: str
    interpreted: bool
    vector_size: int
    matmul_shape: tuple[int, int, int]  # (M, N, K)
    matmul_dtype: str
    softmax_shape: tuple[int, int]


def choose_setup() -> Setup:
    """Pick the GPU if torch sees one, else Triton's interpreter on the CPU.

    Must run before anything imports Triton, since it may set TRITON_INTERPRET.
    """
    import torch

    interpreted = os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available()
    if interpreted:
        if "triton" in sys.modules:
            raise RuntimeError("Triton was imported before TRITON_INTERPRET could be set")
        os.environ["TRITON_INTERPRET"] = "1"
        # Small, ragged shapes: grids of tens of programs, edges that need masks.
        # float32 matmul, because the interpreter's float16 dot is slow and the
        # comparison would need loose tolerances.
        return Setup("cpu", True, 1000, (70, 90, 50), "float32", (37, 200))
    return Setup("cuda", False, 98_432, (512, 512, 512), "float16", (1823, 781))


# --- The kernels, as the tutorial ("The Basics") writes them ----------------------------
# They live in nt_examples/ (add.py, matmul.py, softmax.py), shared with the tests and
# the benchmarks. They are imported only after choose_setup(): building a kernel
# imports Triton, which must see TRITON_INTERPRET first.


def make_add() -> Callable[..., object]:
    """Vector addition: ``z = x + y`` over blocks of ``BLOCK_SIZE`` elements."""
    from nt_examples import add

    return add.kernel


def make_matmul() -> Callable[..., object]:
    """Matrix multiplication: each output block accumulates a row of input blocks
    times a column of other blocks."""
    from nt_examples import matmul

    return matmul.kernel


def make_softmax() -> Callable[..., object]:
    """Row-wise softmax: one program per row, the row padded to ``BLOCK_SIZE``
    with ``-inf`` so that padding changes neither the max nor the sum."""
    from nt_examples import softmax

    return softmax.kernel


# --- Running and checking -----------------------------------------------------------------


def run_add(setup: Setup) -> tuple[object, float, str]:
    """Run vector addition; return (kernel, max abs error, description)."""
    import torch

    kernel = make_add()
    x = torch.randn(setup.vector_size, dtype=torch.float16, device=setup.device)
    y = torch.randn(setup.vector_size, dtype=torch.float16, device=setup.device)
    z = torch.empty_like(x)
    kernel(x, y, z)
    expected = x + y
    check("add", z, expected, rtol=0, atol=0)  # one float16 addition: exact
    return kernel, error(z, expected), f"x + y, {setup.vector_size} float16 elements"


def run_matmul(setup: Setup) -> tuple[object, float, str]:
    """Run matrix multiplication; return (kernel, max abs error, description)."""
    import torch

    m, n, k = setup.matmul_shape
    dtype = getattr(torch, setup.matmul_dtype)
    kernel = make_matmul()
    input = torch.randn(m, k, dtype=dtype, device=setup.device)
    other = torch.randn(k, n, dtype=dtype, device=setup.device)
    output = torch.empty(m, n, dtype=dtype, device=setup.device)
    kernel(input, other, output)
    expected = input @ other
    # float16: the kernel accumulates in float32 in a different order than cuBLAS, so
    # results may differ by an ulp of float16 (about 1e-2 at these magnitudes).
    tolerance = 1e-2 if dtype == torch.float16 else 1e-4
    check("matmul", output, expected, rtol=tolerance, atol=tolerance)
    return kernel, error(output, expected), f"({m}, {k}) @ ({k}, {n}), {setup.matmul_dtype}"


def run_softmax(setup: Setup) -> tuple[object, float, str]:
    """Run softmax; return (kernel, max abs error, description)."""
    import torch
    import triton

    kernel = make_softmax()
    x = torch.randn(*setup.softmax_shape, dtype=torch.float32, device=setup.device)
    y = torch.empty_like(x)
    kernel(x, y, BLOCK_SIZE=triton.next_power_of_2(x.shape[-1]))
    expected = torch.softmax(x, dim=-1)
    check("softmax", y, expected, rtol=1e-5, atol=1e-6)
    return kernel, error(y, expected), f"softmax over rows of {tuple(x.shape)}, float32"


def error(actual, expected) -> float:
    """Largest absolute difference, in float32."""
    return (actual.float() - expected.float()).abs().max().item()


def check(name: str, actual, expected, *, rtol: float, atol: float) -> None:
    """Raise AssertionError, with the largest error, unless the results agree."""
    import torch

    if not torch.allclose(actual, expected, rtol=rtol, atol=atol):
        raise AssertionError(
            f"{name}: result differs from torch (max abs error {error(actual, expected):.3g}, "
            f"rtol={rtol}, atol={atol})"
        )


def main() -> int:
    """Run the three kernels; return 0 if all match torch, 1 otherwise."""
    try:
        setup = choose_setup()
        import torch
        import triton

        import ninetoothed
    except ImportError as exc:
        print(
            f"demo: cannot import {exc.name}: install the packages first "
            "(python3 dev.py demo does it in a fresh environment)",
            file=sys.stderr,
        )
        return 1

    torch.manual_seed(0)
    where = (
        "Triton's CPU interpreter (TRITON_INTERPRET=1: no CUDA GPU visible to torch)"
        if setup.interpreted
        else f"CUDA GPU: {torch.cuda.get_device_name()}"
    )
    print(f"NineToothed {getattr(ninetoothed, '__version__', '?')}, triton {triton.__version__}")
    print(f"torch {torch.__version__}; running on {where}")

    failures = []
    for name, run in (("add", run_add), ("matmul", run_matmul), ("softmax", run_softmax)):
        try:
            kernel, max_error, description = run(setup)
            # After the call: a kernel's source is generated for its first specialisation.
            source_path = kernel.source_path
        except Exception:
            failures.append(name)
            print(f"\n[FAIL] {name}:", file=sys.stderr)
            traceback.print_exc()
            continue
        print(f"\n[ok] {name}: {description}; max abs error vs torch {max_error:.3g}")
        print(f"     generated source: {source_path}")

    if failures:
        print(f"\ndemo FAILED: {', '.join(failures)}", file=sys.stderr)
        return 1
    print("\nall kernels match torch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
