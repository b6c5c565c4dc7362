"""The graphs AOTAutograd hands its compiler, kept and never run (tests of compiled calls).

:func:`trace` compiles a function with a backend that keeps every forward graph
(and, with gradients, the joint graph first) and returns a graph that raises
:class:`Traced` when it runs: the tests read what Inductor would get.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.utils import counters
from torch._functorch.partitioners import default_partition
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

__all__ = ["WRAPPER", "Traced", "kernel_of", "launches", "trace"]

WRAPPER = "triton_kernel_wrapper_functional"
"""The functional node of a user Triton kernel."""


class Traced(Exception):
    """Raised by the graphs :func:`trace` compiles: only the graph itself is read."""


def trace(graphs: list[Any], function: Any, *calls: tuple[Any, ...], **options: Any) -> Any:
    """Compile ``function`` keeping its graphs in ``graphs``, call it on each argument
    tuple of ``calls`` (each call raises :class:`Traced`, swallowed here), and return
    the compiled function."""

    def keep(graph: Any, example_inputs: Any) -> Any:
        graphs.append(graph)

        def run(*args: Any) -> Any:
            raise Traced

        return run

    def partition(joint: Any, *args: Any, **kwargs: Any) -> Any:
        graphs.append(joint)  # with gradients: forward and backward in one graph
        return default_partition(joint, *args, **kwargs)

    torch._dynamo.reset()
    counters.clear()
    backend = aot_autograd(fw_compiler=keep, partition_fn=partition)
    compiled = torch.compile(function, backend=backend, **options)
    for args in calls:
        try:
            compiled(*args)
        except Traced:
            continue
        raise AssertionError("the traced graph ran")
    return compiled


def launches(graph: Any) -> list[Any]:
    """The graph's user-Triton-kernel nodes."""
    return [node for node in graph.graph.nodes if WRAPPER in str(node.target)]


def kernel_of(node: Any) -> Any:
    """The ``@triton.jit`` function a user-Triton-kernel node launches."""
    found = kernel_side_table.get_kernel(node.kwargs["kernel_idx"])
    return getattr(found, "fn", found)  # launch options wrap it in a one-config autotuner
