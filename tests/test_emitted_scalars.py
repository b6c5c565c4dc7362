"""Float scalars of a kernel handed to Inductor compute as they do eagerly.

Triton's launcher passes a Python float as ``fp32``; Inductor types a float
argument of a user kernel ``fp64`` (PyTorch 2.11), which made attention's
scores float64 and its kernel fail to compile inside ``torch.compile`` on the
H100.  The function emitted for such a call (``nt_triton.emitted``) converts
those parameters to ``fp32`` on entry.  Checked with Triton's front end (no GPU
needed) on the kernel as the GPU makes it, in a process of its own: Triton's
language must be imported in its compiled mode for that.
"""

from __future__ import annotations

import os
import subprocess
import sys

from nt_triton import emitted

FRONT_END = """
from ninetoothed.library import pinned_block_sizes
from ninetoothed.library import scaled_dot_product_attention as sdpa
from ninetoothed.library.ops import kernels
from nt_triton import _gpu_check as gpu_check
from nt_triton import emitted

with pinned_block_sizes(16):
    kernel = kernels.kernel(sdpa).generated
types, constants = gpu_check._types(kernel.spec, kernel.signature, {}, "fp32")
for floats in ((), ("scale",)):
    function = emitted.emitted_function(kernel, floats)
    for scale in ("fp32", "fp64"):
        try:
            compilable = gpu_check._compilable(function, {})
            gpu_check._front_end(compilable, {**types, "scale": scale}, constants)
            print(floats, scale, "compiles")
        except Exception as error:
            print(floats, scale, "fails", type(error).__name__)
"""


def test_a_float_scale_typed_fp64_compiles_as_the_eager_kernel() -> None:
    environment = {**os.environ, "TRITON_INTERPRET": "0"}
    result = subprocess.run(
        [sys.executable, "-c", FRONT_END], env=environment, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "() fp32 compiles",  # as Triton's launcher types it
        "() fp64 fails CompilationError",  # as Inductor does: float64 scores
        "('scale',) fp32 compiles",
        "('scale',) fp64 compiles",
    ], result.stdout


def test_the_conversion_comes_first_in_the_kernel() -> None:
    text = "def other(a):\n    pass\n\ndef kernel(x, scale, y):\n    z = x * scale\n"
    converted = emitted.with_float32_parameters(text, "kernel", ("scale", "y"))
    assert converted.splitlines()[4:7] == [
        "    scale = tl.core.to_tensor(scale).to(tl.float32)",
        "    y = tl.core.to_tensor(y).to(tl.float32)",
        "    z = x * scale",
    ]


def test_only_run_time_float_parameters_are_converted() -> None:
    """A float constexpr stays a constant (Inductor bakes it in, as Triton does); ints,
    bools and tensors are left alone."""
    from types import SimpleNamespace

    parameters = [("x_pointer", False), ("scale", False), ("n", False), ("eps", True)]
    kernel = SimpleNamespace(
        signature=[SimpleNamespace(name=n, constexpr=c) for n, c in parameters]
    )
    arguments = (object(), 0.5, 3, 1e-6)
    assert emitted._float_parameters(kernel, arguments) == ("scale",)  # type: ignore[arg-type]
