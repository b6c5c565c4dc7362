"""Arguments that share memory with a tensor the kernel writes: which calls are refused.

A kernel's programs run in no fixed order, so a tensor the kernel writes
may share no element with another argument, nor with itself; otherwise the
result depends on the order (a kernel computing ``t[1:] = t[:-1] + 1``
called on views of one buffer).  PyTorch refuses such calls ("some
elements of the input tensor and the written-to tensor refer to a single
memory location"), and so does :meth:`Aliasing.check`.  One exception, as
PyTorch's in-place operations: the very same view (pointer, shape, strides,
dtype) given for a parameter the kernel writes and one it only reads, where
the arrangement has every program read exactly the elements of the one that
it writes of the other (:func:`ninetoothed.agreement.positions`), such as
``add(x, y, x)``.  Where other programs read what one writes (a transpose
in place, a matrix product into one of its operands), the call is refused
too.  Two parameters the kernel writes never share memory.

Which pairs of parameters may be one view is decided once per kernel; the
check of a call needs only its tensors' descriptions.  On the GPU's fast
path, where a call reads only pointers, :meth:`Aliasing.bounds` gives each
plan the byte distances between pointers at which its pairs overlap.
Arguments without a buffer (a data pointer of 0: JAX tracers, empty
tensors) and jagged parameters are not checked; JAX kernels return new
arrays, so their arguments never share what a kernel writes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NoReturn

from ninetoothed.arrangement.dtype import itemsize
from ninetoothed.errors import LaunchError
from ninetoothed.runtime.hookspecs import TensorInfo
from ninetoothed.spec._agreement import positions
from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = ["EXACT_LIMIT", "Aliasing"]

EXACT_LIMIT = 1 << 20
"""The most elements an output's layout is checked element by element for overlap, where
the quick test cannot tell (strides interleaved: offsets ``2i + 3j``)."""

SHARED = (
    "some elements of the written-to tensor and another argument refer to a single memory location"
)

Bounds = tuple[int | None, ...]
"""Per checked pair ``(w, o)``, three numbers: ``lo``, ``hi``, ``same``: the pair
overlaps when ``lo < p_w - p_o < hi`` and ``p_w - p_o != same`` (``same`` is 0 where
the pair may be one view, else None)."""


@dataclass(frozen=True)
class Aliasing:
    """One kernel's rule for arguments that share memory (see the module docstring)."""

    kernel: str
    names: tuple[str, ...]
    """The tensor parameters' names, in order."""

    written: frozenset[int]
    """Indices (among the tensor parameters) of those the kernel writes."""

    in_place: frozenset[tuple[int, int]]
    """Pairs ``(i, j)``, ``i < j``, one written and one only read, that may be one view."""

    skipped: frozenset[int]
    """Jagged parameters: checked for overlapping themselves only, past their batch."""

    @classmethod
    def of(cls, spec: KernelSpec, outputs: Collection[str]) -> Aliasing:
        """The rule of ``spec``, whose application writes the parameters ``outputs``."""
        tensors = spec.tensor_parameters
        written = frozenset(i for i, p in enumerate(tensors) if p.name in outputs)
        reached = [None if p.name in spec.gathered else positions(p.arranged) for p in tensors]

        def same_reach(i: int, j: int) -> bool:
            if reached[i] is None or reached[j] is None:
                return False
            if reached[i] == reached[j]:
                return True
            # One view at the call, so the pair's own sizes and strides agree too
            # (ntops's rope tiles its output by the input's last size).
            first, second = tensors[i].arranged, tensors[j].arranged
            return positions(first, second.source) == positions(second, first.source)

        in_place = frozenset(
            (i, j)
            for i in range(len(tensors))
            for j in range(i + 1, len(tensors))
            if (i in written) != (j in written) and same_reach(i, j)
        )
        names = tuple(p.name for p in tensors)
        return cls(spec.label, names, written, in_place, frozenset(spec.jagged_parameters))

    @cached_property
    def pairs(self) -> tuple[tuple[int, int], ...]:
        """The pairs ``(w, o)`` a call's pointers are checked for: ``w`` written, ``o``
        any other parameter (each pair once)."""
        count = len(self.names)
        return tuple(
            (w, o)
            for w in sorted(self.written - self.skipped)
            for o in range(count)
            if o != w and o not in self.skipped and not (o in self.written and o < w)
        )

    def check(self, tensors: Sequence[TensorInfo], unused: Collection[int] = ()) -> None:
        """Raise :class:`LaunchError` if a call's tensors share memory a written one has.

        ``unused``: parameters the call leaves unused (their tensors are stand-ins)."""
        for w in self.written:
            # A jagged tensor's batch has stride 0 and its entries start at their offsets.
            start = 1 if w in self.skipped else 0
            info = tensors[w]
            if w not in unused and _overlaps_itself(info.shape[start:], info.strides[start:]):
                self._overlapping_output(w, info)
        spans = [_span(info) for info in tensors]
        for w, o in self.pairs:
            first, second = spans[w], spans[o]
            if first[0] >= second[1] or second[0] >= first[1] or w in unused or o in unused:
                continue  # apart (or empty, or without a buffer)
            if _same_view(tensors[w], tensors[o]):
                if (min(w, o), max(w, o)) in self.in_place:
                    continue
                if o not in self.written:
                    self._not_in_place(w, o)
            self._shared(w, o, tensors[w], tensors[o])

    def bounds(self, tensors: Sequence[TensorInfo], unused: Collection[int] = ()) -> Bounds:
        """The fast path's :data:`Bounds` for one plan (its tensors' layouts)."""
        spans = [_offsets(info) for info in tensors]
        values: list[int | None] = []
        for w, o in self.pairs:
            (w_low, w_high), (o_low, o_high) = spans[w], spans[o]
            if w in unused or o in unused or w_low == w_high or o_low == o_high:
                values += [0, 0, None]  # empty or a stand-in: no distance overlaps
                continue
            identical = _same_layout(tensors[w], tensors[o])
            allowed = identical and (min(w, o), max(w, o)) in self.in_place
            values += [o_low - w_high, o_high - w_low, 0 if allowed else None]
        return tuple(values)

    def overlapping_output_message(
        self, index: int, shape: str, strides: str, stride_zero: bool
    ) -> str:
        """The refusal of written tensor ``index`` overlapping itself (after ``kernel: ``):
        ``shape`` and ``strides`` as the message shows them, ``stride_zero`` whether a
        dimension of more than one element has stride 0.  The C launcher fills the
        same text (:mod:`nt_triton.aot`)."""
        layout = f"(shape {shape}, strides {strides})"
        if stride_zero:
            return (
                f"the output {self.names[index]!r} {layout} has stride 0 along a dimension of "
                "more than one element, so its elements overlap and would be written at once; "
                "pass a tensor that owns its elements (e.g. .contiguous())"
            )
        return (
            f"the output {self.names[index]!r} {layout} overlaps itself: some of its elements "
            "refer to a single memory location, which programs would write at once; pass a "
            "tensor that owns its elements (e.g. .contiguous())"
        )

    def not_in_place_message(self, w: int, o: int) -> str:
        """The refusal of one view given for ``w`` (written) and ``o`` (read), where the
        arrangement does not read each element where it is written."""
        first, second = sorted((w, o))
        return (
            f"{self.names[first]!r} and {self.names[second]!r} are one tensor, and the kernel "
            f"writes {self.names[w]!r} where other programs read {self.names[o]!r} (its "
            "arrangement does not read each element where it is written), so the result "
            "would depend on the order of the programs; pass a separate output (e.g. .clone() "
            "the input)"
        )

    def shared_message(self, w: int, o: int, layouts: Mapping[int, tuple[str, str]]) -> str:
        """The refusal of ``w`` (written) and ``o`` sharing memory; ``layouts`` gives each
        one's shape and strides as the message shows them."""

        def described(index: int) -> str:
            role = "written" if index in self.written else "read"
            shape, strides = layouts[index]
            return f"{self.names[index]!r} ({role}; shape {shape}, strides {strides})"

        first, second = sorted((w, o))
        return (
            f"unsupported operation: {described(first)} and {described(second)} share "
            f"memory: {SHARED}, so the result would depend on the order of the programs; "
            "pass tensors that do not overlap (e.g. .clone() one)"
        )

    def _overlapping_output(self, index: int, info: TensorInfo) -> NoReturn:
        first = 1 if index in self.skipped else 0
        dims = zip(info.shape[first:], info.strides[first:])
        stride_zero = any(s == 0 and n > 1 for n, s in dims)
        text = self.overlapping_output_message(
            index, str(tuple(info.shape)), str(tuple(info.strides)), stride_zero
        )
        raise LaunchError(f"{self.kernel}: {text}")

    def _not_in_place(self, w: int, o: int) -> NoReturn:
        raise LaunchError(f"{self.kernel}: {self.not_in_place_message(w, o)}")

    def _shared(self, w: int, o: int, first: TensorInfo, second: TensorInfo) -> NoReturn:
        layouts = {
            index: (str(tuple(info.shape)), str(tuple(info.strides)))
            for index, info in ((w, first), (o, second))
        }
        raise LaunchError(f"{self.kernel}: {self.shared_message(w, o, layouts)}")


def _offsets(info: TensorInfo) -> tuple[int, int]:
    """The bytes a tensor's elements cover, ``[low, high)``, relative to its pointer
    (``(0, 0)``: empty)."""
    if any(size == 0 for size in info.shape):
        return (0, 0)
    low = high = 0
    for size, stride in zip(info.shape, info.strides):
        reach = (size - 1) * stride
        low, high = (low + reach, high) if reach < 0 else (low, high + reach)
    width = itemsize(info.dtype)
    return (low * width, (high + 1) * width)


def _span(info: TensorInfo) -> tuple[int, int]:
    """The addresses a tensor's elements cover, ``[low, high)``; ``(0, 0)`` for one
    without a buffer (pointer 0) or elements, which overlaps nothing."""
    low, high = _offsets(info)
    if not info.data_ptr or low == high:
        return (0, 0)
    return (info.data_ptr + low, info.data_ptr + high)


def _same_layout(first: TensorInfo, second: TensorInfo) -> bool:
    """Whether two tensors lay out the same elements alike (pointers aside)."""
    return (
        tuple(first.shape) == tuple(second.shape)
        and tuple(first.strides) == tuple(second.strides)
        and first.dtype == second.dtype
    )


def _same_view(first: TensorInfo, second: TensorInfo) -> bool:
    """Whether two tensors are one view: the same pointer and layout."""
    return first.data_ptr == second.data_ptr and _same_layout(first, second)


def _overlaps_itself(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether two indices of a tensor reach one element.

    The quick test: sorted by stride, each dimension's stride exceeds the span of
    the ones below it.  Where it fails without proving an overlap (strides
    interleave), the offsets are counted, up to :data:`EXACT_LIMIT` elements; a
    larger such layout counts as overlapping.
    """
    dims = sorted((abs(stride), size) for size, stride in zip(shape, strides) if size != 1)
    if any(size == 0 for _, size in dims):
        return False
    reach = 0
    for stride, size in dims:
        if stride <= reach:
            return stride == 0 or _counted_overlap(dims)
        reach += (size - 1) * stride
    return False


def _counted_overlap(dims: Sequence[tuple[int, int]]) -> bool:
    """Whether the offsets of ``(stride, size)`` dimensions repeat, counted one by one."""
    count = 1
    for _, size in dims:
        count *= size
    if count > EXACT_LIMIT:
        return True
    offsets = {0}
    for stride, size in dims:
        offsets = {offset + i * stride for offset in offsets for i in range(size)}
    return len(offsets) != count
