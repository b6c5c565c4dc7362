"""A tuning space before it is built, and its order for one call.

:func:`most_configurations` bounds the space of a spec from its options alone (before
its kernel is generated: the compile workers' early start, :mod:`nt_triton.tuner._early`);
:func:`fitting_first` orders a built space by what fits a call (its untuned choice,
``Tuner.untuned``, and an ahead-of-time build's candidates).  The space itself is
:func:`nt_triton._tuning.configurations`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import _tuning as tuning

__all__ = ["fitting_first", "most_configurations"]


def most_configurations(spec: KernelSpec) -> int:
    """How many configurations :func:`nt_triton._tuning.configurations` gives ``spec`` at
    most, read off its options before its kernel is generated (a generated space, sized
    then, may keep fewer): a pinned list's length; else the warps, stages and register
    caps tuned over, times the ``max_num_configs`` tile configurations where it has meta
    symbols."""
    options = spec.options
    pinned = options.get("configs")
    if pinned is not None:
        return len(pinned)
    caps = len(tuning.maxnreg_values(options))
    if spec.meta_symbols:
        return tuning.configuration_limit(options) * caps
    warps = tuning.option_values(options, "num_warps") or [tuning.DEFAULT_NUM_WARPS]
    stages = tuning.option_values(options, "num_stages") or [tuning.DEFAULT_NUM_STAGES]
    return len(warps) * len(stages) * caps


def fitting_first(
    configurations: Sequence[tuning.Configuration],
    sizing: tuning.Sizing,
    values: Mapping[str, int],
    element_bytes: int,
) -> list[tuning.Configuration]:
    """``configurations`` with those that fit (:func:`nt_triton._tuning.fits`) a call's
    constexpr ``values`` and widest element first, each part in its order: a space is
    sized for 2-byte elements, and its first configurations may not fit a float32 call's
    tiles."""
    fitting = [c for c in configurations if tuning.fits(c, sizing, values, element_bytes)]
    return fitting + [c for c in configurations if c not in fitting]
