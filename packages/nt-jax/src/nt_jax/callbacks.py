"""Launching from JAX through Python callbacks: the interpreter, and GPUs without jax-triton.

* :func:`call_interpreted` runs the kernel under Triton's interpreter inside
  :func:`jax.pure_callback`, which works eagerly and under ``jax.jit``.  The
  callback sees numpy arrays; they reach Triton as torch tensors
  (nt-triton's interop: zero-copy for inputs; outputs are fresh buffers,
  filled with the initial contents when given as arrays).
* :func:`call_buffer_callback` launches from
  ``jax.experimental.buffer_callback``, which hands a Python callback XLA's
  device buffers and stream, through the same ``prepare``/``launch`` PyTorch
  uses, on torch tensors viewing those buffers.  It costs a Python call per
  execution and needs torch; on the CPU it runs under the interpreter, which
  is how it is tested without a GPU.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ninetoothed.errors import NineToothedError
from ninetoothed.runtime.binding import BoundCall
from ninetoothed.runtime.hookspecs import GeneratedKernel
from nt_jax.roles import Roles
from nt_triton import empty_tensor, from_buffer, from_numpy, to_numpy, torch_module

DISTRIBUTION = "nt-jax"


def call_interpreted(kernel: GeneratedKernel, bound: BoundCall, roles: Roles) -> list[Any]:
    """Run under Triton's interpreter inside ``jax.pure_callback``."""
    torch = torch_module(DISTRIBUTION, "running kernels on JAX arrays under Triton's interpreter")
    operands = [a for a in roles.arguments if not isinstance(a, jax.ShapeDtypeStruct)]
    output_of = roles.output_of
    tensors = bound.tensors
    scalars = bound.scalars
    bfloat16 = jnp.dtype("bfloat16")

    def callback(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        try:
            return run(*arrays)
        except NineToothedError as error:
            _FAILURES.error = error
            raise

    def run(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        launch_args: list[Any] = []
        results: list[Any] = []
        given = iter(arrays)
        for index, info in enumerate(tensors):
            output = output_of.get(index)
            if output is not None and roles.fresh[output]:
                tensor = empty_tensor(torch, info)
            else:
                tensor = from_numpy(torch, next(given), copy=output is not None)
            if output is not None:
                results.append(tensor)
            launch_args.append(tensor)
        kernel.launch(kernel.prepare(tensors, launch_args, scalars), 0)
        return tuple(to_numpy(torch, t, bfloat16) for t in results)

    return list(
        jax.pure_callback(callback, tuple(roles.out_shapes), *operands, vmap_method="sequential")
    )


_FAILURES = threading.local()


def take_failure() -> NineToothedError | None:
    """The error a kernel raised in this thread's most recent failed callback (once)."""
    failure: NineToothedError | None = getattr(_FAILURES, "error", None)
    _FAILURES.error = None
    return failure


def raising_kernel_errors(run: Callable[[], Any]) -> Any:
    """``run()``; a kernel's error inside one of its callbacks (a LaunchError naming a
    parameter) is raised as itself, not as XLA's "INTERNAL: CpuCallback error"."""
    _FAILURES.error = None
    try:
        return run()
    except jax.errors.JaxRuntimeError:
        failure = take_failure()
        if failure is not None:
            raise failure from None
        raise


def call_buffer_callback(kernel: GeneratedKernel, bound: BoundCall, roles: Roles) -> list[Any]:
    """Launch from an XLA buffer callback, on XLA's buffers and stream."""
    from jax.experimental.buffer_callback import buffer_callback

    torch = torch_module(
        DISTRIBUTION,
        'launching kernels from JAX without jax-triton (install "nt-jax[gpu]" for it)',
    )
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
    output_of = roles.output_of
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
            launch_args.append(from_buffer(torch, buffer))
        kernel.launch(kernel.prepare(tensors, launch_args, scalars), stream)

    call = buffer_callback(callback, list(roles.out_shapes), input_output_aliases=aliases)
    return list(call(*operands))
