"""Where the library's ``scaled_mm`` runs the Gluon kernel for Hopper GPUs.

``scaled_mm`` without fast accumulation (``torch._scaled_mm``'s default: each
step's float8 sum added in float32) runs its NineToothed kernel at 0.71-0.76 of
cuBLAS on an H100, where :mod:`nt_triton.hopper_scaled_mm` (warp-specialised,
the float32 adds overlapping the next step's products) reaches 0.97-1.03
(``docs/design.md``).  With fast accumulation (to float16 or bfloat16) it takes a
kernel of one accumulator, which measured 0.97-1.06 of cuBLAS through the op
against 0.94-1.03 for the generated kernel (4096^3 and 8192^3).
:func:`substitute` wraps that kernel's launch, as :mod:`nt_torch.hopper` does
attention's: each call the Gluon kernel :func:`fits` takes it once compiled in
the background, every other call the NineToothed kernel.
``NINETOOTHED_HOPPER_SCALED_MM=off`` turns it off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from nt_torch import hopper

__all__ = ["WORK_FLOOR", "fits", "keeps_the_operator", "routed", "substitute"]

_OUTPUTS = (torch.float16, torch.bfloat16, torch.float32)
_FAST_OUTPUTS = (torch.float16, torch.bfloat16)  # a float32 tile of 128 x 256 does not fit

WORK_FLOOR = 2**33
"""The least ``M x N x K`` the Gluon kernel takes: 2048^3.  Measured through the op on an
H100 (row-wise scales, bfloat16; torch time / ours, the Gluon route against the
generated kernel, a memo plan's bound launch): 4096^3 1.034 against 0.792, 2048^3
0.963 against 0.762; below, 1024^3 0.953 against 1.071 and 512^3 1.022 against 1.188
(kernels of 10 us and less).  With fast accumulation 2048^3 was a wash (0.902 / 0.941
row-wise / tensor-wise against 0.914 / 0.940), 4096^3 1.014 / 0.971 against 0.986 /
0.938.  Under ``torch.compile`` (as :data:`nt_torch.hopper.WORK_FLOOR`): 2048^3 0.485
against 0.160, 4096^3 1.060 against 0.854, fast 0.986 against 0.740 (torch's eager time
/ ours compiled: the compiled call's host cost shows at 2048^3)."""


def substitute(
    kernel: Any, launch: Callable[..., Any], bound: str | None = None
) -> Callable[..., Any]:
    """``launch`` where ``kernel`` is not the library's ``scaled_mm``, or the Gluon kernel
    cannot run here; else a launch of the same arguments ``(input, mat2, scale_a,
    scale_b, output)`` that takes the Gluon kernel (in the kernel's mode of
    accumulation) for each call it :func:`fits`, and ``launch`` for the others, its
    launch ``bound`` as :func:`nt_torch.hopper.substitute` says."""
    fast = _mode(kernel)
    if fast is None:
        return launch
    from nt_triton import hopper_scaled_mm

    def fitting(input: Any, mat2: Any, scale_a: Any, scale_b: Any, output: Any) -> bool:
        return fits(input, mat2, scale_a, scale_b, output, fast=fast)

    def ready(*args: Any, **keywords: Any) -> bool:
        return hopper_scaled_mm.ready(*args, fast=fast, **keywords)

    def gluon(input: Any, mat2: Any, scale_a: Any, scale_b: Any, output: Any) -> None:
        # looked up per call, as attention's
        hopper_scaled_mm.launch(input, mat2, scale_a, scale_b, output, fast=fast)

    def bind(input: Any, mat2: Any, scale_a: Any, scale_b: Any, output: Any) -> Any:
        return hopper_scaled_mm.bind(input, mat2, scale_a, scale_b, output, fast=fast)

    def addresses(input: Any, mat2: Any, scale_a: Any, scale_b: Any, output: Any) -> Any:
        # The scales' alignment is part of the compiled kernel's key, not of fits.
        return hopper.aligned(input, mat2, output, scale_a, scale_b)

    binding = hopper.binding_of(bound, bind, addresses, hopper.signature)
    return hopper.route(launch, 5, fitting, ready, gluon, binding)


def keeps_the_operator(kernel: Any, args: tuple[Any, ...], hint: Callable[[Any], int]) -> bool:
    """Whether a traced call of ``kernel`` with ``args`` keeps the generic operator under
    ``torch.compile`` so that its launch may take the Gluon kernel: everything
    :func:`fits` checks but the addresses, on the sizes' example values (``hint``),
    as :func:`nt_torch.hopper.keeps_the_operator` does for attention."""
    fast = _mode(kernel) if len(args) == 5 else None
    if fast is None:
        return False
    input, mat2, scale_a, scale_b, output = args
    return _layout_fits(
        input, mat2, scale_a, scale_b, output, number=hint, floor=WORK_FLOOR, fast=fast
    )


def routed(kernel: Any) -> bool:
    """Whether ``kernel`` is the library's ``scaled_mm`` and the Gluon kernel may run here:
    whether :func:`substitute` routes its launches."""
    return _mode(kernel) is not None


def _mode(kernel: Any) -> bool | None:
    """Whether ``kernel``, the library's ``scaled_mm``, accumulates fast (True) or in
    float32 (False), where the Gluon kernel may run here (the knob, the installed
    Triton); None for any other kernel."""
    source_path = getattr(kernel, "source_path", None)
    if source_path is None:
        return None
    from ninetoothed.library.ops.kernels import origin

    found = origin(source_path)
    if found is None or found[0] != "scaled_mm":
        return None
    from nt_triton import hopper_scaled_mm, knobs

    if not (knobs.hopper_scaled_mm() and hopper_scaled_mm.available()):
        return None
    return bool(found[1].get("fast_accum"))


def fits(
    input: Any, mat2: Any, scale_a: Any, scale_b: Any, output: Any, fast: bool = False
) -> bool:
    """Whether the Gluon kernel computes this call: tensors on one Hopper GPU,
    ``input`` (M, K) row-major and ``mat2`` (K, N) column-major float8_e4m3fn with
    16-byte aligned addresses and rows (what TMA copies need), float32 scales with
    consecutive elements, a contiguous float16, bfloat16 or float32 output (not
    float32 with ``fast`` accumulation) with 16-byte aligned rows, and at least
    ``WORK_FLOOR`` products."""
    tensors = (input, mat2, scale_a, scale_b, output)
    if not all(type(t) is torch.Tensor for t in tensors):  # subclasses (fakes, wrappers): no
        return False
    if not _layout_fits(*tensors, number=int, floor=WORK_FLOOR, fast=fast):
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
    fast: bool = False,
) -> bool:
    """:func:`fits` but for the addresses, on the sizes and strides as ``number`` reads them,
    with at least ``floor`` products."""
    tensors = (input, mat2, scale_a, scale_b, output)
    if input.dtype != torch.float8_e4m3fn or mat2.dtype != torch.float8_e4m3fn:
        return False
    if scale_a.dtype != torch.float32 or scale_b.dtype != torch.float32:
        return False
    if output.dtype not in (_FAST_OUTPUTS if fast else _OUTPUTS):
        return False
    if output.dim() != 2 or input.dim() != 2:
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
