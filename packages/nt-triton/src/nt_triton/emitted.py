"""A kernel's launch handed to a compiler that emits it itself (PyTorch's Inductor).

A compiler that writes the launch into its own generated code (and records it
in its CUDA graphs) needs, for one call, what nt-triton's fast path works out
per specialisation: the ``@triton.jit`` function, its positional arguments
(the tensors where the kernel takes pointers), the grid, the constexpr meta
values and the launch options of the configuration eager calls use.
:func:`emitted_launch` gives them as an :class:`EmittedLaunch`, computed by
the kernel's own host function, so sizes and strides may be a tracer's
symbolic integers: the grid and the arguments come out as expressions of
them, and the launch-time shape checks run on them (a compiler records what
they assume).

The configuration is the one an eager call of the same tuning key gets:
pinned by the call's keywords, remembered, or read from the persisted table.
Where none is, ``tune()`` is called (the caller runs one eager call of the
same specialisation on stand-in tensors, which tunes it and records the
winner) and the choice is read again: tuning happens once, before the
compiler captures anything, and uses the same table as eager calls.

:func:`emitted_function` is the ``@triton.jit`` function as a compiler that
copies kernel sources into its own module can rebuild it: on Triton releases
whose ``triton.language`` lacks ``to_tensor``, generated modules reach it
through a module alias (``from triton.language import core as ...``), which
such a copy leaves undefined; the emitted function's module names it
``tl.core`` instead (the compiled path only: Triton's interpreter needs the
alias).  Inductor also pastes the sources, unescaped, inside a ``'''`` string
literal of its generated module: the emitted module drops the string
statements of its functions (docstrings of the application and of inlined
helpers, no-ops for Triton), and a source that would still change meaning there
(a backslash, ``'''``: :func:`embedding_problem`) raises :class:`NotEmbeddable`
before anything is handed over (the caller keeps its generic path).

Float scalars: Triton's launcher passes a Python float as ``fp32``, but
Inductor types a float argument of a user kernel ``fp64`` (PyTorch 2.11's
``_use_fp64_for_unbacked_floats``), which turns every product with it into
float64 (attention's scores: its ``tl.dot`` accumulator then fails to
compile).  The function emitted for a call with float scalars converts those
parameters to ``fp32`` on entry, so the kernel computes what it computes
eagerly.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ninetoothed.runtime.binding import BoundCall
from nt_triton import _interpreter as interpreter
from nt_triton import _tuning as tuning
from nt_triton._codegen import module as generated_module
from nt_triton._kernel import TritonKernel
from nt_triton._launch.tuning_calls import fit_of, run_time_scalars, tuning_key
from nt_triton.cache import _sources as sources

__all__ = [
    "EmittedLaunch",
    "NotEmbeddable",
    "embedding_problem",
    "emitted_function",
    "emitted_launch",
    "with_float32_parameters",
    "without_string_statements",
]


class EmittedLaunch(NamedTuple):
    """One call's launch, as a compiler emits it."""

    function: Any
    """The ``@triton.jit`` function (:func:`emitted_function`)."""
    arguments: tuple[Any, ...]
    """The positional arguments, in the kernel's order: the call's tensors where it takes
    pointers, then sizes, strides, scalars and host-computed constexprs."""
    grid: tuple[Any, ...]
    meta: dict[str, int]
    """The meta parameters (tile sizes and what is derived from them), by keyword."""
    num_warps: int
    num_stages: int


class _Untuned(Exception):
    """Raised from the tuner's callback: the key has no configuration without tuning."""


def emitted_launch(
    kernel: TritonKernel,
    bound: BoundCall,
    concrete: BoundCall,
    device_name: str,
    tune: Callable[[], None],
) -> EmittedLaunch | None:
    """The launch of ``bound``, or None where no configuration can be found for it.

    ``bound`` is the validated call (sizes and strides may be symbolic), its
    tensors' own objects in :attr:`~BoundCall.tensor_arguments`; ``concrete``
    the same call with plain integers (a tracer's hints), from which the tuning
    key is made; ``device_name`` the name tuning tables are kept under for the
    call's GPU; ``tune()`` an eager call of the same specialisation (see the
    module docstring).
    """
    plan = kernel.prepare(bound.tensors, bound.tensor_arguments, bound.scalars)
    configuration = _configuration(kernel, plan, concrete, device_name, tune)
    if configuration is None:
        return None
    values = configuration.kwargs()
    grid = plan.grid(values) if callable(plan.grid) else plan.grid
    meta = {parameter.name: values[parameter.name] for parameter in kernel.signature.meta}
    floats = _float_parameters(kernel, plan.arguments)
    return EmittedLaunch(
        emitted_function(kernel, floats),
        tuple(plan.arguments),
        tuple(grid),
        meta,
        configuration.num_warps,
        configuration.num_stages,
    )


def _float_parameters(kernel: TritonKernel, arguments: Any) -> tuple[str, ...]:
    """The names of the kernel's run-time parameters that ``arguments`` give Python floats
    (a constexpr stays a constant: Inductor bakes it in as Triton would)."""
    parameters = zip(kernel.signature, arguments, strict=False)
    return tuple(p.name for p, value in parameters if isinstance(value, float) and not p.constexpr)


def _configuration(
    kernel: TritonKernel,
    plan: Any,
    concrete: BoundCall,
    device_name: str,
    tune: Callable[[], None],
) -> tuning.Configuration | None:
    """Pinned, remembered or persisted; else tuned by ``tune()`` and read again (untuned:
    the first that fits the call, as eagerly; ``plan``'s symbolic sizes count as unknown)."""
    if plan.meta is not None:
        num_warps, num_stages = kernel.launch_options
        return tuning.Configuration(dict(plan.meta), num_warps, num_stages)
    key = tuning_key(concrete, run_time_scalars(kernel))

    def fit() -> tuple[dict[str, int], int]:
        return fit_of(kernel, concrete, plan)

    for attempt in range(2):
        try:
            return kernel.tuner.choose(key, device_name, _untuned, None, fit)
        except _Untuned:
            if attempt == 0:
                tune()
    return None


def _untuned() -> Any:
    raise _Untuned


class NotEmbeddable(ValueError):
    """The kernel's source would change meaning inside a compiler's string literal."""


_EMITTED: dict[tuple[str, bool, tuple[str, ...]], Any] = {}
"""The emitted function of each kernel, by source path, mode (as ``kernel.function``:
Triton fixes at decoration whether a function is interpreted) and float parameters."""


def emitted_function(kernel: TritonKernel, floats: tuple[str, ...] = ()) -> Any:
    """The kernel's ``@triton.jit`` function for a compiler that copies its source (see the
    module docstring), converting the parameters named in ``floats`` to ``fp32`` on
    entry; the kernel's own function where its module needs no rewriting.
    Raises :class:`NotEmbeddable` where the source cannot be pasted into a literal."""
    key = (kernel.source_path, kernel.interpreting, floats)
    found = _EMITTED.get(key)
    if found is None:
        found = _EMITTED[key] = _rebuilt(kernel, floats)
    return found


def _rebuilt(kernel: TritonKernel, floats: tuple[str, ...]) -> Any:
    """The emitted function: the module without string statements or the core alias, the
    parameters named in ``floats`` converted to ``fp32`` first."""
    alias = generated_module._CORE  # the name generated modules give it
    with interpreter.LOCK:  # Python's syntax trees: see nt_triton._interpreter
        text = without_string_statements(kernel.source)
        if floats:
            text = with_float32_parameters(text, kernel.function.__name__, floats)
    if f"{alias}." in text:
        text = text.replace(f"from triton.language import core as {alias}\n", "")
        text = text.replace(f"{alias}.", "tl.core.")
    problem = embedding_problem(text)
    if problem is not None:
        raise NotEmbeddable(f"{kernel.spec.label}: its source {problem}")
    if text == kernel.source:
        return kernel.function
    with interpreter.LOCK:
        path = Path(kernel.source_path)
        virtual = path.with_name(f"{path.stem}_emitted.py")  # never written: linecache
        module = sources.execute(virtual, text, kernel.injected)
    return getattr(module, kernel.function.__name__)


def with_float32_parameters(text: str, function: str, names: tuple[str, ...]) -> str:
    """``text`` with each of ``names`` (parameters of ``function``) converted to
    ``fp32`` by its first statements."""
    tree = ast.parse(text)
    definition = next(
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == function
    )
    first = definition.body[0]
    lines = text.splitlines(keepends=True)
    indent = " " * first.col_offset
    # A value, not a method of it: Inductor's own analysis of the kernel (which
    # inputs it mutates) passes the floats as Python numbers.
    casts = [f"{indent}{name} = tl.core.to_tensor({name}).to(tl.float32)\n" for name in names]
    lines[first.lineno - 1 : first.lineno - 1] = casts
    return "".join(lines)


def embedding_problem(text: str) -> str | None:
    """Why ``text`` would not read back as itself from ``'''`` + text + ``'''`` (what
    Inductor writes), or None."""
    for number, line in enumerate(text.splitlines(), 1):
        for sequence in ("\\", "'''"):
            if sequence in line:
                return f"has {sequence!r} on its line {number}, which a string literal rereads"
    if text.endswith("'"):
        return "ends with a quote"
    return None


def without_string_statements(text: str) -> str:
    """``text`` without the statements that are only a string (docstrings; a body left
    empty gets ``pass``), every other line as it was."""
    lines = text.splitlines(keepends=True)
    dropped: list[tuple[int, int, bool]] = []
    for node in ast.walk(ast.parse(text)):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            dropped += [
                (statement.lineno, statement.end_lineno or statement.lineno, len(body) == 1)
                for statement in body
                if _string_statement(statement) and _whole_lines(lines, statement)
            ]
    for first, last, alone in sorted(dropped, reverse=True):
        line = lines[first - 1]
        indent = line[: len(line) - len(line.lstrip())]
        lines[first - 1 : last] = [f"{indent}pass\n"] if alone else []
    return "".join(lines)


def _string_statement(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _whole_lines(lines: list[str], statement: ast.stmt) -> bool:
    """Whether ``statement`` has its lines to itself (nothing else before or after it)."""
    last = statement.end_lineno or statement.lineno
    before = lines[statement.lineno - 1][: statement.col_offset]
    # Offsets count UTF-8 bytes.
    after = lines[last - 1].encode()[statement.end_col_offset :].decode(errors="replace").strip()
    return not before.strip() and (not after or after.startswith("#"))
