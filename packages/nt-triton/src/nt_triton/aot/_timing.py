"""Timing a library's variants on the GPU at build time, through the driver API.

No framework is needed: the CUDA driver (``libcuda.so.1``, or the file
``NINETOOTHED_LIBCUDA`` names, as the libraries load it) is called through
ctypes to allocate representative tensors, and CUDA events time each
variant's launch function.  Representative sizes: a declared size as it is,
a symbolic one 256, capped by the symbol's ``upper_bound`` (upstream's
``shape_options``); memory is zeroed; scalars are 1.  A variant whose launch
refuses the representative call (shapes a relation of sizes ties) is not
timed.  Keys are spread over every visible GPU, one thread per device.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ninetoothed.aot import NineToothedTensor
from ninetoothed.arrangement.dtype import DataType
from ninetoothed.arrangement.symbol import Symbol
from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = ["Group", "device_count", "time_groups"]

PRESET_SIZE = 256
"""A symbolic size's representative value (upstream's default)."""

_BYTES = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}


@dataclass(frozen=True)
class Group:
    """Variants that serve the same calls: a spec (their common parameters), launch
    functions, and what those calls are given where a variant fixes it."""

    spec: KernelSpec
    functions: tuple[str, ...]
    sizes: Mapping[tuple[str, int], int] = field(default_factory=dict)
    """Sizes ``(parameter, dim)`` the variants were compiled for (padded alike)."""
    constants: Mapping[str, Any] = field(default_factory=dict)
    """Values of constexpr scalars the call gives, by name."""


def _driver() -> Any:
    path = os.environ.get("NINETOOTHED_LIBCUDA") or "libcuda.so.1"
    driver = ctypes.CDLL(path)
    if driver.cuInit(0) != 0:
        raise OSError("cuInit failed")
    return driver


def device_count() -> int:
    """How many GPUs the driver sees (0 without a driver)."""
    try:
        driver = _driver()
    except OSError:
        return 0
    count = ctypes.c_int(0)
    return count.value if driver.cuDeviceGetCount(ctypes.byref(count)) == 0 else 0


def _shape(parameter: Any, given: Mapping[tuple[str, int], int]) -> tuple[int, ...]:
    sizes = []
    for dim, size in enumerate(parameter.source.shape):
        if (parameter.name, dim) in given:
            sizes.append(given[parameter.name, dim])
        elif isinstance(size, Symbol):
            bound = size.upper_bound
            sizes.append(min(PRESET_SIZE, bound) if bound is not None else PRESET_SIZE)
        else:
            sizes.append(int(size))
    return tuple(sizes)


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(f"{what} failed with CUDA error {result}")


class _Arguments:
    """Representative arguments of a spec, allocated in the current context."""

    def __init__(self, driver: Any, group: Group) -> None:
        self.driver = driver
        self.pointers: list[ctypes.c_uint64] = []
        self.values: list[Any] = []
        for parameter in group.spec.parameters:
            if parameter.is_scalar:
                dtype = parameter.source.dtype
                is_float = not isinstance(dtype, DataType) or dtype.name.startswith(("float", "bf"))
                given = group.constants.get(parameter.name, 1)
                value: Any = (
                    ctypes.c_double(float(given)) if is_float else ctypes.c_int64(int(given))
                )
                self.values.append(NineToothedTensor(ctypes.addressof(value), None, None))
                self.pointers.append(value)  # kept alive
                continue
            shape = _shape(parameter, group.sizes)
            dtype = DataType(parameter.source.dtype).name
            count = max(1, math.prod(shape)) * _BYTES.get(dtype, 4)
            pointer = ctypes.c_uint64(0)
            _check(
                driver.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(count)), "cuMemAlloc"
            )
            _check(
                driver.cuMemsetD8_v2(pointer, ctypes.c_ubyte(0), ctypes.c_size_t(count)), "cuMemset"
            )
            self.pointers.append(pointer)
            strides: list[int] = []
            step = 1
            for size in reversed(shape):
                strides.insert(0, step)
                step *= max(size, 1)
            self.values.append(
                NineToothedTensor(
                    pointer.value,
                    (ctypes.c_uint64 * len(shape))(*shape),
                    (ctypes.c_int64 * len(shape))(*strides),
                )
            )

    def free(self) -> None:
        for pointer in self.pointers:
            if isinstance(pointer, ctypes.c_uint64) and pointer.value:
                self.driver.cuMemFree_v2(pointer)


def _milliseconds(driver: Any, launch: Any, arguments: Sequence[Any]) -> float:
    """The median time of one launch (inf if the launch refuses the call)."""
    stream = ctypes.c_void_p(0)
    if launch(stream, *arguments) != 0:
        return math.inf
    start, stop = ctypes.c_void_p(), ctypes.c_void_p()
    _check(driver.cuEventCreate(ctypes.byref(start), 0), "cuEventCreate")
    _check(driver.cuEventCreate(ctypes.byref(stop), 0), "cuEventCreate")
    elapsed = ctypes.c_float(0)
    try:  # CUDA 12.8 added the _v2 entry point (13's headers call it by the old name)
        elapsed_time = driver.cuEventElapsedTime_v2
    except AttributeError:
        elapsed_time = driver.cuEventElapsedTime
    times: list[float] = []
    count = 1
    sized = False
    try:
        while len(times) < 7:
            _check(driver.cuEventRecord(start, stream), "cuEventRecord")
            for _ in range(count):
                launch(stream, *arguments)
            _check(driver.cuEventRecord(stop, stream), "cuEventRecord")
            _check(driver.cuEventSynchronize(stop), "cuEventSynchronize")
            _check(elapsed_time(ctypes.byref(elapsed), start, stop), "elapsed time")
            if not sized:  # the first round only sizes the others (about 2 ms each)
                sized = True
                count = max(1, min(1000, int(2.0 / max(elapsed.value, 1e-3))))
                continue
            times.append(elapsed.value / count)
    finally:
        driver.cuEventDestroy_v2(start)
        driver.cuEventDestroy_v2(stop)
    times.sort()
    return times[len(times) // 2]


def _time_on(
    device: int, library: Any, groups: dict[int, Group], results: dict[int, list[float]]
) -> None:
    """Time ``groups`` on ``device`` (its primary context made current on this thread)."""
    driver = _driver()
    handle, context = ctypes.c_int(0), ctypes.c_void_p()
    _check(driver.cuDeviceGet(ctypes.byref(handle), device), "cuDeviceGet")
    _check(
        driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), handle), "cuDevicePrimaryCtxRetain"
    )
    _check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    for index, group in groups.items():
        arguments = _Arguments(driver, group)
        try:
            launches = [getattr(library, name) for name in group.functions]
            results[index] = [_milliseconds(driver, f, arguments.values) for f in launches]
        finally:
            driver.cuCtxSynchronize()
            arguments.free()


def time_groups(library: Any, groups: Sequence[Group], devices: int) -> list[list[float]]:
    """Each group's variants' times in milliseconds (inf: not timed), keys spread over
    ``devices`` GPUs."""
    results: dict[int, list[float]] = {}
    errors: list[BaseException] = []
    shares: list[dict[int, Group]] = [{} for _ in range(max(1, devices))]
    for index, group in enumerate(groups):
        shares[index % len(shares)][index] = group

    def run(device: int) -> None:
        try:
            _time_on(device, library, shares[device], results)
        except BaseException as error:  # noqa: BLE001 - reported by the caller's thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(d,)) for d in range(len(shares))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return [results[index] for index in range(len(groups))]
