"""Compiling one specialisation of a kernel and calling its launcher directly.

Triton's usual call (``JITFunction.run``) specialises every argument, hashes
a cache key and builds launch metadata on every call (about 15 µs on an H200
host).  The fast path does that work once per specialisation here:

* :func:`specialise` spells Triton's own specialisation of a call's arguments
  (pointer dtypes and 16-byte alignment; ints as the constexpr 1, ``i32`` or
  ``i64`` and divisibility by 16; floats, bools, ``None``) exactly as the
  JIT spells it, so our compile and ``fn[grid](...)`` share Triton's disk
  cache entry;
* :func:`compile_kernel` compiles it for a target (no GPU needed);
* :class:`Loaded` loads it on one device and binds launches: through the
  lean C launcher (:mod:`nt_triton._launch.lean`) where it applies, else
  through a small function, written once per kernel signature, that calls
  Triton's raw launcher with everything constant bound (:func:`launch_factory`).

The raw launcher is private Triton API: its calling convention is written
here for Triton 3.6 and 3.9 (``docs/notes/triton-launch-internals.md`` §3);
any other version goes through ``CompiledKernel.run``, whose convention is
stable in both.  The 32/64-bit class of every int is part of the
specialisation: Triton 3.9's launcher silently truncates an int too large for
an ``i32`` parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nt_triton._launch import lean, scratch
from nt_triton.cache import _locks, _memos

__all__ = [
    "DIVISIBLE",
    "INT32_MAX",
    "INT32_MIN",
    "Loaded",
    "Specialisation",
    "compile_kernel",
    "int_class",
    "int_type",
    "launch_factory",
    "launcher_style",
    "specialise",
    "triton_type",
    "triton_version",
]

DIVISIBLE: list[list[Any]] = [["tt.divisibility", 16]]
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def triton_version() -> tuple[int, int]:
    """Triton's ``(major, minor)`` version."""
    import triton

    return tuple(int(p) for p in re.findall(r"\d+", triton.__version__)[:2])  # type: ignore[return-value]


@dataclass(frozen=True)
class Specialisation:
    """What ``triton.compile(ASTSource(fn, signature, constexprs, attrs))`` takes."""

    signature: tuple[tuple[str, str], ...]
    constexprs: tuple[tuple[str, Any], ...]
    attrs: tuple[tuple[int, bool | None], ...]
    """Per parameter index: divisible by 16 (True/False), or None for an empty entry
    that Triton 3.9 lists for constexprs."""

    def source(self, function: Any) -> Any:
        """The ``ASTSource`` of ``function`` under this specialisation."""
        from triton.compiler import ASTSource

        attrs = {(i,): (DIVISIBLE if d else []) for i, d in self.attrs}
        return ASTSource(function, dict(self.signature), dict(self.constexprs), attrs)


def int_type(value: int) -> str:
    """The type Triton's launcher gives a Python int argument."""
    if INT32_MIN <= value <= INT32_MAX:
        return "i32"
    return "u64" if value >= 2**63 else "i64"


def int_class(value: Any) -> Any:
    """What Triton specialises an int argument on (its key for the fast path)."""
    if type(value) is not int:
        return type(value)
    if value == 1:
        return 1
    return (int_type(value), value % 16 == 0)


def specialise(
    parameters: Sequence[tuple[str, bool]],
    values: Sequence[Any],
    pointer_types: dict[int, tuple[str, bool]],
) -> Specialisation:
    """Triton's specialisation of a call, spelled as this Triton's JIT spells it.

    ``parameters`` are the kernel's ``(name, is_constexpr)`` in order,
    ``values`` the arguments (meta values included); ``pointer_types`` maps
    the index of each pointer parameter to ``(Triton element type, address
    divisible by 16)``.
    """
    constexpr_attrs = triton_version() >= (3, 9)
    signature: list[tuple[str, str]] = []
    constexprs: list[tuple[str, Any]] = []
    attrs: list[tuple[int, bool | None]] = []
    for index, ((name, is_constexpr), value) in enumerate(zip(parameters, values)):
        pointer = pointer_types.get(index)
        if is_constexpr or value is None or (type(value) is int and value == 1):
            signature.append((name, "constexpr"))
            constexprs.append((name, value))
            if constexpr_attrs:
                attrs.append((index, None))
        elif pointer is not None:
            signature.append((name, "*" + pointer[0]))
            attrs.append((index, pointer[1]))
        elif isinstance(value, bool):
            signature.append((name, "u1"))
        elif isinstance(value, int):
            signature.append((name, int_type(value)))
            attrs.append((index, value % 16 == 0))
        elif isinstance(value, float):
            signature.append((name, "fp32"))
        else:
            raise TypeError(f"{name}: cannot pass {type(value).__name__} {value!r} to a kernel")
    return Specialisation(tuple(signature), tuple(constexprs), tuple(attrs))


def triton_type(dtype: str) -> str:
    """A canonical dtype name (``"float16"``) as Triton's pointer element type (``"fp16"``)."""
    from triton._utils import type_canonicalisation_dict

    result: str = type_canonicalisation_dict[dtype]
    return result


def compile_kernel(
    function: Any,
    specialisation: Specialisation,
    target: Any,
    num_warps: int,
    num_stages: int,
    maxnreg: int | None = None,
) -> Any:
    """The ``CompiledKernel`` (from Triton's disk cache when there), not loaded.

    Processes compiling the same specialisation at once compile it once: the
    first holds the binary's lock (:mod:`nt_triton.cache._locks`) while Triton
    compiles and caches it; the others wait, then find it in Triton's cache.
    """
    import triton

    options: dict[str, Any] = {"num_warps": num_warps, "num_stages": num_stages}
    if maxnreg is not None:
        options["maxnreg"] = maxnreg
    # What Triton's own cache key hashes: the function's source and dependencies
    # (``cache_key``), the specialisation, the target and the options.
    identity = getattr(function, "cache_key", function)
    key = f"{identity}|{specialisation}|{target}|{sorted(options.items())}"
    with _locks.held("binary", key):
        return triton.compile(specialisation.source(function), target=target, options=options)


def launcher_style(kernel: Any) -> str:
    """How to call ``kernel``'s launcher: ``"3.6"``, ``"3.9"`` or ``"run"`` (the object)."""
    launcher = kernel.run  # loads the module in the current context, builds the launcher
    metadata = kernel.metadata
    profiling = getattr(metadata, "profile_scratch_size", 0) or 0
    if scratch.needs_scratch(kernel) or profiling or getattr(launcher, "launch", None) is None:
        return "run"
    if hasattr(launcher, "arg_annotations") and hasattr(launcher, "kernel_signature"):
        return "3.9" if triton_version() >= (3, 9) else "run"
    return "3.6" if triton_version() == (3, 6) else "run"


def launch_factory(style: str, order: Sequence[str]) -> Callable[..., Any]:
    """``factory(raw, grid, function, packed, extra, *constants) -> launch(stream, *per_call)``.

    ``order`` names every kernel parameter in signature order: ``"p<i>"`` for
    the ones passed per call (pointers as ints, scalars), ``"a<j>"`` for the
    ones bound once (sizes, strides, constexprs: the launcher skips those).
    Generated once per (style, order): the returned ``launch`` calls the raw
    launcher with the grid, function, metadata and constants bound as
    closure variables.
    """
    per_call = sorted((t for t in order if t.startswith("p")), key=lambda t: int(t[1:]))
    constants = sorted((t for t in order if t.startswith("a")), key=lambda t: int(t[1:]))
    arguments = ", ".join(order)
    head = "grid_x, grid_y, grid_z, stream, function"
    if style == "3.6":
        call = f"raw({head}, cooperative, pdl, None, None, packed, None, None, None, {arguments})"
    elif style == "3.9":
        items = arguments + ("," if len(order) == 1 else "")
        call = (
            f"raw({head}, cooperative, pdl, packed, None, None, None, None, None, "
            f"annotations, signature, ({items}))"
        )
    else:
        call = f"raw({head}, packed, None, None, None, {arguments})"
    parameters = ", ".join(["raw", "grid", "function", "packed", "extra", *constants])
    source = (
        f"def factory({parameters}):\n"
        "    grid_x, grid_y, grid_z = grid\n"
        "    cooperative, pdl, annotations, signature = extra\n"
        f"    def launch({', '.join(['stream', *per_call])}):\n"
        f"        {call}\n"
        "    return launch\n"
    )
    namespace: dict[str, Any] = {}
    name = f"<ninetoothed launcher ({style}, {len(order)} parameters)>"
    exec(compile(source, name, "exec"), namespace)  # noqa: S102
    factory: Callable[..., Any] = namespace["factory"]
    return factory


class Loaded:
    """A compiled kernel loaded on one device, ready to bind launches."""

    def __init__(self, kernel: Any, order: Sequence[str]) -> None:
        self.kernel = kernel
        """The ``CompiledKernel`` (kept alive: Triton 3.9 unloads the module when it dies)."""
        self.style = launcher_style(kernel)
        launcher = kernel.run
        self.raw = launcher if self.style == "run" else launcher.launch
        self.function = kernel.function
        self.packed = kernel.packed_metadata
        self.cooperative = bool(getattr(launcher, "launch_cooperative_grid", False))
        self.pdl = bool(getattr(launcher, "launch_pdl", False))
        self.annotations = getattr(launcher, "arg_annotations", None)
        self.kernel_signature = getattr(launcher, "kernel_signature", None)
        self.order = tuple(order)
        self.factory = _factory(self.style, self.order)
        self.lean = lean.usable(kernel, self.style)
        """Whether launches take the lean C launcher (:mod:`nt_triton._launch.lean`)."""
        self.scratch = scratch.needs_scratch(kernel)
        """Whether launches provide scratch memory (:mod:`nt_triton._launch.scratch`)."""

    def bind(self, grid: tuple[int, int, int], others: Sequence[Any]) -> Callable[..., Any]:
        """``launch(stream, *per_call)`` for one grid and the bound arguments: through the
        lean launcher where it applies, else through Triton's (:meth:`bind_triton`)."""
        if self.lean:
            made: Callable[..., Any] | None = lean.make_launch(
                self.kernel, self.order, grid, list(others)
            )
            if made is not None:
                return made
        return self.bind_triton(grid, others)

    def bind_triton(self, grid: tuple[int, int, int], others: Sequence[Any]) -> Callable[..., Any]:
        """``launch(stream, *per_call)`` through Triton's own launcher."""
        extra = (self.cooperative, self.pdl, self.annotations, self.kernel_signature)
        launch: Callable[..., Any] = self.factory(
            self.raw, grid, self.function, self.packed, extra, *others
        )
        return scratch.provided(launch) if self.scratch else launch


_FACTORIES: dict[tuple[str, tuple[str, ...]], Callable[..., Any]] = _memos.register(
    {}, "nt_triton._launch.compiled._FACTORIES"
)
"""Raw launchers' factories by launcher style and parameter order (:func:`launch_factory`)."""


def _factory(style: str, order: tuple[str, ...]) -> Callable[..., Any]:
    key = (style, order)
    factory = _FACTORIES.get(key)
    if factory is None:
        factory = _FACTORIES[key] = launch_factory(style, order)
    return factory
