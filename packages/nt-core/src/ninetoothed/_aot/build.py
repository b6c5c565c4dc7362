"""``ninetoothed.build``: variants of a kernel behind one C dispatcher, tuned at build time.

Upstream's semantics (its ``build.rst``): ``premake(*args, **kwargs)``
returns ``(arrangement, application, tensors)`` for one configuration
``(args, kwargs, compilation_configs)``.  The values of ``premake``'s
parameters (defaults included) and of the compilation configurations
(``num_warps``, ``num_stages``) select a variant at run time; those named in
``meta_parameters``, and the compilation configurations, are instead tuned
at build time, per key of the others (:mod:`.variants` splits them).  The
library's ``launch_<kernel_name>`` takes the tensors, then the key values as
``int`` (dtypes as ``NINETOOTHED_FLOAT16`` ..., bools and ``None`` as 1/0);
its Python callable takes them after the tensors too.

A build whose fingerprint (the variants' kernels, keys and values, target,
builder) matches the files in ``output_dir`` loads them instead of
compiling; ``lazy=True`` defers everything to the first call.  Compiling
runs in worker processes that import nothing of the caller's, so a module
that builds at import time imports cleanly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ninetoothed._aot import files
from ninetoothed._aot.kernel import AotKernel
from ninetoothed._aot.request import check_kernel_name, check_spec
from ninetoothed._aot.variants import Variants, split
from ninetoothed.runtime import plugins

__all__ = ["LazyKernel", "build"]


def build(
    premake: Callable[..., Any],
    configs: Iterable[Any],
    *,
    meta_parameters: Iterable[str] | None = None,
    caller: str | None = None,
    kernel_name: str | None = None,
    output_dir: str | Path | None = None,
    lazy: bool = False,
    target: str | int | None = None,
) -> Any:
    """:func:`ninetoothed.build` (documented there)."""
    request = _Request(premake, configs, meta_parameters, caller, kernel_name, output_dir, target)
    if lazy:
        return LazyKernel(request.run)
    return request.run()


class _Request:
    """A build's arguments, checked (cheap: nothing compiles before :meth:`run`)."""

    def __init__(
        self,
        premake: Callable[..., Any],
        configs: Iterable[Any],
        meta_parameters: Iterable[str] | None,
        caller: str | None,
        kernel_name: str | None,
        output_dir: str | Path | None,
        target: str | int | None,
    ) -> None:
        if not callable(premake):
            raise TypeError(f"build: premake must be a function, got {type(premake).__name__}")
        if kernel_name is None:
            kernel_name = getattr(premake, "__name__", "kernel").removeprefix("premake_")
            kernel_name = kernel_name if kernel_name != "premake" else "kernel"
        check_kernel_name("build", kernel_name)
        if output_dir is None:
            from ninetoothed.generation import CACHE_DIR

            output_dir = CACHE_DIR
        self.premake = premake
        self.configs = tuple(configs)
        self.meta_parameters = None if meta_parameters is None else tuple(meta_parameters)
        self.caller = caller or "cuda"
        self.kernel_name = kernel_name
        self.output_dir = Path(output_dir)
        self.target = None if target is None else str(target)

    def run(self) -> AotKernel:
        """Make every variant's spec; reuse the library on disk or build it."""
        variants: Variants = split(
            self.premake, self.configs, self.meta_parameters, self.kernel_name
        )
        for variant in variants.variants:
            check_spec(variant.spec, dict(variant.constants))
        builder = plugins.ahead_of_time_builder(self.caller)
        output_dir = files.prepare_output_dir("build", self.output_dir)
        specs = [variant.spec for variant in variants.variants]
        described = [(v.key, v.meta, v.label) for v in variants.variants]
        stamp = files.stamp(specs, builder, self.target, self.caller, variants.key_names, described)
        library = files.load_if_current(output_dir, self.kernel_name, stamp)
        if library is None:
            library = builder.build(
                variants.variants,
                key_names=variants.key_names,
                kernel_name=self.kernel_name,
                output_dir=output_dir,
                target=self.target,
            )
            files.remember(output_dir, self.kernel_name, stamp, library)
        by_key: dict[tuple[int | None, ...], Any] = {}
        labels: dict[tuple[int | None, ...], str] = {}
        for variant in variants.variants:
            by_key.setdefault(variant.key, variant.spec)
            labels.setdefault(variant.key, variant.key_label)
        return AotKernel(specs[0], library, by_key, labels)


class LazyKernel:
    """A build deferred to the first call (``lazy=True``); thread-safe."""

    def __init__(self, factory: Callable[[], AotKernel]) -> None:
        self._factory = factory
        self._kernel: AotKernel | None = None
        self._lock = threading.Lock()

    @property
    def kernel(self) -> AotKernel:
        """The built kernel (building it now, once, if needed)."""
        kernel = self._kernel
        if kernel is None:
            with self._lock:
                if self._kernel is None:
                    self._kernel = self._factory()
                kernel = self._kernel
        return kernel

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Build (the first time), then call the library."""
        self.kernel(*args, **kwargs)
