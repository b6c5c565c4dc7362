"""A catalogue kernel's variants as the ahead-of-time builder takes them.

Each :class:`~ninetoothed.library.build.catalogue.Variant` is made, per
dtype, with its module's ``premake``: the tensors get the dtype (the library's
declare none), sizes declared constexpr become run-time sizes (bounded by
the largest row), and the spec is made as ``ninetoothed.make`` makes one.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from ninetoothed._aot.sizes import run_time_sizes
from ninetoothed.aot import DATA_TYPES, BuildVariant
from ninetoothed.library.build.catalogue import Kernel, Options, Variant
from ninetoothed.library.ops import _precision as precision
from ninetoothed.runtime._arranging import make_spec
from ninetoothed.runtime.options import check_options

__all__ = ["build_variants"]


def build_variants(
    kernel: Kernel, dtypes: Sequence[str], options: Options
) -> tuple[tuple[str, ...], list[BuildVariant]]:
    """The key names and the variants of ``kernel`` for every dtype."""
    made = [
        _made(kernel, variant, dtype, options) for dtype in dtypes for variant in kernel.variants
    ]
    return (*kernel.key_names, "dtype_"), made


def _made(kernel: Kernel, variant: Variant, dtype: str, options: Options) -> BuildVariant:
    premade = kernel.module.premake(**variant.premake)
    # A whole-dimension tile's size is bounded by the power of two the variant serves
    # (the tuning space is sized for it); the application's parameters name the tensors.
    parameters = inspect.signature(premade.application).parameters
    positions = {name: index for index, name in enumerate(parameters)}
    bounds = {(positions[p], dim): size for p, dim, size in variant.sizes}
    keep = set(bounds) if variant.exact else set()
    tensors = run_time_sizes(premade.tensors, options.max_row, dtype, bounds, keep)
    given = dict(premade.options) | precision.variant(options.float32_products, dtype)
    name, checked = check_options("make", premade.name or kernel.name, given, ())
    spec = make_spec(premade.arrangement, premade.application, tensors, name, checked)
    keys = [f"{n.removesuffix('_')}={v}" for n, v in zip(kernel.key_names, variant.key)]
    label = ", ".join([*keys, f"dtype={dtype}"])  # messages name the variant by its key
    return BuildVariant(
        spec,
        (*variant.key, DATA_TYPES.index(dtype)),
        (),
        label,
        label,
        variant.constants,
        variant.sizes,
        options.configurations if variant.tuned else 1,
    )
