"""``scaled_mm`` on Hopper: the Gluon kernel (``nt_triton.hopper_scaled_mm``) and where
the library routes to it (``nt_torch.hopper_fp8``).

On the CPU: which kernels are routed (float32 sums, not fast accumulation), that
a fitting call takes the Gluon launch on every path of an op call and under
``torch.compile``, what :func:`fits` refuses, and that the kernel compiles for
sm_90.  On a Hopper GPU: the kernel against a float64 reference of the
dequantised operands (ragged sizes, one to many steps of ``k`` of both
parities, several tiles per program, each output type, both kinds of scales),
and the op through it with the launches counted so that a silent fallback fails.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.base import ON_GPU
from support.library import binds_on_this_triton

torch = pytest.importorskip("torch")
hopper_fp8 = pytest.importorskip("nt_torch.hopper_fp8")
from ninetoothed.library.ops import kernels  # noqa: E402
from nt_torch import hand_written, hopper, ops  # noqa: E402
from nt_triton import hopper_scaled_mm  # noqa: E402
from nt_triton._compile_aside import Aside  # noqa: E402

needs_gluon = pytest.mark.skipif(not hopper_scaled_mm.available(), reason="no Gluon for Hopper")
DEVICE = "cuda" if ON_GPU else "cpu"
FLOAT8 = torch.float8_e4m3fn


def _operands(m, n, k, rowwise, seed=0):
    """``input`` (m, k) row-major and ``mat2`` (k, n) column-major in float8 (about
    unit-scaled), and float32 scales in [0.5, 1.5): one each, or (m, 1) and (1, n)."""
    g = torch.Generator().manual_seed(seed * 7919 + m * 31 + n * 7 + k)
    a = (torch.randn(m, k, generator=g) * 2).to(FLOAT8)
    w = (torch.randn(n, k, generator=g) * 2).to(FLOAT8)
    shapes = ((m, 1), (1, n)) if rowwise else ((), ())
    sa, sb = (torch.rand(s, generator=g) + 0.5 for s in shapes)
    return [t.to(DEVICE) for t in (a, w.t(), sa, sb)]


def _expected(a, b, sa, sb):
    a, b = a.double().cpu(), b.double().cpu()
    return (a * sa.double().cpu().reshape(-1, 1)) @ (b * sb.double().cpu().reshape(1, -1))


def _close(result, expected, dtype, fast=False):
    """Within the output type's rounding; in float32, within the tensor cores' own sums of
    each step of 128 products (fewer bits than float32's: 7e-5 measured on an H100)."""
    error = torch.linalg.norm(result.double().cpu() - expected) / torch.linalg.norm(expected)
    bound = {torch.float32: 3e-4, torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
    if fast:  # the tensor cores' own format over all of k
        bound = max(bound, 1e-2)
    assert error < bound, error


@pytest.fixture
def gluon_launches(monkeypatch):
    """The Gluon kernel's launches, counted (on the CPU, stood in: it writes 7s)."""
    calls = []
    real = hopper_scaled_mm.launch

    def launch(a, b, sa, sb, output, processors=None, fast=False):
        calls.append((tuple(a.shape), b.shape[1], sa.numel() != 1, fast))
        if ON_GPU:
            return real(a, b, sa, sb, output, processors, fast)
        output.fill_(7)

    monkeypatch.setattr(hopper_scaled_mm, "launch", launch)
    real_bind = hopper_scaled_mm.bind

    def bind(*args, **keywords):  # a memo plan's site binds the launch: counted too
        made = real_bind(*args, **keywords)
        if made is None:
            return None

        def bound(a, b, sa, sb, output):
            calls.append(("bound", tuple(a.shape), b.shape[1], sa.numel() != 1, keywords["fast"]))
            made(a, b, sa, sb, output)

        return bound

    monkeypatch.setattr(hopper_scaled_mm, "bind", bind)
    monkeypatch.setattr(hopper_fp8, "WORK_FLOOR", 0)  # small shapes: several programs
    monkeypatch.setattr(hopper, "_wait", lambda: True)  # first calls too: no background compile
    if not ON_GPU:
        monkeypatch.setattr(hopper, "on_hopper", lambda tensor: True)
        monkeypatch.setattr(hopper_scaled_mm, "_warm", lambda *args: None)
        monkeypatch.setattr(hopper_scaled_mm, "_ASIDE", Aside("stand-in"))
    return calls


@needs_gluon
@pytest.mark.skipif(ON_GPU, reason="stands the GPU in")
@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("rowwise", [False, True])
def test_fitting_calls_take_the_gluon_kernel_on_every_path(gluon_launches, rowwise, fast):
    """First call, the memo's recording and its plan all launch the Gluon kernel, in the
    call's mode of accumulation."""
    a, b, sa, sb = _operands(37, 40, 64, rowwise)
    for call in range(3):
        result = ops.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
        assert len(gluon_launches) == call + 1
        assert torch.all(result == 7)
    assert gluon_launches[-1] == ((37, 64), 40, rowwise, fast)


@needs_gluon
def test_calls_that_do_not_fit_take_the_ninetoothed_kernel(gluon_launches, monkeypatch):
    """Fast accumulation into float32, a row-major ``mat2``, rows not 16 bytes apart, an
    output row not 16 bytes long, and the knob set off: the library's own kernel,
    computing the right thing, on every path."""
    a, b, sa, sb = _operands(37, 40, 64, True)
    cases = [
        ((a, b, sa, sb), {"use_fast_accum": True, "out_dtype": torch.float32}),
        ((a, b.contiguous(), sa, sb), {}),  # mat2 row-major
        (tuple(_operands(37, 40, 70, False)), {}),  # rows of 70 bytes
        (tuple(_operands(37, 45, 64, False)), {"out_dtype": torch.float32}),  # 180-byte rows
    ]
    for args, keywords in cases:
        keywords = {"out_dtype": torch.bfloat16, **keywords}
        for _ in range(3):
            result = ops.scaled_mm(*args, **keywords)
            _close(result, _expected(*args), keywords["out_dtype"])
    assert gluon_launches == []
    monkeypatch.setenv("NINETOOTHED_HOPPER_SCALED_MM", "off")
    a, b, sa, sb = _operands(38, 40, 64, False)  # a new key: a new recording reads the knob
    for _ in range(3):
        _close(ops.scaled_mm(a, b, sa, sb, out_dtype=torch.float16), _expected(a, b, sa, sb),
               torch.float16)  # fmt: skip
    assert gluon_launches == []


@needs_gluon
@pytest.mark.skipif(ON_GPU, reason="stands the GPU in")
@pytest.mark.parametrize("fast", [False, True])
def test_a_plans_site_binds_the_launch_once_then_checks_only_addresses(
    gluon_launches, monkeypatch, fast
):
    """A memo plan's site binds the Gluon launch (of the kernel's mode) at its first Gluon
    call; its later calls take the bound launch without ``fits`` while their addresses
    agree, and the route's full path when they do not (a misaligned ``input`` of the
    same layout: the NineToothed kernel, right)."""
    binds, checks = [], []

    def bind(*args, **keywords):
        binds.append(args)
        assert keywords == {"fast": fast}

        def bound(a, b, sa, sb, output):
            gluon_launches.append("bound")
            output.fill_(5)

        return bound

    real_fits = hopper_fp8.fits
    monkeypatch.setattr(hopper_scaled_mm, "bind", bind)
    monkeypatch.setattr(
        hopper_fp8, "fits", lambda *args, **kw: checks.append(1) or real_fits(*args, **kw)
    )
    a, b, sa, sb = _operands(41, 48, 64, True, seed=4)
    for _ in range(3):  # the first call, the recording, the plan's first call
        assert torch.all(
            ops.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast) == 7
        )
    assert len(gluon_launches) == 3 and len(binds) == 1 and len(checks) == 3
    bound_from = [t.data_ptr() for t in binds[0]]  # the call's own tensors, in order
    assert bound_from[:4] == [t.data_ptr() for t in (a, b, sa, sb)]
    assert torch.all(
        ops.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast) == 5
    )
    assert gluon_launches[-1] == "bound" and len(checks) == 3
    room = torch.empty(a.numel() + 8, dtype=FLOAT8, device=DEVICE)
    shifted = room[8:].view(a.shape)  # the same sizes and strides, 8 bytes off
    shifted.copy_(a)
    result = ops.scaled_mm(shifted, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
    _close(result, _expected(a, b, sa, sb), torch.bfloat16)
    assert len(gluon_launches) == 4 and len(checks) == 4 and len(binds) == 1
    assert torch.all(
        ops.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast) == 5
    )


@needs_gluon
def test_only_scaled_mm_is_routed():
    """``scaled_mm``'s kernels (either mode, tensor-wise or row-wise, persistent or not)
    take the Gluon route; other kernels keep their launch, and the dispatcher hands
    each kernel to its own route."""
    a, b, sa, sb = _operands(36, 40, 64, False)
    for fast in (False, True):
        ops.scaled_mm(a, b, sa, sb, use_fast_accum=fast)
    ops.mm(torch.randn(8, 8, device=DEVICE), torch.randn(8, 8, device=DEVICE))

    def launch(*args):
        return "kept"

    seen = set()
    for kernel in kernels.made():
        module, variant = kernels.origin(kernel.source_path)
        taken = hopper_fp8.substitute(kernel, launch) is not launch
        assert taken == (module == "scaled_mm"), (module, variant)
        assert (hand_written.substitute(kernel, launch) is not launch) >= taken
        seen.add((module, variant.get("fast_accum"), taken))
    assert {("scaled_mm", True, True), ("scaled_mm", False, True), ("mm", None, False)} <= seen


def test_a_row_or_a_column_of_scales_of_one_element_is_rowwise():
    """M or N of 1 with row-wise scales leaves one of the two with one element: the
    kernel must still read the other per column (or row)."""
    one, many = torch.ones(1, 1), torch.ones(1, 5)
    assert hopper_scaled_mm._rowwise(one, many) and hopper_scaled_mm._rowwise(many.t(), one)
    assert not hopper_scaled_mm._rowwise(one, torch.ones(()))


def test_small_products_keep_the_generated_kernel(monkeypatch):
    """Below the work floor the launch's host cost would outweigh the kernel."""
    monkeypatch.setattr(hopper, "on_hopper", lambda tensor: True)
    assert hopper_fp8.WORK_FLOOR == 2048 * 2048 * 2048

    def fits(m, n, k):
        a = torch.empty(m, k, dtype=FLOAT8, device="meta")
        b = torch.empty(n, k, dtype=FLOAT8, device="meta").t()
        scale = torch.empty((), device="meta")
        out = torch.empty(m, n, dtype=torch.bfloat16, device="meta")
        floor = hopper_fp8.WORK_FLOOR
        return hopper_fp8._layout_fits(a, b, scale, scale, out, number=int, floor=floor)

    assert fits(2048, 2048, 2048) and not fits(2048, 2048, 2032)


def test_fits_refuses_what_tma_or_the_kernel_cannot_take(monkeypatch):
    monkeypatch.setattr(hopper, "on_hopper", lambda tensor: True)
    monkeypatch.setattr(hopper_fp8, "WORK_FLOOR", 0)
    a, b, sa, sb = _operands(37, 40, 64, True)
    out = torch.empty(37, 40, dtype=torch.bfloat16, device=DEVICE)
    fits = hopper_fp8.fits
    assert fits(a, b, sa, sb, out)
    one = torch.ones((), device=DEVICE)
    assert fits(a, b, one, one, out)  # tensor-wise
    assert not fits(a, b.contiguous(), sa, sb, out)  # mat2 row-major
    assert not fits(a.t().contiguous().t(), b, sa, sb, out)  # input column-major
    assert not fits(
        torch.empty(37, 128, dtype=FLOAT8, device=DEVICE)[:, ::2], b, sa, sb, out
    )  # every other
    assert not fits(
        a, torch.empty(40, 128, dtype=FLOAT8, device=DEVICE).t()[::2], sa, sb, out
    )  # element
    assert not fits(a.half(), b.half(), sa, sb, out)
    assert not fits(a, b, sa.double(), sb, out)
    assert not fits(a, b, sa, sb, out.to(FLOAT8))
    assert fits(a, b, sa, sb, out.float()) and not fits(a, b, sa, sb, out.float(), fast=True)
    assert not fits(a, b, sa, sb, out.t().contiguous().t())  # output column-major
    assert not fits(a, b, sa, sb, torch.empty(37, 44, dtype=torch.bfloat16, device=DEVICE)[:, :40])
    wide = torch.empty(37, 80, dtype=FLOAT8, device=DEVICE)
    assert fits(wide[:, :64], b, sa, sb, out)  # rows 80 bytes apart: any 16-byte stride
    assert not fits(torch.empty(37, 65, dtype=FLOAT8, device=DEVICE)[:, :64], b, sa, sb, out)
    assert not fits(wide[:, 1:65], b, sa, sb, out)  # misaligned start
    assert not fits(a, b, torch.ones(37, 2, device=DEVICE)[:, :1], sb, out)  # scales 2 apart
    assert not fits(a, b, sa, torch.ones(1, 41, device=DEVICE), out)  # a scale too many
    assert not fits(a[:0], b, sa[:0], sb, out[:0])  # no rows
    monkeypatch.setattr(hopper, "on_hopper", lambda tensor: False)
    assert not fits(a, b, sa, sb, out)


@needs_gluon
def test_compiled_scaled_mm_keeps_the_operator_that_takes_the_gluon_kernel(as_on_gpu, monkeypatch):
    """Under ``torch.compile`` a call that may fit stays the generic operator (whose
    launch takes the Gluon kernel per call); one that cannot (fast accumulation into
    float32) is handed to Inductor."""
    from support.traced_graphs import launches, trace

    from ninetoothed.library import pinned_block_sizes

    monkeypatch.setattr(hopper, "on_hopper", lambda tensor: True)
    monkeypatch.setattr(hopper_fp8, "WORK_FLOOR", 0)
    for out, kept in ((torch.bfloat16, True), (torch.float32, False)):

        def product(a, b, sa, sb, out=out):
            return ops.scaled_mm(a, b, sa, sb, out_dtype=out, use_fast_accum=True)

        as_on_gpu.clear()
        torch._dynamo.reset()
        with pinned_block_sizes(16):  # nothing to tune (on stand-ins, which need a GPU)
            trace(as_on_gpu, product, tuple(_operands(36, 40, 64, True)), fullgraph=True)
        (graph,) = as_on_gpu
        assert ("auto_functionalized" in graph.code) == kept, out
        assert bool(launches(graph)) == (not kept), out


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


def _on_hopper():
    return hopper_scaled_mm.available() and hopper.on_hopper(torch.empty(0, device="cuda"))


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
    if not _on_hopper():
        pytest.skip("needs a Hopper GPU and Gluon")
    m, n, k, rowwise, processors = case
    a, b, sa, sb = _operands(m, n, k, rowwise)
    output = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
    hopper_scaled_mm.launch(a, b, sa, sb, output, processors, fast)
    _close(output, _expected(a, b, sa, sb), dtype, fast)
    # The bound launch (a plan's), once compiled, of other tensors of the same layout.
    assert hopper_scaled_mm.ready(a, b, sa, sb, output, wait=True, fast=fast)
    bound = hopper_scaled_mm.bind(a, b, sa, sb, output, processors, fast)
    assert (bound is not None) == binds_on_this_triton()
    if bound is not None:
        c, d, sc, sd = _operands(m, n, k, rowwise, seed=5)
        other = torch.full_like(output, float("nan"))
        bound(c, d, sc, sd, other)
        _close(other, _expected(c, d, sc, sd), dtype, fast)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a GPU")
@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("rowwise", [False, True])
def test_the_op_takes_the_gluon_kernel(gluon_launches, rowwise, fast):
    """Through ``ops.scaled_mm``: every call the Gluon kernel, results as torch's."""
    if not _on_hopper():
        pytest.skip("needs a Hopper GPU and Gluon")
    a, b, sa, sb = _operands(515, 400, 1024, rowwise, seed=1)
    for _ in range(4):  # the first call, the recording, the plan's first call and a bound one
        result = ops.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
        _close(result, _expected(a, b, sa, sb), torch.bfloat16, fast)
    assert len(gluon_launches) == 4 and all(call[-1] == fast for call in gluon_launches)
    assert (gluon_launches[-1][0] == "bound") == binds_on_this_triton()
    theirs = torch._scaled_mm(a, b, sa.reshape(sa.shape or (1, 1)), sb.reshape(sb.shape or (1, 1)),
                              out_dtype=torch.bfloat16, use_fast_accum=fast)  # fmt: skip
    assert torch.allclose(result.float(), theirs.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a GPU")
def test_first_calls_take_the_ninetoothed_kernel_while_the_gluon_kernel_compiles(
    gluon_launches, monkeypatch
):
    """The background compile, for real: right results before and after it."""
    if not _on_hopper():
        pytest.skip("needs a Hopper GPU and Gluon")
    monkeypatch.setattr(hopper, "_wait", lambda: False)
    monkeypatch.setattr(hopper_scaled_mm, "_ASIDE", Aside("background"))
    a, b, sa, sb = _operands(300, 272, 512, True, seed=2)
    _close(ops.scaled_mm(a, b, sa, sb, out_dtype=torch.float16), _expected(a, b, sa, sb),
           torch.float16)  # fmt: skip
    assert gluon_launches == []
    hopper_scaled_mm.settle()
    for _ in range(2):
        result = ops.scaled_mm(a, b, sa, sb, out_dtype=torch.float16)
        _close(result, _expected(a, b, sa, sb), torch.float16)
    assert len(gluon_launches) == 2


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a GPU")
@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_compiled_scaled_mm_takes_the_gluon_kernel(gluon_launches, mode):
    """Under ``torch.compile`` (and its CUDA graphs) the operator's launch takes the
    Gluon kernel."""
    if not _on_hopper():
        pytest.skip("needs a Hopper GPU and Gluon")
    torch._dynamo.reset()

    def product(a, b, sa, sb):
        return ops.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16) * 2

    compiled = torch.compile(product, fullgraph=True, mode=mode)
    a, b, sa, sb = _operands(260, 136, 640, True, seed=3)
    for _ in range(4):
        _close(compiled(a, b, sa, sb) / 2, _expected(a, b, sa, sb), torch.bfloat16)
    assert len(gluon_launches) >= 2  # the warm-up runs launch; a CUDA graph's replays do not
    torch._dynamo.reset()


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
    compiled = object()
    found = []
    monkeypatch.setattr(hopper_scaled_mm, "_warm", lambda *args: compiled)
    monkeypatch.setattr(hopper_scaled_mm, "_ASIDE", Aside("stand-in"))
    monkeypatch.setattr(hopper_scaled_mm, "run", lambda jit, kernel, *a, **k: found.append(kernel))
    monkeypatch.setattr(hopper_scaled_mm, "_arguments", lambda *args: ((1,), ()))
    a, b, sa, sb = _operands(37, 40, 64, True)
    out = torch.empty(37, 40, dtype=torch.bfloat16, device=DEVICE)
    assert not hopper_scaled_mm.ready(a, b, sa, sb, out, wait=True, may_load=False)
    hopper_scaled_mm.launch(a, b, sa, sb, out, processors=1)  # compiled, not yet let through
    assert hopper_scaled_mm.ready(a, b, sa, sb, out)
    hopper_scaled_mm.launch(a, b, sa, sb, out, processors=1)
    shifted = torch.empty(41, device=DEVICE)[1:].reshape(1, 40)  # 4 bytes past alignment
    shifted.copy_(sb)
    hopper_scaled_mm.launch(a, b, sa, shifted, out, processors=1)
    assert found == [None, compiled, None]
