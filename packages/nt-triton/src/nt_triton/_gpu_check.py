"""Under the interpreter, check at ``make`` that a kernel also compiles for a GPU.

Triton's interpreter runs the kernel's Python, so list comprehensions,
``try``, dicts, numpy calls on tiles or ``if tile > c`` give results on the
CPU and fail only on the GPU machine.  This runs Triton's front end (AST to
Triton IR, no GPU and no ptxas needed) for a Hopper target on the generated
kernel, so a CPU-first workflow meets those errors at ``make``.  The front end
needs types that a kernel only learns from its calls: pointers get their
declared dtype, else a default, and scalars the default; the defaults tried
are the first declared dtype, float32, float16 and int32.  A kernel that
fails with every one may mix element types (a gather: an index tensor whose
elements address a float table); if it compiles with one or two of its
undeclared tensors as int64 and the rest float, it is checked again at its
first call with the call's own element types (:func:`call_elements`).  Only
a kernel that fails with all of these is refused (the first failure is
reported).
``NINETOOTHED_GPU_CHECK=0`` turns the check off (:func:`nt_triton.knobs.gpu_check`).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import types
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import triton.language as tl

from ninetoothed.arrangement.dtype import DataType, name_of, triton_type_name
from ninetoothed.errors import CodegenError
from ninetoothed.runtime.hookspecs import TensorInfo
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import _failures as failures
from nt_triton import _interpreter as interpreter
from nt_triton._abi import KernelSignature, ParameterKind
from nt_triton.cache import _memos

__all__ = [
    "CallTypes",
    "Elements",
    "PLACEHOLDER_CONSTANT",
    "TARGET",
    "call_elements",
    "call_types",
    "check",
    "check_call",
    "compiles_with_index_tensors",
    "masked_memory_operations",
    "triton_ir",
]

TARGET = ("cuda", 90, 32)
"""The GPU target the front end compiles for: Hopper, warps of 32."""


def _patched_objects() -> list[Any]:
    """What Triton's interpreter patches while it runs a kernel (``_patch_lang``)."""
    core = tl.core
    names = ("tensor", "dtype", "condition", "tensor_descriptor_base")
    return [tl, core, tl.math, *(getattr(core, n) for n in names if hasattr(core, n))]


def _unpatched(value: Any) -> Any:
    """``value`` without the interpreter's wrappers around builtins (``member=`` lambdas)."""
    while (
        isinstance(value, types.FunctionType)
        and value.__module__ == "triton.runtime.interpreter"
        and "member" in (value.__kwdefaults__ or {})
    ):
        value = (value.__kwdefaults__ or {})["member"]
    return value


_PRISTINE: dict[int, tuple[Any, dict[str, Any]]] = {
    id(obj): (obj, {name: _unpatched(value) for name, value in vars(obj).items()})
    for obj in _patched_objects()
}
"""Triton's language as imported (before any kernel was interpreted).

Triton's interpreter patches ``triton.language`` while a kernel runs and
restores it afterwards, except that a kernel calling a ``@triton.jit`` helper
(``tl.sigmoid``) restores the wrong values and leaves builtins patched: the
front end must see these instead."""


@contextlib.contextmanager
def _pristine_language() -> Iterator[None]:
    """Triton's language as imported, for the duration of the block."""
    changed: list[tuple[Any, str, Any]] = []
    try:
        for obj, pristine in _PRISTINE.values():
            for name, value in pristine.items():
                current = vars(obj).get(name, _PRISTINE)
                if current is not value:
                    changed.append((obj, name, current))
                    setattr(obj, name, value)
        yield
    finally:
        for obj, name, value in reversed(changed):
            if value is _PRISTINE:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


_MADE: dict[Any, Any] = _memos.register({}, "nt_triton._gpu_check._MADE")
"""Compilable copies already made (Triton's own library is converted once per process)."""

PLACEHOLDER_CONSTANT = 16
"""Value for constexpr symbols the caller gives (a power of two, as tiles need)."""


Elements = Mapping[int, str]
"""Triton element types (``"fp32"``, ``"i64"``) of undeclared tensors, by tensor index."""


def check(
    spec: KernelSpec,
    function: Any,
    signature: KernelSignature,
    meta: dict[str, Any],
    elements: Elements | None = None,
) -> None:
    """Raise :class:`CodegenError` unless the kernel's front end compiles for a GPU.

    ``function`` is the interpreted ``@triton.jit`` kernel; ``meta`` the first
    tuning configuration's values (tile sizes); ``elements`` a call's element
    types (:func:`call_elements`), else the defaults are tried.
    """
    candidates = [(default, elements or {}) for default in _defaults(spec)]
    _first_compiling(spec, function, signature, meta, candidates)


def compiles_with_index_tensors(
    spec: KernelSpec, function: Any, signature: KernelSignature, meta: dict[str, Any]
) -> bool:
    """Whether the front end compiles with one or two undeclared tensors as int64 and
    the rest float (a gather's indices beside its data), where no default does."""
    undeclared = [
        index
        for index, parameter in enumerate(spec.tensor_parameters)
        if not isinstance(parameter.source.dtype, DataType)
    ]
    subsets = [(i,) for i in undeclared] + list(itertools.combinations(undeclared, 2))
    candidates = [
        (default, dict.fromkeys(subset, "i64"))
        for subset in subsets
        for default in ("fp32", "fp16")
    ]
    try:
        _first_compiling(spec, function, signature, meta, candidates)
    except CodegenError:
        return False
    return True


def call_elements(signature: KernelSignature, arguments: Sequence[Any]) -> dict[int, str]:
    """The element types of a call's tensors (its pointer arguments' ``dtype``), by
    tensor index; a dtype Triton has no element type for is left out."""
    elements = {}
    for parameter, argument in zip(signature, arguments):
        dtype = getattr(argument, "dtype", None)
        if parameter.kind is ParameterKind.POINTER and dtype is not None:
            assert parameter.tensor_index is not None
            with contextlib.suppress(KeyError):
                elements[parameter.tensor_index] = triton_type_name(name_of(dtype))
    return elements


def _first_compiling(
    spec: KernelSpec,
    function: Any,
    signature: KernelSignature,
    meta: dict[str, Any],
    candidates: Sequence[tuple[str, Elements]],
) -> None:
    """Return at the first ``(default, elements)`` the front end compiles with; raise
    :class:`CodegenError` with the first failure when none does."""
    jit_function = _compilable(function, _MADE)
    first_error: Exception | None = None
    for default, elements in candidates:
        try:
            _front_end(jit_function, *_types(spec, signature, meta, default, elements))
            return
        except Exception as error:  # any front-end failure; the first is reported
            first_error = first_error or error
    raise CodegenError(
        f"{spec.label}: the kernel does not compile for a GPU (checked under Triton's "
        "interpreter, which also runs Python a GPU cannot: lists, dicts, try, numpy calls on "
        "tiles and Python conditions on tiles are interpreter-only). Triton's compiler, at "
        f"the generated line marked ^ (the application is "
        f"{failures.application_location(spec.application)}):\n"
        f"{failures.compiler_excerpt(first_error or '', 12)}\n"
        "(NINETOOTHED_GPU_CHECK=0 skips this check)"
    ) from first_error


def _defaults(spec: KernelSpec) -> list[str]:
    """Element types to try for what the kernel does not declare: a declared one
    first (mixed kernels), then float32, float16 and int32."""
    declared = [
        triton_type_name(p.source.dtype.name)
        for p in spec.parameters
        if isinstance(p.source.dtype, DataType)
    ]
    return list(dict.fromkeys([*declared[:1], "fp32", "fp16", "i32"]))


def _types(
    spec: KernelSpec,
    signature: KernelSignature,
    meta: dict[str, Any],
    default: str,
    elements: Elements | None = None,
) -> tuple[dict[str, str], dict[tuple[int, ...], Any]]:
    """Triton's signature and constants for the kernel: declared element types, else
    ``elements``', else ``default``."""
    elements = elements or {}
    tensors = spec.tensor_parameters
    types_: dict[str, str] = {}
    constants: dict[tuple[int, ...], Any] = {}
    for index, parameter in enumerate(signature):
        name, kind = parameter.name, parameter.kind
        if parameter.constexpr:
            types_[name] = "constexpr"
            if kind is ParameterKind.INT64_FLAG:
                constants[(index,)] = False
            elif kind is ParameterKind.LAYOUT_FLAG:
                constants[(index,)] = True  # contiguous, the usual case
            elif kind is ParameterKind.DESCRIPTOR_FLAG:
                constants[(index,)] = False  # pointer loads: what every launch can take
            else:
                constants[(index,)] = meta.get(name, PLACEHOLDER_CONSTANT)
        elif kind is ParameterKind.POINTER:
            assert parameter.tensor_index is not None
            declared = tensors[parameter.tensor_index].source.dtype
            element = (
                triton_type_name(declared.name)
                if isinstance(declared, DataType)
                else elements.get(parameter.tensor_index, default)
            )
            types_[name] = "*" + element
        elif kind is ParameterKind.OFFSETS:
            types_[name] = "*i64"
        elif kind is ParameterKind.SCALAR:
            types_[name] = default
        else:
            types_[name] = "i32"
    return types_, constants


CallTypes = tuple[dict[str, str], dict[tuple[int, ...], Any]]
"""Triton's signature (types by parameter name) and constants (by parameter index)."""


def call_types(
    signature: KernelSignature,
    tensors: Sequence[TensorInfo],
    arguments: Sequence[Any],
    meta: Mapping[str, Any],
) -> CallTypes:
    """The types and constexpr values of one call, as the front end takes them.

    ``tensors`` give the pointers' element types, ``arguments`` the host's
    values in :attr:`KernelSignature.host` order (the scalars' types, the
    host's constexprs) and ``meta`` one configuration's values.
    """
    from nt_triton._launch.compiled import int_type, triton_type

    types_: dict[str, str] = {}
    constants: dict[tuple[int, ...], Any] = {}
    given = dict(zip((p.name for p in signature.host), arguments))
    for index, parameter in enumerate(signature):
        name = parameter.name
        value = meta[name] if name in meta else given.get(name)
        if parameter.constexpr:
            types_[name] = "constexpr"
            constants[(index,)] = value
        elif parameter.kind is ParameterKind.POINTER:
            assert parameter.tensor_index is not None
            types_[name] = "*" + triton_type(tensors[parameter.tensor_index].dtype)
        elif parameter.kind is ParameterKind.OFFSETS:
            types_[name] = "*i64"
        elif isinstance(value, bool):
            types_[name] = "i1"
        elif isinstance(value, float):
            types_[name] = "fp32"
        else:
            types_[name] = int_type(value) if isinstance(value, int) else "i32"
    return types_, constants


def check_call(function: Any, types: CallTypes) -> None:
    """Triton's front end for ``function`` with a call's types (:func:`call_types`);
    raises what it raises (a ``CompilationError`` for an application it rejects).

    For launch paths that compile outside the call, so that the rejection can
    be named during it.
    """
    _front_end(_compilable(function, _MADE), *types)


def triton_ir(
    spec: KernelSpec,
    function: Any,
    signature: KernelSignature,
    constants: Mapping[str, Any],
    element: str = "fp16",
) -> str:
    """The kernel's Triton IR after Triton's own TTIR passes (canonicalised), for a
    Hopper target: what a test reads to see which loads and stores stay masked.

    ``constants`` gives constexpr parameters by name (tile sizes, size alignments; the
    64-bit flag is off, layout flags on, others :data:`PLACEHOLDER_CONSTANT`);
    ``element`` types the pointers and scalars the spec leaves undeclared.  Runs
    on a machine without a GPU; ``function`` may be interpreted or not.
    """
    jit_function = _compilable(function, _MADE)
    made = _front_end(jit_function, *_types(spec, signature, dict(constants), element))
    from triton.compiler import make_backend

    stages: dict[str, Any] = {}
    make_backend(made.target).add_stages(stages, made.options, made.source.language)
    return str(stages["ttir"](made.module, {}))


_MEMORY = re.compile(r"\btt\.(load|store) ([^:]*):")


def masked_memory_operations(ir: str) -> tuple[int, int]:
    """How many ``tt.load`` and ``tt.store`` of Triton IR (as printed) have a mask operand,
    and how many have none."""
    with_mask = without = 0
    for operation, operands in _MEMORY.findall(ir):
        count = len(re.findall(r"%[\w.#]+", operands))
        if count > (1 if operation == "load" else 2):  # pointers (and the stored value)
            with_mask += 1
        else:
            without += 1
    return with_mask, without


class _Made(NamedTuple):
    """The front end's product and what made it (the context must outlive the module)."""

    module: Any
    options: Any
    source: Any
    target: Any
    context: Any


def _front_end(function: Any, signature: dict[str, str], constants: dict[Any, Any]) -> _Made:
    """Triton IR for ``function`` (raises what the front end raises)."""
    import triton.compiler.code_generator  # noqa: F401  (imported while interpreting)
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend

    target = GPUTarget(*TARGET)
    backend = make_backend(target)
    with warnings.catch_warnings():  # Triton 3.9 warns about an unset fp-fusion default
        warnings.simplefilter("ignore")
        options = backend.parse_options({})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    source = ASTSource(function, signature, constants)
    # Triton's language helpers behave differently while interpreting (constexpr
    # functions return bare values): compile as the GPU would, then restore.
    with interpreter.compiling(), _pristine_language():
        module = source.make_ir(
            target,
            options,
            backend.get_codegen_implementation(options),
            backend.get_module_map(),
            context,
        )
    return _Made(module, options, source, target, context)


def _compilable(function: Any, made: dict[Any, Any]) -> Any:
    """A ``JITFunction`` for an interpreted ``@triton.jit`` function.

    While interpreting, every ``@triton.jit`` function (the kernel, its helpers,
    ``tl.sum`` and the rest of Triton's own library) is an interpreted one,
    which the front end cannot call: the copy's globals see Triton's modules
    through :class:`_CompilableModule` and helpers converted the same way.
    """
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    # An interpreted function's Python, or on a GPU machine a JITFunction's.
    python = function.fn if isinstance(function, (InterpretedFunction, JITFunction)) else function
    with interpreter.LOCK:  # another thread sees a copy only once its globals are converted
        if python not in made:
            _convert(python, made)
        return made[python]


def _convert(python: Any, made: dict[Any, Any]) -> None:
    """Make ``made[python]``: a ``JITFunction`` of a copy of ``python`` whose globals are
    converted (:func:`_converted`)."""
    from triton.runtime.jit import JITFunction

    namespace = dict(python.__globals__)
    copy = types.FunctionType(
        python.__code__, namespace, python.__name__, python.__defaults__, python.__closure__
    )
    copy.__qualname__, copy.__module__ = python.__qualname__, python.__module__
    made[python] = JITFunction(copy)  # first: recursive helpers find it
    for key, value in list(namespace.items()):
        namespace[key] = _converted(value, made)


def _converted(value: Any, made: dict[Any, Any]) -> Any:
    """``value`` as the front end needs it (interpreted functions and Triton's modules)."""
    from triton.runtime.interpreter import InterpretedFunction

    from nt_triton._interpreted_libdevice import InterpretedLibdevice

    if isinstance(value, InterpretedFunction):
        return _compilable(value, made)
    if isinstance(value, InterpretedLibdevice):
        return _compilable_module(value.real, made)
    if isinstance(value, types.ModuleType) and value.__name__.startswith("triton.language"):
        return _compilable_module(value, made)
    return value


def _compilable_module(module: types.ModuleType, made: dict[Any, Any]) -> types.ModuleType:
    """A view of one of Triton's modules whose interpreted functions are compilable.

    A plain module object (the front end accepts no other global) that looks
    attributes up lazily through a module ``__getattr__`` (PEP 562).
    """
    key = ("module", module.__name__)
    if key not in made:
        view = types.ModuleType(module.__name__, module.__doc__)

        def lookup(name: str) -> Any:
            return _converted(getattr(module, name), made)

        view.__getattr__ = lookup  # type: ignore[method-assign]
        made[key] = view
    return made[key]  # type: ignore[no-any-return]
