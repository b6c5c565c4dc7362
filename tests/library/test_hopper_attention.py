"""Attention's forward on Hopper: the Gluon kernel (``nt_triton.hopper_attention``) and
where the library routes to it (``nt_torch.hopper``).

On the CPU: which kernels are routed, that a fitting call takes the Gluon launch on
every path of an op call (first call, recording, a memo's plan, the compiled
operator's launch, each binding it as it should) and others the NineToothed
kernel, and what :func:`fits` refuses.  On a Hopper GPU: the op against a float64
reference through the Gluon kernel (ragged lengths, causal, grouped heads, strided
inputs, bfloat16), with the launches counted so that a silent fallback fails.  The
kernel module on its own: ``test_hopper_attention_kernel.py``.
"""

from __future__ import annotations

import threading

import pytest
from support import gluon_routes
from support.base import ON_GPU
from support.hopper_attention import close as _close
from support.hopper_attention import expected as _expected
from support.hopper_attention import qkv as _qkv
from support.library import binds_on_this_triton

torch = pytest.importorskip("torch")
hopper = pytest.importorskip("nt_torch.hopper")
from ninetoothed.library.ops import kernels  # noqa: E402
from nt_torch import ops  # noqa: E402
from nt_triton import hopper_attention  # noqa: E402
from nt_triton._compile_aside import Aside  # noqa: E402

needs_gluon = pytest.mark.skipif(not hopper_attention.available(), reason="no Gluon for Hopper")
DEVICE = "cuda" if ON_GPU else "cpu"


@pytest.fixture
def gluon_launches(monkeypatch):
    """The Gluon kernel's launches, counted (on the CPU, stood in: it writes 7s)."""
    calls = gluon_routes.counting(monkeypatch, hopper_attention)  # one list for every test
    real = hopper_attention.launch

    def launch(query, key, value, output, scale, causal, processors=None):
        calls.append((tuple(query.shape), causal))
        if ON_GPU:
            return real(query, key, value, output, scale, causal, processors)
        output.fill_(7)

    monkeypatch.setattr(hopper_attention, "launch", launch)
    real_bind = hopper_attention.bind

    def bind(query, key, value, output, scale, causal):  # a memo plan's site binds the
        made = real_bind(query, key, value, output, scale, causal)  # launch: counted too
        if made is None:
            return None

        def bound(query, key, value, output, scale):
            calls.append(("bound", tuple(query.shape), causal))
            made(query, key, value, output, scale)

        return bound

    monkeypatch.setattr(hopper_attention, "bind", bind)
    monkeypatch.setattr(hopper, "WORK_FLOOR", 0)  # small shapes: several programs, quick tests
    return calls


@pytest.fixture
def compiles(monkeypatch):
    """The Gluon kernel's compiles, stood in (on the CPU) or real (on a GPU, after
    forgetting what compiled before), each held until ``release`` is set."""
    started, release = [], threading.Event()
    real = hopper_attention._warm

    def warm(*args):
        started.append(threading.current_thread())
        release.wait(60)
        if ON_GPU:
            real(*args)

    monkeypatch.setattr(hopper_attention, "_warm", warm)
    monkeypatch.setattr(hopper_attention, "_ASIDE", Aside("stand-in"))
    yield started, release
    release.set()
    hopper_attention._ASIDE.settle()


@needs_gluon
@pytest.mark.skipif(ON_GPU, reason="stands the GPU in")
def test_a_plans_site_binds_the_launch_with_the_calls_tensors_and_scale(
    gluon_launches, monkeypatch
):
    """The memo plan's site binds the Gluon launch from its first Gluon call, and its
    later calls pass the bound launch their query, key, value, output and scale."""
    binds, bound_calls = [], []

    def bind(query, key, value, output, scale, causal):
        binds.append((query, key, value, output, scale, causal))
        return lambda *args: bound_calls.append(args) or args[3].fill_(5)

    monkeypatch.setattr(hopper_attention, "bind", bind)
    q, k, v = _qkv(1, 2, 24, 40)
    for _ in range(3):  # the first call, the recording, the plan's first call
        ops.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
    assert len(gluon_launches) == 3 and len(binds) == 1
    assert binds[0][:3] == (q, k, v) and binds[0][4:] == (0.3, True)
    result = ops.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
    assert len(gluon_launches) == 3 and torch.all(result == 5)
    query, key, value, output, scale = bound_calls[-1]
    assert (query, key, value, scale) == (q, k, v, 0.3) and output is result


@needs_gluon
@pytest.mark.skipif(ON_GPU, reason="stands the GPU in")
def test_fitting_calls_take_the_gluon_kernel_on_every_path(gluon_launches):
    """First call, the memo's recording and its plan all launch the Gluon kernel."""
    q, k, v = _qkv(1, 2, 20, 24)
    for call in range(3):
        result = ops.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert len(gluon_launches) == call + 1
        assert torch.all(result == 7)
    assert gluon_launches[-1] == ((1, 2, 20, 128), True)


@needs_gluon
def test_calls_take_the_ninetoothed_kernel_while_the_gluon_kernel_compiles(
    gluon_launches, compiles, monkeypatch
):
    """A first call on cold caches does not wait for the Gluon kernel's compile: it
    starts it in a thread of its own, and the calls until it ends take the NineToothed
    kernel (right results); the calls after take the Gluon kernel, except the one that
    would load it while a stream is captured."""
    started, release = compiles
    monkeypatch.setattr(hopper, "_wait", lambda: False)
    q, k, v = _qkv(1, 2, 22, 26)  # shapes of their own: no op memo of other tests' stand-ins
    for _ in range(3):
        _close(ops.scaled_dot_product_attention(q, k, v, is_causal=True), _expected(q, k, v, True))
    assert gluon_launches == []
    assert len(started) == 1 and started[0] is not threading.current_thread()
    release.set()
    hopper_attention._ASIDE.settle()
    capturing = [True]
    monkeypatch.setattr(hopper, "_capturing", lambda tensor: capturing[0])
    _close(ops.scaled_dot_product_attention(q, k, v, is_causal=True), _expected(q, k, v, True))
    assert gluon_launches == []
    capturing[0] = False
    ops.scaled_dot_product_attention(q, k, v, is_causal=True)
    capturing[0] = True  # loaded now: a capture may launch it
    ops.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert len(gluon_launches) == 2
    _close(ops.scaled_dot_product_attention(q, k, v), _expected(q, k, v, False))
    assert len(started) == 2  # another mask: another compile
    assert len(gluon_launches) == 2


@needs_gluon
def test_a_failed_compile_keeps_the_ninetoothed_kernel_and_warns(gluon_launches, monkeypatch):
    def warm(*args):
        raise RuntimeError("out of shared memory")

    monkeypatch.setattr(hopper_attention, "_warm", warm)
    monkeypatch.setattr(hopper_attention, "_ASIDE", Aside("stand-in"))
    q, k, v = _qkv(1, 2, 23, 27)
    with pytest.warns(RuntimeWarning, match="failed to compile.*out of shared memory"):
        result = ops.scaled_dot_product_attention(q, k, v)
    _close(result, _expected(q, k, v, False))
    _close(ops.scaled_dot_product_attention(q, k, v), _expected(q, k, v, False))
    assert gluon_launches == []


@needs_gluon
def test_calls_that_do_not_fit_take_the_ninetoothed_kernel(gluon_launches, monkeypatch):
    """float32, heads of 64, a misaligned stride, and the knob set off: the library's
    own kernel, computing the right thing, on every path."""
    cases = [
        _qkv(1, 2, 20, 24, dtype=torch.float32),
        _qkv(1, 2, 20, 24, d=64),
        [t[..., :127] for t in _qkv(1, 2, 20, 24)],  # heads of 127: the same kernel (bound 128)
    ]
    for q, k, v in cases:
        for _ in range(3):
            result = ops.scaled_dot_product_attention(q, k, v)
            _close(result, _expected(q, k, v, False), q.dtype)
    assert gluon_launches == []
    q, k, v = _qkv(1, 2, 20, 24)
    for scale in (-0.1, float("inf")):  # the kernel's maxima assume a positive scale
        result = ops.scaled_dot_product_attention(q, k, v, scale=scale)
        if scale < 0:
            _close(result, _expected(q, k, v, False, scale))
    assert gluon_launches == []
    monkeypatch.setenv("NINETOOTHED_HOPPER_ATTENTION", "off")
    q, k, v = _qkv(1, 2, 21, 24)  # a new key: a new recording reads the knob
    for _ in range(3):
        _close(ops.scaled_dot_product_attention(q, k, v), _expected(q, k, v, False))
    assert gluon_launches == []


@needs_gluon
def test_only_the_forward_at_heads_of_128_is_routed():
    """The variant that keeps the log-sum-exp (autograd's forward), other head bounds
    and other kernels keep their launch."""
    q, k, v = (t.requires_grad_() for t in _qkv(1, 2, 20, 24))
    ops.scaled_dot_product_attention(q, k, v).sum().backward()
    with torch.no_grad():
        ops.scaled_dot_product_attention(*_qkv(1, 2, 20, 24))
        ops.scaled_dot_product_attention(*_qkv(1, 2, 20, 24, d=64))

    def launch(*args):
        return "kept"

    routed = {}
    for kernel in kernels.made():
        found = kernels.origin(kernel.source_path)
        routed[kernel.source_path] = (found, hopper.substitute(kernel, launch) is not launch)
    forward = [v for v in routed.values() if v[0][0] == "scaled_dot_product_attention"]
    assert any(variant.get("lse") for (_, variant), _ in forward)
    for (module, variant), taken in routed.values():
        expected = (
            module == "scaled_dot_product_attention"
            and variant.get("head_bound") == 128
            and not variant.get("lse")
            and not variant.get("few_queries")
        )
        assert taken == expected, (module, variant)
    assert any(taken for _, taken in routed.values())


@needs_gluon
def test_compiled_attention_keeps_the_operator_that_takes_the_gluon_kernel(as_on_gpu, monkeypatch):
    """Under ``torch.compile`` the routed kernel's calls that may fit stay the generic
    operator (whose launch takes the Gluon kernel per call); the others, and heads of
    64, are handed to Inductor as the NineToothed kernel."""
    from support.traced_graphs import launches, trace

    from ninetoothed.library import pinned_block_sizes

    monkeypatch.setattr(hopper, "on_hopper", lambda tensor: True)
    monkeypatch.setattr(hopper, "WORK_FLOOR", 0)

    def attention(q, k, v):
        return ops.scaled_dot_product_attention(q, k, v, is_causal=True)

    for d, kept in ((128, True), (64, False)):
        as_on_gpu.clear()
        torch._dynamo.reset()
        with pinned_block_sizes(16):  # nothing to tune (on stand-ins, which need a GPU)
            trace(as_on_gpu, attention, tuple(_qkv(1, 2, 40, 40, d=d)), fullgraph=True)
        (graph,) = as_on_gpu
        assert ("auto_functionalized" in graph.code) == kept, d
        assert bool(launches(graph)) == (not kept), d
    monkeypatch.setattr(hopper, "WORK_FLOOR", 2 * 2 * 40 * 40 * 128 + 1)  # just above
    as_on_gpu.clear()
    torch._dynamo.reset()
    with pinned_block_sizes(16):
        trace(as_on_gpu, attention, tuple(_qkv(1, 2, 40, 40)), fullgraph=True)
    assert launches(as_on_gpu[0]) and "auto_functionalized" not in as_on_gpu[0].code


def _operators_launch(q, k, v):
    """What a compiled graph's operator runs for the library's attention forward at heads
    of 128 (``nt_torch.runtime.launcher``), made after an eager call of ``q, k, v``."""
    from ninetoothed.runtime import plugins
    from nt_torch import runtime

    with torch.no_grad():
        ops.scaled_dot_product_attention(q, k, v)
    kernel = next(
        made
        for made in kernels.made()
        if kernels.origin(made.source_path)[0] == "scaled_dot_product_attention"
        and hopper.substitute(made, len) is not len
    )
    return runtime.launcher(plugins.adapter_for(q), kernel.generated)


@needs_gluon
def test_the_operators_launch_takes_the_gluon_kernel(gluon_launches):
    """What a compiled graph's operator runs (``nt_torch.runtime.launcher``) routes as an
    eager call does; other kernels' launches are left as they are."""
    q, k, v = _qkv(1, 2, 24, 28)
    launch = _operators_launch(q, k, v)
    gluon_launches.clear()
    output = torch.empty_like(q)
    launch(q, k, v, 0.1, False, output)
    assert gluon_launches == [((1, 2, 24, 128), False)]
    if ON_GPU:
        _close(output, _expected(q, k, v, False, 0.1))
    else:
        assert torch.all(output == 7)
    launch(q, k, v, -0.1, False, output)  # not for the Gluon kernel: the NineToothed one
    _close(output, _expected(q, k, v, False, -0.1))
    assert len(gluon_launches) == 1


@needs_gluon
@pytest.mark.skipif(ON_GPU, reason="stands the GPU in")
def test_the_operators_launch_binds_the_gluon_launch_per_signature(gluon_launches, monkeypatch):
    """The operator's launch serves every call of its kernel: it binds the Gluon launch
    per signature (sizes, strides, dtypes, devices, scale, mask), and a call of a bound
    signature takes the bound launch only while its addresses agree."""
    binds = []

    def bind(query, key, value, output, scale, causal):
        binds.append((tuple(query.shape), scale, causal))
        return lambda *args: gluon_launches.append("bound") or args[3].fill_(5)

    monkeypatch.setattr(hopper_attention, "bind", bind)
    q, k, v = _qkv(1, 2, 24, 28)
    launch = _operators_launch(q, k, v)
    output = torch.empty_like(q)
    launch(q, k, v, 0.1, False, output)
    assert torch.all(output == 7) and binds == [((1, 2, 24, 128), 0.1, False)]
    launch(q, k, v, 0.1, False, output)
    assert torch.all(output == 5) and gluon_launches[-1] == "bound"
    launch(q, k, v, 0.2, False, output)  # another scale: another signature, bound anew
    assert torch.all(output == 7) and len(binds) == 2
    q2, k2, v2 = _qkv(1, 2, 32, 28)
    launch(q2, k2, v2, 0.1, False, torch.empty_like(q2))  # other sizes likewise
    assert len(binds) == 3
    room = torch.empty(q.numel() + 4, dtype=q.dtype)
    shifted = room[4:].view(q.shape)  # the same signature, 8 bytes off: misaligned
    launch(q, k, v, 0.1, False, shifted)
    _close(shifted, _expected(q, k, v, False, 0.1))
    assert len(binds) == 3


def test_short_attention_keeps_the_generated_kernel(monkeypatch):
    """Below the work floor the launch's host cost would outweigh the kernel."""
    monkeypatch.setattr(hopper, "on_hopper", lambda tensor: True)
    q = torch.empty(1, 16, 1024, 128, dtype=torch.float16, device="meta")
    k = torch.empty(1, 16, 1024, 128, dtype=torch.float16, device="meta")
    short = torch.empty(1, 16, 1023, 128, dtype=torch.float16, device="meta")
    assert hopper.WORK_FLOOR == 16 * 1024 * 1024 * 128
    assert _work_fits(q, k) and not _work_fits(q, short)


def _work_fits(q, k):
    """``fits`` on meta tensors (no data pointer): alignment read as 0."""
    import unittest.mock

    with unittest.mock.patch.object(torch.Tensor, "data_ptr", lambda self: 0):
        return hopper.fits(q, k, k, torch.empty_like(q))


def test_fits_refuses_what_tma_or_the_kernel_cannot_take(monkeypatch):
    monkeypatch.setattr(hopper, "on_hopper", lambda tensor: True)
    monkeypatch.setattr(hopper, "WORK_FLOOR", 0)
    q, k, v = _qkv(2, 2, 5, 7)
    out = torch.empty_like(q)
    assert hopper.fits(q, k, v, out)
    assert not hopper.fits(q.float(), k.float(), v.float(), out.float())
    assert not hopper.fits(q, k.bfloat16(), v, out)
    small = _qkv(1, 1, 5, 7, d=64)
    assert not hopper.fits(*small, torch.empty_like(small[0]))
    assert not hopper.fits(q, k[:, :, :0], v[:, :, :0], out)  # no keys
    wide = torch.zeros(2, 2, 7, 130, dtype=torch.float16, device=DEVICE)[
        ..., 1:129
    ]  # misaligned start
    assert not hopper.fits(q, wide, v, out)
    odd = torch.zeros(2, 2, 7 * 129 + 1, dtype=torch.float16, device=DEVICE)[..., 1:].unflatten(
        -1, (7, 129)
    )
    assert not hopper.fits(q, odd[..., :128], v, out)  # rows 129 elements apart
    transposed = torch.zeros(2, 7, 2, 128, dtype=torch.float16, device=DEVICE).transpose(1, 2)
    assert hopper.fits(q, transposed, v, out)  # any 16-byte strides
    assert not hopper.fits(q, k.transpose(2, 3).contiguous().transpose(2, 3), v, out)
    assert not hopper.fits(q, k, v, out.transpose(2, 3))
    broadcast = k[:, :1].expand(-1, 2, -1, -1)  # a key head shared by stride 0
    assert not hopper.fits(q, broadcast, v, out)
    monkeypatch.setattr(hopper, "on_hopper", lambda tensor: False)
    assert not hopper.fits(q, k, v, out)


GPU_CASES = [
    # b, h, lq, lk, h_kv, causal
    (2, 3, 300, 300, None, False),
    (2, 3, 300, 300, None, True),
    (1, 4, 1000, 777, 2, False),
    (1, 2, 129, 1100, None, True),
    (1, 2, 17, 17, None, True),
    (3, 2, 256, 256, 1, True),
    (1, 2, 4200, 4200, 1, True),  # over PERSISTENT_CAUSAL_BLOCKS: a program per tile
]


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a GPU")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", GPU_CASES)
def test_gluon_kernel_against_float64(gluon_launches, case, dtype):
    if not (hopper_attention.available() and hopper.on_hopper(torch.empty(0, device="cuda"))):
        pytest.skip("needs a Hopper GPU and Gluon")
    b, h, lq, lk, h_kv, causal = case
    q, k, v = _qkv(b, h, lq, lk, h_kv=h_kv, dtype=dtype)
    for _ in range(4):  # the first call, the recording, the plan's first call and a bound one
        result = ops.scaled_dot_product_attention(
            q, k, v, is_causal=causal, enable_gqa=h_kv is not None
        )
        _close(result, _expected(q, k, v, causal), dtype)
    assert len(gluon_launches) == 4
    assert (gluon_launches[-1][0] == "bound") == binds_on_this_triton()


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a GPU")
def test_gluon_kernel_of_strided_inputs(gluon_launches):
    """Inputs laid out (B, L, H, D), as a model's projections give them, and a scale."""
    if not (hopper_attention.available() and hopper.on_hopper(torch.empty(0, device="cuda"))):
        pytest.skip("needs a Hopper GPU and Gluon")
    q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in _qkv(2, 4, 333, 333))
    assert not q.is_contiguous()
    result = ops.scaled_dot_product_attention(q, k, v, scale=0.05)
    _close(result, _expected(q, k, v, False, 0.05))
    assert len(gluon_launches) == 1


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a GPU")
def test_first_calls_take_the_ninetoothed_kernel_while_the_gluon_kernel_compiles(
    gluon_launches, monkeypatch
):
    """The background compile, for real: right results before and after it."""
    if not (hopper_attention.available() and hopper.on_hopper(torch.empty(0, device="cuda"))):
        pytest.skip("needs a Hopper GPU and Gluon")
    monkeypatch.setattr(hopper, "_wait", lambda: False)
    monkeypatch.setattr(hopper_attention, "_ASIDE", Aside("background"))
    q, k, v = _qkv(2, 3, 301, 301, dtype=torch.bfloat16)
    _close(ops.scaled_dot_product_attention(q, k, v), _expected(q, k, v, False), torch.bfloat16)
    assert gluon_launches == []
    hopper_attention.settle()
    for _ in range(2):
        result = ops.scaled_dot_product_attention(q, k, v)
        _close(result, _expected(q, k, v, False), torch.bfloat16)
    assert len(gluon_launches) == 2


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a GPU")
@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_compiled_attention_takes_the_gluon_kernel(gluon_launches, mode):
    """Under ``torch.compile`` (and its CUDA graphs) the operator's launch takes the
    Gluon kernel, with the NineToothed kernel's results."""
    if not (hopper_attention.available() and hopper.on_hopper(torch.empty(0, device="cuda"))):
        pytest.skip("needs a Hopper GPU and Gluon")
    torch._dynamo.reset()

    def attention(q, k, v):
        return ops.scaled_dot_product_attention(q, k, v, is_causal=True) * 2

    compiled = torch.compile(attention, fullgraph=True, mode=mode)
    q, k, v = _qkv(2, 3, 300, 333)
    for _ in range(4):
        result = compiled(q, k, v)
        _close(result / 2, _expected(q, k, v, True))
    assert len(gluon_launches) >= 2  # the warm-up runs launch; a CUDA graph's replays do not
    torch._dynamo.reset()
