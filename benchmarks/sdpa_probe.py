"""What Triton itself reaches on prefill attention: a hand-written FlashAttention-2
forward in its Hopper forms, against torch's attention and our op, same run.

    python benchmarks/sdpa_probe.py                 # an H100/H200, about 3 min
    python benchmarks/sdpa_probe.py --rounds 7 --shapes 0,1

The question it answers: which of the forms Triton offers on Hopper -- loads
through pointers, tensor descriptors made in the kernel (``tl.make_tensor_descriptor``,
which needs a global-scratch allocator), descriptors made on the host (passed
by value as kernel parameters), and warp-specialised key loops
(``tl.range(..., warp_specialize=True)``) -- lifts attention to torch's speed,
and which block shapes each needs.  Our code generator emits pointer loads
only; this measures what emitting the others would buy before building it.

The probe kernel is FlashAttention-2's forward written directly for
contiguous (batch, heads, sequence, head) float16 inputs whose sequence
length the blocks divide (the shapes below): keys in two stages when causal
(the blocks wholly below the diagonal without a mask, then the diagonal's),
the softmax in base 2 with the scale applied to the scores.

Method: every variant is compiled first (``--jobs`` processes in parallel,
which fill Triton's cache, each checking its output against torch in float32),
then one process times torch, our op and each variant that compiled and
matched, in ``--rounds`` interleaved rounds of ``triton.testing.do_bench``
medians.  Rows: the median over rounds and ``torch time / this``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import Clock, interleaved_rounds, relative_error  # noqa: E402

SHAPES = ((4, 48, 1024, 64), (2, 16, 4096, 128))
"""(batch, heads, sequence, head dimension), the issue's prefill shapes."""
BLOCKS = ((128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 4), (64, 64, 4, 3))
"""(BLOCK_M, BLOCK_N, num_warps, num_stages) tried for every form."""
FORMS = ("pointers", "device descriptors", "host descriptors")
TOLERANCE = 5e-3


@triton.jit
def _stage(
    acc, l_i, m_i, q, k_src, v_src, row0, offs_m, offs_n, lo, hi, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr,
    FORM: tl.constexpr, WS: tl.constexpr,
):  # fmt: skip
    offs_d = tl.arange(0, HEAD_DIM)
    for start in tl.range(lo, hi, BLOCK_N, warp_specialize=WS):
        if FORM == 0:
            rows = row0 + start + offs_n
            k = tl.load(k_src + rows[:, None] * HEAD_DIM + offs_d[None, :])
        else:
            k = k_src.load([row0 + start, 0])
        qk = tl.dot(q, tl.trans(k))
        if MASKED:
            keep = offs_m[:, None] >= start + offs_n[None, :]
            qk = qk * qk_scale + tl.where(keep, 0.0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if FORM == 0:
            rows = row0 + start + offs_n
            v = tl.load(v_src + rows[:, None] * HEAD_DIM + offs_d[None, :])
        else:
            v = v_src.load([row0 + start, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def _forward(
    Q, K, V, Out, qk_scale, total_rows, N_CTX,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, FORM: tl.constexpr, WS: tl.constexpr,
):  # fmt: skip
    start_m = tl.program_id(0)
    row0 = tl.program_id(1) * N_CTX  # this (batch, head)'s first row of the 2-D view
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    if FORM == 1:
        shape = [total_rows, HEAD_DIM]
        q_src = tl.make_tensor_descriptor(Q, shape, [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
        k_src = tl.make_tensor_descriptor(K, shape, [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
        v_src = tl.make_tensor_descriptor(V, shape, [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
        o_src = tl.make_tensor_descriptor(Out, shape, [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    else:
        q_src, k_src, v_src, o_src = Q, K, V, Out
    if FORM == 0:
        q = tl.load(q_src + (row0 + offs_m)[:, None] * HEAD_DIM + offs_d[None, :])
    else:
        q = q_src.load([row0 + start_m * BLOCK_M, 0])
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    hi = (start_m * BLOCK_M) if CAUSAL else N_CTX
    acc, l_i, m_i = _stage(
        acc, l_i, m_i, q, k_src, v_src, row0, offs_m, offs_n, 0, hi, qk_scale,
        HEAD_DIM, BLOCK_N, False, FORM, WS,
    )  # fmt: skip
    if CAUSAL:
        acc, l_i, m_i = _stage(
            acc, l_i, m_i, q, k_src, v_src, row0, offs_m, offs_n, hi, hi + BLOCK_M, qk_scale,
            HEAD_DIM, BLOCK_N, True, FORM, WS,
        )  # fmt: skip
    out = (acc / l_i[:, None]).to(tl.float16)
    if FORM == 0:
        tl.store(o_src + (row0 + offs_m)[:, None] * HEAD_DIM + offs_d[None, :], out)
    else:
        o_src.store([row0 + start_m * BLOCK_M, 0], out)


def _scratch(size: int, alignment: int, stream: int | None) -> torch.Tensor:
    """Global scratch for descriptors made in the kernel (Triton asks per launch)."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


def probe(
    form: int, ws: bool, block: tuple[int, int, int, int], causal: bool
) -> Callable[..., torch.Tensor]:
    """The probe kernel in one form and configuration, as ``f(q, k, v) -> o``.

    The initial ``l_i`` of 1 is the tutorial's: the first block's ``alpha`` is 0
    (``m_i`` starts at minus infinity), so it vanishes."""
    block_m, block_n, warps, stages = block

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        batch, heads, n_ctx, head = q.shape
        o = torch.empty_like(q)
        views = [t.view(-1, head) for t in (q, k, v, o)]
        if form == 2:
            from triton.tools.tensor_descriptor import TensorDescriptor

            sizes = (block_m, block_n, block_n, block_m)
            views = [TensorDescriptor.from_tensor(t, [s, head]) for t, s in zip(views, sizes)]
        grid = (n_ctx // block_m, batch * heads)
        _forward[grid](
            *views, head**-0.5 * 1.4426950408889634, batch * heads * n_ctx, n_ctx,
            HEAD_DIM=head, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, FORM=form,
            WS=ws, num_warps=warps, num_stages=stages,
        )  # fmt: skip
        return o

    return call


def variants(causal: bool) -> dict[str, Callable[..., torch.Tensor]]:
    """Every form x warp specialisation x configuration, by label."""
    found = {}
    for (form, name), ws, block in itertools.product(enumerate(FORMS), (False, True), BLOCKS):
        if causal and block[0] % block[1]:
            continue
        label = f"{name}{' +ws' if ws else ''} {'x'.join(map(str, block))}"
        found[label] = probe(form, ws, block, causal)
    return found


def ours_pinned(block: tuple[int, int, int, int], causal: bool) -> Callable[..., torch.Tensor]:
    """The library's attention kernel made with one configuration (the op tunes
    over several): the generated code against the probe's, block for block."""
    import ninetoothed
    from ninetoothed.library import scaled_dot_product_attention as sdpa

    block_m, block_n, warps, stages = block
    premade = sdpa.premake(head_bound=128)
    pinned = {"BLOCK_SIZE_M": block_m, "BLOCK_SIZE_N": block_n}
    kernel = ninetoothed.make(
        premade.arrangement, premade.application, premade.tensors,
        configs=[{**pinned, "num_warps": warps, "num_stages": stages}],
        name=f"probe_ours_{block_m}x{block_n}x{warps}",
    )  # fmt: skip

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        output = torch.empty_like(q)
        kernel(q, k, v, q.shape[3] ** -0.5, causal, output)
        return output

    return call


def _torch_backend(backend: str, causal: bool) -> Callable[..., torch.Tensor]:
    """torch's attention forced to one backend."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        with sdpa_kernel(getattr(SDPBackend, backend)):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return call


def inputs(shape: tuple[int, ...]) -> tuple[torch.Tensor, ...]:
    """Float16 random queries, keys and values, seeded by the shape."""
    torch.manual_seed(sum(shape))
    return tuple(torch.randn(*shape, dtype=torch.float16, device="cuda") for _ in "qkv")


def compile_some(shape: tuple[int, ...], causal: bool, labels: list[str]) -> None:
    """Call each variant of ``labels`` once (filling Triton's cache), printing
    ``START label`` before and ``RESULT label why`` after (``why`` empty when it
    matched the reference): a compiler that aborts the process leaves its label
    started and unfinished, which the parent records."""
    triton.set_allocator(_scratch)
    q, k, v = inputs(shape)
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    every = variants(causal)
    for label in labels:
        print("START", label, flush=True)
        why = ""
        try:
            error = relative_error(every[label](q, k, v), expected)
            torch.cuda.synchronize()
            if not error <= TOLERANCE:
                why = f"WRONG (error {error:.1e})"
        except Exception as exc:  # a form the installed Triton or the GPU refuses
            why = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:100]}"
        print("RESULT", json.dumps([label, why]), flush=True)


def compile_case(index: int, causal: bool, labels: list[str]) -> subprocess.Popen[str]:
    """A process compiling ``labels``, variants of one case (see :func:`collect`)."""
    worker = subprocess.Popen(
        [sys.executable, __file__, "--compile", f"{index},{int(causal)}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert worker.stdin is not None
    worker.stdin.write(json.dumps(labels))
    worker.stdin.close()
    return worker


def collect(index: int, causal: bool, worker: subprocess.Popen[str]) -> dict[str, str]:
    """Wait for a case's compile process, restarting it after a label whose
    compile aborted it; the labels that failed, with why."""
    remaining = list(variants(causal))
    failed: dict[str, str] = {}
    while remaining:
        assert worker.stdout is not None
        output = worker.stdout.read()
        worker.wait()
        started = None
        for line in output.splitlines():
            if line.startswith("START "):
                started = line[len("START ") :]
            elif line.startswith("RESULT "):
                label, why = json.loads(line[len("RESULT ") :])
                remaining.remove(label)
                started = None
                if why:
                    failed[label] = why
        if started is None:
            if worker.returncode != 0 and remaining:
                failed.update({label: "compile process failed" for label in remaining})
            break
        failed[started] = f"the compiler aborted the process (exit {worker.returncode})"
        remaining.remove(started)
        if remaining:
            worker = compile_case(index, causal, remaining)
    return failed


def time_all(shape: tuple[int, ...], causal: bool, rounds: int, failed: dict[str, str]) -> None:
    """Interleaved rounds of torch, our op and every good variant; print the table."""
    import ninetoothed  # noqa: F401  (the adapter's ops)
    import nt_torch

    triton.set_allocator(_scratch)
    q, k, v = inputs(shape)
    functions: dict[str, Callable[..., object]] = {
        "torch": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
        "ours (op)": lambda: nt_torch.ops.scaled_dot_product_attention(q, k, v, is_causal=causal),
    }
    functions["ours (op)"]()  # tuned before timing
    candidates = dict(variants(causal))
    for backend in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
        candidates[f"torch {backend.lower()}"] = _torch_backend(backend, causal)
    for block in BLOCKS:
        if not (causal and block[0] % block[1]):
            candidates[f"ours {'x'.join(map(str, block))}"] = ours_pinned(block, causal)
    for label, fn in candidates.items():
        if label in failed:
            continue
        try:  # the compile process may have died before reporting this one
            fn(q, k, v)
            torch.cuda.synchronize()
        except Exception as exc:
            failed[label] = f"{type(exc).__name__}: {str(exc).strip()[:100]}"
            continue
        functions[label] = lambda fn=fn: fn(q, k, v)
    times, dropped = interleaved_rounds(functions, Clock("cuda", warmup_ms=10, rep_ms=40), rounds)
    failed.update(dropped)
    names = [name for name in functions if name not in dropped]
    torch_ms = statistics.median(times["torch"])
    flops = 4 * math.prod(shape) * shape[2] / (2 if causal else 1)
    print(f"\n## {shape} causal={causal}  (torch {torch_ms * 1e3:.1f} us)")
    ranked = sorted(names, key=lambda name: statistics.median(times[name]))
    for name in ranked:
        ms = statistics.median(times[name])
        tflops = flops / (ms * 1e-3) / 1e12
        ratio = torch_ms / ms
        print(f"{name:42s} {ms * 1e3:9.1f} us  {tflops:6.1f} TFLOP/s  torch/this {ratio:.3f}")
    for name, why in failed.items():
        print(f"{name:42s} {why}")


def main(argv: list[str]) -> int:
    """Compile in parallel processes, then time in this one."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shapes", default="0,1", help="indices into SHAPES")
    parser.add_argument("--causal", default="0,1", help="0: not causal, 1: causal")
    parser.add_argument("--compile", help="internal: SHAPE_INDEX,CAUSAL: compile and report")
    args = parser.parse_args(argv)
    if args.compile:
        index, causal = map(int, args.compile.split(","))
        compile_some(SHAPES[index], bool(causal), json.loads(sys.stdin.read()))
        return 0
    causals = [bool(int(c)) for c in args.causal.split(",")]
    cases = [(int(i), c) for i in args.shapes.split(",") for c in causals]
    workers = {case: compile_case(*case, list(variants(case[1]))) for case in cases}
    versions = f"torch {torch.__version__}, triton {triton.__version__}"
    print(f"# {torch.cuda.get_device_name()}, {versions}")
    failures = {case: collect(*case, worker) for case, worker in workers.items()}
    for (index, causal), failed in failures.items():
        time_all(SHAPES[index], causal, args.rounds, failed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
