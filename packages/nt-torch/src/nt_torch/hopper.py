"""Where the library's attention forward runs the Gluon kernel for Hopper GPUs, and the
rule every Gluon route follows (:func:`route`; ``scaled_mm``'s is
:mod:`nt_torch.hopper_fp8`, and :mod:`nt_torch.hand_written` tries them in turn).

The library's ``scaled_dot_product_attention`` runs its NineToothed kernel
through :meth:`TorchFramework.run` (a first call) or the launch a memo's plan
pinned (:meth:`TorchFramework.launch_of`).  On an H100 or H200, for heads of
128 in float16 or bfloat16, :mod:`nt_triton.hopper_attention` (FlashAttention-3's
design in Gluon) is faster: 0.95-1.05 of cuDNN's kernel, where the generated
kernel reaches 0.73-0.83 (``docs/design.md``).  :func:`substitute` wraps that
kernel's launch so that each call it fits takes the Gluon kernel, and every
other call the kernel as before.  Which kernel a launch belongs to comes from
the library's record of what it made (``ops.kernels.origin``), as for
``nt_torch.fusion``.  The Gluon kernel compiles in the background; until it
has, the calls take the NineToothed kernel (:func:`_compiled`).  Under
``torch.compile`` the routed calls stay the generic operator, whose launch is
substituted likewise (:func:`keeps_the_operator`).  Autograd's forward (the
variant that keeps the log-sum-exp) and ``NINETOOTHED_HOPPER_ATTENTION=off``
keep the kernel.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import torch

from nt_torch import _tensor_info

__all__ = [
    "BOUND_SIGNATURES",
    "WORK_FLOOR",
    "Binding",
    "aligned",
    "binding_of",
    "contiguous",
    "fits",
    "keeps_the_operator",
    "on_hopper",
    "route",
    "routed",
    "signature",
    "substitute",
]

_DTYPES = (torch.float16, torch.bfloat16)

WORK_FLOOR = 2**31
"""The least ``batch x heads x queries x keys x 128`` the Gluon kernel takes: 16 heads of
1024 queries and keys.  Measured through the op on an H100 (torch time / ours, the Gluon
route against the generated kernel, a memo plan's bound launch): (1, 16, 1024) causal
0.977 against 0.855 and not causal 0.843 against 0.870; (2, 32, 1024) not causal 0.855
against 0.733; (2, 16, 2048) causal 0.964 against 0.832; below, (1, 16, 512) causal
0.952 against 1.047.  Under ``torch.compile`` the same floor decides whether a call keeps
the operator (:func:`keeps_the_operator`, its launch bound per signature) or goes to
Inductor as the NineToothed kernel: compiled, (1, 16, 1024) causal 0.971 against 0.405,
(2, 32, 1024) 0.857 against 0.524, (2, 16, 2048) causal 0.954 against 0.611 (torch's
eager time / ours).  A first call and the recording take the route's full checks, tens
of microseconds more."""


@dataclass(frozen=True)
class Binding:
    """How a route binds its Gluon kernel's launch for the calls of one layout and the
    same scalars, which differ only in their addresses: a memo plan's site sees no
    other calls; elsewhere a call's ``signature`` says which binding serves it."""

    bind: Callable[..., Callable[..., Any] | None]
    """The launch of such calls from one of them (the arguments as the route's), or None
    where none can be bound (the kernel module's ``bind``)."""
    addresses: Callable[..., Hashable]
    """What a call's addresses decide (the tensors' types and 16-byte alignment): the
    bound launch serves the calls that agree on it with the one it was bound from."""
    signature: Callable[..., Hashable] | None = None
    """The rest of what a bound launch fixes (each tensor's sizes, strides, dtype and
    device, the scalars: :func:`signature`); None at a memo plan's site."""


BOUND_SIGNATURES = 64
"""The bound launches a route keeps by signature (all forgotten when one more comes)."""


def binding_of(
    bound: str | None,
    bind: Callable[..., Any],
    addresses: Callable[..., Hashable],
    called: Callable[..., Hashable],
) -> Binding | None:
    """The :class:`Binding` of a route's launch bound as ``bound`` says (``"site"``,
    ``"signature"`` or None: see :func:`substitute`), of the route's ``bind``,
    ``addresses`` and ``called`` (its calls' :func:`signature`)."""
    if bound is None:
        return None
    if bound not in ("site", "signature"):
        raise ValueError(f"bound must be 'site', 'signature' or None, not {bound!r}")
    return Binding(bind, addresses, None if bound == "site" else called)


def signature(*tensors: Any) -> tuple[Any, ...]:
    """Each tensor's type, sizes, strides, dtype and device (the ops' memo's reads of it):
    what a bound launch fixes of it but its address."""
    return tuple(map(_tensor_info.signature, tensors))


def substitute(
    kernel: Any, launch: Callable[..., Any], bound: str | None = None
) -> Callable[..., Any]:
    """``launch`` (the kernel's launch) where ``kernel`` is not the library's attention
    forward at heads of 128, or the Gluon kernel cannot run here; else a launch of
    the same arguments ``(query, key, value, scale, causal, output)`` that takes
    the Gluon kernel for each call it :func:`fits` with a positive, finite scale,
    and ``launch`` for the others.  ``bound`` says how the Gluon launch is bound
    (:class:`Binding`): ``"site"`` once (a memo plan's site), ``"signature"`` per
    signature (a launch kept for many calls), None not at all (a launch for one call)."""
    if not routed(kernel):
        return launch
    from nt_triton import hopper_attention

    def fitting(query: Any, key: Any, value: Any, scale: Any, causal: Any, output: Any) -> bool:
        # The kernel takes row maxima of the raw scores: right for a positive scale only.
        return bool(0 < scale < math.inf and fits(query, key, value, output))

    def ready(query: Any, key: Any, value: Any, scale: Any, causal: Any, output: Any,
              **keywords: Any) -> bool:  # fmt: skip
        return hopper_attention.ready(query, key, value, output, bool(causal), **keywords)

    def gluon(query: Any, key: Any, value: Any, scale: Any, causal: Any, output: Any) -> None:
        hopper_attention.launch(query, key, value, output, float(scale), bool(causal))

    def bind(query: Any, key: Any, value: Any, scale: Any, causal: Any, output: Any) -> Any:
        made = hopper_attention.bind(query, key, value, output, float(scale), bool(causal))
        if made is None:
            return None
        return lambda query, key, value, scale, causal, output: made(
            query, key, value, output, scale
        )

    def addresses(query: Any, key: Any, value: Any, scale: Any, causal: Any, output: Any) -> Any:
        return aligned(query, key, value, output)

    def called(query: Any, key: Any, value: Any, scale: Any, causal: Any, output: Any) -> Any:
        return signature(query, key, value, output), scale, causal

    return route(launch, 6, fitting, ready, gluon, binding_of(bound, bind, addresses, called))


def route(
    launch: Callable[..., Any],
    arity: int,
    fitting: Callable[..., bool],
    ready: Callable[..., bool],
    gluon: Callable[..., Any],
    binding: Binding | None = None,
) -> Callable[..., Any]:
    """A launch of the same ``arity`` positional arguments as ``launch`` that calls
    ``gluon`` (the Gluon kernel's launch) with them where ``fitting`` says it computes
    them and ``ready`` (the kernel module's, with :meth:`nt_triton._compile_aside.Aside.
    ready`'s keywords) that it is compiled, on the first tensor's device; else
    ``launch``.  A fitting call that finds the Gluon kernel not compiled takes
    ``launch`` and then starts the compile in the background (:func:`_compiled`);
    any other call (keywords, another count) takes ``launch``, which checks it.

    With a ``binding``, a Gluon launch also binds one for its signature (a memo plan's
    site: for all its calls), and the later calls of that signature whose addresses
    agree with that one's take it at once: nothing else of theirs can differ, so
    ``fitting`` and ``ready`` would say the same."""
    # By signature (None at a site): [the bound launch or None, its addresses, its device]
    bound: dict[Hashable, list[Any]] = {}

    def routed(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != arity:  # not the op's call: the kernel checks it
            return launch(*args, **kwargs)
        key = None
        if binding is not None:
            key = None if binding.signature is None else binding.signature(*args)
            found = bound.get(key)
            if found and found[0] is not None and binding.addresses(*args) == found[1]:
                return _on(found[2], found[0], args)
        fits_here = fitting(*args)
        if fits_here and _compiled(ready, args, start=False):
            index = args[0].device.index
            result = _on(index, gluon, args)
            if binding is not None and key not in bound:
                if len(bound) >= BOUND_SIGNATURES:
                    bound.clear()
                bound[key] = [binding.bind(*args), binding.addresses(*args), index]
            return result
        result = launch(*args)
        if fits_here:  # the Gluon kernel's compile starts once this call's own (and its
            # tuning: compiles in worker processes) is done, rather than compete with it
            _compiled(ready, args, start=True)
        return result

    return routed


def _on(index: int | None, launch: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """``launch(*args)`` with CUDA device ``index`` current: Triton launches on the current
    device, so the tensors' device is made current, as the adapter does."""
    if index is not None and torch._C._cuda_getDevice() != index:
        with torch.cuda.device(index):
            return launch(*args)
    return launch(*args)


def aligned(*tensors: Any) -> tuple[bool, ...]:
    """Whether each of ``tensors`` is a plain tensor (no subclass: fakes, wrappers) at a
    16-byte aligned address, what TMA copies need."""
    return tuple(type(t) is torch.Tensor and t.data_ptr() % 16 == 0 for t in tensors)


def keeps_the_operator(kernel: Any, args: tuple[Any, ...], hint: Callable[[Any], int]) -> bool:
    """Whether a traced call of ``kernel`` with ``args`` keeps the generic operator under
    ``torch.compile``, rather than hand Inductor the NineToothed kernel: when the graph
    runs, the operator's launch (:func:`substitute`) may take the Gluon kernel.  The
    traced tensors have no addresses yet: everything :func:`fits` checks but those,
    on the sizes' example values (``hint``: no guard, no recompile; a call that does
    not fit when the graph runs takes the NineToothed kernel through the operator)."""
    if len(args) != 6 or not routed(kernel):
        return False
    query, key, value, scale, _, output = args
    if not isinstance(scale, (int, float)) or not 0 < scale < math.inf:
        return False
    return _layout_fits(query, key, value, output, hint, WORK_FLOOR)


def routed(kernel: Any) -> bool:
    """Whether ``kernel`` is the library's attention forward at heads of 128 and the
    Gluon kernel may run here (the knob, the installed Triton)."""
    if not _attention_forward(getattr(kernel, "source_path", None)):
        return False
    from nt_triton import hopper_attention, knobs

    return bool(knobs.hopper_attention() and hopper_attention.available())


def _compiled(ready: Callable[..., bool], args: tuple[Any, ...], start: bool) -> bool:
    """Whether the Gluon kernel is compiled for the call of ``args`` (its device, data
    types and sizes as Triton specialises them: ``ready``'s key) and may launch now.

    A fitting call that finds it not compiled takes the NineToothed kernel, which
    the op made anyway, then calls this with ``start`` to start the compile in the
    background (a no-op once started); the calls until it ends take the
    NineToothed kernel too.  A first call on cold caches would otherwise pay both
    compiles.  Under ``torch.use_deterministic_algorithms`` the first call
    compiles and waits instead, so that every call of a shape takes the same
    kernel.  The call made with ``start`` launches nothing: it never counts as the
    launch that loads the kernel onto the GPU (``may_load``)."""
    wait = _wait()
    may_load = not start and not _capturing(args[0])
    return ready(*args, start=start or wait, wait=wait, may_load=may_load)


def _capturing(tensor: Any) -> bool:
    """Whether a CUDA graph is being captured on ``tensor``'s device's current stream."""
    return bool(tensor.device.type == "cuda" and torch.cuda.is_current_stream_capturing())


def _wait() -> bool:
    """Whether a call waits for the Gluon kernel's compile rather than take the
    NineToothed kernel meanwhile."""
    return bool(torch.are_deterministic_algorithms_enabled())


def _attention_forward(source_path: str | None) -> bool:
    """Whether the kernel generated at ``source_path`` is the library's attention
    forward at heads of 128, without the log-sum-exp and not for a few queries."""
    if source_path is None:
        return False
    from ninetoothed.library.ops.kernels import origin

    found = origin(source_path)
    if found is None or found[0] != "scaled_dot_product_attention":
        return False
    variant = found[1]
    return bool(
        variant.get("head_bound") == 128
        and not variant.get("lse")
        and not variant.get("few_queries")
    )


def fits(query: Any, key: Any, value: Any, output: Any) -> bool:
    """Whether the Gluon kernel computes this call: tensors on a Hopper GPU (compute
    capability 9.0), float16 or bfloat16 alike, heads of exactly 128, non-empty,
    each with a contiguous last dimension, 16-byte aligned addresses and strides
    (what TMA copies need) and a contiguous output."""
    tensors = (query, key, value, output)
    if not all(type(t) is torch.Tensor for t in tensors):  # subclasses (fakes, wrappers): no
        return False
    if not _layout_fits(query, key, value, output, int, WORK_FLOOR):
        return False
    return all(t.data_ptr() % 16 == 0 for t in tensors)


def _layout_fits(
    query: Any, key: Any, value: Any, output: Any, number: Callable[[Any], int], floor: int
) -> bool:
    """:func:`fits` but for the addresses, on the sizes and strides as ``number`` reads them,
    with at least ``floor`` work."""
    tensors = (query, key, value, output)
    dtype = query.dtype
    if dtype not in _DTYPES or any(t.dtype != dtype for t in tensors):
        return False
    if not on_hopper(query) or any(t.device != query.device for t in tensors):
        return False
    batch, heads, l_q, head = (number(size) for size in query.shape)
    l_k = number(key.shape[2])
    if head != 128 or number(key.shape[3]) != 128 or l_q == 0 or l_k == 0:
        return False
    if batch * heads == 0 or batch * heads * l_q * l_k * head < floor:
        return False
    for t in (query, key, value):
        strides = [number(stride) for stride in t.stride()]
        if strides[3] != 1 or any(s % 8 or s <= 0 for s in strides[:3]):
            return False  # 8 elements of 2 bytes: 16-byte strides; TMA takes no broadcast
    sizes = [number(size) for size in output.shape]
    return contiguous(sizes, [number(stride) for stride in output.stride()])


def contiguous(sizes: list[int], strides: list[int]) -> bool:
    """``is_contiguous`` of a tensor of ``sizes`` and ``strides`` (of a non-empty one: a
    dimension of one element may have any stride)."""
    step = 1
    for size, stride in zip(reversed(sizes), reversed(strides), strict=True):
        if size != 1 and stride != step:
            return False
        step *= size
    return True


def on_hopper(tensor: Any) -> bool:
    """Whether ``tensor`` lies on a Hopper GPU."""
    return bool(tensor.device.type == "cuda" and _hopper(tensor.device.index))


@functools.cache
def _hopper(index: int | None) -> bool:
    """Whether CUDA device ``index`` (None: the current one) is a Hopper GPU."""
    return bool(torch.cuda.get_device_capability(index) == (9, 0))
