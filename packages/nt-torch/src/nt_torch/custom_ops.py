"""Kernels as PyTorch custom operators, so ``torch.compile`` and ``torch.func`` can host them.

Dynamo cannot trace into a launch (Triton's autotuner, its launcher, the
interpreter's DLPack views): it breaks the graph there, and without
``fullgraph`` the fake-tensor pass trips over ``uint64`` views
(``KeyError(torch.uint64)``).  A custom operator is opaque to Dynamo: it
records one node and runs the kernel only when the compiled graph runs.

:func:`custom_op` registers a kernel under a name (``"mylib::add"``) with
``torch.library``.  Kernels not registered still work under Dynamo: the
adapter routes them through one generic operator (:mod:`nt_torch.launch_operator`).

What the registration derives from the kernel:

* the schema: one argument per kernel parameter in order (tensors as
  ``Tensor``, ``Tensor(0)`` scalars as ``Scalar``), then the symbols a call may
  give by keyword (``Scalar?``, keyword-only);
* ``mutates_args``: NineToothed kernels write into the tensors passed in (the
  in-place convention), so the parameters the application assigns to
  (``kernel.generated.outputs``) are marked as mutated (``Tensor(a!)``) and the
  operator returns nothing;
* the fake (meta) implementation: with every output written in place and
  nothing returned, it has nothing to allocate, so it only checks what can be
  checked without data (the parameter count).  Functional wrappers that
  allocate outputs (:mod:`nt_torch.autograd`) call the operator after
  allocating, so their outputs' shapes come from the caller, not from here.

Eager calls do not go through the operator: :class:`TorchOperator` launches
the kernel directly unless Dynamo is tracing or a ``torch.func`` transform is
active, so registering costs an eager call one ``is_compiling`` check.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import torch
from torch._subclasses.functional_tensor import FunctionalTensorMode

from ninetoothed.errors import LaunchError
from ninetoothed.runtime import plugins
from ninetoothed.runtime.binding import arity_error, canonical_call
from ninetoothed.runtime.hookspecs import GeneratedKernel
from ninetoothed.runtime.make import Kernel
from nt_torch import inductor, runtime

__all__ = ["TorchOperator", "custom_op", "schema_of"]

_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)::([A-Za-z_][A-Za-z0-9_]*)$")
_libraries: dict[str, torch.library.Library] = {}
Launch = Callable[..., Any]
"""Runs the kernel eagerly on the operator's arguments."""
_lock = threading.Lock()


class TorchOperator:
    """A kernel registered as a PyTorch custom operator; call it like the kernel.

    ``op`` is the ``torch.ops`` overload (``torch.ops.mylib.add.default``);
    ``mutates_args`` names the parameters it writes.
    """

    def __init__(self, name: str, kernel: Kernel, op: Any, mutates_args: tuple[str, ...]) -> None:
        self.name = name
        self.kernel = kernel
        self.op = op
        """The ``torch.ops`` overload."""
        self.mutates_args = mutates_args
        self._symbols = tuple(kernel.spec.symbol_kinds)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Launch the kernel: through the operator when traced or transformed, else directly."""
        if torch.compiler.is_compiling() or torch._C._are_functorch_transforms_active():
            self.call_operator(args, kwargs)
            return
        self.kernel(*args, **kwargs)

    def call_operator(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Call the registered operator (checking the keywords it knows).

        Its schema is the adapters' form (parameters, then symbols by
        keyword): upstream's call forms are put in that form first."""
        args, kwargs = canonical_call(self.kernel.spec, args, kwargs)
        unknown = set(kwargs) - set(self._symbols)
        if unknown:
            raise LaunchError(
                f"{self.kernel.spec.label}: unexpected keyword argument(s) {sorted(unknown)}; the "
                f"kernel's symbols are {list(self._symbols)}"
            )
        self.op(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<ninetoothed torch operator {self.name} of {self.kernel!r}>"


def custom_op(name: str, kernel: Kernel) -> TorchOperator:
    """Register ``kernel`` as the PyTorch operator ``name`` (``"namespace::op"``).

    Returns a :class:`TorchOperator`, called like the kernel; it works under
    ``torch.compile(fullgraph=True)`` without graph breaks and under
    ``torch.func.vmap``.  Like ``torch.library.custom_op``, a name can be
    registered once per process.
    """
    if not isinstance(kernel, Kernel):
        raise TypeError(
            f"custom_op: kernel must be a ninetoothed kernel (from make or jit), got "
            f"{type(kernel).__name__}"
        )
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None:
        raise ValueError(f"custom_op: name must look like 'namespace::op_name', got {name!r}")
    namespace, op_name = match.groups()
    with _lock:
        return _register(namespace, op_name, kernel, kernel)


def schema_of(op_name: str, kernel: Kernel | GeneratedKernel) -> tuple[str, tuple[str, ...]]:
    """The operator schema of ``kernel`` and the parameters it mutates."""
    outputs = set(_generated(kernel).outputs)
    arguments = []
    mutated: list[str] = []
    for parameter in kernel.spec.parameters:
        if parameter.is_scalar:
            arguments.append(f"Scalar {parameter.name}")
        elif parameter.name in outputs:
            arguments.append(f"Tensor(a{len(mutated)}!) {parameter.name}")
            mutated.append(parameter.name)
        else:
            arguments.append(f"Tensor {parameter.name}")
    symbols = [f"Scalar? {symbol}=None" for symbol in kernel.spec.symbol_kinds]
    if symbols:
        arguments += ["*", *symbols]
    return f"{op_name}({', '.join(arguments)}) -> ()", tuple(mutated)


def _register(namespace: str, op_name: str, kernel: Kernel, launch: Launch) -> TorchOperator:
    schema, mutated = schema_of(op_name, kernel)
    library = _libraries.get(namespace)
    if library is None:
        library = _libraries[namespace] = torch.library.Library(namespace, "FRAGMENT")  # type: ignore[no-untyped-call]
    library.define(schema)  # type: ignore[no-untyped-call]
    qualified = f"{namespace}::{op_name}"
    library.impl(op_name, _implementation(kernel), "CompositeExplicitAutograd")  # type: ignore[no-untyped-call]
    torch.library.register_fake(qualified, _fake(kernel), lib=library)
    from nt_torch import vmap

    torch.library.register_vmap(qualified, vmap.rule(kernel, launch), lib=library)
    # Under torch.compile on the GPU, the node becomes the kernel itself (nt_torch.inductor).
    torch.library.register_torch_dispatch(
        qualified, FunctionalTensorMode, inductor.rule(_kernel_call(kernel)), lib=library
    )
    op = getattr(getattr(torch.ops, namespace), op_name).default
    return TorchOperator(qualified, kernel, op, mutated)


def _implementation(kernel: Kernel) -> Callable[..., None]:
    """The operator's implementation: the kernel's fast path (:mod:`nt_torch.runtime`),
    made on the first call (the adapter comes from its tensors)."""
    launch: runtime.Launch | None = None

    def implementation(*args: Any, **kwargs: Any) -> None:
        nonlocal launch
        if launch is None:
            launch = runtime.launcher(plugins.adapter_for_arguments(args), kernel.generated)
        if kwargs:
            kwargs = {key: value for key, value in kwargs.items() if value is not None}
        launch(*args, **kwargs)

    return implementation


def _kernel_call(kernel: Kernel) -> inductor.KernelCall:
    """The operator's arguments as a call of ``kernel`` (symbols not given are None)."""

    def kernel_call(
        args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[GeneratedKernel, tuple[Any, ...], dict[str, Any]]:
        return kernel.generated, args, {k: v for k, v in kwargs.items() if v is not None}

    return kernel_call


def _generated(kernel: Kernel | GeneratedKernel) -> GeneratedKernel:
    return kernel.generated if isinstance(kernel, Kernel) else kernel


def _fake(kernel: Kernel | GeneratedKernel) -> Callable[..., None]:
    names = [parameter.name for parameter in kernel.spec.parameters]

    def fake(*args: Any, **kwargs: Any) -> None:
        # Outputs are written in place: nothing to allocate, only the arity to check.
        if len(args) != len(names):
            raise arity_error(kernel.spec.label, names, len(args))

    return fake


def _identifier(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"k_{cleaned}"
