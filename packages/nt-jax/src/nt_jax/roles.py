"""Which of a JAX call's tensor arguments are outputs, and how they are given.

A JAX kernel returns the new arrays of the parameters it writes
(``kernel.outputs``).  An output is given as an array (its initial contents
count) or as a ``jax.ShapeDtypeStruct`` (a fresh buffer: only for outputs the
kernel does not read); inputs must be arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.binding import BoundCall
from ninetoothed.runtime.hookspecs import GeneratedKernel


@dataclass
class Roles:
    """How one call's tensor arguments are used."""

    arguments: list[Any]
    """The tensor arguments (arrays, tracers, ShapeDtypeStructs), in parameter order."""

    outputs: list[int]
    """Index, among the tensor parameters, of each output, in parameter order."""

    fresh: list[bool]
    """For each output: given as a ShapeDtypeStruct (no initial contents)."""

    out_shapes: list[jax.ShapeDtypeStruct] = field(default_factory=list)
    """The result types, one per output."""

    @property
    def output_of(self) -> dict[int, int]:
        """Tensor index -> output index, for the outputs."""
        return dict(zip(self.outputs, range(len(self.outputs))))

    def initial(self, output: int) -> Any:
        """An output's value when the kernel runs no program (an empty grid)."""
        argument = self.arguments[self.outputs[output]]
        if isinstance(argument, jax.ShapeDtypeStruct):
            return jnp.zeros(argument.shape, argument.dtype)
        return argument


def roles(kernel: GeneratedKernel, bound: BoundCall) -> Roles:
    """Which tensor arguments are outputs; check the ShapeDtypeStruct arguments."""
    spec = kernel.spec
    names = [p.name for p in spec.tensor_parameters]
    written = set(kernel.outputs)
    read = set(kernel.inputs)
    outputs = [index for index, name in enumerate(names) if name in written]
    if not outputs:
        raise LaunchError(
            f"{spec.label}: the kernel writes no parameter, so a JAX call of it would have "
            "no result (JAX kernels return the parameters they write)"
        )
    fresh = []
    for index, (name, argument) in enumerate(zip(names, bound.tensor_arguments)):
        is_struct = isinstance(argument, jax.ShapeDtypeStruct)
        if index in outputs:
            if is_struct and name in read:
                raise LaunchError(
                    f"{spec.label}: output parameter {name!r} is also read by the kernel, so it "
                    "needs its initial contents: pass an array, not a jax.ShapeDtypeStruct"
                )
            fresh.append(is_struct)
        elif is_struct:
            raise LaunchError(
                f"{spec.label}: parameter {name!r} is not an output of the kernel (outputs: "
                f"{', '.join(kernel.outputs) or 'none'}), so it needs an array, not a "
                "jax.ShapeDtypeStruct"
            )
    out_shapes = [
        jax.ShapeDtypeStruct(  # type: ignore[no-untyped-call]
            bound.tensors[i].shape, bound.tensor_arguments[i].dtype
        )
        for i in outputs
    ]
    return Roles(list(bound.tensor_arguments), outputs, fresh, out_shapes)
