"""A GPU stand-in on the CPU: PyTorch's fast path with the launch itself stubbed.

Inside :func:`stubbed_gpu`, kernels on CPU tensors take the path they take on
a GPU — the adapter's validation, nt-triton's fast launcher and its plans,
the custom operator's implementation under ``torch.compile`` — except the
last step: the tensors are described as on ``cuda:0``, no configuration is
tuned, and a launch records what it was given (``(kernel name, pointers and
scalars)``) instead of calling the driver.  Tests use it to see which calls
hit a plan; ``benchmarks/compiled.py --cpu-stub`` to time our host cost.

Kernels called before the block keep the interpreted path they installed:
make kernels inside it.  The library's kernels are made afresh inside (and
the ones made outside restored after), and compiled functions are reset on
the way in and out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from ninetoothed.library.ops import _memo
from ninetoothed.library.ops import kernels as library
from ninetoothed.runtime import plugins
from ninetoothed.runtime.hookspecs import HostReads
from nt_torch import launch_operator
from nt_torch.adapter import TorchAdapter, traced
from nt_torch.fastpath import KEY_READS, MISS_WHEN, guard_factory
from nt_triton._kernel import TritonKernel
from nt_triton._launch.launcher import FastLauncher

__all__ = ["READS", "Launches", "stubbed_gpu"]

Launches = list[tuple[str, tuple[Any, ...]]]

READS = HostReads(
    pointer_read="{}.data_ptr()",
    key_reads=KEY_READS,
    miss_when=MISS_WHEN,
    device_of=lambda tensor: 0,
    raw_stream=lambda device: 0,
    current_device=None,
    device_guard=lambda device: contextlib.nullcontext(),
    guard=guard_factory(),
    traced=traced,
)
"""What the fast path reads: PyTorch's reads, with a device and stream that are made up."""


@contextlib.contextmanager
def stubbed_gpu(record: bool = True) -> Iterator[Launches]:
    """Run kernels as on a GPU, launches stubbed; yields the launches (when ``record``)."""
    launches: Launches = []
    describe = TorchAdapter.describe

    def on_gpu(self: TorchAdapter, obj: Any) -> Any:
        return describe(self, obj)._replace(device="cuda:0")

    def launch_of(self: FastLauncher, bound: Any, prepared: Any, device: int, _: Any) -> Any:
        name = self.kernel.spec.name

        def launch(stream: int, *per_call: Any) -> None:
            if record:
                launches.append((name, per_call))

        return launch

    patches = {
        (TritonKernel, "interpreting"): property(lambda self: False),
        (TorchAdapter, "describe"): on_gpu,
        (TorchAdapter, "fast_path"): lambda self, kernel, miss: kernel.fast_launcher(READS, miss),
        (FastLauncher, "_configuration"): lambda self, call: None,
        (FastLauncher, "_launch_of"): launch_of,
    }
    saved = {key: key[0].__dict__[key[1]] for key in patches}
    made = (library._KERNELS.copy(), library._NAMES.copy(), dict(vars(library._MADE)))
    _forget()
    library._KERNELS.clear()
    library._NAMES.clear()
    try:
        for (owner, name), value in patches.items():
            setattr(owner, name, value)
        yield launches
    finally:
        for (owner, name), value in saved.items():
            setattr(owner, name, value)
        _forget()
        library._KERNELS.clear()
        library._KERNELS.update(made[0])
        library._NAMES.clear()
        library._NAMES.update(made[1])
        vars(library._MADE).clear()
        vars(library._MADE).update(made[2])


def _forget() -> None:
    """Drop what remembers a launch path: compiled functions, the operator's entries, the
    adapter's fast launchers, the ops' plans (they hold the kernels they launch)."""
    torch._dynamo.reset()
    _memo.forget()
    launch_operator._entries.clear()
    launch_operator._kernels.clear()
    plugins.adapter_for(torch.empty(0)).__dict__.pop("_launchers", None)
