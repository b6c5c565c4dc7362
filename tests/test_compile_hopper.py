"""Every test kernel compiles for Hopper (sm_90), on a machine without a GPU.

Triton's interpreter never runs the real compiler, so code that only the GPU
compiler rejects (or that takes it forever, like an oversized tile) would
first show up on the GPU machine.  Triton compiles for a named target without
a device, so each kernel is compiled here, in a subprocess with a time limit,
with the configuration the GPU test suite uses (``NINETOOTHED_MAX_NUM_CONFIGS=1``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ninetoothed.library import flash_decoding

ROOT = Path(__file__).resolve().parent.parent

KERNELS = [
    ("add", "kernel"),
    ("add", "add_kernel"),
    ("add", "constexpr_kernel"),
    ("matmul", "kernel"),
    ("matmul", "matmul_kernel"),
    ("softmax", "kernel"),
    ("flash_attention", "forward_kernel"),
    ("flash_attention", "backward_dk_dv_kernel"),
    ("flash_attention", "backward_dq_kernel"),
    ("elementwise", "scale_kernel"),
    ("elementwise", "tanh_kernel"),
    ("elementwise", "silu_kernel"),
    ("elementwise", "copy_2d_kernel"),
    ("upstream_style", "gather_kernel"),
    ("upstream_style", "scatter_kernel"),
    ("upstream_style", "pointer_kernel"),
    ("upstream_style", "dropout_kernel"),
    ("upstream_style", "untiled_kernel"),
    ("upstream_style", "float8_copy_kernel"),
    ("upstream_style", "expand_kernel"),
    # The kernel library's GEMM-shaped kernels: what the GPU compiler works hardest on.
    # (Not rope: every constexpr size is 32 here, and its tables need head_dim / 2.)
    ("library", "mm"),
    ("library", "addmm"),
    ("library", "conv2d"),
    ("library", "scaled_dot_product_attention"),
    ("library", "flash_decoding:split"),
    ("library", "flash_decoding:merge"),
    ("library", "scaled_mm"),
]

ELEMENTS = {
    "add": "fp16",
    "matmul": "fp16",
    "library": "fp16",
    "float8_copy_kernel": "fp8e5",
    "scaled_mm": "fp8e4nv",  # every pointer: the products take the float8 path
}
"""The element type compiled for (by module or kernel); fp32 otherwise."""

LIBRARY_VARIANTS = {
    "mm": "{}",
    "addmm": "{'input_pattern': (None, None)}",
    "conv2d": "{}",
    "scaled_dot_product_attention": "{}",
    "flash_decoding:split": "{'part': 'split', 'heads': 4, 'rows': 4, 'head_bound': 128}",
    "flash_decoding:merge": "{'part': 'merge', 'head_bound': 128}",
    "scaled_mm": "{'rowwise': True}",
}
"""``premake``'s arguments of each library kernel compiled (as source text); a
module with several kernels is named ``module:part``."""

COMPILE = textwrap.dedent(
    """
    import importlib, sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    module_name, attribute, element, variant, size = sys.argv[1:]
    if module_name == "library":
        from ninetoothed.library.ops.kernels import kernel as library_kernel

        module = importlib.import_module("ninetoothed.library." + attribute.split(":")[0])
        kernel = library_kernel(module, **eval(variant))
    else:
        kernel = getattr(importlib.import_module("support.tutorial." + module_name), attribute)
    generated = kernel.generated
    function = generated.function
    values = dict(generated.configurations[0].kwargs())
    signature, constants = {}, {}
    for index, parameter in enumerate(generated.signature):
        name = parameter.name
        if parameter.kind == "pointer":
            signature[name] = "*" + element
        elif parameter.constexpr:
            signature[name] = "constexpr"
            flag = parameter.kind == "int64_flag"
            constants[(index,)] = values.get(name, False if flag else int(size))
        elif parameter.kind == "scalar":
            signature[name] = "i32" if name == "seed" else "fp32"  # ntl.rand's seed is an int
        else:
            signature[name] = "i32"
    assert list(signature) == list(function.arg_names)
    compiled = triton.compile(
        ASTSource(function, signature, constants), target=GPUTarget("cuda", 90, 32)
    )
    print("shared memory:", compiled.metadata.shared)
    """
)


@pytest.mark.interpreter_only
@pytest.mark.parametrize(("module_name", "attribute"), KERNELS)
def test_compiles_for_sm90(module_name: str, attribute: str) -> None:
    variant = LIBRARY_VARIANTS.get(attribute, "{}") if module_name == "library" else "{}"
    element = ELEMENTS.get(attribute, ELEMENTS.get(module_name, "fp32"))
    _compile(module_name, attribute, element, variant, 32)


@pytest.mark.interpreter_only
@pytest.mark.parametrize(
    ("config", "head", "rows"),
    [*((i, 128, 4) for i in range(len(flash_decoding.CONFIGS))), (0, 64, 16), (0, 128, 16),
     (0, 256, 16)],
)  # fmt: skip
def test_flash_decoding_fits_hopper_at_real_head_sizes(config: int, head: int, rows: int) -> None:
    """The split kernel with its head dimension at the size given (every other test
    compiles constexpr sizes of 32) and 4 heads of ``rows`` rows a program (16 x 4,
    the most the op packs), in its shared memory: configuration 0 is what the op
    runs for every head size up to 256."""
    variant = {"part": "split", "heads": 4, "rows": rows, "head_bound": head, "config": config}
    _compile("library", "flash_decoding:split", "fp16", repr(variant), head)


def _compile(module_name: str, attribute: str, element: str, variant: str, size: int) -> None:
    """Compile in a subprocess for sm_90, every constexpr size ``size``; check the
    shared memory it needs."""
    environment = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    environment["NINETOOTHED_MAX_NUM_CONFIGS"] = "1"
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    result = subprocess.run(
        [sys.executable, "-c", COMPILE, module_name, attribute, element, variant, str(size)],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    shared = int(result.stdout.rsplit(":", 1)[1])
    assert shared <= 227 * 1024, f"{module_name}.{attribute} needs {shared} bytes of shared memory"
