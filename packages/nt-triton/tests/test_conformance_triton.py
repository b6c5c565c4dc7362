"""The Triton backend and its kernels satisfy the core's contracts.

Checked twice: at run time (``runtime_checkable`` protocols) and statically
(``nox -s lint`` runs mypy on this file, so the assignments below must type).
"""

from __future__ import annotations

import pytest

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.errors import LaunchError
from ninetoothed.runtime import plugins
from ninetoothed.runtime.hookspecs import CodegenBackend, GeneratedKernel
from nt_triton._backend import TritonBackend
from nt_triton._kernel import TritonKernel


def application(x: Tensor, y: Tensor) -> None:
    y = x  # noqa: F841


def arrangement(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    return x.tile((16,)), y.tile((16,))


def statically(backend: TritonBackend, kernel: TritonKernel) -> None:
    """Never called: mypy checks that these assignments type."""
    as_backend: CodegenBackend = backend
    as_kernel: GeneratedKernel = kernel
    assert as_backend and as_kernel


def test_backend_is_a_codegen_backend() -> None:
    assert isinstance(TritonBackend(), CodegenBackend)


def test_kernel_is_a_generated_kernel() -> None:
    kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1)))
    generated = kernel.generated
    assert isinstance(generated, TritonKernel)
    assert isinstance(generated, GeneratedKernel)
    assert [p.name for p in generated.signature][:2] == ["x_pointer", "y_pointer"]


def test_a_kernel_is_found_by_its_source_file() -> None:
    """The ``ninetoothed_loaded_kernel`` hook: what PyTorch's custom operator asks."""
    kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1)))
    assert plugins.loaded_kernel(kernel.source_path) is kernel.generated
    with pytest.raises(LaunchError, match="no kernel made in this process"):
        plugins.loaded_kernel(kernel.source_path + ".elsewhere")
