"""Kernels inside JAX's ``shard_map`` over two devices (``tests/test_jax_sharded.py``).

``python -m support.jax_sharded``: on the CPU with two host devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=2``, kernels under
Triton's interpreter), or on two GPUs (jax-triton).  Over a mesh of the
first two devices (axis ``x``), under ``jax.jit``, it runs ``nt_jax.ops.mm``
with the rows of its left operand sharded, ``bmm`` sharded on the batch,
``silu`` sharded element-wise, and a kernel of the user's (a vector
addition made with ``ninetoothed.make``), and compares each with the same
computation on one device; then calls ``silu`` eagerly on an array sharded
over the mesh, and ``mm`` and the user's kernel under ``jax.jit`` on arrays
placed over the mesh outside ``shard_map`` (automatic axes, and explicit
ones where this JAX has them), which are refused.  It prints one JSON line:
the largest difference per case and the output's sharding, and each
refusal's message.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from nt_jax import ops
from support.tutorial import add

try:
    from jax import shard_map
except ImportError:  # jax before 0.7
    from jax.experimental.shard_map import shard_map


def _user_add(x: jax.Array, y: jax.Array) -> jax.Array:
    return add.kernel(x, y, jax.ShapeDtypeStruct(x.shape, x.dtype))


def main() -> None:
    devices = jax.devices()[:2]
    assert len(devices) == 2, f"needs two devices, has {jax.devices()}"
    mesh = Mesh(np.array(devices), ("x",))
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    a = jax.random.normal(keys[0], (96, 40), jnp.float32)
    b = jax.random.normal(keys[1], (40, 24), jnp.float32)
    batched = jax.random.normal(keys[2], (4, 24, 40), jnp.float32)
    v = jax.random.normal(keys[3], (1000,), jnp.float32)
    exact = functools.partial(jnp.matmul, precision=jax.lax.Precision.HIGHEST)
    cases = {
        "mm rows": (ops.mm, (P("x", None), P()), P("x", None), (a, b), exact(a, b)),
        "bmm batch": (
            ops.bmm, (P("x"), P("x")), P("x"), (batched, jnp.stack([b] * 4)),
            exact(batched, jnp.stack([b] * 4)),
        ),
        "silu": (ops.silu, (P("x"),), P("x"), (a,), jax.nn.silu(a)),
        "user kernel": (_user_add, (P("x"), P("x")), P("x"), (v, v * 2), v * 3),
    }  # fmt: skip
    answer = {}
    for name, (function, in_specs, out_spec, arguments, expected) in cases.items():
        sharded = jax.jit(shard_map(function, mesh=mesh, in_specs=in_specs, out_specs=out_spec))
        placed = [
            jax.device_put(x, NamedSharding(mesh, spec)) for x, spec in zip(arguments, in_specs)
        ]
        result = sharded(*placed)
        answer[name] = {
            "difference": float(jnp.abs(result - expected).max()),
            "sharding": str(result.sharding.spec),
            "devices": len(result.sharding.device_set),
        }
    answer["eager on a sharded array"] = _refused(a, mesh)
    answer["jit outside shard_map"] = _refused_under_jit(a, b, v, mesh)
    print(json.dumps(answer))


def _refused(a: jax.Array, mesh: Mesh) -> dict[str, str]:
    """What an eager call on an array sharded over the mesh raises (outside shard_map)."""
    from ninetoothed.errors import LaunchError

    sharded = jax.device_put(a, NamedSharding(mesh, P("x", None)))
    try:
        ops.silu(sharded)
    except LaunchError as error:
        return {"error": str(error)}
    return {"error": ""}


def _refused_under_jit(a: jax.Array, b: jax.Array, v: jax.Array, mesh: Mesh) -> dict[str, str]:
    """What kernels staged under ``jax.jit`` on arrays placed over the mesh raise, outside
    ``shard_map``: ``mm`` on rows sharded (automatic axes), the user's kernel on a vector
    replicated over the mesh, and ``mm`` on a mesh of explicit axes (where this JAX has
    them; empty where not, "not run: ..." where JAX itself refused first)."""
    rows = jax.device_put(a, NamedSharding(mesh, P("x", None)))
    replicated = jax.device_put(v, NamedSharding(mesh, P()))
    answer = {
        "mm rows": _error(lambda: jax.jit(ops.mm)(rows, b)),
        "user kernel replicated": _error(lambda: jax.jit(_user_add)(replicated, replicated)),
        "mm explicit": "",
    }
    axis_type = getattr(jax.sharding, "AxisType", None)
    if axis_type is not None and hasattr(jax, "set_mesh"):
        explicit = jax.make_mesh(
            (2,), ("x",), axis_types=(axis_type.Explicit,), devices=mesh.devices.tolist()
        )
        try:
            with jax.set_mesh(explicit):
                placed = jax.device_put(a, NamedSharding(explicit, P("x", None)))
                answer["mm explicit"] = _error(lambda: jax.jit(ops.mm)(placed, b))
        except Exception as error:  # noqa: BLE001 - JAX's own, before the kernel: reported
            answer["mm explicit"] = f"not run: {type(error).__name__}: {error}"
    return answer


def _error(function: Any) -> str:
    """The message of the LaunchError ``function()`` raises (empty if it returns)."""
    from ninetoothed.errors import LaunchError

    try:
        function()
    except LaunchError as error:
        return str(error)
    return ""


if __name__ == "__main__":
    main()
