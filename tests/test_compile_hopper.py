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

ROOT = Path(__file__).resolve().parent.parent

KERNELS = [
    ("add", "kernel"),
    ("add", "add_kernel"),
    ("add", "constexpr_kernel"),
    ("matmul", "kernel"),
    ("matmul", "matmul_kernel"),
    ("softmax", "kernel"),
    ("addmm", "kernel"),
    ("conv2d", "kernel"),
    ("attention", "kernel"),
    ("flash_attention", "forward_kernel"),
    ("flash_attention", "backward_dk_dv_kernel"),
    ("flash_attention", "backward_dq_kernel"),
    ("elementwise", "scale_kernel"),
    ("elementwise", "tanh_kernel"),
    ("elementwise", "silu_kernel"),
    ("elementwise", "copy_2d_kernel"),
]

COMPILE = textwrap.dedent(
    """
    import importlib, sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    module_name, attribute, element = sys.argv[1:]
    kernel = getattr(importlib.import_module("nt_examples." + module_name), attribute)
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
            constants[(index,)] = values.get(name, False if parameter.kind == "int64_flag" else 32)
        elif parameter.kind == "scalar":
            signature[name] = "fp32"
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
    element = "fp16" if module_name in ("add", "matmul", "attention") else "fp32"
    environment = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    environment["NINETOOTHED_MAX_NUM_CONFIGS"] = "1"
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    result = subprocess.run(
        [sys.executable, "-c", COMPILE, module_name, attribute, element],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    shared = int(result.stdout.rsplit(":", 1)[1])
    assert shared <= 227 * 1024, f"{module_name}.{attribute} needs {shared} bytes of shared memory"
