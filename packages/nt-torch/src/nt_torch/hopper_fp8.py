"""Where the library's ``scaled_mm`` runs the Gluon kernel for Hopper GPUs.

``scaled_mm`` without fast accumulation (``torch._scaled_mm``'s default: each
step's float8 sum added in float32) runs its NineToothed kernel at 0.71-0.76 of
cuBLAS on an H100, where :mod:`nt_triton.hopper_scaled_mm` (warp-specialised,
the float32 adds overlapping the next step's products) reaches 0.97-1.01
(``docs/design.md``).  :func:`substitute` wraps that kernel's launch, as
:mod:`nt_torch.hopper` does attention's: each call the Gluon kernel
:func:`fits` takes it once compiled in the background, every other call the
NineToothed kernel.  Fast accumulation keeps the NineToothed kernel, which
measured 0.96-1.00 there.  ``NINETOOTHED_HOPPER_SCALED_MM=off`` turns it off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from nt_torch import hopper

__all__ = ["COMPILED_WORK_FLOOR", "WORK_FLOOR", "fits", "keeps_the_operator", "substitute"]

_OUTPUTS = (torch.float16, torch.bfloat16, torch.float32)

WORK_FLOOR = 2**33
"""The least ``M x N x K`` the Gluon kernel takes: 2048^3.  Measured through the op on an
H100 (row-wise scales, bfloat16; torch time / ours, the Gluon route against the
generated kernel, a memo plan's bound launch): 4096^3 1.034 against 0.792, 2048^3
0.963 against 0.762; below, 1024^3 0.953 against 1.071 and 512^3 1.022 against 1.188
(kernels of 10 us and less).  Calls that are no plan's take the route's full checks."""

COMPILED_WORK_FLOOR = 2**36
"""The least ``M x N x K`` at which a call traced by ``torch.compile`` keeps the generic
operator (as :data:`nt_torch.hopper.COMPILED_WORK_FLOOR`): 4096^3, where the route's
full checks (about 92 us a call on the host) are shorter than the kernel (106 us)."""


def substitute(kernel: Any, launch: Callable[..., Any], site: bool = False) -> Callable[..., Any]:
    """``launch`` where ``kernel`` is not the library's ``scaled_mm`` with float32 sums,
    or the Gluon kernel cannot run here; else a launch of the same arguments
    ``(input, mat2, scale_a, scale_b, output)`` that takes the Gluon kernel for each
    call it :func:`fits`, and ``launch`` for the others.  At a memo plan's ``site`` the
    Gluon launch is bound once (:class:`nt_torch.hopper.Binding`)."""
    if not _routed(kernel):
        return launch
    from nt_triton import hopper_scaled_mm

    def ready(*args: Any, **keywords: Any) -> bool:
        return hopper_scaled_mm.ready(*args, **keywords)

    def gluon(*args: Any) -> None:
        hopper_scaled_mm.launch(*args)  # looked up per call, as attention's

    def addresses(input: Any, mat2: Any, scale_a: Any, scale_b: Any, output: Any) -> Any:
        # The scales' alignment is part of the compiled kernel's key, not of fits.
        return hopper.aligned(input, mat2, output, scale_a, scale_b)

    binding = hopper.Binding(hopper_scaled_mm.bind, addresses) if site else None
    return hopper.route(launch, 5, fits, ready, gluon, binding)


def keeps_the_operator(kernel: Any, args: tuple[Any, ...], hint: Callable[[Any], int]) -> bool:
    """Whether a traced call of ``kernel`` with ``args`` keeps the generic operator under
    ``torch.compile`` so that its launch may take the Gluon kernel: everything
    :func:`fits` checks but the addresses, on the sizes' example values (``hint``),
    as :func:`nt_torch.hopper.keeps_the_operator` does for attention."""
    return (
        len(args) == 5
        and _routed(kernel)
        and _layout_fits(*args, number=hint, floor=COMPILED_WORK_FLOOR)
    )


def _routed(kernel: Any) -> bool:
    """Whether ``kernel`` is the library's ``scaled_mm`` with float32 sums and the Gluon
    kernel may run here (the knob, the installed Triton)."""
    source_path = getattr(kernel, "source_path", None)
    if source_path is None:
        return False
    from ninetoothed.library.ops.kernels import origin

    found = origin(source_path)
    if found is None or found[0] != "scaled_mm" or found[1].get("fast_accum"):
        return False
    from nt_triton import hopper_scaled_mm, knobs

    return bool(knobs.hopper_scaled_mm() and hopper_scaled_mm.available())


def fits(input: Any, mat2: Any, scale_a: Any, scale_b: Any, output: Any) -> bool:
    """Whether the Gluon kernel computes this call: tensors on one Hopper GPU,
    ``input`` (M, K) row-major and ``mat2`` (K, N) column-major float8_e4m3fn with
    16-byte aligned addresses and rows (what TMA copies need), float32 scales with
    consecutive elements, a contiguous float16, bfloat16 or float32 output with
    16-byte aligned rows, and at least ``WORK_FLOOR`` products."""
    tensors = (input, mat2, scale_a, scale_b, output)
    if not all(type(t) is torch.Tensor for t in tensors):  # subclasses (fakes, wrappers): no
        return False
    if not _layout_fits(*tensors, number=int, floor=WORK_FLOOR):
        return False
    return all(t.data_ptr() % 16 == 0 for t in (input, mat2, output))


def _layout_fits(
    input: Any,
    mat2: Any,
    scale_a: Any,
    scale_b: Any,
    output: Any,
    number: Callable[[Any], int],
    floor: int,
) -> bool:
    """:func:`fits` but for the addresses, on the sizes and strides as ``number`` reads them,
    with at least ``floor`` products."""
    tensors = (input, mat2, scale_a, scale_b, output)
    if input.dtype != torch.float8_e4m3fn or mat2.dtype != torch.float8_e4m3fn:
        return False
    if scale_a.dtype != torch.float32 or scale_b.dtype != torch.float32:
        return False
    if output.dtype not in _OUTPUTS or output.dim() != 2 or input.dim() != 2:
        return False
    if not hopper.on_hopper(input) or any(t.device != input.device for t in tensors):
        return False
    m, k = (number(size) for size in input.shape)
    n = number(mat2.shape[1])
    if min(m, n, k) <= 0 or m * n * k < floor:
        return False
    rows, columns = (number(stride) for stride in input.stride())
    if columns != 1 or rows <= 0 or rows % 16:  # row-major, rows 16 bytes apart
        return False
    rows, columns = (number(stride) for stride in mat2.stride())
    if rows != 1 or columns <= 0 or columns % 16:  # column-major likewise
        return False
    element = output.element_size()
    sizes = [number(size) for size in output.shape]
    if not hopper.contiguous(sizes, [number(stride) for stride in output.stride()]):
        return False
    if (n * element) % 16:
        return False
    # The scales: one each, or a row's and a column's, read as consecutive elements.
    if number(scale_a.numel()) == 1 and number(scale_b.numel()) == 1:
        return True
    return _consecutive(scale_a, m, number) and _consecutive(scale_b, n, number)


def _consecutive(scale: Any, count: int, number: Callable[[Any], int]) -> bool:
    """Whether ``scale`` holds ``count`` elements one after another (a (count, 1) or
    (1, count) tensor whose long dimension has stride 1)."""
    if number(scale.numel()) != count:
        return False
    return all(
        number(size) == 1 or number(stride) == 1
        for size, stride in zip(scale.shape, scale.stride())
    )
