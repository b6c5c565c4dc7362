"""Kernels whose helpers need Triton's ``to_tensor`` on a Triton that does not export it.

Triton 3.6 (the GPU machines') keeps ``to_tensor`` in ``triton.language.core``
only, and its interpreter patches that module's builtins only where a kernel's
module holds the module itself: a helper calling ``tl.core.to_tensor`` failed
under ``TRITON_INTERPRET=1`` with "Did you forget to add @triton.jit?", so the
README's first kernel (``z = x + y``) failed on those machines.  A fresh
process removes ``tl.to_tensor`` before nt-triton loads, as on Triton 3.6, and
runs both helpers that call it: the bool-aware ``+`` and float16 math
promoted to float32.  The interpreter of a newer Triton patches the core
module either way, so here this checks that the older Triton's code (the core
module imported under its own name) runs and computes right; on the GPU
machines' Triton 3.6 the docs' tests run the README's kernel itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent(
    """
    import triton.language as tl

    if hasattr(tl, "to_tensor"):
        del tl.to_tensor  # as on Triton 3.6

    import torch

    import ninetoothed
    import ninetoothed.language as ntl
    from ninetoothed import Tensor


    def tiles(x, y, z, BLOCK=ninetoothed.block_size()):
        return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


    def either(x, y, z):
        z = x + y  # two bools: their logical or


    def exp_plus(x, y, z):
        z = ntl.exp(x) + y  # float16 exp: computed in float32


    kernel = ninetoothed.make(tiles, either, (Tensor(1),) * 3)
    x, y = torch.rand(100) > 0.5, torch.rand(100) > 0.5
    z = torch.zeros(100, dtype=torch.bool)
    kernel(x, y, z, BLOCK=16)
    assert torch.equal(z, x | y), "bool +"

    kernel = ninetoothed.make(tiles, exp_plus, (Tensor(1),) * 3)
    x, y = torch.randn(100, dtype=torch.float16), torch.randn(100, dtype=torch.float16)
    z = torch.full_like(x, float("nan"))
    kernel(x, y, z, BLOCK=16)
    expected = (x.double().exp().float() + y.float()).half()
    torch.testing.assert_close(z, expected, rtol=2e-3, atol=2e-3)
    print("ok")
    """
)


@pytest.mark.interpreter_only  # the older Triton's interpreter, simulated
def test_helpers_run_where_triton_does_not_export_to_tensor(tmp_path) -> None:
    environment = {**os.environ, "TRITON_INTERPRET": "1", "NINETOOTHED_CACHE_DIR": str(tmp_path)}
    program = tmp_path / "program.py"  # applications must be defined in files
    program.write_text(PROGRAM)
    result = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, env=environment
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
