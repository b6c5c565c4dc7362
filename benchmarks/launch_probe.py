"""Host cost of launching a tiny Triton kernel, path by path (issue #12).

    python benchmarks/launch_probe.py                    # a CUDA machine; about 30 s
    python benchmarks/launch_probe.py --compile-check    # any machine, no GPU needed
    python benchmarks/launch_probe.py --compile-scaling  # adds parallel-compile timings

The kernel is a 4096-element float16 add whose output the caller allocates.
Each path is called ``--calls`` times in a row (synchronised once, at the
end), the paths taking turns, for ``--rounds`` rounds; the table shows the
median round.  Columns: ``host`` is the time until the last call returned,
per call; ``+sync`` also waits for the GPU (if it exceeds ``host`` clearly,
the GPU, not the host, was the bottleneck); ``device`` is CUDA-event time per
call on the current stream (torch paths only).

Paths: ``torch.add``; a ``@triton.jit`` kernel called the usual way
(``JITFunction.run``); the same compiled kernel launched through its
launcher directly, first with everything precomputed (raw pointers), then with
the per-call work a real wrapper must do; and, when ``jax`` and
``jax_triton`` import, ``jax_triton.triton_call`` under ``jax.jit``, eagerly,
and eagerly through a ``jax.jit`` cached per specialisation.  Then checks:
the launcher calling convention used, whether our specialisation spells what
Triton's JIT spells (same kernel hash), registers read from the cubin against
the driver's, CUDA-graph capture of the paths, and launches on ``cuda:1``
where a second GPU exists.

The direct launcher is private Triton API; its calling convention is written
here for Triton 3.6 and 3.9 (``docs/notes/triton-launch-internals.md``), and
other versions fall back to ``CompiledKernel.run``.  ``OUT=/dir`` also writes
``/dir/launch_probe.md`` and ``/dir/launch_probe.json``.  Nothing is asserted
about times; a wrong result is reported, not raised.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# JAX's GPU client takes 75% of the GPU's memory when it starts unless told
# not to; torch shares the device in this process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

N = 4096
BLOCK_SIZE = 1024
VERSION = tuple(int(part) for part in re.findall(r"\d+", triton.__version__)[:2])
DIVISIBLE = [["tt.divisibility", 16]]
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def add_kernel_jax(x_ptr, y_ptr, n, out_ptr, BLOCK: tl.constexpr):
    # jax-triton's order: the call's arguments, then one pointer per output.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    # Only compiled (--compile-scaling), never launched.
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k * BK + rk)[None, :] * stride_ak)
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * stride_bk + rn[None, :] * stride_bn)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16))


# ---------------------------------------------------------------- specialisation


@dataclass(frozen=True)
class Specialisation:
    """What ``triton.compile(ASTSource(fn, signature, constexprs, attrs))`` takes."""

    signature: dict[str, str]
    constexprs: dict[str, Any]
    attrs: dict[tuple[int, ...], list[list[Any]]]


def triton_type(dtype: Any) -> str:
    """``torch.float16`` -> ``"fp16"`` (Triton's canonical element type names)."""
    from triton._utils import type_canonicalisation_dict

    return type_canonicalisation_dict[str(dtype).rsplit(".", 1)[-1]]


def int_type(value: int) -> str:
    """The type Triton's launcher gives a Python int argument."""
    if INT32_MIN <= value <= INT32_MAX:
        return "i32"
    return "u64" if value >= 2**63 else "i64"


def specialise(fn: Any, args: tuple[Any, ...]) -> Specialisation:
    """Triton's own specialisation of ``args`` (JITFunction.run's binder), spelled
    as this version's JIT path spells it, so that the kernel hash (and Triton's
    disk cache entry) is the one ``fn[grid](*args)`` would compile:

    * pointers (objects with ``data_ptr``): ``"*fp16"``; divisible by 16 when the
      address is a multiple of 16;
    * ints: ``1`` becomes the constexpr 1; others ``"i32"``/``"i64"``/``"u64"`` by
      range, divisible by 16 when a multiple of 16; floats ``"fp32"``, bools ``"u1"``,
      neither with attributes;
    * attrs: ``{(index,): [["tt.divisibility", 16]] or []}`` for pointers and ints;
      Triton 3.9 also lists ``(index,): []`` for every constexpr, 3.6 does not.
    """
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    constexpr_attrs = VERSION >= (3, 9)
    for index, (param, value) in enumerate(zip(fn.params, args)):
        name = param.name
        if param.is_constexpr or (type(value) is int and value == 1):
            signature[name] = "constexpr"
            constexprs[name] = value
            if constexpr_attrs:
                attrs[(index,)] = []
        elif hasattr(value, "data_ptr"):
            signature[name] = "*" + triton_type(value.dtype)
            attrs[(index,)] = DIVISIBLE if value.data_ptr() % 16 == 0 else []
        elif isinstance(value, bool):
            signature[name] = "u1"
        elif isinstance(value, int):
            signature[name] = int_type(value)
            attrs[(index,)] = DIVISIBLE if value % 16 == 0 else []
        elif isinstance(value, float):
            signature[name] = "fp32"
        else:
            raise TypeError(f"{name}: cannot specialise {type(value).__name__}")
    return Specialisation(signature, constexprs, attrs)


def compile_kernel(
    fn: Any, args: tuple[Any, ...], target: Any = None, num_warps: int = 4, num_stages: int = 3
) -> Any:
    """The ``CompiledKernel`` for ``args``, without launching (nor loading) it."""
    from triton.compiler import ASTSource

    if target is None:
        target = triton.runtime.driver.active.get_current_target()
    spec = specialise(fn, args)
    source = ASTSource(fn, spec.signature, spec.constexprs, spec.attrs)
    return triton.compile(
        source, target=target, options={"num_warps": num_warps, "num_stages": num_stages}
    )


def cubin_resources(cubin: bytes) -> dict[str, int]:
    """Registers per thread and stack frame bytes (spills) from a cubin's ``.nv.info``.

    No GPU needed: ``EIATTR_REGCOUNT`` (0x2f) and ``EIATTR_FRAME_SIZE`` (0x11),
    each ``(symbol, value)``, as ``cuobjdump -res-usage`` reports them.
    """
    found: dict[str, int] = {}
    if cubin[:4] != b"\x7fELF":
        return found
    section_offset = struct.unpack_from("<Q", cubin, 0x28)[0]
    entry_size, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQ", cubin, section_offset + i * entry_size) for i in range(count)
    ]
    names_at = sections[names_index][4]
    for name_offset, _, _, _, offset, size in sections:
        end = cubin.index(b"\0", names_at + name_offset)
        if cubin[names_at + name_offset : end] != b".nv.info":
            continue
        position = offset
        while position + 4 <= offset + size:
            form, attribute, length = struct.unpack_from("<BBH", cubin, position)
            if form != 0x04:  # only EIFMT_SVAL entries carry a payload
                position += 4
                continue
            if attribute in (0x2F, 0x11) and length >= 8:
                value = struct.unpack_from("<II", cubin, position + 4)[1]
                key = "registers" if attribute == 0x2F else "frame_bytes"
                found[key] = max(found.get(key, 0), value)
            position += 4 + length
    return found


# ---------------------------------------------------------------- direct launch


class DirectLaunch:
    """A ``CompiledKernel``'s launcher, called without ``JITFunction.run``.

    ``launch(grid_x, stream, *args)`` takes the kernel's arguments in parameter
    order, constexprs included (the launcher skips them); pointers as ints (no
    ``data_ptr()`` call, no ``cuPointerGetAttribute``) or as tensors.  Building
    one loads the module into the current device's context
    (``CompiledKernel.run`` -> ``_init_handles``): make one per device.
    """

    def __init__(self, kernel: Any) -> None:
        launcher = kernel.run  # loads the module on the current device, builds the launcher
        self.kernel = kernel
        metadata = kernel.metadata
        scratch = (getattr(metadata, "global_scratch_size", 0) or 0) + (
            getattr(metadata, "profile_scratch_size", 0) or 0
        )
        descriptors = any(
            isinstance(t, str) and t.startswith("tensordesc") for t in kernel.src.signature.values()
        )
        raw = getattr(launcher, "launch", None)
        if scratch or descriptors or raw is None:
            self.style = "CompiledKernel.run (scratch/descriptors/unknown launcher)"
        elif hasattr(launcher, "arg_annotations") and hasattr(launcher, "kernel_signature"):
            self.style = "3.9: utils.launch(..., annotations, signature, args)"
        elif VERSION == (3, 6):
            self.style = "3.6: __triton_launcher.launch(..., *args)"
        else:
            self.style = f"CompiledKernel.run (launcher of Triton {triton.__version__} unverified)"
        self.launch = self._make(launcher, raw, kernel)

    def _make(self, launcher: Any, raw: Any, kernel: Any) -> Callable[..., None]:
        function, packed = kernel.function, kernel.packed_metadata
        cooperative = bool(getattr(launcher, "launch_cooperative_grid", False))
        pdl = bool(getattr(launcher, "launch_pdl", False))
        if self.style.startswith("3.9"):
            annotations, signature = launcher.arg_annotations, launcher.kernel_signature

            def launch(grid_x: int, stream: int, *args: Any) -> None:
                # gridX, gridY, gridZ, stream, function, cooperative, pdl, (num_warps,
                # num_ctas, shared), launch_metadata, enter hook, exit hook,
                # global scratch, profile scratch, annotations, signature bytes, args
                raw(
                    grid_x, 1, 1, stream, function, cooperative, pdl, packed,
                    None, None, None, None, None, annotations, signature, args,
                )  # fmt: skip

            return launch
        if self.style.startswith("3.6"):

            def launch(grid_x: int, stream: int, *args: Any) -> None:
                # gridX, gridY, gridZ, stream, function, cooperative, pdl, global
                # scratch, profile scratch, (num_warps, num_ctas, shared),
                # launch_metadata, enter hook, exit hook, *args
                raw(
                    grid_x, 1, 1, stream, function, cooperative, pdl, None, None, packed,
                    None, None, None, *args,
                )  # fmt: skip

            return launch
        run = kernel.run

        def launch(grid_x: int, stream: int, *args: Any) -> None:
            run(grid_x, 1, 1, stream, function, packed, None, None, None, *args)

        return launch

    def precomputed(self, grid_x: int, stream: int, args: tuple[Any, ...]) -> Callable[[], None]:
        """A call with every argument fixed: the launcher's own floor."""
        launcher = self.kernel.run
        function, packed = self.kernel.function, self.kernel.packed_metadata
        if self.style.startswith("3.9"):
            raw = launcher.launch
            full = (grid_x, 1, 1, stream, function, bool(launcher.launch_cooperative_grid))
            full += (bool(launcher.launch_pdl), packed, None, None, None, None, None)
            full += (launcher.arg_annotations, launcher.kernel_signature, tuple(args))
        elif self.style.startswith("3.6"):
            raw = launcher.launch
            full = (grid_x, 1, 1, stream, function, bool(launcher.launch_cooperative_grid))
            full += (bool(launcher.launch_pdl), None, None, packed, None, None, None, *args)
        else:
            raw = launcher
            full = (grid_x, 1, 1, stream, function, packed, None, None, None, *args)
        return lambda: raw(*full)


# ---------------------------------------------------------------- measuring


@dataclass
class Case:
    name: str
    call: Callable[[], Any]
    calls: int
    framework: str = "torch"  # "torch": CUDA events on torch's stream; "jax": block_until_ready


@dataclass
class Row:
    name: str
    host: float
    total: float
    device: float | None
    busy: float | None = None  # host µs/call issued behind a busy GPU (torch rows)


BUSY_CYCLES_PER_CALL = 60_000
"""GPU clock cycles of ``torch.cuda._sleep`` queued per measured call (~35 µs at
1.7 GHz): longer than any per-call path here, so the launch queue never drains
and never fills while the calls are issued, and the host time is the path's own."""


def host_cost_behind_busy_gpu(call: Callable[[], Any], count: int) -> float:
    """Host µs per call while the GPU is kept busy by a queued sleep kernel.

    With the GPU idle, a tiny kernel's host time per call is bounded below by its
    device time (the queue drains as fast as it fills); queueing a sleep first
    takes the device out of the measurement. ``count`` must stay below CUDA's
    launch-queue depth (about a thousand) so issuing never blocks.
    """
    import torch

    torch.cuda.synchronize()
    torch.cuda._sleep(BUSY_CYCLES_PER_CALL * count)
    began = time.perf_counter()
    for _ in range(count):
        call()
    returned = time.perf_counter()
    torch.cuda.synchronize()
    return (returned - began) * 1e6 / count


def measure(paths: list[Case], rounds: int) -> list[Row]:
    """Median round per path; the paths take turns within each round."""
    import torch

    samples: dict[str, list[tuple[float, float, float | None]]] = {p.name: [] for p in paths}
    busy: dict[str, list[float]] = {p.name: [] for p in paths}
    for _ in range(rounds):
        for path in paths:
            if path.framework == "torch":
                busy[path.name].append(host_cost_behind_busy_gpu(path.call, min(path.calls, 500)))
            call, count = path.call, path.calls
            if path.framework == "torch":
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(True)
                start.record()
                began = time.perf_counter()
                for _ in range(count):
                    call()
                returned = time.perf_counter()
                end.record()
                torch.cuda.synchronize()
                done = time.perf_counter()
                device = start.elapsed_time(end) * 1e3 / count
            else:
                result = call()
                result.block_until_ready()
                began = time.perf_counter()
                for _ in range(count):
                    result = call()
                returned = time.perf_counter()
                result.block_until_ready()
                done = time.perf_counter()
                device = None
            samples[path.name].append(
                ((returned - began) * 1e6 / count, (done - began) * 1e6 / count, device)
            )
    rows = []
    for path in paths:
        ordered = sorted(samples[path.name], key=lambda s: s[1])
        host, total, device = ordered[len(ordered) // 2]
        behind_busy = statistics.median(busy[path.name]) if busy[path.name] else None
        rows.append(Row(path.name, host, total, device, behind_busy))
    return rows


def per_call(fn: Callable[[], Any], count: int = 100_000, rounds: int = 5) -> float:
    """Median µs per call of a host-only function."""
    results = []
    for _ in range(rounds):
        began = time.perf_counter()
        for _ in range(count):
            fn()
        results.append((time.perf_counter() - began) * 1e6 / count)
    return statistics.median(results)


# ---------------------------------------------------------------- the probe


@dataclass(frozen=True)
class CudaApi:
    """The three things a launch asks the framework (stand-ins in tools/fakecuda)."""

    current_device: Callable[[], int]
    raw_stream: Callable[[int], int]
    """The device's current stream as an int (the capture stream while capturing)."""
    device: Callable[[int], Any]
    """A context manager making a device current."""


def torch_cuda_api() -> CudaApi:
    import torch

    return CudaApi(torch._C._cuda_getDevice, torch._C._cuda_getCurrentRawStream, torch.cuda.device)


def torch_paths(
    report: dict[str, Any], calls: int, x: Any, y: Any, out: Any, cuda: CudaApi
) -> tuple[list[Case], dict[str, Any]]:
    """The torch-side paths, on ``x + y -> out`` (vectors of ``N`` elements)."""
    import torch

    expected = x + y
    grid = (triton.cdiv(N, BLOCK_SIZE),)
    stream = cuda.raw_stream(x.get_device())
    get_stream = cuda.raw_stream
    current_device = cuda.current_device

    # The usual call compiles; our own compile of the same specialisation must be
    # the same kernel (same hash) if `specialise` spells what the JIT spells.
    jit_kernel = add_kernel.warmup(x, y, out, N, BLOCK=BLOCK_SIZE, grid=grid)
    kernel = compile_kernel(add_kernel, (x, y, out, N, BLOCK_SIZE))
    report["spelling_matches_jit"] = kernel.hash == jit_kernel.hash
    direct = DirectLaunch(kernel)
    report["launcher_style"] = direct.style
    report["scratch"] = {
        "global": getattr(kernel.metadata, "global_scratch_size", None),
        "profile": getattr(kernel.metadata, "profile_scratch_size", None),
    }
    report["registers"] = {
        "cubin .nv.info": cubin_resources(kernel.asm["cubin"]),
        "driver n_regs/n_spills": (kernel.n_regs, kernel.n_spills),
    }
    launch = direct.launch
    pointers = (x.data_ptr(), y.data_ptr(), out.data_ptr())

    # What a real wrapper does per call: read pointers, sizes and strides, check
    # them, key a table by dtypes + Triton's specialisation (divisibility by 16,
    # ==1, 32/64-bit), find the device and its current stream, launch.
    table: dict[Any, Any] = {}

    def build(a: Any, b: Any, c: Any, n: int, key: Any) -> Any:
        with cuda.device(a.get_device()):
            entry = DirectLaunch(compile_kernel(add_kernel, (a, b, c, n, BLOCK_SIZE))).launch
        table[key] = entry
        return entry

    def wrapper(a: Any, b: Any, c: Any) -> None:
        (n,) = a.shape
        (stride_a,) = a.stride()
        (n_b,) = b.shape
        (stride_b,) = b.stride()
        (n_c,) = c.shape
        (stride_c,) = c.stride()
        if n_b != n or n_c != n or stride_a != 1 or stride_b != 1 or stride_c != 1:
            raise ValueError("the probe's wrapper takes contiguous vectors of one length")
        pa, pb, pc = a.data_ptr(), b.data_ptr(), c.data_ptr()
        index = a.get_device()
        key = (
            a.dtype, b.dtype, c.dtype, index, not pa & 15, not pb & 15, not pc & 15,
            n == 1, not n & 15, n <= INT32_MAX,
        )  # fmt: skip
        entry = table.get(key)
        if entry is None:
            entry = build(a, b, c, n, key)
        if index != current_device():
            with cuda.device(index):
                entry((n + BLOCK_SIZE - 1) // BLOCK_SIZE, get_stream(index), pa, pb, pc, n, None)
            return
        entry((n + BLOCK_SIZE - 1) // BLOCK_SIZE, get_stream(index), pa, pb, pc, n, None)

    # The same, with a table keyed by exact shapes and strides: a hit skips the
    # checks and the grid (both functions of the key) and finds the int arguments.
    plans: dict[Any, Any] = {}

    def plan_for(a: Any, b: Any, c: Any, key: Any) -> Any:
        wrapper(a, b, c)  # validates, compiles, fills `table`
        (n,) = a.shape
        pa, pb, pc = a.data_ptr(), b.data_ptr(), c.data_ptr()
        spec_key = (
            a.dtype, b.dtype, c.dtype, a.get_device(), not pa & 15, not pb & 15, not pc & 15,
            n == 1, not n & 15, n <= INT32_MAX,
        )  # fmt: skip
        plan = (table[spec_key], (n + BLOCK_SIZE - 1) // BLOCK_SIZE, a.get_device(), n)
        plans[key] = plan
        return plan

    def planned(a: Any, b: Any, c: Any) -> None:
        pa, pb, pc = a.data_ptr(), b.data_ptr(), c.data_ptr()
        key = (
            a.shape, a.stride(), b.shape, b.stride(), c.shape, c.stride(),
            a.dtype, b.dtype, c.dtype, a.get_device(), not (pa | pb | pc) & 15,
        )  # fmt: skip
        plan = plans.get(key)
        if plan is None:
            plan_for(a, b, c, key)
            return
        entry, grid_x, index, n = plan
        if index != current_device():
            with cuda.device(index):
                entry(grid_x, get_stream(index), pa, pb, pc, n, None)
            return
        entry(grid_x, get_stream(index), pa, pb, pc, n, None)

    def via_compiled_kernel_run() -> None:
        # CompiledKernel.run(gridX, gridY, gridZ, stream, function, packed metadata,
        # launch_metadata, enter hook, exit hook, *args): the launcher object.
        kernel.run(grid[0], 1, 1, stream, function, packed, None, None, None, *arguments)

    function, packed, arguments = kernel.function, kernel.packed_metadata, (*pointers, N, None)
    paths = [
        Case("torch.add(x, y, out=out)", lambda: torch.add(x, y, out=out), calls),
        Case(
            "@triton.jit kernel, usual call (JITFunction.run)",
            lambda: add_kernel[grid](x, y, out, N, BLOCK=BLOCK_SIZE),
            calls,
        ),
        Case("CompiledKernel.run(...), raw pointers, hooks None", via_compiled_kernel_run, calls),
        Case(
            "direct launcher, all precomputed (raw pointers)",
            direct.precomputed(grid[0], stream, (*pointers, N, None)),
            calls,
        ),
        Case(
            "direct launcher, tensors as pointers (data_ptr + cuPointerGetAttribute)",
            lambda: launch(grid[0], stream, x, y, out, N, None),
            calls,
        ),
        Case("direct + wrapper work (specialisation key)", lambda: wrapper(x, y, out), calls),
        Case("direct + wrapper work (exact-shape plan)", lambda: planned(x, y, out), calls),
    ]
    state = {
        "x": x, "y": y, "out": out, "expected": expected, "wrapper": wrapper, "planned": planned,
        "grid": grid, "kernel": kernel, "direct": direct,
    }  # fmt: skip
    return paths, state


def check_results(paths: list[Case], state: dict[str, Any], report: dict[str, Any]) -> None:
    import torch

    out, expected = state["out"], state["expected"]
    wrong = []
    for path in paths:
        if path.framework != "torch":
            continue
        out.zero_()
        path.call()
        torch.cuda.synchronize()
        if not torch.equal(out, expected):
            wrong.append(path.name)
    report["wrong_results"] = wrong


def pieces(state: dict[str, Any]) -> list[tuple[str, float]]:
    import torch

    x, y, out, grid = state["x"], state["y"], state["out"], state["grid"]
    index = x.get_device()
    raw_stream = torch._C._cuda_getCurrentRawStream
    current = torch.cuda.current_stream
    measured = [
        ("torch.cuda.current_device()", per_call(torch.cuda.current_device)),
        ("torch._C._cuda_getDevice()", per_call(torch._C._cuda_getDevice)),
        ("torch._C._cuda_getCurrentRawStream(i)", per_call(lambda: raw_stream(index))),
        ("torch.cuda.current_stream().cuda_stream", per_call(lambda: current().cuda_stream)),
        ("x.data_ptr()", per_call(x.data_ptr)),
        ("x.shape", per_call(lambda: x.shape)),
        ("x.stride()", per_call(x.stride)),
        ("x.dtype", per_call(lambda: x.dtype)),
        ("x.get_device()", per_call(x.get_device)),
        (
            "add_kernel.run(..., warmup=True): JIT work without the launch",
            per_call(
                lambda: add_kernel.run(x, y, out, N, BLOCK=BLOCK_SIZE, grid=grid, warmup=True),
                count=20_000,
            ),
        ),
    ]  # fmt: skip
    return measured


def jax_paths(report: dict[str, Any], calls: int) -> list[Case]:
    try:
        import jax
        import jax.numpy as jnp
    except Exception as error:  # noqa: BLE001
        report["jax"] = f"not measured: jax did not import ({error})"
        return []
    previous = os.environ.get("TRITON_CACHE_DIR")
    missing = ""
    try:
        import jax_triton as jt
    except Exception as error:  # noqa: BLE001
        missing = f" (jax-triton rows not measured: it did not import: {error})"
        jt = None
    finally:
        # jax-triton 0.3.1 sets TRITON_CACHE_DIR="" on import, after which Triton
        # refuses to compile anything else in the process.
        if previous is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = previous
    version = getattr(jt, "__version__", None)
    report["jax"] = f"jax {jax.__version__}, jax_triton {version}{missing}"
    gpu = jax.devices("gpu")[0]
    x = jax.device_put(jnp.arange(N, dtype=jnp.float16) / 7, gpu)
    y = jax.device_put(jnp.ones(N, dtype=jnp.float16), gpu)
    expected = x + y
    add = jax.jit(jnp.add)
    paths = [Case("jax.jit(jnp.add)(x, y)", lambda: add(x, y), calls, "jax")]
    if jt is None:
        return paths
    out_shape = jax.ShapeDtypeStruct((N,), jnp.float16)
    grid = (triton.cdiv(N, BLOCK_SIZE),)

    def call(a: Any, b: Any) -> Any:
        return jt.triton_call(
            a, b, N, kernel=add_kernel_jax, out_shape=out_shape, grid=grid, BLOCK=BLOCK_SIZE
        )

    jitted = jax.jit(call)
    cache: dict[Any, Any] = {}

    def eager_cached(a: Any, b: Any) -> Any:
        # The proposal for eager calls: one jitted launch per specialisation.
        key = (a.shape, a.dtype, b.shape, b.dtype)
        function = cache.get(key)
        if function is None:
            function = cache[key] = jax.jit(call)
        return function(a, b)

    wrong = [
        name
        for name, fn in (("jit", jitted), ("eager", call), ("eager cached", eager_cached))
        if not bool(jnp.array_equal(fn(x, y), expected))
    ]
    report["jax_wrong_results"] = wrong
    eager_calls = max(100, calls // 10)
    paths += [
        Case("jax_triton.triton_call under jax.jit", lambda: jitted(x, y), calls, "jax"),
        Case("jax_triton.triton_call, eager", lambda: call(x, y), eager_calls, "jax"),
        Case(
            "jax_triton.triton_call, eager via jax.jit cached per specialisation",
            lambda: eager_cached(x, y),
            calls,
            "jax",
        ),
    ]
    return paths


def check_graphs(state: dict[str, Any], report: dict[str, Any]) -> None:
    """Capture each launching path in a CUDA graph, replay it, check the result."""
    import torch

    x, y, out, expected, grid = (state[k] for k in ("x", "y", "out", "expected", "grid"))
    candidates = {
        "@triton.jit usual call": lambda: add_kernel[grid](x, y, out, N, BLOCK=BLOCK_SIZE),
        "direct + wrapper (specialisation key)": lambda: state["wrapper"](x, y, out),
        "direct + wrapper (exact-shape plan)": lambda: state["planned"](x, y, out),
    }
    results = {}
    for name, fn in candidates.items():
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn()
            out.zero_()
            graph.replay()
            torch.cuda.synchronize()
            ok = torch.equal(out, expected)
            replay = per_call(graph.replay, count=2000, rounds=3)
            torch.cuda.synchronize()
            results[name] = f"{'ok' if ok else 'WRONG RESULT'}; replay {replay:.1f} µs host"
        except Exception as error:  # noqa: BLE001
            results[name] = f"failed: {type(error).__name__}: {error}"
    report["cuda_graph"] = results


def check_second_gpu(report: dict[str, Any]) -> None:
    """Launches on cuda:1 tensors while cuda:0 is current (last: errors may be sticky)."""
    import torch

    if torch.cuda.device_count() < 2:
        report["second_gpu"] = "not run: one GPU"
        return
    results = {}
    x = torch.randn(N, device="cuda:1", dtype=torch.float16)
    y = torch.randn(N, device="cuda:1", dtype=torch.float16)
    expected = (x + y).cpu()
    grid = (triton.cdiv(N, BLOCK_SIZE),)

    def outcome(fn: Callable[[Any], None]) -> str:
        out = torch.zeros_like(x)
        try:
            fn(out)
            torch.cuda.synchronize(1)
            return "ok" if torch.equal(out.cpu(), expected) else "WRONG RESULT"
        except Exception as error:  # noqa: BLE001
            return f"failed: {type(error).__name__}: {error}"

    torch.cuda.set_device(0)
    with torch.cuda.device(1):
        on_one = DirectLaunch(compile_kernel(add_kernel, (x, y, x, N, BLOCK_SIZE)))
    stream_one = torch._C._cuda_getCurrentRawStream(1)

    def unswitched(out: Any) -> None:
        on_one.launch(grid[0], stream_one, x.data_ptr(), y.data_ptr(), out.data_ptr(), N, None)

    def switched(out: Any) -> None:
        with torch.cuda.device(1):
            unswitched(out)

    results["cuda:1 module, cuda:1 stream, cuda:0 current"] = outcome(unswitched)

    results["cuda:1 module, cuda:1 stream, inside torch.cuda.device(1)"] = outcome(switched)
    results["@triton.jit usual call on cuda:1 tensors, cuda:0 current"] = outcome(
        lambda out: add_kernel[grid](x, y, out, N, BLOCK=BLOCK_SIZE)
    )
    report["second_gpu"] = results


def _compile_matmul(config: tuple[int, int, int, int, int], target: tuple[str, int, int]) -> float:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    bm, bn, bk, warps, stages = config
    names = "M N K stride_am stride_ak stride_bk stride_bn stride_cm stride_cn".split()
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}
    signature.update({name: "i32" for name in names})
    signature.update({"BM": "constexpr", "BN": "constexpr", "BK": "constexpr"})
    attrs = {(i,): DIVISIBLE for i in (0, 1, 2, 3, 4, 5, 6, 8, 10)}
    attrs.update({(i,): [] for i in (7, 9, 11)})
    if VERSION >= (3, 9):
        attrs.update({(i,): [] for i in (12, 13, 14)})
    began = time.perf_counter()
    triton.compile(
        ASTSource(matmul_kernel, signature, {"BM": bm, "BN": bn, "BK": bk}, attrs),
        target=GPUTarget(*target),
        options={"num_warps": warps, "num_stages": stages},
    )
    return time.perf_counter() - began


def compile_scaling(report: dict[str, Any], target: Any) -> None:
    """Wall time to compile 16 matmul configurations: in turn, in threads, in processes.

    Each mode compiles into its own empty Triton cache directory.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    configs = [
        (bm, bn, bk, warps, stages)
        for bm, bn in ((64, 64), (64, 128), (128, 64), (128, 128))
        for bk, warps, stages in ((32, 4, 3), (64, 4, 4), (64, 8, 3), (32, 8, 4))
    ]
    workers = max(1, min(8, os.cpu_count() or 1))
    spec = (target.backend, target.arch, target.warp_size)
    previous = os.environ.get("TRITON_CACHE_DIR")
    results: dict[str, Any] = {"configs": len(configs), "workers": workers}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for mode in ("sequential", "threads", "processes (spawn)"):
                os.environ["TRITON_CACHE_DIR"] = str(Path(scratch) / mode.split()[0])
                began = time.perf_counter()
                if mode == "sequential":
                    times = [_compile_matmul(c, spec) for c in configs]
                elif mode == "threads":
                    with ThreadPoolExecutor(workers) as pool:
                        times = list(pool.map(_compile_matmul, configs, [spec] * len(configs)))
                else:
                    context = multiprocessing.get_context("spawn")
                    with ProcessPoolExecutor(workers, mp_context=context) as pool:
                        times = list(pool.map(_compile_matmul, configs, [spec] * len(configs)))
                wall = time.perf_counter() - began
                results[mode] = {
                    "wall_s": round(wall, 2),
                    "sum_of_compiles_s": round(sum(times), 2),
                }
    finally:
        if previous is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = previous
    report["compile_scaling"] = results


class _StandInDriver:
    """Enough of a driver for ``JITFunction.run(..., warmup=True)`` without a GPU."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0


def compile_check() -> int:
    """Check ``specialise``'s spelling against Triton's JIT for sm_90, no GPU needed."""
    import torch
    from triton.backends.compiler import GPUTarget

    target = GPUTarget("cuda", 90, 32)
    active = triton.runtime.driver
    try:
        real = active.active.get_current_target().arch == 90
    except Exception:  # noqa: BLE001 - no GPU driver here
        real = False
    if not real:
        active.set_active(_StandInDriver(target))
    x = torch.empty(N + 8, dtype=torch.float16)
    cases = {
        "aligned, n=4096": (x[:N], x[:N], x[:N], N, BLOCK_SIZE),
        "x misaligned": (x[1 : N + 1], x[:N], x[:N], N, BLOCK_SIZE),
        "n=1 (constexpr 1)": (x[:1], x[:1], x[:1], 1, BLOCK_SIZE),
        "n=4097 (not /16)": (x, x, x, N + 1, BLOCK_SIZE),
        "n=2**31 (i64)": (x, x, x, 2**31, BLOCK_SIZE),
    }
    failures = 0
    print(f"triton {triton.__version__}: specialise() against JITFunction.run(warmup=True), sm_90")
    for name, args in cases.items():
        ours = compile_kernel(add_kernel, args, target)
        jit = add_kernel.warmup(*args[:4], BLOCK=BLOCK_SIZE, grid=(1,))
        same = ours.hash == jit.hash
        failures += not same
        spec = specialise(add_kernel, args)
        print(f"  {'same' if same else 'DIFFERENT'} kernel  {name}: {spec.signature} {spec.attrs}")
        if not same:
            print(f"    JIT spelled: {jit.src.signature} {jit.src.attrs} {jit.src.constants}")
    kernel = compile_kernel(add_kernel, cases["aligned, n=4096"], target)
    metadata = kernel.metadata
    print(
        f"  metadata: shared={metadata.shared} global_scratch={metadata.global_scratch_size} "
        f"profile_scratch={metadata.profile_scratch_size} packed={kernel.packed_metadata} "
        f"cubin={cubin_resources(kernel.asm['cubin'])}"
    )
    if VERSION == (3, 6):
        from triton.backends.nvidia.driver import make_launcher

        source = make_launcher({}, kernel.src.signature, None)
        form = re.search(r'PyArg_ParseTuple\(args, "([^"]+)"', source)
        found = form.group(1) if form else "?"
        print(f"  3.6 launcher argument format: {found} (expected iiiKKppOOOOOOOOOiO)")
    return 1 if failures else 0


def markdown_table(rows: list[Row]) -> str:
    lines = ["| path | host µs/call | +sync µs/call | device µs/call |", "|---|---:|---:|---:|"]
    for row in rows:
        device = f"{row.device:.1f}" if row.device is not None else "–"
        lines.append(f"| {row.name} | {row.host:.1f} | {row.total:.1f} | {device} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per path per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-jax", action="store_true", help="skip the JAX rows")
    parser.add_argument("--compile-check", action="store_true", help="no GPU needed")
    parser.add_argument("--compile-scaling", action="store_true")
    options = parser.parse_args()
    if options.compile_check:
        return compile_check()
    try:
        import torch
    except ImportError:
        print("launch_probe: needs torch (and a CUDA GPU); --compile-check runs without a GPU")
        return 0
    if not torch.cuda.is_available():
        print("launch_probe: no CUDA device here; nothing measured (--compile-check runs anyway)")
        return 0
    began = time.perf_counter()
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "triton": triton.__version__,
        },
        "calls": options.calls,
        "rounds": options.rounds,
    }
    x = torch.randn(N, device="cuda", dtype=torch.float16)
    y = torch.randn(N, device="cuda", dtype=torch.float16)
    paths, state = torch_paths(report, options.calls, x, y, torch.empty_like(x), torch_cuda_api())
    for path in paths:  # warm each path (compiles, loads, fills tables)
        path.call()
    check_results(paths, state, report)
    if not options.no_jax:
        try:
            added = jax_paths(report, options.calls)
            for path in added:
                path.call().block_until_ready()
            paths += added
        except Exception as error:  # noqa: BLE001
            report["jax"] = f"JAX rows failed: {type(error).__name__}: {error}"
            traceback.print_exc()
    rows = measure(paths, options.rounds)
    report["rows"] = [row.__dict__ for row in rows]
    report["pieces_us"] = dict(pieces(state))
    check_graphs(state, report)
    if options.compile_scaling:
        compile_scaling(report, triton.runtime.driver.active.get_current_target())
    check_second_gpu(report)
    report["seconds"] = round(time.perf_counter() - began, 1)

    versions = " | ".join(f"{k} {v}" for k, v in report["versions"].items())
    text = [
        f"launch_probe: {report['device']} | {versions} | {report.get('jax', 'jax not run')}",
        f"tiny add: {N} float16 elements, output given; {options.calls} calls per round "
        f"(JAX eager: {max(100, options.calls // 10)}), {options.rounds} interleaved rounds, "
        "median round",
        "",
        markdown_table(rows),
        "",
        "| piece | µs/call |",
        "|---|---:|",
        *(f"| {name} | {value:.3f} |" for name, value in report["pieces_us"].items()),
        "",
        f"launcher convention: {report['launcher_style']}",
        f"specialise() spells what the JIT spells: {report['spelling_matches_jit']}",
        f"scratch bytes per program: {report['scratch']}",
        f"registers: {report['registers']}",
        f"wrong results: {report['wrong_results'] or 'none'}"
        + (f"; JAX: {report['jax_wrong_results']}" if report.get("jax_wrong_results") else ""),
        f"CUDA graph capture: {json.dumps(report['cuda_graph'], ensure_ascii=False)}",
        f"second GPU: {json.dumps(report['second_gpu'], ensure_ascii=False)}",
    ]
    if "compile_scaling" in report:
        text.append(f"compile scaling: {json.dumps(report['compile_scaling'])}")
    text.append(f"({report['seconds']} s)")
    output = "\n".join(text)
    print(output)
    destination = os.environ.get("OUT")
    if destination:
        Path(destination).mkdir(parents=True, exist_ok=True)
        (Path(destination) / "launch_probe.md").write_text(output + "\n")
        (Path(destination) / "launch_probe.json").write_text(
            json.dumps(report, indent=2, default=str)
        )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        traceback.print_exc()
        sys.exit(1)
