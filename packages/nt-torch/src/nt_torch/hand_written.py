"""Which launches of the library's kernels take a hand-written kernel instead.

On Hopper GPUs two of the library's ops have kernels written in Gluon that are
faster than the generated ones: attention's forward at heads of 128
(:mod:`nt_torch.hopper`) and ``scaled_mm`` with float32 sums
(:mod:`nt_torch.hopper_fp8`).  The adapter's launches (a first call, a memo's
plan, the generic operator's launch under ``torch.compile``) go through
:func:`substitute`; Inductor's rule asks :func:`keeps_the_operator` before it
takes a call over.  Each route decides per call, and falls back to the
generated kernel for whatever it does not take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nt_torch import hopper, hopper_fp8

__all__ = ["keeps_the_operator", "routed", "substitute"]

_ROUTES = (hopper, hopper_fp8)


def substitute(
    kernel: Any, launch: Callable[..., Any], bound: str | None = None
) -> Callable[..., Any]:
    """``launch`` (``kernel``'s launch) wrapped by the route that ``kernel`` belongs to, if
    any: a launch of the same arguments that takes the hand-written kernel where it
    fits.  ``bound``: ``"site"`` for the launch of one site of a memo's plan, whose calls
    share one layout and their scalars (the route binds its kernel's launch once),
    ``"signature"`` for a launch kept for many calls (bound per signature), None for a
    launch made for one call (nothing bound)."""
    for route in _ROUTES:
        routed: Callable[..., Any] = route.substitute(kernel, launch, bound)
        if routed is not launch:
            return routed
    return launch


def routed(kernel: Any) -> bool:
    """Whether some route takes ``kernel``'s launches (:func:`substitute` would wrap them):
    a route reads its calls' shapes, so their tensors must be the kernel's own."""
    return any(route.routed(kernel) for route in _ROUTES)


def keeps_the_operator(kernel: Any, args: tuple[Any, ...], hint: Callable[[Any], int]) -> bool:
    """Whether a traced call of ``kernel`` with ``args`` keeps the generic operator under
    ``torch.compile``, because when the graph runs its launch may take a hand-written
    kernel (``hint`` reads a size's example value)."""
    return any(route.keeps_the_operator(kernel, args, hint) for route in _ROUTES)
