"""``make`` and ``jit``: from arrangement and application to a callable kernel."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, get_type_hints

from ninetoothed import jagged, plugins
from ninetoothed.errors import ArrangementError
from ninetoothed.hookspecs import GeneratedKernel
from ninetoothed.ir import KernelSpec, application_parameters, build_spec
from ninetoothed.options import AHEAD_OF_TIME, check_options
from ninetoothed.tensor import Tensor


class Kernel:
    """A generated kernel; call it on framework tensors.

    Calling dispatches to the framework adapter that recognises the arguments
    (``nt-torch``, ``nt-paddle``, ``nt-jax``).  ``source`` is the generated
    code and ``source_path`` where it is cached.
    """

    def __init__(self, spec: KernelSpec, backend: str = "triton") -> None:
        self.spec = spec
        self.generated: GeneratedKernel = plugins.codegen_backend(backend).generate(spec)
        self._adapters: dict[type, Any] = {}

    @property
    def source(self) -> str:
        """The generated source code."""
        return self.generated.source

    @property
    def source_path(self) -> str:
        """Where the generated source lives on disk."""
        return self.generated.source_path

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        adapter = None
        for argument in args:
            adapter = self._adapters.get(type(argument))
            if adapter is not None:
                break
        if adapter is None:
            adapter = plugins.adapter_for_arguments(args)
            for argument in args:
                if adapter.recognizes(argument):
                    self._adapters[type(argument)] = adapter
        return adapter.call(self.generated, args, kwargs)

    def __repr__(self) -> str:
        return f"<ninetoothed kernel {self.spec.name} ({len(self.spec.parameters)} parameters)>"


def make(
    arrangement: Callable[..., Any],
    application: Callable[..., Any],
    tensors: Sequence[Any],
    *,
    name: str | None = None,
    backend: str = "triton",
    **options: Any,
) -> Kernel:
    """Arrange ``tensors`` with ``arrangement``, apply ``application``, and generate.

    ``tensors`` holds the parameters' symbolic tensors; other values in it
    (slices, ints, tuples …) are handed to the arrangement as they are, as
    compile-time constants, and are not kernel parameters.  ``options`` go
    to the backend: ``num_warps``, ``num_stages``, ``configs`` (pinned
    auto-tuning configurations, a list of dicts of meta values with optional
    ``num_warps``/``num_stages``), ``max_num_configs``; ``kernel_name`` is
    upstream's spelling of ``name``.  Unknown options raise
    :class:`TypeError` naming the close matches (see
    :func:`ninetoothed.options.check_options`).
    """
    name, options = check_options("make", name, options, ("name", "backend"))
    tensors = tuple(tensors)
    arranged = arrangement(*tensors)
    if isinstance(arranged, Tensor):
        arranged = (arranged,)
    if not isinstance(arranged, (tuple, list)):
        raise ArrangementError(
            f"the arrangement {getattr(arrangement, '__name__', arrangement)} must return a "
            f"tuple of tensors, got {type(arranged).__name__}"
        )
    sources = tuple(tensor for tensor in tensors if isinstance(tensor, Tensor))
    jagged.refuse("make", sources)
    spec = build_spec(application, sources, tuple(arranged), name=name, options=options)
    return Kernel(spec, backend)


def jit(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    backend: str = "triton",
    **options: Any,
) -> Any:
    """Make a kernel from a function whose parameter annotations are arranged tensors.

    ``@ninetoothed.jit`` and ``@ninetoothed.jit(num_warps=8)`` both work; the
    options are ``make``'s.
    """
    name, options = check_options("jit", name, options, ("name", "backend"))

    def decorate(function: Callable[..., Any]) -> Kernel:
        try:
            hints = get_type_hints(function)
        except Exception:  # annotations that are not types at all, e.g. Tensor(1).tile(...)
            hints = {
                key: value
                for key, value in inspect.get_annotations(function, eval_str=True).items()
            }
        arranged = []
        for parameter in application_parameters(function):
            annotation = hints.get(parameter)
            if not isinstance(annotation, Tensor):
                raise ArrangementError(
                    f"jit: parameter {parameter!r} of {function.__name__} must be annotated with "
                    f"a ninetoothed.Tensor (its arrangement), got {annotation!r}"
                )
            arranged.append(annotation)
        sources = tuple(tensor.source for tensor in arranged)
        jagged.refuse("jit", sources)
        spec = build_spec(function, sources, tuple(arranged), name=name, options=options)
        return Kernel(spec, backend)

    return decorate(func) if func is not None else decorate


def build(*args: Any, **kwargs: Any) -> NoReturn:
    """Upstream's ahead-of-time build: not supported yet (raises :class:`NotImplementedError`).

    Kernels are generated by :func:`make` or :func:`jit` and compiled on their
    first call.
    """
    raise NotImplementedError(f"build: {AHEAD_OF_TIME}")
