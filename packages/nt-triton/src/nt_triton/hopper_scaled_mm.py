# mypy: disable-error-code="untyped-decorator,no-untyped-def"
"""The float8 product with scales on Hopper, warp-specialised, written in Gluon.

``torch._scaled_mm``'s default sums each step of ``k`` on the tensor cores and
adds the step's sum to a float32 accumulator (the tensor cores' own float8
accumulation keeps fewer bits: over all of ``k`` it is the "fast" mode).  In
Triton's ``tl`` that add waits for each step's products, and the library's
generated kernel reaches 0.71-0.76 of cuBLAS on an H100 (``docs/design.md``).
Here the add overlaps the next step's products: two partial sums alternate in
registers, one being added while the tensor cores fill the other.  That needs
a warp partition with the registers for three 128 x 128 float32 tiles, and a
producer that keeps the copies coming while it adds, which Gluon expresses:

- a producer (the default partition, 4 warps) TMA-copies
  each step's ``BLOCK`` x ``BLOCK_K`` blocks of ``input`` and of ``mat2``'s
  transpose into a ring of ``STAGES`` shared buffers;
- the consumer (8 warps, two warp groups of 64 rows) issues each step's
  products asynchronously, adds the previous step's while they run, then
  scales the tile (the tensor-wise scales, or a row's and a column's) and
  hands it to a TMA store, which drains while it starts the next tile.

One program per multiprocessor loops over the output's tiles in groups of
``GROUP_M`` rows of tiles (persistent; neighbouring programs share blocks in
L2).  TMA copies fill past the operands' edges with zeros and the store drops
what lies past the output's, so any sizes serve; the operands must lie as
``torch._scaled_mm`` wants them (``input`` row-major, ``mat2`` column-major)
with 16-byte aligned rows: :func:`nt_torch.hopper_fp8.fits` checks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

from nt_triton import _gluon_hopper
from nt_triton._compile_aside import Aside
from nt_triton._gluon_hopper import (
    available,
    copy_in,
    copy_out,
    descriptor,
    fence_async_shared,
    gl,
    gluon,
    mbarrier,
    run,
    specialised,
    tma,
    warm,
    warpgroup_mma,
    warpgroup_mma_wait,
)

__all__ = ["BLOCK", "STAGES", "available", "bind", "launch", "ready", "settle"]

BLOCK = 128
"""Rows and columns of an output tile."""

BLOCK_K = 128
"""The step along ``k``: the tensor cores' float8 products over 128 values (4
instructions) accumulate in their own format before the float32 add (DeepSeek-V3's
report promotes every 128 too)."""

STAGES = 5
"""Steps in flight.  On an H100 (interleaved ``do_bench`` medians, torch time / this,
tensor-wise and row-wise scales) 5 stages measured 0.993 / 1.006 at 4096^3 and 0.996 /
0.971 at 8192^3, 4 stages 0.944 / 0.957 and 0.965 / 0.951, 3 stages 0.74-0.78.  Five
32 KiB stages and a float32 output tile (64 KiB) fit an H100's 227 KiB."""

FAST_BLOCK_N = 256
"""Columns of an output tile with fast accumulation (one 128-register accumulator)."""

FAST_STAGES = 3
"""Steps in flight with fast accumulation: 3 x 48 KiB and a 64 KiB 16-bit output tile.
On an H100 it measured 0.99 / 0.99 of ``torch._scaled_mm(..., use_fast_accum=True)``
at 4096^3 and 0.995 / 0.984 at 8192^3 (tensor-wise / row-wise scales), against 0.955
/ 0.964 and 0.997 / 0.979 for the generated kernel."""

GROUP_M = 8
"""Rows of tiles a program group walks before the next columns (L2 reuse)."""

_CONSUMER_REGISTERS = 240
_MAX_REGISTERS = 168  # 12 warps (the consumer's two groups, the producer's): 65,536 / 384

_ASIDE = Aside("hopper_scaled_mm")
"""The kernel's background compiles, by device, output type and size specialisation."""


if gluon is not None:
    _GROUP_M = gl.constexpr(GROUP_M)

    @gluon.jit
    def _tile(tile, m_tiles, n_tiles):
        """The output tile ``tile``'s row and column of tiles: ``GROUP_M`` rows of tiles
        at a time, column by column."""
        per_group = _GROUP_M * n_tiles
        first = (tile // per_group) * _GROUP_M
        rows = gl.minimum(m_tiles - first, _GROUP_M)
        within = tile % per_group
        return first + within % rows, within // rows

    @gluon.jit
    def _produce(args):
        (a_desc, b_desc, c_desc, scale_a, scale_b, a_smem, b_smem, c_smem, ready, empty,
         M, N, K, rowwise) = args  # fmt: skip
        bm: gl.constexpr = a_desc.block_type.shape[0]
        bk: gl.constexpr = a_desc.block_type.shape[1]
        bn: gl.constexpr = b_desc.block_type.shape[0]
        stages: gl.constexpr = a_smem.type.shape[0]
        m_tiles = gl.cdiv(M, bm)
        n_tiles = gl.cdiv(N, bn)
        it = 0  # steps copied so far, over all tiles: the ring's position
        for tile in range(gl.program_id(0), m_tiles * n_tiles, gl.num_programs(0)):
            pid_m, pid_n = _tile(tile, m_tiles, n_tiles)
            for k in range(gl.cdiv(K, bk)):
                s = it % stages
                mbarrier.wait(empty.index(s), ((it // stages) & 1) ^ 1)
                nbytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
                mbarrier.expect(ready.index(s), nbytes)
                copy_in(a_desc, [pid_m * bm, k * bk], ready.index(s), a_smem.index(s))
                copy_in(b_desc, [pid_n * bn, k * bk], ready.index(s), b_smem.index(s))
                it += 1

    @gluon.jit
    def _step(a_smem, b_smem, ready, it, stages: gl.constexpr, partial):
        """Issue step ``it``'s products (once its blocks have arrived) into ``partial``'s
        registers, without adding to them."""
        s = it % stages
        mbarrier.wait(ready.index(s), (it // stages) & 1)
        b = b_smem.index(s).permute((1, 0))
        return warpgroup_mma(a_smem.index(s), b, partial, use_acc=False, is_async=True)

    @gluon.jit
    def _consume(args):
        (a_desc, b_desc, c_desc, scale_a, scale_b, a_smem, b_smem, c_smem, ready, empty,
         M, N, K, rowwise) = args  # fmt: skip
        bm: gl.constexpr = a_desc.block_type.shape[0]
        bn: gl.constexpr = b_desc.block_type.shape[0]
        stages: gl.constexpr = a_smem.type.shape[0]
        layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[8, 1], instr_shape=[16, bn, 32]
        )
        m_tiles = gl.cdiv(M, bm)
        n_tiles = gl.cdiv(N, bn)
        steps = gl.cdiv(K, a_desc.block_type.shape[1])
        # The spare partial sum's registers take each other step's products: a value
        # copied while products write it would make ptxas serialise the products.
        spare = gl.zeros([bm, bn], gl.float32, layout)
        it = 0  # steps consumed so far, over all tiles: the ring's position
        for tile in range(gl.program_id(0), m_tiles * n_tiles, gl.num_programs(0)):
            pid_m, pid_n = _tile(tile, m_tiles, n_tiles)
            acc = gl.zeros([bm, bn], gl.float32, layout)
            part = _step(a_smem, b_smem, ready, it, stages, spare)
            it += 1
            # Steps in pairs, so that each partial sum keeps its registers: issue the
            # next step's products, add the previous step's sum once it is complete.
            for _ in range((steps - 1) // 2):
                other = _step(a_smem, b_smem, ready, it, stages, spare)
                part = warpgroup_mma_wait(1, deps=(part,))
                mbarrier.arrive(empty.index((it - 1) % stages))
                acc = acc + part
                it += 1
                part = _step(a_smem, b_smem, ready, it, stages, part)
                spare = warpgroup_mma_wait(1, deps=(other,))
                mbarrier.arrive(empty.index((it - 1) % stages))
                acc = acc + spare
                it += 1
            if (steps - 1) % 2 == 1:
                last = _step(a_smem, b_smem, ready, it, stages, spare)
                done = warpgroup_mma_wait(1, deps=(part,))
                mbarrier.arrive(empty.index((it - 1) % stages))
                acc = acc + done
                it += 1
                done = warpgroup_mma_wait(0, deps=(last,))
            else:
                done = warpgroup_mma_wait(0, deps=(part,))
            mbarrier.arrive(empty.index((it - 1) % stages))
            acc = acc + done
            _finish(acc, pid_m, pid_n, args)
        _drain()

    @gluon.jit
    def _consume_fast(args):
        """:func:`_consume` with the tensor cores' own accumulation over all of ``k``
        (``use_fast_accum``): one accumulator, each step's products added to it."""
        (a_desc, b_desc, c_desc, scale_a, scale_b, a_smem, b_smem, c_smem, ready, empty,
         M, N, K, rowwise) = args  # fmt: skip
        bm: gl.constexpr = a_desc.block_type.shape[0]
        bn: gl.constexpr = b_desc.block_type.shape[0]
        stages: gl.constexpr = a_smem.type.shape[0]
        layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[8, 1], instr_shape=[16, bn, 32]
        )
        m_tiles = gl.cdiv(M, bm)
        n_tiles = gl.cdiv(N, bn)
        steps = gl.cdiv(K, a_desc.block_type.shape[1])
        it = 0
        for tile in range(gl.program_id(0), m_tiles * n_tiles, gl.num_programs(0)):
            pid_m, pid_n = _tile(tile, m_tiles, n_tiles)
            acc = gl.zeros([bm, bn], gl.float32, layout)
            for k in range(steps):
                s = it % stages
                mbarrier.wait(ready.index(s), (it // stages) & 1)
                b = b_smem.index(s).permute((1, 0))
                acc = warpgroup_mma(a_smem.index(s), b, acc, use_acc=k > 0, is_async=True)
                acc = warpgroup_mma_wait(1, deps=(acc,))  # the step before is complete
                mbarrier.arrive(empty.index((it - 1) % stages), pred=k > 0)
                it += 1
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(empty.index((it - 1) % stages))
            _finish(acc, pid_m, pid_n, args)
        _drain()

    @gluon.jit
    def _finish(acc, pid_m, pid_n, args):
        """Scale the tile's sums (one scale each, or a row's and a column's) and store
        them."""
        (a_desc, b_desc, c_desc, scale_a, scale_b, a_smem, b_smem, c_smem, ready, empty,
         M, N, K, rowwise) = args  # fmt: skip
        layout: gl.constexpr = acc.type.layout
        bm: gl.constexpr = acc.type.shape[0]
        bn: gl.constexpr = acc.type.shape[1]
        rows = pid_m * bm + gl.arange(0, bm, layout=gl.SliceLayout(1, layout))
        cols = pid_n * bn + gl.arange(0, bn, layout=gl.SliceLayout(0, layout))
        if rowwise:
            by_row = gl.load(scale_a + rows, mask=rows < M, other=0.0)
            by_column = gl.load(scale_b + cols, mask=cols < N, other=0.0)
            out = acc * gl.expand_dims(by_row, 1) * gl.expand_dims(by_column, 0)
        else:
            out = acc * (gl.load(scale_a) * gl.load(scale_b))
        _store(c_desc, c_smem, out, pid_m * bm, pid_n * bn)

    @gluon.jit
    def _drain():
        """Wait until the TMA stores issued have read their shared buffer."""
        tma.store_wait(0)

    @gluon.jit
    def _store(c_desc, c_smem, out, row, col):
        """Hand the tile to a TMA store once the previous tile's has left the buffer."""
        _drain()
        c_smem.store(out.to(c_desc.dtype))
        fence_async_shared()
        copy_out(c_desc, [row, col], c_smem)

    @gluon.jit
    def _kernel(
        a_desc, b_desc, c_desc, scale_a, scale_b, M, N, K, rowwise,
        fast: gl.constexpr, stages: gl.constexpr, consumer_registers: gl.constexpr,
    ):  # fmt: skip
        a_smem = gl.allocate_shared_memory(
            a_desc.dtype, [stages] + a_desc.block_type.shape, a_desc.layout
        )
        b_smem = gl.allocate_shared_memory(
            b_desc.dtype, [stages] + b_desc.block_type.shape, b_desc.layout
        )
        c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        barrier: gl.constexpr = mbarrier.MBarrierLayout()
        ready = gl.allocate_shared_memory(gl.int64, [stages, 1], barrier)
        empty = gl.allocate_shared_memory(gl.int64, [stages, 1], barrier)
        for i in gl.static_range(stages):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=1)
        args = (a_desc, b_desc, c_desc, scale_a, scale_b, a_smem, b_smem, c_smem, ready,
                empty, M, N, K, rowwise)  # fmt: skip
        # Worker partitions take constexprs as run-time values: a consumer per mode.
        if fast:
            gl.warp_specialize(
                [(_produce, (args,)), (_consume_fast, (args,))], [8], [consumer_registers]
            )
        else:
            gl.warp_specialize(
                [(_produce, (args,)), (_consume, (args,))], [8], [consumer_registers]
            )


def launch(
    input: Any,
    mat2: Any,
    scale_a: Any,
    scale_b: Any,
    output: Any,
    processors: int | None = None,
    fast: bool = False,
) -> None:
    """Write ``(input * scale_a) @ (mat2 * scale_b)`` into ``output`` (M, N), each step of
    128 along ``k`` summed by the tensor cores and added in float32.  The caller has
    checked the arguments (:func:`nt_torch.hopper_fp8.fits`): ``input`` (M, K) row-major
    and ``mat2`` (K, N) column-major float8_e4m3fn with 16-byte aligned addresses and
    rows, float32 scales of one element each or ``(M, 1)`` and ``(1, N)`` with
    consecutive elements, ``output`` contiguous float16, bfloat16 or float32 with
    16-byte aligned rows, M, N and K positive.  With ``fast`` (``use_fast_accum``), the
    tensor cores accumulate all of ``k`` in their own format, in 128 x 256 tiles; the
    output then is float16 or bfloat16 (a float32 tile does not fit beside the stages).

    ``processors`` programs (by default one per multiprocessor of the current
    device) loop over the tiles.  A launch of an output type and sizes not compiled
    yet compiles first (seconds): :func:`ready` compiles in the background."""
    from nt_triton import _persistent_grid

    # program_cap waits for the driver's background initialisation (see
    # nt_triton.hopper_attention.launch).
    processors = processors or _persistent_grid.program_cap()
    grid, arguments = _arguments(input, mat2, scale_a, scale_b, output, processors, fast)
    compiled = _ASIDE.compiled(_key(input, mat2, scale_a, scale_b, output, fast))
    run(_kernel, compiled, grid, arguments, num_warps=4, maxnreg=_MAX_REGISTERS)


def bind(
    input: Any,
    mat2: Any,
    scale_a: Any,
    scale_b: Any,
    output: Any,
    processors: int | None = None,
    fast: bool = False,
) -> Callable[[Any, Any, Any, Any, Any], None] | None:
    """:func:`launch` (of the mode ``fast``) for the calls whose tensors have these ones'
    sizes, strides, types, device and alignment to 16 bytes (the caller's to guarantee:
    a memo plan's site), at a few microseconds of host time a call: the lean C launcher
    with everything but the five addresses fixed (:func:`nt_triton._gluon_hopper.bind`).
    None until :func:`ready` has compiled the kernel for these arguments, or where that
    launcher does not serve it."""
    from nt_triton import _persistent_grid

    compiled = _ASIDE.compiled(_key(input, mat2, scale_a, scale_b, output, fast))
    if compiled is None:
        return None
    processors = processors or _persistent_grid.program_cap()
    grid, arguments = _arguments(input, mat2, scale_a, scale_b, output, processors, fast)
    # Per call: the three descriptors' tensors (arguments 0-2) and the scales (3, 4).
    made = _gluon_hopper.bind(compiled, grid, arguments, (0, 1, 2, 3, 4))
    if made is None:
        return None
    device, current = input.device.index, _gluon_hopper.streams()

    def bound(input: Any, mat2: Any, scale_a: Any, scale_b: Any, output: Any) -> None:
        made(current(device), input.data_ptr(), mat2.data_ptr(), output.data_ptr(),
             scale_a.data_ptr(), scale_b.data_ptr())  # fmt: skip

    return bound


def ready(
    input: Any,
    mat2: Any,
    scale_a: Any,
    scale_b: Any,
    output: Any,
    *,
    fast: bool = False,
    start: bool = True,
    wait: bool = False,
    may_load: bool = True,
) -> bool:
    """Whether :func:`launch` takes this call (arguments as there) without compiling:
    the first call of a device, output type, kind of scales and specialisation of the
    sizes starts the compile in a background thread and answers False.  The
    keywords are :meth:`nt_triton._compile_aside.Aside.ready`'s (see
    :func:`nt_triton.hopper_attention.ready`)."""
    return _ASIDE.ready(
        _key(input, mat2, scale_a, scale_b, output, fast),
        lambda: _warm(input, mat2, scale_a, scale_b, output, fast),
        start=start,
        wait=wait,
        may_load=may_load,
    )


def settle() -> None:
    """Wait for the background compiles under way."""
    _ASIDE.settle()


def _warm(input: Any, mat2: Any, scale_a: Any, scale_b: Any, output: Any, fast: bool) -> Any:
    """Compile the kernel for a call of these arguments (on their device) into Triton's
    caches, with its launcher, without launching it: a background thread's work.  Returns
    the compiled kernel, which :func:`launch` then calls directly."""
    grid, arguments = _arguments(input, mat2, scale_a, scale_b, output, 1, fast)
    options = {"num_warps": 4, "maxnreg": _MAX_REGISTERS}
    return warm(_kernel, input.device.index, grid, arguments, **options)


def _key(input: Any, mat2: Any, scale_a: Any, scale_b: Any, output: Any, fast: bool) -> Hashable:
    """What decides the kernel Triton compiles for a call: the device, the output type,
    the mode, the kind of scales, and Triton's specialisation of the other arguments: integers
    on being 1, divisible by 16 or 64-bit, pointers on 16-byte alignment.  The
    operands are tensor descriptors, the same for every call that fits."""
    m, k = input.shape
    sizes = specialised(m, mat2.shape[1], k)
    aligned = (scale_a.data_ptr() % 16 == 0, scale_b.data_ptr() % 16 == 0)
    rowwise = _rowwise(scale_a, scale_b)
    return (input.device.index, str(output.dtype), fast, rowwise, sizes, aligned)


def _arguments(
    input: Any,
    mat2: Any,
    scale_a: Any,
    scale_b: Any,
    output: Any,
    processors: int,
    fast: bool = False,
) -> tuple[tuple[int], tuple[Any, ...]]:
    """The grid and the arguments of ``_kernel`` for a call of :func:`launch`."""
    m, k = input.shape
    n = mat2.shape[1]
    columns, stages = (FAST_BLOCK_N, FAST_STAGES) if fast else (BLOCK, STAGES)
    transposed = mat2.t()  # (N, K), K contiguous: the tensor cores take float8 so only
    a_desc = _descriptor(input, m, k, input.stride(0), (BLOCK, BLOCK_K), "float8")
    b_desc = _descriptor(transposed, n, k, transposed.stride(0), (columns, BLOCK_K), "float8")
    c_desc = _descriptor(output, m, n, output.stride(0), (BLOCK, columns), str(output.dtype))
    tiles = -(-m // BLOCK) * -(-n // columns)
    rowwise = int(_rowwise(scale_a, scale_b))
    arguments = (
        a_desc, b_desc, c_desc, scale_a, scale_b, m, n, k, rowwise, fast, stages,
        _CONSUMER_REGISTERS,
    )  # fmt: skip
    return (min(tiles, processors),), arguments


def _rowwise(scale_a: Any, scale_b: Any) -> bool:
    """Whether the scales are a row's and a column's (one of them may hold one element:
    a product of one row or one column), rather than one each."""
    return bool(scale_a.numel() != 1 or scale_b.numel() != 1)


def _descriptor(
    tensor: Any, rows: int, columns: int, stride: int, box: tuple[int, int], kind: str
) -> Any:
    """A 2-D TMA descriptor over ``tensor`` (``rows`` x ``columns``, rows ``stride``
    elements apart, the columns consecutive), copying ``box``-shaped blocks."""
    layout = _layout(box, kind.rsplit(".", 1)[-1])
    return descriptor(tensor, [rows, columns], [stride, 1], list(box), layout)


@functools.cache
def _layout(box: tuple[int, int], kind: str) -> Any:
    """The shared-memory layout of a ``box`` of ``kind`` (``float8`` or an output type's
    name): computed once (microseconds a call on the host)."""
    dtype = gl.float8e4nv if kind == "float8" else getattr(gl, kind)
    return gl.NVMMASharedLayout.get_default_for(list(box), dtype)
