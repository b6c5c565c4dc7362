"""The JAX framework adapter: NineToothed kernels as functions of JAX arrays.

JAX arrays are immutable, so a JAX kernel is functional.  It is called like a
PyTorch kernel, with one argument per parameter, output parameters included:
an output is given either as an array (its shape and dtype, and its initial
contents, which the kernel reads if it both reads and writes the parameter and
which stay wherever it writes nothing) or as a ``jax.ShapeDtypeStruct`` (a
fresh buffer: only for parameters the kernel does not read).  The call returns
the new arrays of the output parameters (``kernel.outputs``, the parameters
the application assigns to): one array for one output, else a tuple in
parameter order.  Calls compose with ``jax.jit``: arguments may be tracers.

How a call is launched
----------------------
* **Triton's interpreter** (``TRITON_INTERPRET=1``, any device): the kernel
  runs inside :func:`jax.pure_callback`, which works eagerly and under
  ``jax.jit``.  The callback sees numpy arrays; they reach Triton as torch
  tensors (``torch.from_numpy``, zero-copy for inputs; outputs are fresh
  buffers, filled with the initial contents when given as arrays).

* **GPU, through jax-triton** (``pip install "nt-jax[gpu]"``, the default
  where it imports): ``jax_triton.triton_call`` makes the launch an XLA custom
  call, so it is part of the compiled program (no Python per execution, CUDA
  graphs work).  jax-triton's calling convention is fixed: the kernel receives
  the call's positional arguments (arrays and scalars) in order, then one
  pointer per output, then the meta-parameters by name.  NineToothed's
  generated kernels take each tensor's pointer at the parameter's place, so the
  adapter asks nt-triton for a small *trampoline* ``@triton.jit`` function
  with jax-triton's parameter order that calls the generated kernel (Triton
  inlines it; :mod:`nt_triton.trampoline` writes it, so the adapter writes no
  source).  Outputs given
  as arrays are passed in and aliased to their outputs
  (``input_output_aliases``), so the kernel writes into a buffer that starts
  with the array's contents; jax-triton 0.3 also passes the aliased output's
  pointer at the end (its "implicit output" convention; 0.4 does not,
  and the trampoline follows the installed version).

  Auto-tuned kernels: jax-triton 0.3.1 accepts a ``triton.autotune``-wrapped
  kernel, compiles every configuration, and benchmarks them in XLA when the
  compiled program first runs (``TritonAutotunedKernelCall``, which saves and
  restores aliased buffers while it measures).  The adapter therefore hands it
  the trampoline wrapped in ``triton.autotune`` with the kernel's
  configurations, and the grid as a function of the meta-parameters.  This
  keeps tuning inside ``jax.jit`` (no host launch outside XLA, no tracers to
  benchmark on) and on XLA's stream; pinned meta symbols skip tuning.

* **GPU without jax-triton**: the kernel is launched from
  ``jax.experimental.buffer_callback`` (XLA hands a Python callback its device
  buffers and stream), through the same launcher PyTorch uses, on torch
  tensors viewing those buffers.  This costs a Python call per execution and
  needs torch; it is chosen only when jax-triton does not import, or when
  ``NINETOOTHED_JAX_LAUNCHER=callback`` asks for it (``=jax-triton`` forces
  jax-triton, failing clearly when it is missing).  The same callback runs on
  the CPU under the interpreter, which is how it is tested without a GPU.
"""

from __future__ import annotations

import os
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ninetoothed.binding import BoundCall, bind_call
from ninetoothed.dtype import name_of
from ninetoothed.errors import LaunchError
from ninetoothed.hookspecs import GeneratedKernel, TensorInfo
from nt_triton import knobs
from nt_triton.abi import ParameterKind
from nt_triton.codegen import naming
from nt_triton.trampoline import Trampoline

LAUNCHER_VARIABLE = "NINETOOTHED_JAX_LAUNCHER"
"""Environment variable choosing the GPU launcher: ``auto`` (default),
``jax-triton`` or ``callback`` (see the module docstring)."""


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a contiguous row-major array of ``shape``.

    JAX arrays have no user-visible layout; XLA hands kernels (and callbacks)
    dense row-major buffers.
    """
    strides = []
    step = 1
    for size in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


def _device_name(device: Any) -> str:
    """``"cpu"`` or ``"cuda:N"`` for a ``jax.Device``."""
    if device.platform in ("gpu", "cuda", "rocm"):
        index = getattr(device, "local_hardware_id", None)
        return f"cuda:{index if index is not None else device.id}"
    return device.platform


def _default_device() -> str:
    """Where JAX puts new arrays, as a device name."""
    return _device_name(jax.devices()[0])


def _is_concrete(obj: object) -> bool:
    """Whether ``obj`` is an array with a buffer (not a tracer or a ShapeDtypeStruct)."""
    return isinstance(obj, jax.Array) and not isinstance(obj, jax.core.Tracer)


@dataclass
class _Roles:
    """How one call's tensor arguments are used."""

    arguments: list[Any]
    """The tensor arguments (arrays, tracers, ShapeDtypeStructs), in parameter order."""

    outputs: list[int]
    """Index, among the tensor parameters, of each output, in parameter order."""

    fresh: list[bool]
    """For each output: given as a ShapeDtypeStruct (no initial contents)."""

    out_shapes: list[jax.ShapeDtypeStruct] = field(default_factory=list)
    """The result types, one per output."""


class JaxAdapter:
    """Adapter for ``jax.Array`` (a ``FrameworkAdapter``); see the module docstring."""

    name = "jax"
    distribution = "nt-jax"
    functional = True

    def __init__(self) -> None:
        self._trampolines: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Any]] = (
            weakref.WeakKeyDictionary()
        )

    # ------------------------------------------------------------ description

    def recognizes(self, obj: object) -> bool:
        """Whether ``obj`` is a JAX array, a tracer of one, or a ``ShapeDtypeStruct``."""
        return isinstance(obj, (jax.Array, jax.ShapeDtypeStruct))

    def describe(self, obj: Any) -> TensorInfo:
        """Shape, row-major strides, dtype name, device and data pointer.

        Tracers and ``ShapeDtypeStruct`` have no buffer: their device is JAX's
        default device and their data pointer 0; so is the pointer of an array
        whose buffer cannot be read (deleted, or sharded over devices).
        """
        return self._describe(obj, None, with_pointer=True)

    def _describe(self, obj: Any, device: str | None, *, with_pointer: bool) -> TensorInfo:
        shape = tuple(int(size) for size in obj.shape)
        dtype = name_of(obj.dtype)
        data_ptr = 0
        if _is_concrete(obj):
            devices = obj.devices()
            if len(devices) != 1:
                raise LaunchError(
                    f"NineToothed kernels take arrays on one device; got an array sharded over "
                    f"{len(devices)} devices ({obj.sharding})"
                )
            device = _device_name(next(iter(devices)))
            if with_pointer:
                try:
                    data_ptr = obj.unsafe_buffer_pointer()
                except Exception:  # deleted or not addressable: no pointer to report
                    data_ptr = 0
        return TensorInfo(
            shape=shape,
            strides=row_major_strides(shape),
            dtype=dtype,
            device=device or _default_device(),
            data_ptr=data_ptr,
        )

    def current_stream(self, device: str) -> int:
        """0: JAX does not expose a current stream outside a computation.

        XLA chooses the stream when a program runs; the GPU launchers get it
        from XLA (jax-triton's custom call, the callback's execution context).
        """
        return 0

    # ------------------------------------------------------------ calls

    def call(self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Validate, launch, and return the output parameters' new arrays."""
        spec = kernel.spec
        # Tracers and ShapeDtypeStructs have no device: they take the device of
        # the call's first concrete array, so they never cause a mismatch.
        fallback = next(
            (_device_name(next(iter(a.devices()))) for a in args if _is_concrete(a)), None
        )
        bound = bind_call(
            spec,
            args,
            kwargs,
            framework="jax",
            recognizes=self.recognizes,
            describe=lambda obj: self._describe(obj, fallback, with_pointer=False),
        )
        roles = _roles(kernel, bound)
        if not roles.outputs:
            raise LaunchError(
                f"{spec.name}: the kernel writes no parameter, so a JAX call of it would have "
                "no result (JAX kernels return the parameters they write)"
            )
        device = bound.device
        if knobs.interpreting():
            # The buffer-callback launcher runs under the interpreter too when
            # asked for, which is how it is tested without a GPU.
            interpreted = (
                self._call_buffer_callback
                if _requested_launcher() == "callback"
                else self._call_interpreted
            )
            _check_shapes(kernel, bound, roles)
            results = interpreted(kernel, bound, roles)
        elif not device.startswith("cuda"):
            raise LaunchError(
                f"{spec.name}: the arrays are on {device}, but kernels run on a GPU; put them on "
                "a GPU, or set TRITON_INTERPRET=1 to run through Triton's CPU interpreter"
            )
        elif _launcher() == "callback":
            _check_shapes(kernel, bound, roles)
            results = self._call_buffer_callback(kernel, bound, roles)
        else:
            results = self._call_jax_triton(kernel, bound, roles)
        return results[0] if len(results) == 1 else tuple(results)

    # --- Triton's interpreter, in a pure callback

    def _call_interpreted(self, kernel: Any, bound: BoundCall, roles: _Roles) -> list[Any]:
        """Run under Triton's interpreter inside ``jax.pure_callback``."""
        operands = [a for a in roles.arguments if not isinstance(a, jax.ShapeDtypeStruct)]
        output_of = dict(zip(roles.outputs, range(len(roles.outputs))))
        tensors = bound.tensors
        scalars = bound.scalars

        def callback(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
            launch_args: list[Any] = []
            results: list[Any] = []
            given = iter(arrays)
            for index, info in enumerate(tensors):
                output = output_of.get(index)
                if output is not None and roles.fresh[output]:
                    tensor = _torch_empty(info)
                elif output is not None:
                    tensor = _to_torch(next(given), copy=True)
                else:
                    tensor = _to_torch(next(given), copy=False)
                if output is not None:
                    results.append(tensor)
                launch_args.append(tensor)
            kernel.launch(kernel.prepare(tensors, launch_args, scalars), 0)
            return tuple(_to_numpy(t) for t in results)

        return list(
            jax.pure_callback(
                callback, tuple(roles.out_shapes), *operands, vmap_method="sequential"
            )
        )

    # --- GPU (or interpreter) through jax.experimental.buffer_callback

    def _call_buffer_callback(self, kernel: Any, bound: BoundCall, roles: _Roles) -> list[Any]:
        """Launch from an XLA buffer callback, on XLA's buffers and stream."""
        from jax.experimental.buffer_callback import buffer_callback

        operands: list[Any] = []
        operand_of: dict[int, int] = {}
        for index, argument in enumerate(roles.arguments):
            if not isinstance(argument, jax.ShapeDtypeStruct):
                operand_of[index] = len(operands)
                operands.append(argument)
        aliases = {
            operand_of[index]: output
            for output, index in enumerate(roles.outputs)
            if not roles.fresh[output]
        }
        output_of = dict(zip(roles.outputs, range(len(roles.outputs))))
        tensors = bound.tensors
        scalars = bound.scalars
        device = bound.device

        def callback(context: Any, outs: Sequence[Any], *ins: Any) -> None:
            # XLA's stream on the GPU; on the CPU, asking for it raises.
            stream = int(context.stream) if device.startswith("cuda") else 0
            launch_args = []
            for index in range(len(tensors)):
                output = output_of.get(index)
                buffer = outs[output] if output is not None else ins[operand_of[index]]
                launch_args.append(_buffer_to_torch(buffer))
            kernel.launch(kernel.prepare(tensors, launch_args, scalars), stream)

        call = buffer_callback(callback, list(roles.out_shapes), input_output_aliases=aliases)
        return list(call(*operands))

    # --- GPU through jax-triton

    def _call_jax_triton(self, kernel: Any, bound: BoundCall, roles: _Roles) -> list[Any]:
        """Launch as an XLA custom call through ``jax_triton.triton_call``."""
        jax_triton = _import_jax_triton(kernel.spec.name)
        version = tuple(getattr(jax_triton, "__version_info__", (0, 3, 1)))
        plan = plan_triton_call(
            kernel, bound, roles, jax_triton_version=version, trampoline=self._trampoline
        )
        if plan.empty:
            return [_initial(roles, output) for output in range(len(roles.outputs))]
        results = jax_triton.triton_call(
            *plan.args,
            kernel=plan.kernel,
            out_shape=plan.out_shape,
            grid=plan.grid,
            name=kernel.spec.name,
            num_warps=plan.num_warps,
            num_stages=plan.num_stages,
            input_output_aliases=plan.input_output_aliases,
            **plan.metaparams,
        )
        return list(results)

    def _trampoline(self, kernel: Any, layout: TrampolineLayout) -> Any:
        """The trampoline ``@triton.jit`` function for ``layout`` (cached per kernel)."""
        cached = self._trampolines.setdefault(kernel, {})
        key = (layout.parameters, layout.call, layout.multiple_of_16)
        function = cached.get(key)
        if function is None:
            function = load_trampoline(kernel, layout)
            cached[key] = function
        return function


# ---------------------------------------------------------------- roles


def _roles(kernel: Any, bound: BoundCall) -> _Roles:
    """Which tensor arguments are outputs, and check ShapeDtypeStruct arguments."""
    spec = kernel.spec
    names = [p.name for p in spec.tensor_parameters]
    written = set(kernel.outputs)
    read = set(getattr(kernel, "inputs", ()))
    outputs = [index for index, name in enumerate(names) if name in written]
    fresh = []
    for index, (name, argument) in enumerate(zip(names, bound.tensor_arguments)):
        is_struct = isinstance(argument, jax.ShapeDtypeStruct)
        if index in outputs:
            if is_struct and name in read:
                raise LaunchError(
                    f"{spec.name}: output parameter {name!r} is also read by the kernel, so it "
                    "needs its initial contents: pass an array, not a jax.ShapeDtypeStruct"
                )
            fresh.append(is_struct)
        elif is_struct:
            raise LaunchError(
                f"{spec.name}: parameter {name!r} is not an output of the kernel (outputs: "
                f"{', '.join(kernel.outputs) or 'none'}), so it needs an array, not a "
                "jax.ShapeDtypeStruct"
            )
    out_shapes = [
        jax.ShapeDtypeStruct(bound.tensors[i].shape, bound.tensor_arguments[i].dtype)
        for i in outputs
    ]
    return _Roles(list(bound.tensor_arguments), outputs, fresh, out_shapes)


def _check_shapes(kernel: Any, bound: BoundCall, roles: _Roles) -> None:
    """Raise now, while tracing, if the arguments' shapes do not fit the arrangement.

    The generated host code checks that the arranged tensors' outermost shapes
    agree when it computes the grid; callbacks run it again at execution time,
    where an error would surface as an opaque runtime failure.
    """
    kernel.concrete_grid(kernel.prepare(bound.tensors, roles.arguments, bound.scalars))


def _initial(roles: _Roles, output: int) -> Any:
    """An output's value when the kernel runs no program (an empty grid)."""
    argument = roles.arguments[roles.outputs[output]]
    if isinstance(argument, jax.ShapeDtypeStruct):
        return jnp.zeros(argument.shape, argument.dtype)
    return argument


# ---------------------------------------------------------------- numpy/torch glue


def _to_torch(array: np.ndarray, *, copy: bool) -> Any:
    """A torch tensor with ``array``'s values (viewing it unless ``copy``)."""
    import torch

    array = np.asarray(array)
    if array.dtype.name == "bfloat16":  # numpy has no bfloat16; torch reads the bits
        array = array.view(np.uint16)
        return _to_torch(array, copy=copy).view(torch.bfloat16)
    if copy:
        return torch.from_numpy(np.array(array, copy=True, order="C"))
    array = np.ascontiguousarray(array)
    with warnings.catch_warnings():
        # JAX hands callbacks read-only arrays; inputs are only read.
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(array)


def _torch_empty(info: TensorInfo) -> Any:
    """An uninitialised CPU torch tensor of ``info``'s shape and dtype."""
    import torch

    return torch.empty(info.shape, dtype=getattr(torch, info.dtype))


def _to_numpy(tensor: Any) -> np.ndarray:
    """``tensor``'s values as numpy (bfloat16 as ``ml_dtypes.bfloat16``)."""
    import torch

    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.uint16).numpy().view(jnp.dtype("bfloat16"))
    return tensor.numpy()


def _buffer_to_torch(buffer: Any) -> Any:
    """A torch tensor viewing a ``buffer_callback`` buffer (zero-copy, via DLPack)."""
    try:
        import torch
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise LaunchError(
            "launching NineToothed kernels from JAX without jax-triton needs PyTorch "
            '(Triton launches on torch tensors); install "nt-jax[gpu]" for jax-triton'
        ) from error
    return torch.from_dlpack(buffer)


# ---------------------------------------------------------------- jax-triton


def _requested_launcher() -> str:
    """The launcher ``NINETOOTHED_JAX_LAUNCHER`` asks for: auto, jax-triton or callback."""
    choice = os.environ.get(LAUNCHER_VARIABLE, "auto").strip().lower() or "auto"
    if choice not in ("auto", "jax-triton", "callback"):
        raise LaunchError(
            f"{LAUNCHER_VARIABLE}={choice!r}: expected 'auto', 'jax-triton' or 'callback'"
        )
    return choice


def _launcher() -> str:
    """The GPU launcher to use: ``"jax-triton"`` or ``"callback"``."""
    choice = _requested_launcher()
    if choice != "auto":
        return choice
    try:
        _import_keeping_triton_cache()
    except ImportError:
        return "callback"
    return "jax-triton"


def _import_jax_triton(name: str) -> Any:
    try:
        jax_triton = _import_keeping_triton_cache()
    except ImportError as error:
        raise LaunchError(
            f"{name}: launching on the GPU from JAX needs jax-triton, which did not import "
            f'({error}); install it with the GPU extra: pip install "nt-jax[gpu]", or set '
            f"{LAUNCHER_VARIABLE}=callback to launch from a JAX buffer callback"
        ) from error
    return jax_triton


def _import_keeping_triton_cache() -> Any:
    """Import jax_triton without losing Triton's cache for everything else.

    jax-triton 0.3.1 sets ``TRITON_CACHE_DIR`` to ``""`` when imported; from
    then on Triton 3.6 refuses to compile any other kernel of the process
    ("Could not create or locate cache dir"), so PyTorch launches after a JAX
    launch failed.  jax-triton's own compile path does not use that cache, so
    the variable is put back as it was.
    """
    previous = os.environ.get("TRITON_CACHE_DIR")
    try:
        import jax_triton
    finally:
        if previous is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = previous
    return jax_triton


TrampolineLayout = Trampoline
"""jax-triton's parameter order for one kernel (built by nt-triton's :class:`Trampoline`)."""


@dataclass
class TritonCallPlan:
    """Everything ``jax_triton.triton_call`` is called with, for one call."""

    layout: TrampolineLayout
    kernel: Any
    """The trampoline, or it wrapped in ``triton.autotune``."""
    args: list[Any]
    out_shape: list[jax.ShapeDtypeStruct]
    grid: Any
    """A tuple, or a function of the meta-parameters (auto-tuned kernels)."""
    input_output_aliases: dict[int, int]
    metaparams: dict[str, Any]
    num_warps: int | None
    num_stages: int | None
    empty: bool
    """The grid has no programs: nothing to launch."""


def plan_triton_call(
    kernel: Any,
    bound: BoundCall,
    roles: _Roles,
    *,
    jax_triton_version: tuple[int, ...],
    trampoline: Callable[[Any, TrampolineLayout], Any],
    autotune: Callable[..., Any] | None = None,
    config: Callable[..., Any] | None = None,
) -> TritonCallPlan:
    """Assemble ``jax_triton.triton_call``'s arguments for a bound call.

    ``trampoline(kernel, layout)`` returns the jit function for a layout;
    ``autotune``/``config`` default to ``triton.autotune``/``triton.Config``
    (tests pass fakes).  ``jax_triton_version`` selects the conventions that
    changed in jax-triton 0.4: 0.3 passes aliased outputs' pointers after the
    arguments too, indexes ``input_output_aliases`` among the array arguments,
    and types Python floats as fp64.
    """
    legacy = tuple(jax_triton_version) < (0, 4)
    spec = kernel.spec
    output_of = dict(zip(roles.outputs, range(len(roles.outputs))))

    prepared = kernel.prepare(bound.tensors, roles.arguments, bound.scalars)
    values = dict(zip((p.name for p in kernel.signature.host), prepared.arguments))

    positional: list[tuple[str, bool]] = []
    args: list[Any] = []
    trailing: list[tuple[str, bool]] = []
    constexprs: list[tuple[str, bool]] = []
    metaparams: dict[str, Any] = {}
    call: list[str] = []
    multiple_of_16: list[str] = []
    scalar_names: list[str] = []
    # tensor index -> its index in input_output_aliases: among the array
    # arguments (jax-triton 0.3), or among all positional arguments (0.4).
    array_position: dict[int, int] = {}
    array_count = 0
    for parameter in kernel.signature:
        name = parameter.name
        if parameter.constexpr:
            constexprs.append((name, True))
            call.append(name)
            if name in values:
                metaparams[name] = _plain(values[name])
            continue
        index = parameter.tensor_index if parameter.kind is ParameterKind.POINTER else None
        output = output_of.get(index) if index is not None else None
        if output is not None and roles.fresh[output]:
            call.append(naming.output_pointer(output))  # only jax-triton's output pointer
            continue
        positional.append((name, False))
        call.append(name)
        if index is not None:
            array_position[index] = array_count if legacy else len(args)
            array_count += 1
            args.append(values[name])
        else:
            scalar_names.append(name)
            value = _scalar(values[name], legacy=legacy)
            if _multiple_of_16(value):
                multiple_of_16.append(name)
            args.append(value)
    for output in range(len(roles.outputs)):
        if roles.fresh[output] or legacy:
            trailing.append((naming.output_pointer(output), False))
    aliases = {
        array_position[roles.outputs[output]]: output
        for output in range(len(roles.outputs))
        if not roles.fresh[output]
    }
    layout = TrampolineLayout(
        name=naming.trampoline(spec.name, "jax_triton"),
        parameters=tuple(positional + trailing + constexprs),
        call=tuple(call),
        multiple_of_16=tuple(multiple_of_16),
    )
    function = trampoline(kernel, layout)

    resolved, meta = kernel.concrete_grid(prepared)
    empty = _programs(resolved) == 0
    configs = list(kernel.configurations)
    grid: Any = prepared.grid
    if prepared.meta is not None:
        metaparams.update(meta)
        grid = resolved
        launched = function
        num_warps, num_stages = kernel.launch_options
    elif spec.meta_symbols:
        if autotune is None or config is None:
            import triton

            autotune = autotune or triton.autotune
            config = config or triton.Config
        triton_configs = [
            config(c.kwargs(), num_warps=c.num_warps, num_stages=c.num_stages) for c in configs
        ]
        # Tuned by jax-triton when the compiled program first runs; the grid
        # stays a function of each configuration's meta values.  The key names
        # every scalar argument (sizes, strides), which jax-triton 0.3 warns
        # about otherwise; each compiled program is tuned once either way.
        launched = autotune(configs=triton_configs, key=scalar_names)(function)
        num_warps = num_stages = None  # each configuration carries its own
    else:
        launched = function
        num_warps, num_stages = configs[0].num_warps, configs[0].num_stages
    return TritonCallPlan(
        layout=layout,
        kernel=launched,
        args=args,
        out_shape=list(roles.out_shapes),
        grid=grid,
        input_output_aliases=aliases,
        metaparams=metaparams,
        num_warps=num_warps,
        num_stages=num_stages,
        empty=empty,
    )


def load_trampoline(kernel: Any, layout: TrampolineLayout) -> Any:
    """The trampoline for ``layout``, calling ``kernel``'s generated function."""
    return layout.load(kernel.function)


def _programs(grid: Sequence[int]) -> int:
    count = 1
    for size in grid:
        count *= int(size)
    return count


def _plain(value: Any) -> Any:
    """A Python scalar from a host-computed value (numpy scalars included)."""
    return value.item() if isinstance(value, np.generic) else value


def _multiple_of_16(value: Any) -> bool:
    """Whether Triton's launcher would mark ``value`` divisible by 16 (ints, not bools)."""
    return isinstance(value, int) and not isinstance(value, bool) and value % 16 == 0


def _scalar(value: Any, *, legacy: bool) -> Any:
    """A scalar argument, typed by jax-triton as Triton's own launcher types it.

    jax-triton 0.3 types Python floats as fp64 and ``np.float32`` as fp32;
    Triton's launcher passes Python floats as fp32, which the kernel expects.
    (0.4 types floats as Triton does and deprecates ``np.float32``.)
    """
    value = _plain(value)
    if legacy and isinstance(value, float):
        return np.float32(value)
    return value
