"""Kernels as differentiable functions: one declaration for every framework.

A kernel writes into the tensors passed in.  Frameworks' autodiff wants
functions that return new tensors, so a declaration first makes the kernel
functional (:func:`functional`): it is called with the parameters the kernel
reads (and its scalars), allocates the parameters it only writes, and returns
the written ones.  :func:`differentiable` pairs such a function with a
backward written once, for every framework::

    linear = ninetoothed.functional(mm_kernel, outputs={"c": lambda a, b: ((a.shape[0],
                                                                          b.shape[1]), a)})

    def linear_backward(inputs, outputs, grads):
        a, b = inputs
        (g,) = grads
        return linear(g, b.T), linear(a.T, g)  # kernels and tensor operators only

    linear = ninetoothed.differentiable(linear, linear_backward)

Called on PyTorch tensors it runs as a ``torch.autograd.Function``, on Paddle
tensors as a ``paddle.autograd.PyLayer``, on JAX arrays as a ``jax.custom_vjp``
function: each framework's autodiff flows through it (``loss.backward()``,
``jax.grad``).  ``backward(inputs, outputs, grads)`` gets the functional
inputs, the forward's outputs and one gradient per output, and returns one
gradient per input (None for inputs that get none, e.g. scalars).  It may call
kernels, functional kernels and the tensor operators the three frameworks share
(``+ - * / @``, ``.T``).

Frameworks do the work in their packages (``nt_torch.autograd``,
``nt_paddle.autograd``, ``nt_jax.autodiff``): the adapter of the first tensor
argument names its binding (:attr:`~ninetoothed.runtime.hookspecs.FrameworkAdapter.autodiff`,
an :class:`~ninetoothed.runtime.hookspecs.AutodiffBinding`); the core imports no
framework and names none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.runtime import plugins
from ninetoothed.runtime.binding import arity_error
from ninetoothed.runtime.hookspecs import AutodiffBinding, FrameworkAdapter
from ninetoothed.runtime.make import Kernel

__all__ = [
    "Differentiable",
    "Functional",
    "batching",
    "batching_of",
    "binding_of",
    "differentiable",
    "functional",
]

OutputRule = str | Callable[..., tuple[Any, ...]]
"""How an output written only is allocated: like an input (its name), or
``rule(*inputs) -> (shape, like)`` or ``(shape, like, dtype)``: ``like`` is an
input tensor whose device (and dtype, unless ``dtype`` names another, e.g.
``"float32"``) the output takes."""

_BATCHING_MODES = ("loop", "fold-leading")


class Functional:
    """A kernel called functionally: ``outputs = f(*inputs, **symbols)``; see the module."""

    def __init__(self, kernel: Kernel, outputs: Mapping[str, OutputRule] | None = None) -> None:
        if not isinstance(kernel, Kernel):
            raise TypeError(
                f"functional: kernel must be a ninetoothed kernel (from make or jit), got "
                f"{type(kernel).__name__}"
            )
        self.kernel = kernel
        spec = kernel.spec
        written = set(kernel.generated.outputs)
        read = set(kernel.generated.inputs)
        names = [parameter.name for parameter in spec.parameters]
        self.written: tuple[str, ...] = tuple(name for name in names if name in written)
        """Parameters the kernel writes: the function's outputs, in parameter order."""
        self.inputs: tuple[str, ...] = tuple(
            p.name
            for p in spec.parameters
            if p.is_scalar or p.name not in written or p.name in read
        )
        """Parameters the function takes: what the kernel reads, and its scalars."""
        scalars = {p.name for p in spec.parameters if p.is_scalar}
        self.rules = _output_rules(
            spec.label, self.inputs, self.written, read, scalars, outputs or {}
        )

    @property
    def name(self) -> str:
        """The kernel's name."""
        return self.kernel.spec.name

    @property
    def label(self) -> str:
        """How errors name the kernel (:attr:`~ninetoothed.spec.kernel_spec.KernelSpec.label`)."""
        return self.kernel.spec.label

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Allocate the outputs, launch, return them (one tensor, or a tuple for several)."""
        plugins.call_guard()
        results = _binding(self.label, args).run(self, args, kwargs)
        return results[0] if len(results) == 1 else results

    def check_arity(self, args: tuple[Any, ...]) -> None:
        """Raise a :class:`LaunchError` unless ``args`` has one argument per input."""
        if len(args) != len(self.inputs):
            raise arity_error(f"{self.label} (functional)", self.inputs, len(args))

    def kernel_arguments(
        self,
        args: tuple[Any, ...],
        allocate: Callable[[tuple[int, ...], Any, str | None], Any],
        copy: Callable[[Any], Any],
    ) -> tuple[list[Any], tuple[Any, ...]]:
        """The kernel's arguments for a functional call, and the outputs among them.

        Written-only outputs come from ``allocate(shape, like, dtype)``; parameters
        read and written from ``copy(input)``, so that the input stays.
        """
        self.check_arity(args)
        given = dict(zip(self.inputs, args))
        outputs = []
        for name in self.written:
            if name in given:
                given[name] = copy(given[name])
            else:
                given[name] = allocate(*self.output_layout(name, args))
            outputs.append(given[name])
        return [given[p.name] for p in self.kernel.spec.parameters], tuple(outputs)

    def output_layout(
        self, name: str, args: tuple[Any, ...]
    ) -> tuple[tuple[int, ...], Any, str | None]:
        """``(shape, like, dtype)`` of the written-only output ``name`` for the inputs ``args``."""
        rule = self.rules[name]
        if isinstance(rule, str):
            like = args[self.inputs.index(rule)]
            return tuple(like.shape), like, None
        shape, like, *dtype = rule(*args)
        return tuple(int(size) for size in shape), like, dtype[0] if dtype else None

    def __repr__(self) -> str:
        return f"<ninetoothed functional {self.name} ({', '.join(self.inputs)}) -> {self.written}>"


class Differentiable:
    """A functional kernel (or op) with a declared backward; see the module docstring."""

    def __init__(
        self,
        forward: Functional | Callable[..., Any],
        backward: Callable[[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]], Sequence[Any]],
        residuals: int = 0,
    ) -> None:
        self.forward = forward
        self.backward = backward
        self.residuals = residuals
        """How many of the forward's last outputs are kept for the backward only."""
        self._per_framework: dict[str, Callable[..., Any]] = {}

    @property
    def name(self) -> str:
        """The forward kernel's (or op's) name."""
        if isinstance(self.forward, Functional):
            return self.forward.name
        return str(getattr(self.forward, "__name__", self.forward))

    @property
    def label(self) -> str:
        """How errors name it: the forward kernel's label, or the op's name."""
        if isinstance(self.forward, Functional):
            return self.forward.label
        return self.name

    @property
    def visible(self) -> int | None:
        """The slice end of the outputs a caller sees (None: all of them)."""
        return -self.residuals if self.residuals else None

    def shown(self, outputs: tuple[Any, ...]) -> Any:
        """What a caller gets of the forward's ``outputs``: one tensor, or a tuple."""
        visible = outputs[: self.visible]
        return visible[0] if len(visible) == 1 else visible

    def residual_outputs(self, outputs: tuple[Any, ...]) -> tuple[Any, ...]:
        """The outputs kept for the backward only (the last ``residuals``)."""
        return outputs[len(outputs) - self.residuals :] if self.residuals else ()

    def forward_outputs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Run the forward without recording: its outputs as a tuple."""
        if isinstance(self.forward, Functional):
            outputs: tuple[Any, ...] = _binding(self.label, args).run(self.forward, args, kwargs)
            return outputs
        result = self.forward(*args, **kwargs)
        return result if isinstance(result, tuple) else (result,)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the forward, recorded for the framework's autodiff."""
        plugins.call_guard()
        if isinstance(self.forward, Functional):
            self.forward.check_arity(args)
        framework, binding = _framework(self.label, args)
        function = self._per_framework.get(framework)
        if function is None:
            function = self._per_framework[framework] = binding.differentiate(self)
        return function(*args, **kwargs)

    def gradients(
        self, inputs: tuple[Any, ...], outputs: tuple[Any, ...], grads: tuple[Any, ...]
    ) -> tuple[Any, ...]:
        """Call the backward and check it returned one gradient per input."""
        result = self.backward(inputs, outputs, grads)
        result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        if len(result) != len(inputs):
            raise LaunchError(
                f"the backward of {self.label} returned {len(result)} gradient(s), expected one "
                f"per input ({len(inputs)}); use None for inputs with no gradient"
            )
        return result

    def __repr__(self) -> str:
        return f"<ninetoothed differentiable {self.name}>"


def functional(kernel: Kernel, outputs: Mapping[str, OutputRule] | None = None) -> Functional:
    """``kernel`` called functionally; ``outputs`` says how to allocate written-only outputs.

    By default a written-only output is allocated like the first tensor input.
    """
    return Functional(kernel, outputs)


def differentiable(
    forward: Functional | Kernel | Callable[..., Any],
    backward: Callable[[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]], Sequence[Any]],
    *,
    outputs: Mapping[str, OutputRule] | None = None,
    residuals: int = 0,
) -> Differentiable:
    """Pair a forward with its ``backward``; see the module.

    ``forward`` is a kernel (made functional with ``outputs``), a
    :func:`functional` kernel, or an op: any function of tensors returning
    new tensors, such as the library's ops (``nt_torch.ops.mm``).  Its last
    ``residuals`` outputs are saved for the backward but not returned and get
    no gradient (attention's log-sum-exp, for instance).
    """
    if isinstance(forward, Kernel):
        forward = Functional(forward, outputs)
    elif outputs is not None:
        raise TypeError("differentiable: give outputs= to functional(), not to both")
    if not callable(forward):
        raise TypeError(
            f"differentiable: forward must be a kernel, functional(kernel) or an op (a function "
            f"of tensors returning tensors), got {type(forward).__name__}"
        )
    if not callable(backward):
        raise TypeError(f"differentiable: backward must be callable, got {backward!r}")
    return Differentiable(forward, backward, residuals)


def batching(kernel: Kernel, mode: str) -> Kernel:
    """Declare how ``vmap`` batches ``kernel``: ``"loop"`` (default) or ``"fold-leading"``.

    ``"fold-leading"`` promises that the kernel treats its tensors' leading
    dimension as independent rows (elementwise and row-wise kernels): a batch
    dimension is then merged into it and the kernel launches once.
    """
    if mode not in _BATCHING_MODES:
        raise ValueError(f"batching: mode must be one of {_BATCHING_MODES}, got {mode!r}")
    # On the generated kernel too: framework adapters see only that one.
    kernel.batching = kernel.generated.batching = mode  # type: ignore[attr-defined]
    return kernel


def batching_of(kernel: Any) -> str:
    """The batching mode declared for a kernel or its generated kernel (default ``"loop"``)."""
    mode: str = getattr(kernel, "batching", "loop")
    return mode


def _output_rules(
    name: str,
    inputs: tuple[str, ...],
    written: tuple[str, ...],
    read: set[str],
    scalars: set[str],
    given: Mapping[str, OutputRule],
) -> dict[str, OutputRule]:
    unknown = set(given) - set(written)
    if unknown:
        raise LaunchError(
            f"{name}: functional's outputs= names {sorted(unknown)}, but the kernel writes only "
            f"{list(written)}"
        )
    rules: dict[str, OutputRule] = {}
    default = next((p for p in inputs if p not in scalars), None)
    for output in written:
        if output in read:
            continue  # read and written: the input is copied, not allocated
        rule = given.get(output, default)
        if rule is None:
            raise LaunchError(
                f"{name}: functional cannot allocate output {output!r}: the kernel has no "
                "input to take its shape from; give outputs={...}"
            )
        if isinstance(rule, str) and rule not in inputs:
            raise LaunchError(
                f"{name}: functional's output {output!r} is to be allocated like {rule!r}, which "
                f"is not an input ({', '.join(inputs)})"
            )
        rules[output] = rule
    return rules


def binding_of(tensor: Any) -> AutodiffBinding:
    """The autodiff binding of ``tensor``'s framework (its adapter's ``autodiff``)."""
    return _framework("binding_of", (tensor,))[1]


def _binding(name: str, args: tuple[Any, ...]) -> AutodiffBinding:
    return _framework(name, args)[1]


def _framework(name: str, args: tuple[Any, ...]) -> tuple[str, AutodiffBinding]:
    """The framework name and autodiff binding of the first argument whose framework has
    one (Python scalars skipped)."""
    without: list[FrameworkAdapter] = []
    for argument in args:
        if isinstance(argument, (bool, int, float, complex, str, bytes, type(None))):
            continue
        adapter = plugins.adapter_for(argument)
        binding = adapter.autodiff
        if binding is not None:
            return adapter.name, binding
        without.append(adapter)
    if without:
        raise LaunchError(
            f"{name}: the {without[0].name} adapter ({without[0].distribution}) binds no "
            "autodiff, which functional and differentiable calls need"
        )
    raise LaunchError(f"{name}: no tensor among the arguments to tell the framework by")
