"""``scaled_mm`` on Hopper: the Gluon kernel (``nt_triton.hopper_scaled_mm``) and where
the library routes to it (``nt_torch.hopper_fp8``).

On the CPU: which kernels are routed (either mode of accumulation), that a fitting
call takes the Gluon launch on every path of an op call and under
``torch.compile``, a memo plan's site binding it once, and what :func:`fits`
refuses.  On a Hopper GPU: the op through the Gluon kernel (bound calls
included) with the launches counted so that a silent fallback fails.  The
kernel module on its own: ``test_hopper_scaled_mm_kernel.py``.
"""

from __future__ import annotations

import pytest
from support import gluon_routes
from support.base import ON_GPU
from support.hopper_scaled_mm import DEVICE, FLOAT8
from support.hopper_scaled_mm import close as _close
from support.hopper_scaled_mm import expected as _expected
from support.hopper_scaled_mm import on_hopper as _on_hopper
from support.hopper_scaled_mm import operands as _operands
from support.library import binds_on_this_triton

torch = pytest.importorskip("torch")
hopper_fp8 = pytest.importorskip("nt_torch.hopper_fp8")
from ninetoothed.library.ops import kernels  # noqa: E402
from nt_torch import hand_written, hopper, ops  # noqa: E402
from nt_triton import hopper_scaled_mm  # noqa: E402
from nt_triton._compile_aside import Aside  # noqa: E402

needs_gluon = pytest.mark.skipif(not hopper_scaled_mm.available(), reason="no Gluon for Hopper")


@pytest.fixture
def gluon_launches(monkeypatch):
    """The Gluon kernel's launches, counted (on the CPU, stood in: it writes 7s)."""
    calls = gluon_routes.counting(monkeypatch, hopper_scaled_mm)  # one list for every test
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
