"""JAX: functional calls; outputs are the arrays the kernel returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from support.base import ON_GPU, FrameworkSupport


class JaxSupport(FrameworkSupport):
    """Test helper for ``nt-jax``.

    JAX arrays are immutable: a kernel is called with every parameter (output
    parameters give their shape, dtype and initial contents) and returns the
    new arrays of the parameters it writes, which :meth:`call` maps back to the
    requested argument positions.
    """

    name = "jax"

    @property
    def _device(self) -> Any:
        return jax.devices("gpu")[0] if ON_GPU else jax.devices("cpu")[0]

    def from_numpy(self, array: np.ndarray) -> jax.Array:
        # jax.device_put takes ml_dtypes' bfloat16 arrays as they are.
        return jax.device_put(np.ascontiguousarray(array), self._device)

    def to_numpy(self, value: jax.Array) -> np.ndarray:
        result = np.asarray(value)
        if result.dtype.name == "bfloat16":
            result = result.astype(np.float32)
        return result

    def non_contiguous(self, array: np.ndarray) -> jax.Array:
        """An ordinary array: JAX has no strided views.

        XLA decides layouts and hands kernels dense row-major buffers, so a
        JAX kernel never sees non-row-major strides; tests of stride handling
        are covered by the frameworks that have views.
        """
        return self.from_numpy(array)

    def call(
        self, kernel: Any, args: Sequence[Any], kwargs: dict[str, Any], outputs: Sequence[int]
    ) -> list[np.ndarray]:
        result = kernel(*args, **kwargs)
        return self._pick(kernel, result, outputs)

    def jit_call(
        self, kernel: Any, args: Sequence[Any], kwargs: dict[str, Any], outputs: Sequence[int]
    ) -> list[np.ndarray]:
        """Like :meth:`call`, with the kernel call traced inside ``jax.jit``.

        Arrays are traced; Python scalars and keyword arguments stay static.
        """
        positions = [i for i, a in enumerate(args) if isinstance(a, jax.Array)]

        def traced(*arrays: jax.Array) -> Any:
            full = list(args)
            for position, array in zip(positions, arrays):
                full[position] = array
            return kernel(*full, **kwargs)

        result = jax.jit(traced)(*(args[i] for i in positions))
        return self._pick(kernel, result, outputs)

    def _pick(self, kernel: Any, result: Any, outputs: Sequence[int]) -> list[np.ndarray]:
        """The returned arrays of the output parameters at argument positions ``outputs``."""
        names = [p.name for p in kernel.spec.parameters]
        written = list(kernel.generated.outputs)
        results = list(result) if isinstance(result, tuple) else [result]
        assert len(results) == len(written), (
            f"{kernel.spec.name} returned {len(results)} arrays for outputs {written}"
        )
        picked = []
        for index in outputs:
            name = names[index]
            if name not in written:
                raise ValueError(
                    f"argument {index} ({name!r}) is not an output of {kernel.spec.name}; "
                    f"its outputs are {written}"
                )
            picked.append(self.to_numpy(results[written.index(name)]))
        return picked

    @property
    def ops(self):
        import nt_jax.ops

        return nt_jax.ops

    def poisoned_like(self, like: jax.Array, shape, dtype=None) -> jax.Array:
        """An array of NaN: JAX kernels take an output's initial contents as an array."""
        import jax.numpy as jnp

        return jnp.full(tuple(shape), jnp.nan, dtype=dtype or like.dtype, device=self._device)
