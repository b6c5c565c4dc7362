"""``make``'s ahead-of-time options, and what a kernel must be to become a C library.

``make(..., caller="cuda", kernel_name=..., output_dir=..., target=...)``
compiles ahead of time (upstream's spelling, plus our ``target`` and
``constexprs``).
:func:`ahead_of_time_request` takes those options out of ``make``'s (so the
rest are checked as usual) and :meth:`Request.make` hands the finished spec
to the builder; ``constexprs`` gives the values to compile the constexprs a
call gives for (:mod:`.constexprs`), and sizes are run-time values
(:mod:`.sizes`).  :func:`check_spec` refuses, by name, what a C launch
function has no place for: run-time symbols, constexprs without values,
jagged tensors, element types left open.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ninetoothed._aot.constexprs import call_constexprs, checked_grid, grid_variants
from ninetoothed._aot.sizes import run_time_sizes
from ninetoothed.aot import C_KEYWORDS
from ninetoothed.errors import CodegenError
from ninetoothed.runtime.options import JIT_CALLER
from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = ["Request", "ahead_of_time_request", "check_kernel_name", "check_spec"]

AHEAD_OF_TIME_OPTIONS = ("caller", "output_dir", "target", "constexprs")

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Request:
    """Where and for what a kernel is compiled ahead of time."""

    caller: str
    output_dir: Path
    target: str | None
    constexprs: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    """The values to compile the constexprs a call gives for (:mod:`.constexprs`)."""

    def tensors(self, tensors: Sequence[Any]) -> tuple[Any, ...]:
        """The tensors to arrange: sizes are run-time values in a C library (:mod:`.sizes`)."""
        return run_time_sizes(tensors)

    def make(self, spec: KernelSpec) -> Any:
        """Compile ``spec`` into a library; its Python callable (:class:`.kernel.AotKernel`)."""
        from ninetoothed._aot import files
        from ninetoothed._aot.kernel import AotKernel
        from ninetoothed.runtime import plugins

        check_kernel_name("make", spec.name)
        check_spec(spec, self.constexprs)
        builder = plugins.ahead_of_time_builder(self.caller)
        output_dir = files.prepare_output_dir("make", self.output_dir)
        grid = sorted((name, tuple(map(repr, v))) for name, v in self.constexprs.items())
        stamp = files.stamp([spec], builder, self.target, self.caller, grid)
        library = files.load_if_current(output_dir, spec.name, stamp)
        if not any(call_constexprs(spec)):
            if library is None:
                library = builder.make(
                    spec, kernel_name=spec.name, output_dir=output_dir, target=self.target
                )
                files.remember(output_dir, spec.name, stamp, library)
            return AotKernel(spec, library)
        key_names, variants = grid_variants(spec, self.constexprs)
        if library is None:
            library = builder.build(
                variants,
                key_names=key_names,
                kernel_name=spec.name,
                output_dir=output_dir,
                target=self.target,
            )
            files.remember(output_dir, spec.name, stamp, library)
        labels = {variant.key: variant.key_label for variant in variants}
        return AotKernel(spec, library, dict.fromkeys(labels, spec), labels)


def ahead_of_time_request(options: dict[str, Any]) -> Request | None:
    """Take ``caller``, ``output_dir`` and ``target`` out of ``make``'s ``options``.

    Returns None (options untouched) for a just-in-time kernel: no caller or
    ``caller="torch"``, and neither ``output_dir`` nor ``target``.  Raises
    :class:`TypeError` for values of the wrong type, or ahead-of-time options
    given with ``caller="torch"``.
    """
    caller = options.get("caller", JIT_CALLER)
    output_dir = options.get("output_dir")
    target = options.get("target")
    given = options.get("constexprs")
    if caller == JIT_CALLER and output_dir is None and target is None and given is None:
        options.pop("caller", None)
        return None
    if not isinstance(caller, str):
        raise TypeError(f"make: caller must be a str ('cuda'), got {type(caller).__name__}")
    if caller == JIT_CALLER:
        raise TypeError(
            f"make: output_dir={output_dir!r}, target={target!r} and constexprs={given!r} are "
            "for ahead-of-time compilation into a C library; pass caller='cuda' too "
            "(caller='torch' compiles just in time and writes no library)"
        )
    if output_dir is None:
        from ninetoothed.generation import CACHE_DIR

        output_dir = CACHE_DIR
    if not isinstance(output_dir, (str, Path)):
        raise TypeError(
            f"make: output_dir must be a path (str or pathlib.Path), got "
            f"{type(output_dir).__name__} {output_dir!r}"
        )
    if target is not None and not isinstance(target, (str, int)):
        raise TypeError(
            f"make: target must name a GPU architecture ('sm_90', 90), got "
            f"{type(target).__name__} {target!r}"
        )
    grid = checked_grid("make", options.get("constexprs"))
    for option in AHEAD_OF_TIME_OPTIONS:
        options.pop(option, None)
    return Request(caller, Path(output_dir), None if target is None else str(target), grid)


def check_kernel_name(function: str, name: str) -> None:
    """Refuse a kernel name that is not a C identifier (it names C functions and files)."""
    if not _C_IDENTIFIER.match(name) or name in C_KEYWORDS:
        why = "a C or C++ keyword" if name in C_KEYWORDS else "not a C identifier"
        raise ValueError(
            f"{function}: kernel_name={name!r} is {why}; it names the C function "
            f"launch_<kernel_name> and the library's files, so use letters, digits and "
            "underscores, not starting with a digit (e.g. 'add_fp16')"
        )


def check_spec(spec: KernelSpec, given: Mapping[str, Any] | Collection[str] = ()) -> None:
    """Raise :class:`CodegenError` for what a C library cannot take (see the module);
    ``given``: the constexprs the call gives that values are given for."""
    name = spec.label
    if spec.runtime_symbols:
        raise CodegenError(
            f"{name}: the symbol(s) {', '.join(sorted(spec.runtime_symbols))} are run-time "
            "values given at the call by keyword, which a C library's launch function has no "
            "place for; make them constexpr (Symbol(..., constexpr=True)) and list their "
            "values (make(..., constexprs={...})), or fix them when the kernel is made"
        )
    symbols, scalars = call_constexprs(spec)
    missing = [n for n in (*symbols, *scalars) if n not in given]
    if missing:
        example = ", ".join(f"{n!r}: (...)" for n in missing)
        raise CodegenError(
            f"{name}: the constexpr(s) {', '.join(missing)} are given at the call, and a C "
            "library compiles them in: list the values to build for (make(..., "
            f"constexprs={{{example}}}), or in ninetoothed.build's configurations), or fix "
            "them when the kernel is made"
        )
    unknown = sorted(set(given) - set(symbols) - set(scalars))
    if unknown:
        raise CodegenError(
            f"{name}: constexprs names {', '.join(unknown)}, which the kernel does not take at "
            f"the call (it takes: {', '.join((*symbols, *scalars)) or 'none'})"
        )
    for parameter in spec.parameters:
        source = parameter.source
        if source.jagged_dim is not None:
            raise CodegenError(
                f"{name}: parameter {parameter.name!r} is jagged (Tensor(jagged_dim=...)); "
                "C libraries take dense tensors only (NineToothedTensor has no offsets)"
            )
        if source.dtype is None and not parameter.is_scalar:
            raise CodegenError(
                f"{name}: parameter {parameter.name!r} declares no dtype; a C library is "
                "compiled for one element type per tensor: declare it "
                "(Tensor(..., dtype=ninetoothed.float16)), or build one variant per dtype "
                "with ninetoothed.build"
            )
