"""``nt_triton.hopper_attention`` on its own (how the library routes to it:
``test_hopper_attention.py``): it compiles for sm_90 on the installed Triton, how many
programs take the tiles, the compiled kernel a launch finds, and on a Hopper GPU,
persistent programs of several tiles against float64.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from support.base import ON_GPU
from support.gluon_routes import compile_stood_in
from support.hopper_attention import DEVICE, close, expected, qkv

torch = pytest.importorskip("torch")
hopper = pytest.importorskip("nt_torch.hopper")

from nt_triton import hopper_attention  # noqa: E402

needs_gluon = pytest.mark.skipif(not hopper_attention.available(), reason="no Gluon for Hopper")


COMPILE = """
import sys
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource
from nt_triton import hopper_attention as m
def described(rows):
    layout = gl.NVMMASharedLayout.get_default_for([1, 1, rows, 128], gl.float16)
    return f"tensordesc<fp16[1,1,{rows},128],{layout!r}>"
signature = {"q_desc": described(64), "k_desc": described(128), "v_desc": described(128),
             "o_ptr": "*fp16", "num_tiles": "i32", "m_blocks": "i32", "L_q": "i32", "L_k": "i32",
             "H": "i32", "H_kv": "i32",
             "qk_scale": "fp32", "causal": "constexpr", "stages": "constexpr",
             "consumer_registers": "constexpr"}
for causal in (False, True):
    constants = {"causal": causal, "stages": m.STAGES, "consumer_registers": m._CONSUMER_REGISTERS}
    compiled = triton.compile(GluonASTSource(m._forward, signature, constants),
                              target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": 4, "maxnreg": m._MAX_REGISTERS})
    ptx = compiled.asm["ptx"]
    assert "wgmma.mma_async" in ptx and "setmaxnreg" in ptx, causal
    assert compiled.metadata.shared <= 232448, compiled.metadata.shared
print("compiled")
"""


@needs_gluon
def test_the_kernel_compiles_for_hopper():
    """Warp-specialised (register reallocation), warp-group products, and within an
    H100's shared memory, on the installed Triton; in a process of its own without
    Triton's interpreter."""
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-c", COMPILE], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a GPU")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("processors", [1, 3, 7])
def test_persistent_programs_of_several_tiles(processors, causal):
    """Fewer programs than tiles: each loops over several tiles (of several heads and
    batches, ragged; causal ones of several lengths), carrying the ring and the turn
    across them."""
    if not (hopper_attention.available() and hopper.on_hopper(torch.empty(0, device="cuda"))):
        pytest.skip("needs a Hopper GPU and Gluon")
    q, k, v = qkv(2, 3, 300, 333, h_kv=1)
    output = torch.full_like(q, float("nan"))
    hopper_attention.launch(q, k, v, output, 1 / np.sqrt(128), causal, processors)
    close(output, expected(q, k, v, causal))


def test_causal_tiles_run_persistent_up_to_a_head_length():
    """Persistent programs, except causal heads longer than PERSISTENT_CAUSAL_BLOCKS."""
    cap = hopper_attention.PERSISTENT_CAUSAL_BLOCKS
    assert hopper_attention._programs(1000, 8, True, 132) == 132
    assert hopper_attention._programs(2000, cap, True, 132) == 132
    assert hopper_attention._programs(2000, cap + 1, True, 132) == 2000
    assert hopper_attention._programs(2000, cap + 1, False, 132) == 132
    assert hopper_attention._programs(5, 5, True, 132) == 5


@needs_gluon
def test_the_launch_finds_the_kernel_its_ready_call_compiled(monkeypatch):
    """``launch`` looks the compiled kernel up by the key ``ready`` compiled it under,
    and only for that specialisation (another mask, an output not 16-byte aligned)."""
    compiled, found = compile_stood_in(monkeypatch, hopper_attention)
    q, k, v = qkv(1, 2, 20, 24)
    out = torch.empty_like(q)
    assert hopper_attention.ready(q, k, v, out, True, wait=True)
    hopper_attention.launch(q, k, v, out, 0.1, True, 1)
    hopper_attention.launch(q, k, v, out, 0.1, False, 1)
    shifted = torch.empty(out.numel() + 4, dtype=out.dtype, device=DEVICE)[4:].view_as(out)
    hopper_attention.launch(q, k, v, shifted, 0.1, True, 1)
    assert found == [compiled, None, None]
