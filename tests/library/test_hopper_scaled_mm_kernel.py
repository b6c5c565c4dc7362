"""``nt_triton.hopper_scaled_mm`` on its own (how the library routes to it:
``test_hopper_scaled_mm.py``): it compiles for sm_90 with a TMA store for each output
type, row-wise scales of one element, its descriptors' copies, its direct and
bound launches' lookups; on a Hopper GPU, the kernel against a float64 reference of
the dequantised operands (ragged sizes, one to many steps of ``k`` of both
parities, several tiles per program, each output type, both kinds of scales, both
modes), launched and bound.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.base import ON_GPU
from support.gluon_routes import compile_stood_in
from support.hopper_scaled_mm import DEVICE, FLOAT8, close, expected, on_hopper, operands
from support.library import binds_on_this_triton

torch = pytest.importorskip("torch")

from nt_triton import hopper_scaled_mm  # noqa: E402

needs_gluon = pytest.mark.skipif(not hopper_scaled_mm.available(), reason="no Gluon for Hopper")


def test_a_row_or_a_column_of_scales_of_one_element_is_rowwise():
    """M or N of 1 with row-wise scales leaves one of the two with one element: the
    kernel must still read the other per column (or row)."""
    one, many = torch.ones(1, 1), torch.ones(1, 5)
    assert hopper_scaled_mm._rowwise(one, many) and hopper_scaled_mm._rowwise(many.t(), one)
    assert not hopper_scaled_mm._rowwise(one, torch.ones(()))


COMPILE = """
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from nt_triton import hopper_scaled_mm as m
def described(kind, name, box):
    return f"tensordesc<{kind}[{box[0]},{box[1]}],{m._layout(box, name)!r}>"
cases = [(kind, name, False) for kind, name in
         (("bf16", "bfloat16"), ("fp16", "float16"), ("fp32", "float32"))]
cases += [("bf16", "bfloat16", True), ("fp16", "float16", True)]
for kind, name, fast in cases:
    columns, stages = (m.FAST_BLOCK_N, m.FAST_STAGES) if fast else (m.BLOCK, m.STAGES)
    signature = {"a_desc": described("fp8e4nv", "float8", (128, 128)),
                 "b_desc": described("fp8e4nv", "float8", (columns, 128)),
                 "c_desc": described(kind, name, (128, columns)), "scale_a": "*fp32",
                 "scale_b": "*fp32", "M": "i32", "N": "i32", "K": "i32", "rowwise": "i32",
                 "fast": "constexpr", "stages": "constexpr", "consumer_registers": "constexpr"}
    constants = {"fast": fast, "stages": stages, "consumer_registers": m._CONSUMER_REGISTERS}
    compiled = triton.compile(GluonASTSource(m._kernel, signature, constants),
                              target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": 4, "maxnreg": m._MAX_REGISTERS})
    ptx = compiled.asm["ptx"]
    assert "wgmma.mma_async" in ptx and "setmaxnreg" in ptx, (kind, fast)
    assert "cp.async.bulk.tensor.2d.global.shared" in ptx, (kind, fast)  # the TMA store
    assert compiled.metadata.shared <= 232448, compiled.metadata.shared
print("compiled")
"""


@needs_gluon
def test_the_kernel_compiles_for_hopper():
    """Warp-specialised (register reallocation), warp-group products, a TMA store, and
    within an H100's shared memory for every output type, on the installed Triton; in
    a process of its own without Triton's interpreter."""
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-c", COMPILE], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


GPU_CASES = [
    # m, n, k, rowwise, processors
    (300, 264, 48, False, None),  # one step of k (ragged)
    (300, 264, 256, True, None),  # two steps: the odd tail
    (333, 136, 384, True, 1),  # three steps: one pair; 9 tiles in one program
    (257, 520, 4000, False, 3),  # 32 steps, the last ragged; 15 tiles over 3 programs
    (1, 4096, 1024, True, None),  # one row: row-wise scales of one element and many
    (1030, 1032, 1040, True, 7),  # 9 x 9 tiles over 7 programs, in groups of rows
]


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a GPU")
@pytest.mark.parametrize(
    ("dtype", "fast"),
    [(torch.bfloat16, False), (torch.float16, False), (torch.float32, False),
     (torch.bfloat16, True), (torch.float16, True)],
)  # fmt: skip
@pytest.mark.parametrize("case", GPU_CASES)
def test_gluon_kernel_against_float64(case, dtype, fast):
    """Both modes (with fast accumulation, 128 x 256 tiles: 5 x 5 of them over 7
    programs in the last case)."""
    if not on_hopper():
        pytest.skip("needs a Hopper GPU and Gluon")
    m, n, k, rowwise, processors = case
    a, b, sa, sb = operands(m, n, k, rowwise)
    output = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
    hopper_scaled_mm.launch(a, b, sa, sb, output, processors, fast)
    close(output, expected(a, b, sa, sb), dtype, fast)
    # The bound launch (a plan's), once compiled, of other tensors of the same layout.
    assert hopper_scaled_mm.ready(a, b, sa, sb, output, wait=True, fast=fast)
    bound = hopper_scaled_mm.bind(a, b, sa, sb, output, processors, fast)
    assert (bound is not None) == binds_on_this_triton()
    if bound is not None:
        c, d, sc, sd = operands(m, n, k, rowwise, seed=5)
        other = torch.full_like(output, float("nan"))
        bound(c, d, sc, sd, other)
        close(other, expected(c, d, sc, sd), dtype, fast)


@needs_gluon
def test_descriptors_after_the_first_equal_validated_ones():
    """``_gluon_hopper.descriptor`` copies the fields of its first, validated descriptor
    of a block shape and layout (every field of the installed Triton's
    ``TensorDescriptor``, those with defaults too) and sets the tensor's own."""
    from nt_triton import _gluon_hopper

    layout = hopper_scaled_mm._layout((128, 128), "float8")
    first, second = (torch.empty(64, 96, dtype=FLOAT8) for _ in "ab")
    _gluon_hopper.descriptor(first, [64, 96], [96, 1], [128, 128], layout)
    made = _gluon_hopper.descriptor(second[:, :80], [64, 80], [96, 1], [128, 128], layout)
    made_by_triton = _gluon_hopper.TensorDescriptor
    validated = made_by_triton(second[:, :80], [64, 80], [96, 1], [128, 128], layout)
    assert type(made) is type(validated)
    assert {k: v for k, v in vars(made).items() if k != "base"} == {
        k: v for k, v in vars(validated).items() if k != "base"
    }
    assert made.base.data_ptr() == second.data_ptr()


def test_a_compiled_kernel_launches_without_the_jit(monkeypatch):
    """``_gluon_hopper.run`` calls the compiled kernel on a 3-D grid with every argument
    where it has one, else the JIT function with the launch options; ``DIRECT_LAUNCH``
    off takes the JIT always."""
    from nt_triton import _gluon_hopper

    calls = []

    class Launchable:
        def __init__(self, name):
            self.name = name

        def __getitem__(self, grid):
            return lambda *args, **options: calls.append((self.name, grid, args, options))

    jit, compiled = Launchable("jit"), Launchable("compiled")
    _gluon_hopper.run(jit, compiled, (5,), (1, 2), num_warps=4)
    _gluon_hopper.run(jit, None, (5,), (1, 2), num_warps=4)
    monkeypatch.setattr(_gluon_hopper, "DIRECT_LAUNCH", False)
    _gluon_hopper.run(jit, compiled, (5,), (1, 2), num_warps=4)
    assert calls == [
        ("compiled", (5, 1, 1), (1, 2), {}),
        ("jit", (5,), (1, 2), {"num_warps": 4}),
        ("jit", (5,), (1, 2), {"num_warps": 4}),
    ]


@needs_gluon
def test_the_launch_finds_the_kernel_its_ready_call_compiled(monkeypatch):
    """``launch`` looks the compiled kernel up by the key ``ready`` compiled it under
    (the same arguments: the same key), and only for the specialisation it was
    compiled for: a scale at an address not 16-byte aligned is another key."""
    compiled, found = compile_stood_in(monkeypatch, hopper_scaled_mm)
    a, b, sa, sb = operands(37, 40, 64, True)
    out = torch.empty(37, 40, dtype=torch.bfloat16, device=DEVICE)
    assert not hopper_scaled_mm.ready(a, b, sa, sb, out, wait=True, may_load=False)
    hopper_scaled_mm.launch(a, b, sa, sb, out, processors=1)  # compiled, not yet let through
    assert hopper_scaled_mm.ready(a, b, sa, sb, out)
    hopper_scaled_mm.launch(a, b, sa, sb, out, processors=1)
    shifted = torch.empty(41, device=DEVICE)[1:].reshape(1, 40)  # 4 bytes past alignment
    shifted.copy_(sb)
    hopper_scaled_mm.launch(a, b, sa, shifted, out, processors=1)
    assert found == [None, compiled, None]
