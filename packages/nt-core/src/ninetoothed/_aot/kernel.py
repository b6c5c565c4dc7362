"""The Python callable over a built C library: framework tensors in, the C call out.

A call goes the way a just-in-time kernel's does up to the launch: the call
forms (:func:`~ninetoothed.runtime.binding.canonical_call`), the framework adapter
of the arguments, and the same argument checks (:func:`~ninetoothed.runtime.binding.bind_call`:
count, ranks, declared sizes and dtypes, devices, sizes the arrangement ties).
Then each parameter becomes a ``NineToothedTensor`` (a scalar's ``data``
pointing to its value), the framework's current stream and the tensors'
device are made current, and the library's launch function runs; what it
refuses (shapes that do not fit the arrangement, a key no variant has)
raises :class:`~ninetoothed.errors.LaunchError` with the library's own
message.  As upstream's, a scalar may be given as a zero-dimensional tensor.

Kernels of :func:`ninetoothed.build` take their key values after the tensors
(``kernel(x, y, z, 1127, ninetoothed.float16)``): the key picks the variant
whose kernel checks the call.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ninetoothed._aot.fast import Entry, FastCalls, Launch, Runtime
from ninetoothed.aot import (
    PACKED_PREFIX,
    CLibrary,
    CParameter,
    NineToothedTensor,
    Status,
    key_value,
)
from ninetoothed.errors import LaunchError, NineToothedError
from ninetoothed.runtime import plugins
from ninetoothed.runtime.adapter import require_gpu
from ninetoothed.runtime.binding import bind_call, canonical_call
from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = ["AotKernel", "LibraryError", "NineToothedTensor", "load_library"]


class LibraryError(RuntimeError, NineToothedError):
    """A library could not run a valid call: no driver, no context, another GPU
    architecture, a failed launch.  :attr:`status` is the library's code."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


_CTYPES: dict[str, Any] = {
    "double": ctypes.c_double,
    "float": ctypes.c_float,
    "int8_t": ctypes.c_int8,
    "int16_t": ctypes.c_int16,
    "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64,
    "uint8_t": ctypes.c_uint8,
    "uint16_t": ctypes.c_uint16,
    "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64,
}
"""The C types a scalar's value may have, as ctypes types."""

_ARGUMENT_ERRORS = (Status.NO_VARIANT, Status.INVALID_ARGUMENT, Status.SHAPE, Status.UNSUPPORTED)

_LOADED: dict[str, tuple[int, int, ctypes.CDLL]] = {}
_LOADING = threading.Lock()


def load_library(path: Path) -> ctypes.CDLL:
    """``ctypes.CDLL`` of ``path``; a copy when the file changed since this process
    loaded it (the dynamic loader returns the first load of a path again)."""
    status = path.stat()
    with _LOADING:
        known = _LOADED.get(str(path))
        if known is not None and known[:2] == (status.st_mtime_ns, status.st_size):
            return known[2]
        target = str(path)
        if known is not None:
            directory = tempfile.mkdtemp(prefix="ninetoothed-library-")
            target = os.path.join(directory, path.name)
            shutil.copyfile(path, target)
        library = ctypes.CDLL(target)
        _LOADED[str(path)] = (status.st_mtime_ns, status.st_size, library)
        return library


class AotKernel:
    """A C library's launch function, callable on framework tensors.

    ``variants`` maps each key (for :func:`ninetoothed.build`'s libraries) to
    the spec of its kernel; a library of ``make`` has one spec and no key.
    """

    def __init__(
        self,
        spec: KernelSpec,
        library: CLibrary,
        variants: Mapping[tuple[int | None, ...], KernelSpec] | None = None,
        key_labels: Mapping[tuple[int | None, ...], str] | None = None,
    ) -> None:
        self.spec = spec
        self.library = library
        self._variants = dict(variants or {})
        self._key_labels = dict(key_labels or {})
        handle = load_library(library.library)
        self._function = getattr(handle, library.function)
        self._function.restype = ctypes.c_int
        self._last_error = handle.ninetoothed_last_error
        self._last_error.restype = ctypes.c_char_p
        packed = getattr(handle, PACKED_PREFIX + library.function, None)
        if packed is not None:
            packed.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
            packed.restype = ctypes.c_int
        self._entry = Entry(self._function, packed, handle.ninetoothed_use_device)
        self._keys = sum(p.kind == "key" for p in library.parameters)
        self._fast: FastCalls | None = None

    @property
    def source(self) -> str:
        """The generated C source."""
        return self.library.source.read_text()

    @property
    def source_path(self) -> str:
        """Where the C source lies (beside the header and the library)."""
        return str(self.library.source)

    def __repr__(self) -> str:
        return f"<ninetoothed C library {self.library.kernel_name} ({self.library.library})>"

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Launch on framework tensors (then, for a build, the key values)."""
        fast = self._fast
        if fast is not None and not kwargs:
            status = fast.call(args)
            if status is not None:
                if status:
                    self._raise(status)
                return
        self._call(args, kwargs)

    def _call(self, original: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """The full path: every check, then the call, remembered for the fast path."""
        spec, args, kwargs, key = self._variant(original, kwargs)
        args, kwargs = canonical_call(spec, args, kwargs)
        args = _scalars_as_numbers(spec, args)
        adapter = plugins.adapter_for_arguments(args)
        if not getattr(adapter, "writes_in_place", True):
            raise LaunchError(
                f"{spec.label}: a C library writes into the tensors it is given, and "
                f"{adapter.name}'s arrays are immutable; call it with PyTorch or PaddlePaddle "
                "tensors"
            )
        bound = bind_call(
            spec,
            args,
            kwargs,
            framework=adapter.name,
            recognizes=adapter.recognizes,
            describe=adapter.describe,
            strict_dtypes=True,  # compiled for the declared dtypes
        )
        if not bound.device.startswith("cuda"):
            require_gpu(spec.label, bound.device, "tensors", getattr(adapter, "gpu_hint", ""))
        arguments = self._arguments(spec, bound.tensors, bound.scalars, key)
        reads = _host_reads(adapter)
        launch = Launch(self._entry, arguments, bound.device, Runtime.of(adapter, reads))
        status = launch()
        if status:
            self._raise(status)
        if not kwargs:  # calls in this form take the fast path next time
            if self._fast is None:
                kinds = [p.kind for p in self.library.parameters]
                self._fast = FastCalls(kinds, adapter, reads)
            self._fast.remember(original, launch)

    def _variant(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[KernelSpec, tuple[Any, ...], dict[str, Any], tuple[int, ...]]:
        """The spec that checks this call, the call without key values, and the key.

        Key values come after the kernel's arguments, or by keyword (the key's name
        without its trailing underscore); a constexpr symbol's is also the call's."""
        if not self._keys:
            return self.spec, args, kwargs, ()
        count = len(self.spec.parameters)
        names = [p.name.removesuffix("_") for p in self.library.parameters if p.kind == "key"]
        given = list(args[count:])
        kwargs = dict(kwargs)
        given += [kwargs.pop(name) for name in names[len(given) :] if name in kwargs]
        if len(args) < count or len(given) != len(names):
            keys = ", ".join(p.name for p in self.library.parameters if p.kind == "key")
            raise LaunchError(
                f"{self.spec.label} takes {count} kernel arguments, then the key "
                f"values ({keys}), {count + self._keys} positional arguments, got {len(args)}"
            )
        try:
            key = tuple(key_value(value) for value in given)
        except TypeError as error:
            raise LaunchError(f"{self.spec.label}: {error}") from error
        spec = self._variants.get(key)
        if spec is None:  # a variant that matches any value of a key it does not set
            spec = next(
                (
                    s
                    for k, s in self._variants.items()
                    if all(a is None or a == b for a, b in zip(k, key))
                ),
                None,
            )
        if spec is None:
            built = "; ".join(self._key_labels.values())
            raise LaunchError(
                f"{self.spec.label}: no variant was built for the key values "
                f"{tuple(given)!r}; built: {built}"
            )
        symbols = {n: v for n, v in zip(names, given) if n in spec.constexpr_symbols}
        return spec, args[:count], {**kwargs, **symbols}, key

    def _arguments(
        self,
        spec: KernelSpec,
        tensors: Sequence[Any],
        scalars: Mapping[str, Any],
        key: tuple[int, ...],
    ) -> list[Any]:
        """The C arguments after the stream (kept alive by the structures' references)."""
        arguments: list[Any] = []
        tensor_index = 0
        keys = iter(key)
        for parameter in self.library.parameters:
            if parameter.kind == "key":
                arguments.append(ctypes.c_int(next(keys)))
            elif parameter.kind == "tensor":
                info = tensors[tensor_index]
                tensor_index += 1
                ndim = len(info.shape)
                arguments.append(
                    NineToothedTensor(
                        info.data_ptr,
                        (ctypes.c_uint64 * ndim)(*info.shape),
                        (ctypes.c_int64 * ndim)(*info.strides),
                    )
                )
            elif parameter.kind == "scalar":
                value = _scalar(spec, parameter, scalars[parameter.name])
                structure = NineToothedTensor(ctypes.addressof(value), None, None)
                # The structure keeps the value alive until the call returns.
                structure._value = value
                arguments.append(structure)
            else:
                arguments.append(NineToothedTensor())
        return arguments

    def _raise(self, status: int) -> None:
        message = (self._last_error() or b"").decode(errors="replace")
        name = Status(status).name if status in Status._value2member_map_ else str(status)
        text = f"{message} (status {status}, NINETOOTHED_ERROR_{name})"
        if status in _ARGUMENT_ERRORS:
            raise LaunchError(text)
        raise LibraryError(text, status)


def _host_reads(adapter: Any) -> Any:
    """The adapter's fast reads (those of the just-in-time fast path), or None."""
    try:
        return adapter.host_reads()
    except Exception:  # noqa: BLE001 - an adapter without them: its plain methods serve
        return None


def _scalar(spec: KernelSpec, parameter: CParameter, given: Any) -> Any:
    """A scalar's value as its C type holds it; refused where it cannot hold it."""
    ctype = _CTYPES[parameter.ctype]
    try:
        value = ctype(given)
    except TypeError:
        value = None
    if value is None or (not isinstance(given, float) and value.value != given):
        raise LaunchError(
            f"{spec.label}: scalar {parameter.name!r} is a {parameter.ctype} ({parameter.dtype}) "
            f"in the C library, which cannot hold {given!r}"
        )
    return value


def _scalars_as_numbers(spec: KernelSpec, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` with zero-dimensional tensors given for scalars as Python numbers."""
    converted = list(args)
    for index, (check, argument) in enumerate(zip(spec.call_checks, args)):
        if check.is_scalar and getattr(argument, "ndim", None) == 0 and hasattr(argument, "item"):
            converted[index] = argument.item()
    return tuple(converted)
