"""Triton kernels whose launches the lean launcher's tests lay out and record.

``python tests/support/lean_kernels.py`` (Triton compiling, not interpreting:
an interpreter that ran in the process has patched ``triton.language``)
prints what :func:`describe_for_sm90` finds, as JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

import triton
import triton.language as tl


@triton.jit
def scalars(a, n, shift, big, b, factor, one, BLOCK: tl.constexpr):
    """``b = a * factor + shift + big + one`` over ``n`` elements: pointers, an i32, an
    i64, an fp32, an int specialised to 1 (compiled in) and a constexpr."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    x = tl.load(a + i, mask=mask).to(tl.float32)
    tl.store(b + i, x * factor + shift + big + one, mask=mask)


@triton.jit
def copy2d(
    src, rows, cols, stride_src, dst, stride_dst, negate, BR: tl.constexpr, BC: tl.constexpr
):
    """``dst = ±src`` over a two-dimensional grid of tiles: bound sizes and strides, a bool."""
    r = tl.program_id(0) * BR + tl.arange(0, BR)[:, None]
    c = tl.program_id(1) * BC + tl.arange(0, BC)[None, :]
    mask = (r < rows) & (c < cols)
    x = tl.load(src + r * stride_src + c, mask=mask)
    if negate:
        x = -x
    tl.store(dst + r * stride_dst + c, x, mask=mask)


CASES: dict[str, tuple[list[Any], dict[int, tuple[str, bool]]]] = {
    "scalars": ([0, 100, 7, 2**40, 0, 1.5, 1, 128], {0: ("fp16", True), 4: ("fp32", True)}),
    "copy2d": ([0, 33, 70, 80, 0, 96, True, 16, 32], {0: ("fp32", True), 4: ("fp32", False)}),
}
"""Per kernel: the values it is specialised for and its pointers' types and alignment."""


def describe_for_sm90() -> dict[str, dict[str, Any]]:
    """Each of :data:`CASES` compiled for sm_90 as the fast path compiles it: its
    specialised signature, name, warps, shared memory and the PTX types of the compiled
    function's parameters.  Run where Triton compiles (not interpreting)."""
    from triton.backends.compiler import GPUTarget

    from nt_triton._launch import compiled

    described = {}
    for name, (values, pointers) in CASES.items():
        function = globals()[name]
        parameters = [(p, p.isupper()) for p in function.arg_names]
        specialisation = compiled.specialise(parameters, values, pointers)
        binary = compiled.compile_kernel(function, specialisation, GPUTarget("cuda", 90, 32), 4, 3)
        ptx = binary.asm["ptx"]
        entry = ptx[ptx.index(".entry") :]
        described[name] = {
            "signature": list(binary.src.signature.values()),
            "name": binary.metadata.name,
            "num_warps": binary.metadata.num_warps,
            "shared": binary.metadata.shared,
            "ptx": re.findall(r"\.param \.(\w+)", entry[: entry.index(")")]),
        }
    return described


def describe_gluon_for_sm90() -> dict[str, Any]:
    """``nt_triton.hopper_scaled_mm``'s kernel (bfloat16 output, tensor-wise scales)
    compiled for sm_90: its signature, its tensor descriptors' metadata, and the
    compiled function's parameters as the PTX declares them (``"map"``: a 128-byte
    TMA map passed by value)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from nt_triton import hopper_scaled_mm as m

    def descriptor(kind: str, name: str) -> str:
        return f"tensordesc<{kind}[128,128],{m._layout((128, 128), name)!r}>"

    signature = {
        "a_desc": descriptor("fp8e4nv", "float8"), "b_desc": descriptor("fp8e4nv", "float8"),
        "c_desc": descriptor("bf16", "bfloat16"), "scale_a": "*fp32", "scale_b": "*fp32",
        "M": "i32", "N": "i32", "K": "i32", "rowwise": "constexpr", "fast": "constexpr",
        "stages": "constexpr", "consumer_registers": "constexpr",
    }  # fmt: skip
    constants = {
        "rowwise": 0, "fast": False, "stages": m.STAGES,
        "consumer_registers": m._CONSUMER_REGISTERS,
    }  # fmt: skip
    binary = triton.compile(
        GluonASTSource(m._kernel, signature, constants),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": 4, "maxnreg": m._MAX_REGISTERS},
    )
    ptx = binary.asm["ptx"]
    entry = ptx[ptx.index(".entry") :]
    declared = entry[entry.index("(") + 1 : entry.index(")")].split(",")
    kinds = ["map" if "[128]" in p else re.findall(r"\.param \.(\w+)", p)[0] for p in declared]
    return {
        "signature": list(binary.src.signature.values()),
        "meta": [dict(meta) for meta in binary.metadata.tensordesc_meta],
        "name": binary.metadata.name,
        "num_warps": binary.metadata.num_warps,
        "shared": binary.metadata.shared,
        "ptx": kinds,
    }


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["gluon"]:
        print(json.dumps(describe_gluon_for_sm90()))
    else:
        print(json.dumps(describe_for_sm90()))
