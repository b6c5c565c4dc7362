"""How the fast path reads Paddle tensors and asks Paddle for devices and streams.

:func:`host_reads` is what :class:`nt_paddle.adapter.PaddleAdapter` gives
the kernel's fast path (:class:`ninetoothed.runtime.hookspecs.FastPath`): per tensor
``data_ptr()``, ``shape`` and ``strides`` (as tuples: Paddle's are not
hashable), ``dtype`` (its identity, :func:`dtype_read`) and
``get_device()``; Paddle's current raw stream; the CUDA current device
(Paddle's binding of ``cudaGetDevice``) and a guard switching it; timing by
synchronising; snapshots with ``clone``/``copy_``; the job's group of ranks
for tuning together (:mod:`nt_paddle._distributed`).  Paddle has no
counterpart of PyTorch's C++ tensor guard, so every call builds its key and
looks its plan up in a dict.

Paddle's GPU build is not on the machines this was written on: the stream
read is checked against ``paddle.device.current_stream`` once and used only
if both agree; the hot path's host cost was measured on the CPU with the
launch stubbed (``tools/fakecuda/check_fastpath.py --time``, which ``benchmarks/launch.py
--paddle-stub`` runs).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import paddle

from ninetoothed.runtime.hookspecs import HostReads
from nt_paddle._distributed import process_group


def _slow_stream(index: int) -> int:
    stream = paddle.device.current_stream(f"gpu:{index}")
    return int(stream.__cuda_stream__()[1])


def raw_stream_function() -> Callable[[int], int]:
    """Paddle's current stream on a device as a raw handle, by the cheapest read that agrees
    with ``paddle.device.current_stream``."""
    try:
        current = paddle.base.core._get_current_stream
        reference = _slow_stream(0)
        for attribute in ("raw_stream", "cuda_stream"):
            value = getattr(current(0), attribute, None)
            if isinstance(value, int) and value == reference:
                return lambda index: int(getattr(current(index), attribute))
    except Exception:  # noqa: BLE001 - no CUDA build, or another Paddle: the documented path
        pass
    return _slow_stream


def time_runs(run: Callable[[], None], count: int) -> list[float]:
    """Milliseconds of each run, synchronising around each (Paddle's events differ by build)."""
    results = []
    for _ in range(count):
        paddle.device.synchronize()
        began = time.perf_counter()
        run()
        paddle.device.synchronize()
        results.append((time.perf_counter() - began) * 1e3)
    return results


def snapshot(tensor: Any) -> Callable[[], None]:
    """Copy ``tensor``; the returned function copies it back."""
    saved = tensor.detach().clone()

    def restore() -> None:
        with paddle.no_grad():
            tensor.copy_(saved, True)

    return restore


def dtype_read() -> str:
    """How the key reads a tensor's dtype: its identity where Paddle's dtypes are singletons.

    Hashing a ``paddle.dtype`` costs about 1.7 µs and comparing two ``Place``s
    3.7 µs (pybind11, measured on the CPU), several times the rest of the key:
    the key holds the dtype's ``id`` (0.4 µs; a singleton never dies, so its id
    is never reused) and ``get_device()`` (an int) instead of the place.
    """
    first, second = paddle.zeros([1], dtype="float16"), paddle.zeros([2], dtype="float16")
    return "id({}.dtype)" if first.dtype is second.dtype else "{}.dtype"


def host_reads(device_guard: Callable[[int], Any]) -> HostReads:
    """What the fast path reads from Paddle (``device_guard``: the adapter's)."""
    core = paddle.base.core
    multi = paddle.device.cuda.device_count() > 1
    return HostReads(
        pointer_read="{}.data_ptr()",
        key_reads=("tuple({}.shape)", "tuple({}.strides)", dtype_read(), "{}.get_device()"),
        device_of=lambda tensor: tensor.place.gpu_device_id(),
        raw_stream=raw_stream_function(),
        current_device=core.get_cuda_current_device_id if multi else None,
        device_guard=device_guard,
        device_name=paddle.device.cuda.get_device_name,
        timer=time_runs,
        snapshot=snapshot,
        group=process_group,
    )
