"""Scratch memory for kernels that need it, allocated and freed on the launch's stream.

A kernel that makes tensor descriptors (``tl.make_tensor_descriptor``: the
persistent programs' loads and stores, :mod:`nt_triton._codegen.descriptors`)
writes each one to global memory before its first copy: Triton's launcher asks
for ``programs x global_scratch_size`` bytes through its allocator
(``triton.set_allocator``) at every launch.  That allocator is a context
variable: a thread that never set one (autograd's backward threads among them)
has Triton's null allocator, which raises.

So these launches carry their own: :func:`provided` wraps a launch so that,
where the caller set no allocator, the scratch comes from the CUDA driver's
stream-ordered allocator (``cuMemAllocAsync``) on the launch's stream and is
freed on that stream (``cuMemFreeAsync``) once the launch is enqueued.  The
memory is then the kernel's alone whatever other streams run, and a CUDA graph
captured around the launch records the allocation and the free as its own
nodes.  No framework is involved: PyTorch, Paddle and a bare Triton program
launch the same way.  A caller's own allocator, where set, is used instead.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

__all__ = ["needs_scratch", "provided"]


def needs_scratch(kernel: Any) -> bool:
    """Whether the compiled ``kernel`` asks its launcher for global scratch memory."""
    return bool(getattr(kernel.metadata, "global_scratch_size", 0) or 0)


def provided(launch: Callable[..., Any]) -> Callable[..., Any]:
    """``launch`` (a ``launch(stream, *arguments)``) with scratch memory provided where
    the caller set no allocator (see the module's docstring)."""
    from triton.runtime import _allocation

    variable = _allocation._allocator
    null = _allocation._NULL_ALLOCATOR

    def with_scratch(stream: int, *arguments: Any) -> None:
        current = variable.get()
        if current is not null:
            launch(stream, *arguments)
            return
        allocator = _StreamOrdered()
        variable.set(allocator)
        try:
            launch(stream, *arguments)
        finally:
            variable.set(current)
            allocator.release()

    return with_scratch


class _Buffer(int):
    """What Triton's launcher takes from an allocator: an object with ``data_ptr()``.

    An int as well: Triton's C launcher checks an object's address with the driver
    (``cuPointerGetAttribute``), which fails for memory a CUDA graph's capture
    allocated (not backed until the graph runs), and takes an int as it is."""

    def data_ptr(self) -> int:
        return int(self)


class _StreamOrdered:
    """A Triton allocator taking memory from the CUDA driver on the launch's stream;
    :meth:`release` frees what it gave on the same streams."""

    def __init__(self) -> None:
        self.taken: list[tuple[int, int]] = []

    def __call__(self, size: int, alignment: int, stream: int | None) -> _Buffer:
        driver = _driver()
        pointer = ctypes.c_uint64()
        # The driver's pools give blocks of at least 256-byte alignment, Triton asks 128 at most.
        _check(driver.cuMemAllocAsync(ctypes.byref(pointer), size, stream or 0), "cuMemAllocAsync")
        self.taken.append((pointer.value, stream or 0))
        return _Buffer(pointer.value)

    def release(self) -> None:
        if not self.taken:  # nothing asked (Triton's interpreter never asks)
            return
        driver = _driver()
        for pointer, stream in self.taken:
            _check(driver.cuMemFreeAsync(ctypes.c_uint64(pointer), stream), "cuMemFreeAsync")
        self.taken.clear()


@functools.cache
def _driver() -> Any:
    """The CUDA driver library, with the two entry points typed."""
    library = ctypes.CDLL("libcuda.so.1")
    library.cuMemAllocAsync.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    library.cuMemAllocAsync.argtypes += [ctypes.c_void_p]
    library.cuMemFreeAsync.argtypes = [ctypes.c_uint64, ctypes.c_void_p]
    library.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    return library


def _check(result: int, call: str) -> None:
    if result:
        name = ctypes.c_char_p()
        _driver().cuGetErrorName(result, ctypes.byref(name))
        raise RuntimeError(
            f"{call} of a kernel's scratch memory failed: "
            f"{(name.value or b'error %d' % result).decode()}"
        )
