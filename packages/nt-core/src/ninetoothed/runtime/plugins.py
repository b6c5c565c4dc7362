"""The plugin manager: finds the code-generation backend and framework adapters.

Plugins are pluggy plugins implementing :class:`ninetoothed.runtime.hookspecs.NineToothedSpec`.
Installed distributions announce theirs in the ``ninetoothed`` entry-point group
(``nt-triton`` as ``triton``, ``nt-torch`` as ``torch``, ``nt-paddle`` as
``paddle``, ``nt-jax`` as ``jax``); they are loaded the first time
:func:`plugin_manager` is called.  Plugins can also be registered by hand with
:func:`register`.

The core never imports a backend or a framework: when nothing answers, the
errors raised here say which distribution to install.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, Protocol, cast

import pluggy

from ninetoothed.errors import AdapterNotFoundError, BackendNotFoundError, LaunchError
from ninetoothed.runtime.hookspecs import (
    PROJECT_NAME,
    AheadOfTimeBuilder,
    CodegenBackend,
    FrameworkAdapter,
    GeneratedKernel,
    NineToothedSpec,
)

__all__ = [
    "adapter_for",
    "ahead_of_time_builder",
    "adapter_for_arguments",
    "call_guard",
    "codegen_backend",
    "lazy_adapter_hook",
    "lazy_submodules",
    "loaded_kernel",
    "no_call_guard",
    "plugin_manager",
    "refresh_call_guard",
    "register",
    "type_comes_from",
    "unregister",
]

_FRAMEWORK_DISTRIBUTIONS: dict[str, tuple[str, str, str]] = {
    "torch": ("PyTorch", "nt-torch", "torch"),
    "paddle": ("PaddlePaddle", "nt-paddle", "paddle"),
    "jax": ("JAX", "nt-jax", "jax"),
    "jaxlib": ("JAX", "nt-jax", "jax"),
}
"""Top-level module of a framework's tensor types -> (framework, distribution,
the distribution's entry-point name).

Used only to word error messages; recognising tensors is the adapters' job."""

_BACKEND_DISTRIBUTIONS: dict[str, str] = {"triton": "nt-triton"}
"""Code-generation backend name -> the distribution that provides it."""

# Python values that are never tensors: kernels take them as scalar arguments,
# so they are skipped without asking any adapter.
_SCALAR_TYPES = (bool, int, float, complex, str, bytes, type(None))

_lock = threading.Lock()
_manager: pluggy.PluginManager | None = None

# Adapter found for each argument type. Kernel calls look adapters up on every
# launch, and a pluggy hook call costs microseconds, so positive answers are
# memoised per type (adapters recognise tensors by type). Cleared whenever the
# set of plugins changes.
_adapter_by_type: dict[type, FrameworkAdapter] = {}


def _no_guard() -> None:
    """The call guard when no plugin has one: nothing to check."""


no_call_guard: Callable[[], None] = _no_guard
""":data:`call_guard` while no plugin has a guard: a caller that skips the call when
``call_guard is no_call_guard`` skips nothing (``nt_torch``'s express lane)."""


call_guard: Callable[[], None] = _no_guard
"""The plugins' ``ninetoothed_call_guard`` functions as one, made when the
plugins load and again by :func:`refresh_call_guard`.  Kernel calls,
functional and differentiable calls and the library's ops call it, with no
argument, before anything else.  A single plugin's guard is this object
itself, so that the entry point's own code calls it: Paddle's SOT translator
recognises its guard (``psdb.fallback``) only there.  Reading it costs a
global lookup and a call; it is never a hook call, which the tracers that
simulate bytecode (Paddle's SOT, Dynamo) cannot follow."""


def plugin_manager() -> pluggy.PluginManager:
    """Return the process-wide plugin manager, creating it on first use.

    Creating it registers the hook specifications and loads every plugin
    announced in the ``ninetoothed`` entry-point group by an installed
    distribution.  A plugin that fails to load raises here rather than being
    skipped, so a broken installation is noticed.
    """
    global _manager
    manager = _manager
    if manager is not None:
        return manager
    with _lock:
        if _manager is None:
            manager = pluggy.PluginManager(PROJECT_NAME)
            manager.add_hookspecs(NineToothedSpec)
            manager.load_setuptools_entrypoints(PROJECT_NAME)
            _collect_guards(manager)
            _manager = manager
        return _manager


def refresh_call_guard() -> None:
    """Ask the plugins for their call guards again (:data:`call_guard`).

    A plugin may have one only once its framework is imported (nt-paddle's);
    kernels ask when they are made, and the library when it binds its ops.
    Does nothing before the plugins are loaded: loading them asks.
    """
    if _manager is not None:
        _collect_guards(_manager)


def _collect_guards(manager: pluggy.PluginManager) -> None:
    global call_guard
    guards = [guard for guard in manager.hook.ninetoothed_call_guard() if guard is not None]
    call_guard = functools.reduce(_chain, guards) if guards else _no_guard


def _chain(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    """Both guards, one after the other."""

    def both() -> None:
        first()
        second()

    return both


def _forget_types(manager: pluggy.PluginManager) -> None:
    """Forget which adapter takes which type (the registry changed), then remember the
    created lazy adapters' tensor types again, latest-registered first, as far as no
    other kind of adapter plugin was registered after them.

    Without this a first kernel call traced by ``torch.compile`` after any
    registration would ask the pluggy hook, which Dynamo cannot trace.  A
    hand-registered adapter (no ``remember``) may claim any type, so the lazy
    adapters registered before it are left to the hook, which asks it first.
    """
    _adapter_by_type.clear()
    hooks = manager.hook.ninetoothed_framework_adapter.get_hookimpls()
    for hook in reversed(hooks):  # pluggy calls the latest-registered first
        remember = getattr(hook.function, "remember", None)
        if remember is None:
            break
        remember()


def register(plugin: object, name: str | None = None) -> str:
    """Register ``plugin`` (a module or object with hook implementations).

    Plugins registered later are asked first, so a hand-registered adapter or
    backend takes precedence over an installed one.  Returns the name the plugin
    is registered under.
    """
    manager = plugin_manager()
    registered = manager.register(plugin, name=name)
    _forget_types(manager)
    _collect_guards(manager)
    if registered is None:  # pluggy returns None only for blocked names
        raise ValueError(f"the plugin name {name!r} is blocked")
    return registered


def unregister(plugin: object) -> None:
    """Unregister ``plugin``, given as the plugin object or its registered name."""
    manager = plugin_manager()
    if isinstance(plugin, str):
        manager.unregister(name=plugin)
    else:
        manager.unregister(plugin)
    _forget_types(manager)
    _collect_guards(manager)


def codegen_backend(name: str = "triton") -> CodegenBackend:
    """Return the code-generation backend called ``name``.

    Raises :class:`~ninetoothed.errors.BackendNotFoundError`, naming the
    distribution to install, when no plugin provides it.
    """
    backend: CodegenBackend | None = plugin_manager().hook.ninetoothed_codegen_backend(name=name)
    if backend is not None:
        return backend
    distribution = _BACKEND_DISTRIBUTIONS.get(name)
    if distribution is not None:
        message = (
            f"no code-generation backend {name!r} is installed: "
            f"install the {distribution} distribution"
        )
    else:
        known = ", ".join(f"{n!r} (in {d})" for n, d in _BACKEND_DISTRIBUTIONS.items())
        message = f"no code-generation backend {name!r} is installed; known backends: {known}"
    raise BackendNotFoundError(message)


_AHEAD_OF_TIME_CALLERS: dict[str, str] = {"cuda": "nt-triton"}
"""Callers of ahead-of-time libraries, and the distribution whose builder serves each."""


def ahead_of_time_builder(caller: str) -> AheadOfTimeBuilder:
    """Return the builder of C libraries for ``caller`` (``"cuda"``).

    Raises :class:`~ninetoothed.errors.BackendNotFoundError`, naming the
    distribution to install, when no plugin provides one.
    """
    hook = plugin_manager().hook.ninetoothed_ahead_of_time_builder
    builder: AheadOfTimeBuilder | None = hook(caller=caller)
    if builder is not None:
        return builder
    distribution = _AHEAD_OF_TIME_CALLERS.get(caller)
    what = f"no ahead-of-time builder for caller={caller!r}"
    if distribution is not None:
        raise BackendNotFoundError(f"{what} is installed: install the {distribution} distribution")
    known = ", ".join(f"{c!r} (in {d})" for c, d in _AHEAD_OF_TIME_CALLERS.items())
    raise BackendNotFoundError(f"{what}; known callers: {known}")


def loaded_kernel(source_path: str) -> GeneratedKernel:
    """The kernel this process generated from ``source_path``, asked of the backends.

    Launches that name a kernel by its source file (PyTorch's custom operator)
    find it here.  Raises :class:`~ninetoothed.errors.LaunchError` when no backend
    made one from that file in this process.
    """
    found: GeneratedKernel | None = plugin_manager().hook.ninetoothed_loaded_kernel(
        source_path=source_path
    )
    if found is None:
        raise LaunchError(f"no kernel made in this process was generated as {source_path!r}")
    return found


def adapter_for(obj: object) -> FrameworkAdapter:
    """Return the framework adapter that recognises the host tensor ``obj``.

    Raises :class:`~ninetoothed.errors.AdapterNotFoundError` when none does; its
    message names the object's type and, for a known framework, the
    distribution that supports it.
    """
    adapter = _find_adapter(obj)
    if adapter is None:
        raise AdapterNotFoundError(_no_adapter_message(obj))
    return adapter


def adapter_for_arguments(args: Iterable[Any]) -> FrameworkAdapter:
    """Return the adapter for a kernel call's arguments.

    Python scalars (``int``, ``float``, ``bool``, ``str``, ``None`` …) are
    skipped; the adapter is the one that recognises the first remaining
    argument any adapter recognises.  Objects no adapter recognises are left for
    that adapter to validate.  Raises
    :class:`~ninetoothed.errors.LaunchError` when tensors of two frameworks are
    mixed, and :class:`~ninetoothed.errors.AdapterNotFoundError` when no
    argument is recognised.
    """
    found: FrameworkAdapter | None = None
    found_obj: object = None
    unrecognised: list[object] = []
    for obj in args:
        if isinstance(obj, _SCALAR_TYPES):
            continue
        adapter = _find_adapter(obj)
        if adapter is None:
            unrecognised.append(obj)
        elif found is None:
            found, found_obj = adapter, obj
        elif adapter is not found and adapter.name != found.name:
            raise LaunchError(
                "cannot mix tensors of two frameworks in one kernel call: "
                f"{_type_name(found_obj)} ({found.name}) and "
                f"{_type_name(obj)} ({adapter.name})"
            )
    if found is not None:
        return found
    if unrecognised:
        raise AdapterNotFoundError(_no_adapter_message(unrecognised[0]))
    raise AdapterNotFoundError(
        "none of the kernel's arguments is a tensor, so no framework can launch it; "
        + _supported_frameworks()
    )


def type_comes_from(obj: object, modules: Iterable[str]) -> bool:
    """Whether ``obj``'s type, or one of its bases, is defined in one of ``modules``.

    ``modules`` are top-level module names (``"torch"``; ``"jax"``, ``"jaxlib"``).
    Adapter plugins call this before importing their framework, so that asking
    them about other objects never imports it; walking the bases makes user
    subclasses of a framework's tensor count too.
    """
    roots = (modules,) if isinstance(modules, str) else tuple(modules)
    return any(cls.__module__.partition(".")[0] in roots for cls in type(obj).__mro__)


class LazyAdapterHook(Protocol):
    """What :func:`lazy_adapter_hook` returns: the hook, and a way to load it now."""

    def __call__(self, obj: object) -> FrameworkAdapter | None: ...

    def load_now(self) -> None:
        """Create the adapter and remember it for its tensor types."""

    def remember(self) -> None:
        """Remember the adapter for its tensor types again, if it was created."""


def lazy_adapter_hook(
    modules: Iterable[str], adapter: str | Callable[[], FrameworkAdapter]
) -> LazyAdapterHook:
    """The ``ninetoothed_framework_adapter`` hook of an adapter plugin.

    The hook looks at an object's type module first (see
    :func:`type_comes_from`), so objects of other frameworks never import this
    one; the adapter is created (importing the framework) on first use, from
    ``adapter``: ``"module:Class"`` or a function returning it.  A plugin
    module assigns the result, marked with ``hookimpl``, to
    ``ninetoothed_framework_adapter``.
    """
    roots = tuple(modules)
    load = _loader(adapter) if isinstance(adapter, str) else adapter
    loaded: list[FrameworkAdapter] = []  # not functools.cache: Dynamo traces through it

    def ninetoothed_framework_adapter(obj: object) -> FrameworkAdapter | None:
        if not type_comes_from(obj, roots):
            return None
        if not loaded:
            loaded.append(load())
        found = loaded[0]
        return found if found.recognizes(obj) else None

    def load_now() -> None:
        """Create the adapter now and remember it for its tensor types, so a first
        call traced by a compiler (``torch.compile``) finds it by one dict lookup
        instead of a pluggy hook call it cannot trace."""
        if not loaded:
            loaded.append(load())
        _remember_types(loaded[0], replace=True)

    def remember() -> None:
        """After the registry changed (which forgets every type): the adapter's tensor
        types again, if it was created, so that traced first calls stay hook-free."""
        if loaded:
            _remember_types(loaded[0], replace=False)  # a later plugin's entry stays

    ninetoothed_framework_adapter.load_now = load_now  # type: ignore[attr-defined]
    ninetoothed_framework_adapter.remember = remember  # type: ignore[attr-defined]
    return cast(LazyAdapterHook, ninetoothed_framework_adapter)


def lazy_submodules(package: str, names: Iterable[str]) -> Callable[[str], ModuleType]:
    """A package's module ``__getattr__`` (PEP 562) importing its submodules ``names`` on
    first access: a framework package offers ``nt_torch.ops`` without importing the
    framework when the package itself is imported.  (Type checkers see the submodules
    through an import under ``TYPE_CHECKING``.)"""
    known = frozenset(names)

    def __getattr__(name: str) -> ModuleType:
        if name not in known:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return importlib.import_module(f"{package}.{name}")

    return __getattr__


def _remember_types(adapter: FrameworkAdapter, *, replace: bool) -> None:
    """Record ``adapter`` for each of its ``tensor_types`` (keeping an entry already
    there unless ``replace``)."""
    for cls in getattr(adapter, "tensor_types", ()):
        if replace or cls not in _adapter_by_type:
            _adapter_by_type[cls] = adapter


def _loader(target: str) -> Callable[[], FrameworkAdapter]:
    """A function importing ``"module:Class"`` and returning an instance."""
    module_name, _, class_name = target.partition(":")

    def load() -> FrameworkAdapter:
        # A module already imported is taken from sys.modules: a first kernel
        # call traced by torch.compile cannot call importlib (Dynamo skips it).
        # One another thread is still importing is not: importlib waits for it.
        module = sys.modules.get(module_name)
        if module is None or getattr(module.__spec__, "_initializing", False):
            module = importlib.import_module(module_name)
        adapter: FrameworkAdapter = getattr(module, class_name)()
        return adapter

    return load


def _find_adapter(obj: object) -> FrameworkAdapter | None:
    """The adapter recognising ``obj``, memoised by type, or ``None``."""
    cls = type(obj)
    cached = _adapter_by_type.get(cls)
    if cached is not None:
        return cached
    adapter: FrameworkAdapter | None = plugin_manager().hook.ninetoothed_framework_adapter(obj=obj)
    if adapter is not None:
        _adapter_by_type[cls] = adapter
    return adapter


def _type_name(obj: object) -> str:
    """``module.QualifiedName`` of ``obj``'s type, as users see it in tracebacks."""
    cls = type(obj)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _framework_of(obj: object) -> tuple[str, str, str] | None:
    """(framework, distribution, entry point) of the framework ``obj``'s type comes from.

    Walks the type's bases, so subclasses of a framework's tensor defined in
    user code are attributed to that framework too.
    """
    for root, framework in _FRAMEWORK_DISTRIBUTIONS.items():
        if type_comes_from(obj, (root,)):
            return framework
    return None


def _supported_frameworks() -> str:
    """A sentence listing the frameworks NineToothed supports."""
    pairs = {framework: dist for framework, dist, _ in _FRAMEWORK_DISTRIBUTIONS.values()}
    listed = ", ".join(f"{framework} (pip install {dist})" for framework, dist in pairs.items())
    return f"NineToothed supports tensors of {listed}"


def _no_adapter_message(obj: object) -> str:
    """Why no adapter recognised ``obj``, and what to install about it."""
    type_name = _type_name(obj)
    framework = _framework_of(obj)
    if framework is None:
        return f"no framework adapter recognises an object of type {type_name}; " + (
            _supported_frameworks()
        )
    name, distribution, entry_point = framework
    if plugin_manager().get_plugin(entry_point) is not None:
        return (
            f"the {name} adapter ({distribution}) does not recognise an object of type "
            f"{type_name} as a tensor"
        )
    return (
        f"no framework adapter recognises {type_name}: NineToothed's {name} support is "
        f"not installed; install the {distribution} distribution (pip install {distribution})"
    )
