"""``make`` and ``jit``: from arrangement and application to a callable kernel."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, get_type_hints

from ninetoothed import aot as c_interface
from ninetoothed._aot.request import ahead_of_time_request
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.errors import ArrangementError, kernel_label, labelled
from ninetoothed.runtime import plugins, syntax_trees
from ninetoothed.runtime._arranging import make_spec
from ninetoothed.runtime.binding import arity_error, canonical_call
from ninetoothed.runtime.hookspecs import FastPath, FrameworkAdapter, GeneratedKernel
from ninetoothed.runtime.options import check_options
from ninetoothed.spec._build import application_parameters, build_spec, kernel_name
from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = ["Kernel", "aot", "build", "jit", "make"]


class Kernel:
    """A generated kernel; call it on framework tensors.

    Calling dispatches to the framework adapter that recognises the arguments
    (``nt-torch``, ``nt-paddle``, ``nt-jax``).  ``source`` is the generated
    code and ``source_path`` where it is cached.

    Each kernel is an instance of a class of its own, a subclass made once
    when the kernel is made: after a first call on the GPU the framework's fast
    path fills that class's ``__call__`` slot (:meth:`_install_fast_path`), so
    ``kernel(...)`` runs the fast path's hot function directly, with no frame
    of ours in between and no other kernel affected.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Kernel:
        own = type(cls.__name__, (cls,), {"__module__": cls.__module__})
        own.__qualname__ = cls.__qualname__
        kernel: Kernel = super().__new__(own)
        return kernel

    def __init__(self, spec: KernelSpec, backend: str = "triton") -> None:
        self.spec = spec
        self.generated: GeneratedKernel = plugins.codegen_backend(backend).generate(spec)
        # A framework imported since the plugins loaded may bring a call guard.
        plugins.refresh_call_guard()
        self._adapters: dict[type, FrameworkAdapter] = {}
        self._fast_tried = False
        self.fast_path: FastPath | None = None
        """The framework's per-call fast path, once a GPU call installed it."""

    @property
    def source(self) -> str:
        """The generated source code."""
        return self.generated.source

    @property
    def source_path(self) -> str:
        """Where the generated source lives on disk."""
        return self.generated.source_path

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Launch on ``args``: the parameters, then (or by keyword) the constexpr symbols.

        As upstream's launch function: ``kernel(x, y, z, 64)`` and
        ``kernel(x, y, z, BLOCK_SIZE=64)`` are the same call (constexpr
        symbols in :attr:`KernelSpec.positional_symbols` order), and a tensor
        may be given by its ``Tensor(name=...)``.  The plugins' call guard
        (:data:`ninetoothed.runtime.plugins.call_guard`) comes first: under Paddle's
        ``to_static`` it makes the translator run this call in dynamic mode
        rather than simulate the adapter lookup, which it cannot.
        """
        plugins.call_guard()
        args, kwargs = canonical_call(self.spec, args, kwargs)
        result = self._dispatch(args, kwargs)
        if not self._fast_tried:
            self._install_fast_path(args)
        return result

    def _dispatch(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The general path: find the adapter of the arguments, let it validate and launch."""
        if len(args) < len(self.spec.parameters):  # before the adapter: name what is missing
            names = [parameter.name for parameter in self.spec.parameters]
            raise arity_error(self.spec.label, names, len(args))
        adapter = None
        for argument in args:
            adapter = self._adapters.get(type(argument))
            if adapter is not None:
                break
        if adapter is None:
            adapter = plugins.adapter_for_arguments(args)
            # Not while a compiler traces: Dynamo replays a traced store once the graph
            # has run, and its guard on this (then changed) table would fail the next call.
            if not adapter.tracing():
                for argument in args:
                    if adapter.recognizes(argument):
                        self._adapters[type(argument)] = adapter
        return adapter.call(self.generated, args, kwargs)

    def _install_fast_path(self, args: tuple[Any, ...]) -> None:
        """After a first call on the GPU, make the framework's fast path this kernel's call.

        The fast path's :attr:`~ninetoothed.runtime.hookspecs.FastPath.method` (its hot
        function, taking the kernel first) fills the ``__call__`` slot of this kernel's
        own class, so ``kernel(...)`` costs no frame of ours; calls it has no plan for
        go to :meth:`_missed`.  A plain function in the slot, not a ``staticmethod``:
        Dynamo traces a call of the instance only through an ordinary ``__call__``.
        """
        adapter = next((a for a in map(self._adapters.get, map(type, args)) if a), None)
        if adapter is None:  # none kept: this call was traced, or its adapter is new
            adapter = plugins.adapter_for_arguments(args)
        if adapter.tracing():
            return  # a compiler traces this call: install on an eager one
        self._fast_tried = True
        if self.generated.interpreting:
            return
        launcher = adapter.launcher(self.generated, self._missed)
        if launcher is None:
            return
        self.fast_path = launcher
        method: Callable[..., Any] = launcher.method
        if adapter.guards_fast_path:  # the call guard costs a frame: only where it is needed
            fast = launcher.call

            def method(kernel: Kernel, *args: Any, **kwargs: Any) -> Any:
                plugins.call_guard()
                return fast(*args, **kwargs)

        type(self).__call__ = method  # type: ignore[method-assign]

    def _missed(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Where the fast path sends calls it has no plan for.

        A call in another form than the adapters' (constexpr symbols given
        positionally, tensors by keyword) is put in that form and tried on
        the fast path again, so it too launches from a plan; any other goes
        to :meth:`_dispatch`.
        """
        canonical_args, canonical_kwargs = canonical_call(self.spec, args, kwargs)
        fast = self.fast_path
        if fast is not None and (canonical_args is not args or canonical_kwargs is not kwargs):
            return fast.call(*canonical_args, **canonical_kwargs)
        return self._dispatch(canonical_args, canonical_kwargs)

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
    to the backend: ``num_warps``, ``num_stages``, ``maxnreg`` (register caps
    per thread, an int or a tuple of ints and None, tuned over), ``configs``
    (pinned auto-tuning configurations, a list of dicts of meta values with
    optional ``num_warps``/``num_stages``/``maxnreg``), ``max_num_configs``,
    ``persistent`` (a bool: launch at most one program per multiprocessor, each
    looping over the grid's programs; see ``docs/tuning.md``); ``kernel_name`` is
    upstream's spelling of ``name``.  Unknown options raise
    :class:`TypeError` naming the close matches (see
    :func:`ninetoothed.runtime.options.check_options`).  ``caller="cuda"`` (with
    ``output_dir``, ``target``, and ``constexprs``: the values to compile the
    constexprs a call gives for) compiles ahead of time into a C library and
    returns its Python callable (:mod:`ninetoothed.aot`, ``docs/aot.md``).
    """
    ahead = ahead_of_time_request(options)
    name, options = check_options("make", name, options, ("name", "backend"))
    if ahead is not None:  # sizes are run-time values in a C library
        tensors = ahead.tensors(tensors)
    with syntax_trees.LOCK:
        spec = make_spec(arrangement, application, tensors, name, options)
    with labelled(spec.label):  # code generation's errors too name the kernel
        if ahead is not None:  # a C library's callable (ninetoothed._aot.kernel.AotKernel)
            return ahead.make(spec)  # type: ignore[no-any-return]
        with syntax_trees.LOCK:
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
        arranged = _annotated("jit", function)
        sources = tuple(tensor.source for tensor in arranged)
        with labelled(_label(name, function)), syntax_trees.LOCK:
            spec = build_spec(function, sources, arranged, name=name, options=options)
            return Kernel(spec, backend)

    return decorate(func) if func is not None else decorate


def _label(name: str | None, function: Callable[..., Any]) -> str:
    """How errors name the kernel ``function`` makes."""
    return kernel_label(kernel_name(name, function), function)


def _annotated(caller: str, function: Callable[..., Any]) -> tuple[Tensor, ...]:
    """The arranged tensors ``function``'s parameters are annotated with, in order."""
    try:
        hints = get_type_hints(function)
    except Exception:  # annotations that are not types at all, e.g. Tensor(1).tile(...)
        hints = dict(inspect.get_annotations(function, eval_str=True))
    arranged = []
    for parameter in application_parameters(function):
        annotation = hints.get(parameter)
        if not isinstance(annotation, Tensor):
            raise ArrangementError(
                f"{caller}: parameter {parameter!r} of {function.__name__} must be annotated "
                f"with a ninetoothed.Tensor (its arrangement), got {annotation!r}"
            )
        arranged.append(annotation)
    return tuple(arranged)


def aot(
    func: Callable[..., Any],
    caller: str = "cuda",
    kernel_name: str | None = None,
    output_dir: Any = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    *,
    target: str | int | None = None,
) -> Any:
    """Compile ``func``, annotated like a :func:`jit` function, into a C library.

    Upstream's ``ninetoothed.aot.aot``, which its ``make(..., caller="cuda")``
    calls once the application is annotated: the same library and Python
    callable as ``make(..., caller=caller, kernel_name=..., output_dir=...)``;
    ``target`` (ours, as ``make``'s) names the GPU architecture to compile for.
    """
    given = {"num_warps": num_warps, "num_stages": num_stages, "kernel_name": kernel_name}
    options = {key: value for key, value in given.items() if value is not None}
    ahead = ahead_of_time_request(
        {**options, "caller": caller, "output_dir": output_dir, "target": target}
    )
    if ahead is None:
        raise TypeError(
            f"aot: caller={caller!r} compiles just in time; aot compiles into a C library, "
            "so pass caller='cuda' (or use ninetoothed.jit)"
        )
    name, options = check_options("aot", None, options, ())
    arranged = _annotated("aot", func)
    sources = tuple(tensor.source for tensor in arranged)
    with labelled(_label(name, func)):
        with syntax_trees.LOCK:
            spec = build_spec(func, sources, arranged, name=name, options=options)
        return ahead.make(spec)


c_interface.compile_annotated = aot


def build(
    premake: Callable[..., Any],
    configs: Any,
    *,
    meta_parameters: Sequence[str] | None = None,
    caller: str | None = None,
    kernel_name: str | None = None,
    output_dir: Any = None,
    lazy: bool = False,
    target: str | int | None = None,
) -> Any:
    """Build ``premake``'s kernel for every configuration into one C library.

    ``configs`` holds ``(args, kwargs, compilation_configs)`` triples: ``args``
    and ``kwargs`` go to ``premake``, ``compilation_configs`` (``num_warps``,
    ``num_stages``) to ``make``.  ``meta_parameters`` names ``premake``'s
    parameters that only change speed: they, and the compilation
    configurations, are tuned per key of the other parameters on the GPU at
    build time (without a GPU: the first configuration of each key).
    A configuration's ``kwargs`` may also give the values of the constexprs the
    kernel takes at the call (``BLOCK=64``): a symbol's is a key value after
    ``premake``'s, a scalar's selects by the call's argument.
    ``caller`` is ``"cuda"`` (the default), ``kernel_name`` the library's
    name (``launch_<kernel_name>``, ``<kernel_name>.so``), ``output_dir`` where
    it goes (created if missing; default ``ninetoothed.generation.CACHE_DIR``),
    ``target`` the GPU architecture (``"sm_90"``; default: the current GPU's).
    ``lazy=True`` builds at the first call.  Returns the library's Python
    callable: ``kernel(*tensors, *key_values)``.
    """
    from ninetoothed._aot.build import build as build_library

    return build_library(
        premake,
        configs,
        meta_parameters=meta_parameters,
        caller=caller,
        kernel_name=kernel_name,
        output_dir=output_dir,
        lazy=lazy,
        target=target,
    )
