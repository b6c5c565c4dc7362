# mypy: disable-error-code="untyped-decorator,no-untyped-def"
"""Attention's forward on Hopper, warp-specialised, written in Gluon (Triton's lower level).

Triton's ``tl`` front end emits no warp specialisation on Hopper (Triton 3.6:
``tl.range(..., warp_specialize=True)`` changed nothing, or failed to compile;
``docs/design.md``), and without it attention stays at 0.73-0.83 of cuDNN's
kernel at heads of 128.  Gluon, which ships with Triton, exposes what that
takes: partitions of warps with their own registers, TMA copies, mbarriers and
asynchronous warp-group products.  This kernel is FlashAttention-3's forward
written with them, hand-written rather than generated: the library routes to
it where it is known to be faster (:func:`fits`), and its NineToothed kernel
stays the reference and the path everywhere else.

A tile is ``2 * HALF`` query rows of one (batch, head); tiles run head by head
(with a causal mask, the longest first within a head).  One program per
multiprocessor loops over the tiles, taking every so many in turn
(persistent: a tile's query copy and output overlap its neighbours'
products; with a causal mask and short heads, every other round in reverse);
with a causal mask and long heads, one program per tile (:func:`_programs`).
In a program:

- a producer warp copies each tile's query block, then its blocks of keys and
  values into a ring of ``STAGES`` shared buffers (4-D tensor descriptors over
  the tensors as they are, so a head's copies stop at its last row and any
  strides with a contiguous last dimension serve).  Keys and values are
  released apart: a key block once both groups have their scores, a value
  block once both have added its product;
- two consumer warp groups own ``HALF`` query rows each.  They take turns
  issuing their tensor-core work (ping-pong: one group's softmax runs beside
  the other's products), and each overlaps its softmax of key block ``j``
  with its product ``P_{j-1} V_{j-1}`` (issued, not yet waited for).  The
  ring's position and the turn count on across tiles.

Masks apply only to the blocks that need them (the causal diagonal, the key
tail); a block's rows past the queries' end are zeros and are not stored.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable
from typing import Any

from nt_triton import _gluon_hopper
from nt_triton._compile_aside import Aside
from nt_triton._gluon_hopper import (
    available,
    copy_in,
    gl,
    gluon,
    mbarrier,
    run,
    specialised,
    warm,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from nt_triton._gluon_hopper import descriptor as _descriptor

__all__ = ["HEAD", "STAGES", "available", "bind", "launch", "ready", "settle"]

HEAD = 128
"""The head dimension this kernel is built and measured for."""

STAGES = 3
"""Key/value blocks in flight: 3 x 64 KiB plus the 32 KiB query block fit an H100's
227 KiB of shared memory, and measured 0.95-1.05 of cuDNN where 2 gave 0.81-0.92."""

BLOCK_KEYS = 128
"""Keys per block."""

PERSISTENT_CAUSAL_BLOCKS = 32
"""The most query blocks per head (4096 queries) at which causal tiles run persistent.
On an H100 (7 interleaved rounds, the kernel alone, torch time / this; persistent
against a program per tile): (2, 16, 4096) 1.021 against 0.956, (4, 32, 1024) 0.900
against 0.797, (8, 16, 2048) 0.940 against 0.872, (4, 48, 512) 0.812 against 0.708
(the last three with ``SNAKE_BLOCKS``); but (1, 32, 8192) 0.972 against 0.978,
(1, 16, 16384) 0.760 against 1.098 and (1, 32, 32768) 0.914 against 1.033: programs
that drift apart spread over more heads than L2 holds, where a program per tile
keeps them on one."""

SNAKE_BLOCKS = 16
"""The most query blocks per head at which a persistent causal program takes every
other round of tiles in reverse (``_tile``): with short heads, a round's tiles span
several heads of falling lengths, and reversing balances the programs' work (the
figures above at 1024, 2048 and 512 queries); at 4096 queries (one head of 32 tiles
per round of 132) it measured 0.947 against 1.021 without it."""

_CONSUMER_REGISTERS = 240
_MAX_REGISTERS = 168  # 12 warps (2 consumer groups, the producer's group): 65,536 / 384


_ASIDE = Aside("hopper_attention")
"""The kernel's background compiles, by device, data type, mask and size specialisation."""


if gluon is not None:
    HALF = gl.constexpr(64)
    _SNAKE_BLOCKS = gl.constexpr(SNAKE_BLOCKS)

    @gluon.jit
    def _tile(tile, num_tiles, m_blocks, H, H_kv, L_k, block_n: gl.constexpr, causal: gl.constexpr):
        """Tile ``tile``'s batch, head, key/value head, first row, key blocks and whole
        (unmasked) key blocks.  Tiles run head by head (its key blocks stay in L2); causal
        tiles longest first within a head."""
        if causal:
            if m_blocks <= _SNAKE_BLOCKS:  # odd whole rounds in reverse: balances lengths
                programs = gl.num_programs(0)
                lap = tile // programs
                flip = (lap % 2 == 1) & ((lap + 1) * programs <= num_tiles)
                tile = gl.where(flip, lap * programs + programs - 1 - tile % programs, tile)
        bh = tile // m_blocks
        rank = tile % m_blocks
        b = bh // H
        h = bh % H
        h_kv = h // (H // H_kv)
        if causal:
            pid_m = m_blocks - 1 - rank
            row0 = pid_m * (2 * HALF)
            n_blocks = gl.minimum(gl.cdiv(row0 + 2 * HALF, block_n), gl.cdiv(L_k, block_n))
            n_full = gl.minimum(row0 // block_n, L_k // block_n)
        else:
            row0 = rank * (2 * HALF)
            n_blocks = gl.cdiv(L_k, block_n)
            n_full = L_k // block_n
        return b, h, h_kv, row0, n_blocks, n_full

    @gluon.jit
    def _produce(causal: gl.constexpr, args):
        (q_desc, k_desc, v_desc, o_ptr, q_smem, k_smem, v_smem, bars, num_tiles, m_blocks, H,
         H_kv, L_q, L_k, qk_scale) = args  # fmt: skip
        q_ready, q_empty, k_ready, k_empty, v_ready, v_empty, turn = bars
        block_n: gl.constexpr = k_desc.block_type.shape[2]
        stages: gl.constexpr = k_smem.type.shape[0]
        it = 0  # key blocks copied so far, over all tiles: the ring's position
        t = 0
        for tile in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
            b, h, h_kv, row0, n_blocks, n_full = _tile(
                tile, num_tiles, m_blocks, H, H_kv, L_k, block_n, causal
            )
            for c in gl.static_range(2):
                mbarrier.wait(q_empty.index(c), (t & 1) ^ 1)
                mbarrier.expect(q_ready.index(c), q_desc.block_type.nbytes)
                copy_in(q_desc, [b, h, row0 + c * HALF, 0], q_ready.index(c), q_smem.index(c))
            for j in range(n_blocks):
                s = it % stages
                phase = ((it // stages) & 1) ^ 1
                mbarrier.wait(k_empty.index(s), phase)
                mbarrier.expect(k_ready.index(s), k_desc.block_type.nbytes)
                copy_in(k_desc, [b, h_kv, j * block_n, 0], k_ready.index(s), k_smem.index(s))
                mbarrier.wait(v_empty.index(s), phase)
                mbarrier.expect(v_ready.index(s), v_desc.block_type.nbytes)
                copy_in(v_desc, [b, h_kv, j * block_n, 0], v_ready.index(s), v_smem.index(s))
                it += 1
            t += 1

    @gluon.jit
    def _masked(S, j, n_full, rows0, L_k, causal: gl.constexpr, layout: gl.constexpr):
        """The raw scores of key block ``j``, -inf where a key is past the end or (causal)
        after the row; blocks before ``n_full`` need no mask."""
        block_n: gl.constexpr = S.type.shape[1]
        if j >= n_full:
            cols = j * block_n + gl.arange(0, block_n, layout=gl.SliceLayout(0, layout))
            rows = rows0 + gl.arange(0, HALF, layout=gl.SliceLayout(1, layout))
            keep = gl.expand_dims(cols < L_k, 0) & gl.expand_dims(rows >= 0, 1)
            if causal:
                keep = keep & (gl.expand_dims(cols, 0) <= gl.expand_dims(rows, 1))
            S = gl.where(keep, S, -float("inf"))
        return S

    @gluon.jit
    def _consume(c: gl.constexpr, causal: gl.constexpr, args):
        (q_desc, k_desc, v_desc, o_ptr, q_smem, k_smem, v_smem, bars, num_tiles, m_blocks, H,
         H_kv, L_q, L_k, qk_scale) = args  # fmt: skip
        q_ready, q_empty, k_ready, k_empty, v_ready, v_empty, turn = bars
        block_n: gl.constexpr = k_desc.block_type.shape[2]
        head: gl.constexpr = k_desc.block_type.shape[3]
        stages: gl.constexpr = k_smem.type.shape[0]
        dtype: gl.constexpr = k_desc.dtype
        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, block_n, 16]
        )
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, head, 16]
        )
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
        q = q_smem.index(c).reshape([HALF, head])
        if c == 1:  # the first turn is the other group's
            mbarrier.arrive(turn.index(0))
        zero = gl.zeros([HALF, block_n], gl.float32, s_layout)
        it = 0  # key blocks consumed so far, over all tiles: the ring's position and the turn
        t = 0
        for tile in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
            b, h, h_kv, row0, n_blocks, n_full = _tile(
                tile, num_tiles, m_blocks, H, H_kv, L_k, block_n, causal
            )
            rows0 = row0 + c * HALF
            acc = gl.zeros([HALF, head], gl.float32, o_layout)
            mbarrier.wait(q_ready.index(c), t & 1)

            # Key block 0: scores only.
            s = it % stages
            mbarrier.wait(k_ready.index(s), (it // stages) & 1)
            mbarrier.wait(turn.index(c), it & 1)
            kt = k_smem.index(s).reshape([block_n, head]).permute((1, 0))
            S = warpgroup_mma(q, kt, zero, use_acc=False, is_async=True)
            mbarrier.arrive(turn.index(1 - c))
            S = warpgroup_mma_wait(0, deps=(S,))
            mbarrier.arrive(k_empty.index(s))
            mbarrier.arrive(q_empty.index(c), pred=n_blocks == 1)
            S = _masked(S, 0, n_full, rows0, L_k, causal, s_layout)
            m_i = gl.max(S, 1)
            p = gl.exp2(S * qk_scale - gl.expand_dims(m_i * qk_scale, 1))
            l_i = gl.sum(p, 1)
            p16 = gl.convert_layout(p.to(dtype), p_layout)
            it += 1

            for j in range(1, n_blocks):
                s = it % stages
                sp = (it - 1) % stages
                mbarrier.wait(k_ready.index(s), (it // stages) & 1)
                mbarrier.wait(v_ready.index(sp), ((it - 1) // stages) & 1)
                mbarrier.wait(turn.index(c), it & 1)
                kt = k_smem.index(s).reshape([block_n, head]).permute((1, 0))
                S = warpgroup_mma(q, kt, zero, use_acc=False, is_async=True)
                v = v_smem.index(sp).reshape([block_n, head])
                acc = warpgroup_mma(p16, v, acc, is_async=True)
                mbarrier.arrive(turn.index(1 - c))
                S = warpgroup_mma_wait(1, deps=(S,))
                mbarrier.arrive(k_empty.index(s))
                mbarrier.arrive(q_empty.index(c), pred=j == n_blocks - 1)
                S = _masked(S, j, n_full, rows0, L_k, causal, s_layout)
                m_new = gl.maximum(m_i, gl.max(S, 1))
                alpha = gl.exp2((m_i - m_new) * qk_scale)
                p = gl.exp2(S * qk_scale - gl.expand_dims(m_new * qk_scale, 1))
                l_i = l_i * alpha + gl.sum(p, 1)
                m_i = m_new
                acc = warpgroup_mma_wait(0, deps=(acc,))
                mbarrier.arrive(v_empty.index(sp))
                acc = acc * gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), 1)
                p16 = gl.convert_layout(p.to(dtype), p_layout)
                it += 1

            sl = (it - 1) % stages
            mbarrier.wait(v_ready.index(sl), ((it - 1) // stages) & 1)
            v = v_smem.index(sl).reshape([block_n, head])
            acc = warpgroup_mma(p16, v, acc, is_async=True)
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(v_empty.index(sl))

            out = acc / gl.expand_dims(gl.convert_layout(l_i, gl.SliceLayout(1, o_layout)), 1)
            rows = rows0 + gl.arange(0, HALF, layout=gl.SliceLayout(1, o_layout))
            cols = gl.arange(0, head, layout=gl.SliceLayout(0, o_layout))
            base = ((b * H + h).to(gl.int64) * L_q + rows.to(gl.int64)) * head
            offsets = gl.expand_dims(base, 1) + gl.expand_dims(cols, 0)
            gl.store(o_ptr + offsets, out.to(dtype), mask=gl.expand_dims(rows < L_q, 1))
            t += 1

    # Worker partitions take constexprs as run-time values, so each (partition, causal)
    # pair is a function of its own, with the flags written in.
    @gluon.jit
    def _group0(args):
        _consume(0, False, args)

    @gluon.jit
    def _group1(args):
        _consume(1, False, args)

    @gluon.jit
    def _loads(args):
        _produce(False, args)

    @gluon.jit
    def _group0_causal(args):
        _consume(0, True, args)

    @gluon.jit
    def _group1_causal(args):
        _consume(1, True, args)

    @gluon.jit
    def _loads_causal(args):
        _produce(True, args)

    @gluon.jit
    def _forward(
        q_desc, k_desc, v_desc, o_ptr, num_tiles, m_blocks, L_q, L_k, H, H_kv, qk_scale,
        causal: gl.constexpr, stages: gl.constexpr, consumer_registers: gl.constexpr,
    ):  # fmt: skip
        q_smem = gl.allocate_shared_memory(
            q_desc.dtype, [2] + q_desc.block_type.shape, q_desc.layout
        )
        k_smem = gl.allocate_shared_memory(
            k_desc.dtype, [stages] + k_desc.block_type.shape, k_desc.layout
        )
        v_smem = gl.allocate_shared_memory(
            v_desc.dtype, [stages] + v_desc.block_type.shape, v_desc.layout
        )
        barrier: gl.constexpr = mbarrier.MBarrierLayout()
        q_ready = gl.allocate_shared_memory(gl.int64, [2, 1], barrier)
        q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], barrier)
        turn = gl.allocate_shared_memory(gl.int64, [2, 1], barrier)
        k_ready = gl.allocate_shared_memory(gl.int64, [stages, 1], barrier)
        k_empty = gl.allocate_shared_memory(gl.int64, [stages, 1], barrier)
        v_ready = gl.allocate_shared_memory(gl.int64, [stages, 1], barrier)
        v_empty = gl.allocate_shared_memory(gl.int64, [stages, 1], barrier)
        for i in gl.static_range(2):
            mbarrier.init(q_ready.index(i), count=1)
            mbarrier.init(q_empty.index(i), count=1)
            mbarrier.init(turn.index(i), count=1)
        for i in gl.static_range(stages):
            mbarrier.init(k_ready.index(i), count=1)
            mbarrier.init(k_empty.index(i), count=2)  # both groups release a block
            mbarrier.init(v_ready.index(i), count=1)
            mbarrier.init(v_empty.index(i), count=2)

        bars = (q_ready, q_empty, k_ready, k_empty, v_ready, v_empty, turn)
        args = (q_desc, k_desc, v_desc, o_ptr, q_smem, k_smem, v_smem, bars, num_tiles,
                m_blocks, H, H_kv, L_q, L_k, qk_scale)  # fmt: skip
        if causal:
            gl.warp_specialize(
                [(_group0_causal, (args,)), (_group1_causal, (args,)), (_loads_causal, (args,))],
                [4, 1],
                [consumer_registers, 24],
            )
        else:
            gl.warp_specialize(
                [(_group0, (args,)), (_group1, (args,)), (_loads, (args,))],
                [4, 1],
                [consumer_registers, 24],
            )


def descriptor(tensor: Any, rows: int) -> Any:
    """A 4-D TMA descriptor over ``tensor`` (B, H, L, D) as it lies in memory, copying
    blocks of ``rows`` rows of one head."""
    block = [1, 1, rows, tensor.shape[3]]
    layout = _layout(rows, tensor.shape[3], str(tensor.dtype))
    return _descriptor(tensor, list(tensor.shape), list(tensor.stride()), block, layout)


@functools.cache
def _layout(rows: int, head: int, dtype: str) -> Any:
    """The shared-memory layout of a block of ``rows`` x ``head`` elements of ``dtype``
    (``torch.float16``...): computed once, as it costs 5 us a call on the host."""
    kind = {"float16": gl.float16, "bfloat16": gl.bfloat16}[dtype.rsplit(".", 1)[-1]]
    return gl.NVMMASharedLayout.get_default_for([1, 1, rows, head], kind)


def launch(
    query: Any,
    key: Any,
    value: Any,
    output: Any,
    scale: float,
    causal: bool,
    processors: int | None = None,
) -> None:
    """Write attention of ``query`` (B, H, Lq, HEAD) over ``key``, ``value`` (B, H_kv, Lk,
    HEAD) into ``output`` (B, H, Lq, HEAD, contiguous).  The caller has checked the
    arguments: float16 or bfloat16 alike, a contiguous last dimension, 16-byte
    aligned pointers and strides, non-empty lengths, H_kv dividing H.

    ``processors`` programs (by default one per multiprocessor of the current
    device, as for any persistent kernel) loop over the tiles (persistent: a tile's
    query copy and output overlap its neighbours' work).  A launch of a data type and mask not
    compiled yet compiles first (seconds): :func:`ready` compiles in the background."""
    from nt_triton import _persistent_grid

    # The op made its NineToothed kernel first, which started initialising Triton's
    # driver in the background; Triton's lazy driver takes no lock: program_cap
    # waits for it rather than initialise (and compile its C module) a second time.
    processors = processors or _persistent_grid.program_cap()
    grid, arguments = _arguments(query, key, value, output, scale, causal, processors)
    compiled = _ASIDE.compiled(_key(query, key, output, causal))
    run(_forward, compiled, grid, arguments, num_warps=4, maxnreg=_MAX_REGISTERS)


def bind(
    query: Any, key: Any, value: Any, output: Any, scale: float, causal: bool
) -> Callable[[Any, Any, Any, Any, float], None] | None:
    """:func:`launch` for the calls of this mask whose tensors have these ones' sizes,
    strides, types, device and alignment (the caller's to guarantee: a memo plan's
    site), taking ``(query, key, value, output, scale)``, at a few microseconds of host
    time a call (as :func:`nt_triton.hopper_scaled_mm.bind`).  None until :func:`ready`
    has compiled the kernel for them, or where the lean launcher does not serve it."""
    from nt_triton import _persistent_grid

    compiled = _ASIDE.compiled(_key(query, key, output, causal))
    if compiled is None:
        return None
    processors = _persistent_grid.program_cap()
    grid, arguments = _arguments(query, key, value, output, scale, causal, processors)
    made = _gluon_hopper.bind(compiled, grid, arguments, (0, 1, 2, 3, 10))
    if made is None:
        return None
    device, current, log2e = query.device.index, _gluon_hopper.streams(), math.log2(math.e)

    def bound(query: Any, key: Any, value: Any, output: Any, scale: float) -> None:
        made(current(device), query.data_ptr(), key.data_ptr(), value.data_ptr(),
             output.data_ptr(), scale * log2e)  # fmt: skip

    return bound


def ready(
    query: Any,
    key: Any,
    value: Any,
    output: Any,
    causal: bool,
    *,
    start: bool = True,
    wait: bool = False,
    may_load: bool = True,
) -> bool:
    """Whether :func:`launch` takes this call (arguments as there) without compiling.

    The first call of a device, data type, mask and specialisation of the sizes
    (Triton's: divisible by 16, equal to 1) starts the compile in a
    background thread (``start`` False: starts nothing) and answers False, as do
    the calls while it compiles: the caller runs another kernel meanwhile.  With
    ``wait``, a compile under way (or this call's) is waited for instead.
    ``may_load`` False (a stream is being captured) refuses the first launch after
    the compile, which loads the binary onto the GPU.  A failed compile answers
    False for good, with a warning."""
    return _ASIDE.ready(
        _key(query, key, output, causal),
        lambda: _warm(query, key, value, output, causal),
        start=start,
        wait=wait,
        may_load=may_load,
    )


def settle() -> None:
    """Wait for the background compiles under way (a benchmark about to time the calls
    after them, a test)."""
    _ASIDE.settle()


def _warm(query: Any, key: Any, value: Any, output: Any, causal: bool) -> Any:
    """Compile the kernel for a call of these arguments (on their device) into Triton's
    caches, with its launcher, without launching it: a background thread's work."""
    grid, arguments = _arguments(query, key, value, output, 1.0, causal, 1)
    options = {"num_warps": 4, "maxnreg": _MAX_REGISTERS}
    return warm(_forward, query.device.index, grid, arguments, **options)


def _key(query: Any, key: Any, output: Any, causal: bool) -> Hashable:
    """What decides the kernel Triton compiles for a call: the device, the data type,
    the mask, and Triton's specialisation of the other arguments: integers on being 1,
    divisible by 16 or 64-bit, the output's pointer on 16-byte alignment (a compile
    serves the calls that agree on all of them; more keys than Triton has is a compile
    found in its cache)."""
    sizes = specialised(*_sizes(query, key))
    aligned = output.data_ptr() % 16 == 0
    return (query.device.index, str(query.dtype), bool(causal), sizes, aligned)


def _arguments(
    query: Any, key: Any, value: Any, output: Any, scale: float, causal: bool, processors: int
) -> tuple[tuple[int], tuple[Any, ...]]:
    """The grid and the arguments of ``_forward`` for a call of :func:`launch`."""
    tiles, m_blocks, l_q, l_k, heads, heads_kv = _sizes(query, key)
    q_desc = descriptor(query, int(HALF))
    k_desc = descriptor(key, BLOCK_KEYS)
    v_desc = descriptor(value, BLOCK_KEYS)
    programs = _programs(tiles, m_blocks, causal, processors)
    arguments = (
        q_desc, k_desc, v_desc, output, tiles, m_blocks, l_q, l_k, heads, heads_kv,
        scale * math.log2(math.e), bool(causal), STAGES, _CONSUMER_REGISTERS,
    )  # fmt: skip
    return (programs,), arguments


def _programs(tiles: int, m_blocks: int, causal: bool, processors: int) -> int:
    """How many programs take the tiles: ``processors`` (persistent), except for causal
    heads longer than ``PERSISTENT_CAUSAL_BLOCKS`` query blocks, where one program per
    tile keeps the programs on the same head (its keys and values in L2)."""
    if causal and m_blocks > PERSISTENT_CAUSAL_BLOCKS:
        return tiles
    return min(tiles, processors)


def _sizes(query: Any, key: Any) -> tuple[int, int, int, int, int, int]:
    """``_forward``'s integer arguments: tiles, query blocks per head, query and key
    lengths, heads and key/value heads."""
    batch, heads, l_q, _ = query.shape
    heads_kv, l_k = key.shape[1], key.shape[2]
    m_blocks = -(-l_q // (2 * int(HALF)))
    return m_blocks * batch * heads, m_blocks, l_q, l_k, heads, heads_kv
