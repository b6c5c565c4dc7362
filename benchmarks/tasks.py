"""The benchmark's tasks: the paper's ten (section 5.3.1), three more, and the
memory-bound pair at 2^28 elements; each with its inputs, its three
implementations, a float32 reference and a count of its work.

Every tensor is float16 and random (never zeros).  ``small=True`` gives tiny
shapes with ragged edges, for a run under Triton's interpreter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from baselines import (
    add,
    addmm,
    bmm,
    conv2d,
    fused_add_rms_norm,
    max_pool2d,
    mm,
    rms_norm,
    rope,
    sdpa,
    silu,
    softmax,
    swiglu,
)

Inputs = tuple
EPS = 1e-6
BETA, ALPHA = 0.75, 1.25
POOL = {"kernel_size": 3, "stride": 2, "padding": 1}


@dataclass(frozen=True)
class Task:
    """One benchmark task.

    ``make(small, device)`` draws the inputs; ``torch``, ``triton`` and
    ``reference`` take them as positional arguments (``reference`` gets float32
    copies); ``ours(op, *inputs)`` calls our op ``nt_torch.ops.<name>`` for the
    first of ``op_names`` that exists (or the diagnostic ``standin`` of
    ``benchmarks/kernels.py``); ``work`` counts bytes (memory-bound) or FLOPs.
    ``paper`` marks the paper's ten; tasks not ``default`` run only when named.
    """

    name: str
    title: str
    make: Callable[[bool, str], Inputs]
    torch: Callable
    triton: Callable
    reference: Callable
    work: Callable[[Inputs], float]
    bound: str
    op_names: tuple[str, ...] = ()
    ours: Callable = field(default=lambda op, *inputs: op(*inputs))
    standin: str | None = None
    paper: bool = True
    default: bool = True


def randn(device: str, *shape: int) -> torch.Tensor:
    """Random float16 values of ``shape``."""
    return torch.randn(*shape, dtype=torch.float16, device=device)


def nbytes(*values: torch.Tensor) -> float:
    """Bytes of the tensors among ``values``."""
    return float(sum(v.numel() * v.element_size() for v in values if torch.is_tensor(v)))


def vectors(n_big: int, n_small: int, count: int) -> Callable[[bool, str], Inputs]:
    """``count`` random vectors of ``n_big`` (or, small, ``n_small``) elements."""
    return lambda small, device: tuple(
        randn(device, n_small if small else n_big) for _ in range(count)
    )


def matrices(big: list[tuple], tiny: list[tuple]) -> Callable[[bool, str], Inputs]:
    """Random tensors of the shapes ``big`` (or, small, ``tiny``)."""
    return lambda small, device: tuple(randn(device, *s) for s in (tiny if small else big))


def gemm_flops(a: torch.Tensor, b: torch.Tensor) -> float:
    """2 * batch * M * N * K for ``a @ b`` (2-D or batched)."""
    return 2.0 * a.shape[-2] * b.shape[-1] * a.shape[-1] * (a.shape[0] if a.dim() == 3 else 1)


def conv_flops(x: torch.Tensor, w: torch.Tensor) -> float:
    """2 * N * K * P * Q * C * R * S for an unpadded, unit-stride convolution."""
    (n, c, h, width), (k, _, r, s) = x.shape, w.shape
    return 2.0 * n * k * (h - r + 1) * (width - s + 1) * c * r * s


def attention_flops(causal: bool) -> Callable[..., float]:
    """4 * B * H * D * (query-key pairs): two products per pair and dimension."""

    def count(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> float:
        (b, h, lq, d), lk = q.shape, k.shape[2]
        pairs = sum(min(i + 1, lk) for i in range(lq)) if causal else lq * lk
        return 4.0 * b * h * d * pairs

    return count


def torch_rope(x, sin, cos, interleaved: bool = True) -> torch.Tensor:
    """Rotary embedding in plain torch (several kernels): the reference and the
    torch column, as torch has no rope op."""
    sin, cos = sin[None, :, None, :], cos[None, :, None, :]
    if interleaved:
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)
    x0, x1 = x.chunk(2, dim=-1)
    return torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)


def torch_add_rms_norm(x, residual, weight):
    """Residual add then ``rms_norm`` in torch: returns ``(normalised, sum)``."""
    h = x + residual
    return F.rms_norm(h, h.shape[-1:], weight, EPS), h


def rope_inputs(small: bool, device: str) -> Inputs:
    """x (B, L, H, D) and the (L, D/2) sine and cosine tables."""
    b, seq, heads, dim = (2, 5, 3, 16) if small else (4, 1024, 48, 64)
    return (
        randn(device, b, seq, heads, dim),
        randn(device, seq, dim // 2),
        randn(device, seq, dim // 2),
    )


def sdpa_task(name: str, causal: bool) -> Task:
    """Scaled dot-product attention over (4, 48, 1024, 64) queries, keys and values."""
    big, tiny = [(4, 48, 1024, 64)] * 3, [(1, 2, 37, 16)] * 3
    call = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
    return Task(
        name,
        f"sdpa((4, 48, 1024, 64) x3{', is_causal=True' if causal else ''})",
        matrices(big, tiny),
        call,
        lambda q, k, v: sdpa.sdpa(q, k, v, causal),
        call,
        attention_flops(causal),
        "compute",
        ("sdpa", "scaled_dot_product_attention"),
        (lambda op, q, k, v: op(q, k, v, is_causal=True)) if causal else (lambda op, *i: op(*i)),
        paper=not causal,
    )


def elementwise_tasks() -> list[Task]:
    """add and silu at the paper's 2^24 elements and at 2^28 (for the bandwidth floor)."""
    tasks = []
    for exponent, paper in ((24, True), (28, False)):
        n = 1 << exponent
        suffix = "" if paper else f"_2p{exponent}"
        tasks += [
            Task(f"add{suffix}", f"add(({n},), ({n},))", vectors(n, 1000, 2), torch.add,
                 add.add, torch.add, lambda x, y: 3 * nbytes(x), "memory", ("add",),
                 paper=paper),
            Task(f"silu{suffix}", f"silu(({n},))", vectors(n, 1000, 1), F.silu, silu.silu,
                 F.silu, lambda x: 2 * nbytes(x), "memory", ("silu",),
                 paper=paper),
        ]  # fmt: skip
    return tasks


def gemm_tasks() -> list[Task]:
    """addmm, bmm, mm and conv2d at the paper's shapes."""
    square = [(4096, 4096)] * 3
    return [
        Task("addmm", "addmm((4096, 4096) x3, beta, alpha)",
             matrices(square, [(37, 45), (37, 50), (50, 45)]),
             lambda i, a, b: torch.addmm(i, a, b, beta=BETA, alpha=ALPHA),
             lambda i, a, b: addmm.addmm(i, a, b, beta=BETA, alpha=ALPHA),
             lambda i, a, b: torch.addmm(i, a, b, beta=BETA, alpha=ALPHA),
             lambda i, a, b: gemm_flops(a, b), "compute", ("addmm",),
             lambda op, i, a, b: op(i, a, b, beta=BETA, alpha=ALPHA)),
        Task("bmm", "bmm((4, 2048, 2048), (4, 2048, 2048))",
             matrices([(4, 2048, 2048)] * 2, [(3, 37, 50), (3, 50, 45)]), torch.bmm, bmm.bmm,
             torch.bmm, gemm_flops, "compute", ("bmm",)),
        Task("conv2d", "conv2d((4, 512, 14, 14), (512, 512, 3, 3))",
             matrices([(4, 512, 14, 14), (512, 512, 3, 3)], [(2, 5, 9, 11), (7, 5, 3, 3)]),
             F.conv2d, conv2d.conv2d, F.conv2d, conv_flops, "compute", ("conv2d",)),
        Task("mm", "mm((4096, 4096), (4096, 4096))",
             matrices(square[:2], [(37, 50), (50, 45)]), torch.mm, mm.mm, torch.mm, gemm_flops,
             "compute", ("mm",)),
    ]  # fmt: skip


def decoding_tasks() -> list[Task]:
    """mm of decoding's shape, 2 rows through a Llama Linear layer's 4096 x 4096
    weight: 32 tiles of 16 x 128 for 132 processors, so our op splits the
    reduction (``ops.split``; run only when named)."""
    shapes = [(2, 4096), (4096, 4096)]
    return [
        Task("mm_decode", "mm((2, 4096), (4096, 4096)): decoding (thin: one launch)",
             matrices(shapes, [(2, 50), (50, 45)]), torch.mm, mm.mm, torch.mm,
             lambda a, b: nbytes(a, b) + 2 * a.shape[0] * b.shape[1], "memory", ("mm",),
             paper=False, default=False),
    ]  # fmt: skip


def row_tasks() -> list[Task]:
    """rms_norm, rope and softmax at the paper's shapes; rope half-split too."""
    row = [(4096, 4096)]
    rms = lambda x: F.rms_norm(x, x.shape[-1:], eps=EPS)  # noqa: E731
    return [
        Task("rms_norm", "rms_norm((4096, 4096))", matrices(row, [(7, 100)]), rms,
             lambda x: rms_norm.rms_norm(x, eps=EPS), rms, lambda x: 2 * nbytes(x), "memory",
             ("rms_norm",), lambda op, x: op(x, eps=EPS)),
        Task("rope", "rope((4, 1024, 48, 64), (1024, 32), (1024, 32))", rope_inputs, torch_rope,
             rope.rope, torch_rope, lambda x, s, c: 2 * nbytes(x) + nbytes(s, c), "memory",
             ("rope", "rotary_position_embedding"),
             lambda op, x, s, c: op(x, s, c, interleaved=True)),
        Task("rope_half", "rope(..., interleaved=False) (Llama's layout)", rope_inputs,
             lambda x, s, c: torch_rope(x, s, c, False), lambda x, s, c: rope.rope(x, s, c, False),
             lambda x, s, c: torch_rope(x, s, c, False),
             lambda x, s, c: 2 * nbytes(x) + nbytes(s, c), "memory",
             ("rope", "rotary_position_embedding"),
             lambda op, x, s, c: op(x, s, c, interleaved=False), paper=False),
        Task("softmax", "softmax((4096, 4096))", matrices(row, [(7, 100)]),
             lambda x: torch.softmax(x, dim=-1), softmax.softmax,
             lambda x: torch.softmax(x, dim=-1), lambda x: 2 * nbytes(x), "memory",
             ("softmax",)),
    ]  # fmt: skip


def extra_tasks() -> list[Task]:
    """The three ops the upstream examples add, at sizes of ours."""
    pool = [(32, 64, 112, 112)]
    wide = [(4096, 14336)] * 2
    return [
        Task("max_pool2d", "max_pool2d((32, 64, 112, 112), 3, stride=2, padding=1)",
             matrices(pool, [(2, 3, 11, 13)]), lambda x: F.max_pool2d(x, **POOL),
             lambda x: max_pool2d.max_pool2d(x, **POOL), lambda x: F.max_pool2d(x, **POOL),
             lambda x: nbytes(x) * (1 + 1 / 4), "memory", ("max_pool2d",),
             lambda op, x: op(x, **POOL), paper=False),
        Task("swiglu", "swiglu((4096, 14336), (4096, 14336)): a * silu(b)",
             matrices(wide, [(7, 100)] * 2), lambda a, b: a * F.silu(b), swiglu.swiglu,
             lambda a, b: a * F.silu(b), lambda a, b: 3 * nbytes(a), "memory", ("swiglu",),
             paper=False),
        Task("fused_add_rms_norm", "fused_add_rms_norm((4096, 4096) x2, (4096,))",
             matrices([(4096, 4096)] * 2 + [(4096,)], [(7, 100), (7, 100), (100,)]),
             torch_add_rms_norm,
             lambda x, r, w: fused_add_rms_norm.fused_add_rms_norm(x, r, w, EPS),
             torch_add_rms_norm, lambda x, r, w: 4 * nbytes(x) + nbytes(w), "memory",
             ("fused_add_rms_norm",), lambda op, x, r, w: op(x, r, w, eps=EPS), paper=False),
    ]  # fmt: skip


def diagnostic_tasks() -> list[Task]:
    """mm with the seed kernel tuned over the baseline's space, and with the
    baseline's chosen configuration: generated code against hand-written code,
    without two autotuners' choices in between (run only when named)."""
    square = matrices([(4096, 4096)] * 2, [(37, 50), (50, 45)])
    return [
        Task(name, f"mm((4096, 4096), (4096, 4096)), seed kernel {how}", square, torch.mm, mm.mm,
             torch.mm, gemm_flops, "compute", standin=f"matmul_{name[3:]}", paper=False,
             default=False)
        for name, how in (("mm_same_space", "tuned over the baseline's space"),
                          ("mm_same_config", "with the baseline's tuned configuration"))
    ]  # fmt: skip


def all_tasks() -> list[Task]:
    """Every task, the paper's first (in its order), then the others."""
    tasks = (
        elementwise_tasks()
        + gemm_tasks()
        + decoding_tasks()
        + row_tasks()
        + [sdpa_task("sdpa", False), sdpa_task("sdpa_causal", True)]
        + extra_tasks()
        + diagnostic_tasks()
    )
    order = ["add", "addmm", "bmm", "conv2d", "mm", "rms_norm", "rope", "sdpa", "silu", "softmax"]
    paper = sorted((t for t in tasks if t.paper), key=lambda t: order.index(t.name))
    # The seed attention's first call has been slow to tune: last, so that it
    # can cost only itself when a time limit ends the run.
    others = sorted((t for t in tasks if not t.paper), key=lambda t: t.name == "sdpa_causal")
    return paper + others
