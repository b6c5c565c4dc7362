"""How the fast path reads PyTorch tensors and asks PyTorch for devices and streams.

:func:`host_reads` is what :class:`nt_torch.adapter.TorchAdapter` gives
the kernel's fast path (:class:`ninetoothed.runtime.hookspecs.FastPath`): the reads per
tensor (``data_ptr()``, ``shape``, ``stride()``, ``dtype``,
``get_device()``), PyTorch's cheapest calls for the current device and raw
stream (``torch._C._cuda_getDevice``, ``torch._C._cuda_getCurrentRawStream``:
C functions, a fraction of a microsecond; ``torch.cuda.current_stream()``
costs about 7 µs and is never used per call), CUDA-event timing and
snapshots for the tuner, the job's process group (tuning together), and a
*guard*: the C++ tensor check that ``torch.compile`` uses for its own guards
(``TensorGuards``: dtype, device, sizes, strides and dispatch keys of every
tensor in one call), which lets the hot path confirm the most recent plan
without building a key.  The guard is private PyTorch API: it is checked once
per process against known answers and left out (the dict lookup alone) if it
misbehaves or is missing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch

from ninetoothed.runtime.hookspecs import HostReads
from nt_torch._distributed import process_group
from nt_torch.tracing import traced

KEY_READS = ("{}.shape", "{}.stride()", "{}.dtype", "{}.get_device()")
"""What keys a plan, per tensor."""

MISS_WHEN = (torch.is_grad_enabled, "{}.requires_grad")
"""A tensor that needs a gradient misses while grad mode is on, so the adapter refuses
it instead of detaching it, even where a call under ``no_grad`` made a plan for the
same tensors."""


def _make_guard(tensors: Sequence[Any]) -> Callable[..., bool]:
    from torch._C._dynamo import guards

    # Per tensor, its sizes and strides (a None would leave that dimension unchecked).
    guard: Any = cast(Any, guards).TensorGuards(
        *tensors,
        dynamic_dims_sizes=[list(t.shape) for t in tensors],
        dynamic_dims_strides=[list(t.stride()) for t in tensors],
    )
    check: Callable[..., bool] = guard.check
    return check


@functools.cache
def guard_factory() -> Callable[[Sequence[Any]], Callable[..., bool]] | None:
    """``TensorGuards`` as a guard factory, if it answers as expected here."""
    try:
        a = torch.zeros(4, dtype=torch.float16)
        check = _make_guard([a])
        assert check is not None
        expected = {
            "same": (check(a), True),
            "other tensor, same layout": (check(torch.ones(4, dtype=torch.float16)), True),
            "shape": (check(torch.zeros(5, dtype=torch.float16)), False),
            "stride": (check(torch.zeros(8, dtype=torch.float16)[::2]), False),
            "dtype": (check(torch.zeros(4)), False),
            "not a tensor": (check(4), False),
        }
    except Exception:  # noqa: BLE001 - missing or changed private API: no guard
        return None
    if any(got is not wanted for got, wanted in expected.values()):
        return None
    return _make_guard


FLUSH_BYTES_FLOOR = 256 << 20
"""The smallest buffer written between timed runs (``triton.testing.do_bench``'s size)."""


def flush_buffer() -> torch.Tensor:
    """A buffer on the current device large enough that zeroing it evicts the L2 cache.

    Twice the L2 size, and at least 256 MiB as ``do_bench`` uses: allocated per
    timing (PyTorch's caching allocator makes that cheap), never kept, so
    tuning holds no memory once it ends.
    """
    l2_bytes = int(getattr(torch.cuda.get_device_properties(), "L2_cache_size", 0) or 0)
    return torch.empty(max(FLUSH_BYTES_FLOOR, 2 * l2_bytes), dtype=torch.int8, device="cuda")


def time_runs(run: Callable[[], None], count: int) -> list[float]:
    """Milliseconds of each of ``count`` runs, from CUDA events on the current stream.

    The L2 cache is flushed before each run, as ``triton.testing.do_bench``
    does: timed back to back, a kernel whose data fits in L2 (a 16M-element
    float16 silu reads and writes 64 MB against the H100's 50 MB of L2) finds
    part of it there from the previous run, and configurations that profit
    from that warm cache win the tuning but not a cold-cache benchmark.
    """
    event: Any = torch.cuda.Event
    starts = [event(enable_timing=True) for _ in range(count)]
    ends = [event(enable_timing=True) for _ in range(count)]
    flush = flush_buffer()
    for start, end in zip(starts, ends):
        flush.zero_()
        start.record()
        run()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in zip(starts, ends)]


def snapshot(tensor: torch.Tensor) -> Callable[[], None]:
    """Copy ``tensor``; the returned function copies it back."""
    saved = tensor.detach().clone()

    def restore() -> None:
        with torch.no_grad():
            tensor.copy_(saved)

    return restore


def host_reads() -> HostReads:
    """What the fast path reads from PyTorch (made once per process)."""
    multi = torch.cuda.device_count() > 1
    return HostReads(
        pointer_read="{}.data_ptr()",
        key_reads=KEY_READS,
        miss_when=MISS_WHEN,
        device_of=lambda tensor: tensor.get_device(),
        raw_stream=torch._C._cuda_getCurrentRawStream,
        current_device=torch._C._cuda_getDevice if multi else None,
        device_guard=torch.cuda.device,
        guard=guard_factory(),
        traced=traced,
        capturing=torch.cuda.is_current_stream_capturing,
        device_name=torch.cuda.get_device_name,
        timer=time_runs,
        snapshot=snapshot,
        group=process_group,
    )
