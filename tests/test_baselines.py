"""The benchmarks' hand-written Triton baselines against torch.

A wrong baseline makes every ratio in the benchmark a lie, so each one is
checked here: on the interpreter in the CPU suite, compiled for the GPU by
``nox -s gpu`` (then on CUDA tensors).  Inputs are fresh random tensors with
sizes that are not multiples of the blocks; the blocks are pinned small
(``config=``) so every grid dimension has several programs, including a
ragged last one; every allocation the wrappers make is poisoned with NaN, so an
element the kernel forgets to write fails the test.  The reference is torch in
float64 on the CPU, compared by relative error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from support.base import ON_GPU

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from baselines import (  # noqa: E402 (needs the path above)
    _common,
    _elementwise,
    add,
    addmm,
    bmm,
    conv2d,
    fused_add_rms_norm,
    max_pool2d,
    mm,
    rms_norm,
    rope,
    sdpa,
    silu,
    softmax,
    swiglu,
)

DEVICE = "cuda" if ON_GPU else "cpu"
DTYPES = [torch.float16, torch.float32]
MATMUL = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}


def randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Fresh standard-normal values (never zeros: they hide unwritten outputs)."""
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


@pytest.fixture(autouse=True)
def poisoned_allocations(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fill every tensor the wrappers allocate with NaN."""
    empty, empty_like = torch.empty, torch.empty_like

    def poison(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.fill_(float("nan")) if tensor.is_floating_point() else tensor

    monkeypatch.setattr(torch, "empty", lambda *a, **k: poison(empty(*a, **k)))
    monkeypatch.setattr(torch, "empty_like", lambda *a, **k: poison(empty_like(*a, **k)))
    yield


def check(actual: torch.Tensor, expected: torch.Tensor, dot: bool = False) -> None:
    """``actual`` matches the float64 ``expected`` within its dtype's rounding:
    float16 about 1e-3; float32 exact-ish, but TF32 (about 3e-4) in a GPU dot."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert not actual.isnan().any(), "NaN left: an output element was not written"
    limit = 3e-3 if actual.dtype == torch.float16 or (dot and ON_GPU) else 1e-5
    actual, expected = actual.double().cpu(), expected.double().cpu()
    error = ((actual - expected).norm() / expected.norm().clamp_min(1e-30)).item()
    assert error < limit, f"relative error {error:.2e} over {limit:.0e}"


def reference(function: Callable, *tensors: torch.Tensor, **kwargs) -> torch.Tensor:
    """``function`` on float64 CPU copies of ``tensors``."""
    return function(*(t.double().cpu() for t in tensors), **kwargs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise(dtype):
    x, y = randn(1000, dtype=dtype), randn(1000, dtype=dtype)
    pinned = {"BLOCK_SIZE": 128}
    check(add.add(x, y, config=pinned), reference(torch.add, x, y))
    check(silu.silu(x, config=pinned), reference(F.silu, x))
    check(swiglu.swiglu(x, y, config=pinned), reference(lambda a, b: a * F.silu(b), x, y))


def test_elementwise_strided_and_multidimensional():
    x, y, z = randn(2001)[::2], randn(3003)[::3], randn(31, 33).t()
    check(add.add(x, y, config={"BLOCK_SIZE": 64}), reference(torch.add, x, y))
    check(silu.silu(z, config={"BLOCK_SIZE": 64}), reference(F.silu, z))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("transposed", [False, True])
def test_mm(dtype, transposed):
    a = randn(45, 37, dtype=dtype).t() if transposed else randn(37, 50, dtype=dtype)[:, :45]
    b = randn(45, 53, dtype=dtype)
    check(mm.mm(a, b, config=MATMUL), reference(torch.mm, a, b), dot=True)


def test_mm_even_k_and_thin_rows():
    a, b = randn(3, 64, dtype=torch.float16), randn(64, 70, dtype=torch.float16)
    check(mm.mm(a, b, config=MATMUL), reference(torch.mm, a, b), dot=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm(dtype):
    a, b = randn(3, 37, 40, dtype=dtype), randn(3, 40, 33, dtype=dtype)
    check(bmm.bmm(a, b, config=MATMUL), reference(torch.bmm, a, b), dot=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias_shape", [(33,), (37, 33)])
def test_addmm(dtype, bias_shape):
    bias, a, b = (
        randn(*bias_shape, dtype=dtype),
        randn(37, 40, dtype=dtype),
        randn(40, 33, dtype=dtype),
    )
    actual = addmm.addmm(bias, a, b, beta=0.5, alpha=-1.5, config=MATMUL)
    check(actual, reference(torch.addmm, bias, a, b, beta=0.5, alpha=-1.5), dot=True)


def test_addmm_beta_zero_ignores_input():
    bias = torch.full((20, 30), float("nan"), device=DEVICE)
    a, b = randn(20, 25), randn(25, 30)
    check(addmm.addmm(bias, a, b, beta=0, config=MATMUL), reference(torch.mm, a, b), dot=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("filter_shape", "stride", "padding"),
    [((7, 5, 3, 3), 1, 0), ((7, 5, 3, 2), 2, 1), ((20, 16, 1, 1), 1, 0)],
)
def test_conv2d(dtype, filter_shape, stride, padding):
    x = randn(2, filter_shape[1], 9, 11, dtype=dtype)
    w = randn(*filter_shape, dtype=dtype)
    actual = conv2d.conv2d(x, w, stride=stride, padding=padding, config=MATMUL)
    check(actual, reference(F.conv2d, x, w, stride=stride, padding=padding), dot=True)


def test_conv2d_channels_last():
    x = randn(2, 5, 9, 11).to(memory_format=torch.channels_last)
    w = randn(7, 5, 3, 3)
    check(
        conv2d.conv2d(x, w, padding=1, config=MATMUL),
        reference(F.conv2d, x, w, padding=1),
        dot=True,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weighted", [False, True])
def test_rms_norm(dtype, weighted):
    x, w = randn(3, 7, 100, dtype=dtype), randn(100, dtype=dtype) if weighted else None
    expected = F.rms_norm(x.double().cpu(), (100,), w.double().cpu() if weighted else None, 1e-6)
    check(rms_norm.rms_norm(x, w, 1e-6, config={"num_warps": 2}), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_add_rms_norm(dtype):
    x, r, w = randn(9, 70, dtype=dtype), randn(9, 70, dtype=dtype), randn(70, dtype=dtype)
    y, h = fused_add_rms_norm.fused_add_rms_norm(x, r, w, 1e-5)
    check(h, reference(torch.add, x, r))
    # The sum is normalised as stored (rounded to the dtype), like add then rms_norm.
    check(y, F.rms_norm(h.double().cpu(), (70,), w.double().cpu(), 1e-5))


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax(dtype):
    x = randn(7, 100, dtype=dtype)
    check(softmax.softmax(x), reference(torch.softmax, x, dim=-1))
    check(softmax.softmax(x.t()), reference(torch.softmax, x.t(), dim=-1))
    y = randn(2, 3, 33, dtype=dtype)
    check(softmax.softmax(y), reference(torch.softmax, y, dim=-1))


def torch_rope(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor, interleaved: bool):
    """The reference rotation: pairs ``(x[2i], x[2i+1])`` or ``(x[i], x[i + D/2])``."""
    sin, cos = sin[None, :, None, :], cos[None, :, None, :]
    if interleaved:
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)
    x0, x1 = x.chunk(2, dim=-1)
    return torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [True, False])
def test_rope(dtype, interleaved):
    x = randn(2, 6, 5, 16, dtype=dtype)
    sin, cos = randn(6, 8, dtype=dtype), randn(6, 8, dtype=dtype)
    actual = rope.rope(x, sin, cos, interleaved, config={"BLOCK_H": 2})
    check(actual, reference(torch_rope, x, sin, cos, interleaved=interleaved))


def test_rope_strided_input():
    x = randn(2, 5, 6, 32).transpose(1, 2)  # Hugging Face's (B, H, L, D), seen as (B, L, H, D)
    sin, cos = randn(6, 16), randn(6, 16)
    check(rope.rope(x, sin, cos, False), reference(torch_rope, x, sin, cos, interleaved=False))


def torch_sdpa(q, k, v, is_causal):
    return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize(
    ("heads", "kv_heads", "q_len", "k_len", "head_dim"),
    [(3, 3, 37, 37, 16), (4, 2, 20, 45, 32), (2, 1, 45, 20, 16), (2, 2, 1, 50, 16)],
)
def test_sdpa(dtype, is_causal, heads, kv_heads, q_len, k_len, head_dim):
    q = randn(2, heads, q_len, head_dim, dtype=dtype)
    k, v = (randn(2, kv_heads, k_len, head_dim, dtype=dtype) for _ in range(2))
    actual = sdpa.sdpa(q, k, v, is_causal, config={"BLOCK_M": 16, "BLOCK_N": 16})
    check(actual, reference(torch_sdpa, q, k, v, is_causal=is_causal), dot=True)


def test_sdpa_scale_and_strides():
    q = randn(2, 7, 3, 32).transpose(1, 2)  # (B, L, H, D) storage, as a projection leaves it
    k, v = randn(2, 19, 3, 32).transpose(1, 2), randn(2, 19, 3, 32).transpose(1, 2)
    expected = reference(F.scaled_dot_product_attention, q, k, v, scale=0.3)
    check(sdpa.sdpa(q, k, v, scale=0.3), expected, dot=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("kernel_size", "stride", "padding"), [(3, 2, 1), (2, None, 0), ((3, 2), (1, 2), (1, 0))]
)
def test_max_pool2d(dtype, kernel_size, stride, padding):
    x = randn(2, 3, 11, 13, dtype=dtype)
    actual = max_pool2d.max_pool2d(x, kernel_size, stride, padding, config={"BLOCK_SIZE": 64})
    expected = reference(F.max_pool2d, x, kernel_size=kernel_size, stride=stride, padding=padding)
    check(actual, expected)


TUNED = [
    (add.add_kernel, "n_elements"),
    (mm.matmul_kernel, "M"),
    (conv2d.conv2d_kernel, "N"),
    (rms_norm.rms_norm_kernel, "N"),
    (softmax.softmax_kernel, "n_cols"),
    (rope.rope_kernel, "H"),
    (sdpa.sdpa_kernel, "Lq"),
    (max_pool2d.max_pool2d_kernel, "NC"),
]


@pytest.mark.parametrize(("kernel", "argument"), TUNED, ids=lambda k: getattr(k, "__name__", k))
def test_gpu_configs_name_real_parameters(kernel, argument):
    """The GPU configurations (never run by the interpreter) name only the kernel's
    meta-parameters, and the autotuner keys on real arguments."""
    module = sys.modules[kernel.base_fn.__module__]
    configs = getattr(module, "CONFIGS", _elementwise.CONFIGS)
    parameters = set(kernel.arg_names)
    assert argument in parameters
    for config in configs:
        assert set(config.kwargs) <= parameters, config
    assert set(kernel.keys) <= parameters
    assert _common.INTERPRET == (len(kernel.configs) == 1) or ON_GPU


HALF = torch.empty(0, dtype=torch.float16)
PAPER_ARGUMENTS = [
    (mm, {"M": 4096, "N": 4096, "a_ptr": HALF}),
    (mm, {"M": 2, "N": 1024, "a_ptr": HALF}),
    (conv2d, {"N": 4, "P": 12, "Q": 12, "K": 512, "x_ptr": HALF}),
    (rms_norm, {"BLOCK_N": 4096}),
    (softmax, {"BLOCK_N": 4096}),
    (rope, {"H": 48, "HALF": 32}),
    (sdpa, {"Lq": 1024, "HEAD_DIM": 64, "q_ptr": HALF}),
    (sdpa, {"Lq": 1, "HEAD_DIM": 128, "q_ptr": HALF}),
]


@pytest.mark.parametrize(("module", "arguments"), PAPER_ARGUMENTS)
def test_pruning_leaves_a_real_space(module, arguments):
    """At the benchmarks' shapes the pruned GPU space keeps several configurations."""
    kept = module._prune(module.CONFIGS, arguments)
    assert len(kept) >= 2, (module.__name__, kept)


@pytest.mark.interpreter_only
def test_benchmark_harness_runs_on_the_interpreter(tmp_path):
    """``run.py --smoke`` runs tasks end to end (first calls, checks, rounds,
    tables, JSON) on tiny shapes; every baseline it ran is valid and timed."""
    import json
    import subprocess

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
    tasks = "add,addmm,fused_add_rms_norm,rope_half"
    command = [sys.executable, str(script), "--smoke", "--rounds", "1", "--tasks", tasks]
    done = subprocess.run(
        [*command, "--out", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "bench.json").read_text())
    assert [task["name"] for task in result["tasks"]] == tasks.split(",")
    for task in result["tasks"]:
        for name in ("ours", "triton", "torch"):
            implementation = task["implementations"][name]
            assert implementation["failure"] is None and len(implementation["times_ms"]) == 1
        assert task["implementations"]["ours"]["source"].startswith("nt_torch.ops.")
    assert "| add |" in (tmp_path / "bench.md").read_text()


def test_llama_op_sets_replace_every_module_and_match_the_model():
    """The end-to-end benchmark's patching: every Linear, RMSNorm, SiLU and
    attention of a tiny Llama is replaced, the torch op set reproduces the model,
    the Triton one agrees with it, decoding runs through the cache, and leaving
    the ``with`` block restores the model."""
    pytest.importorskip("transformers")
    import e2e
    import opsets
    from llama_patch import patched

    args = e2e.parse(["--smoke"])
    model = e2e.build_model(args, DEVICE)
    prompt = torch.randint(0, model.config.vocab_size, (2, 8), device=DEVICE)
    with torch.inference_mode():
        before = model(prompt).logits
    torch_status = e2e.check(model, opsets.torch_opset(), prompt)
    assert torch_status["replaced"] == {"linear": 15, "rms_norm": 5, "attention": 2, "silu": 2}
    assert torch_status["logits_error"] < 1e-3
    assert e2e.check(model, opsets.triton_opset(), prompt)["logits_error"] < 2e-2
    with torch.inference_mode(), patched(model, opsets.triton_opset()):
        assert e2e.generate(model, prompt, 2) > 0
    with torch.inference_mode():
        assert torch.equal(model(prompt).logits, before)


def test_ours_op_set_adapts_torch_like_ops():
    """``nt_torch.ops``-style functions (keyword ``weight``/``eps``/``interleaved``,
    an attention without ``enable_gqa``) plug in as the ``ours`` op set."""
    pytest.importorskip("transformers")
    import types

    import e2e
    import opsets
    from tasks import torch_rope

    def attention(q, k, v, is_causal=False, scale=None):
        assert k.shape[1] == q.shape[1], "keys and values must come repeated"
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=scale)

    ops = types.SimpleNamespace(
        mm=torch.mm,
        rms_norm=lambda x, weight=None, eps=1e-6: F.rms_norm(x, x.shape[-1:], weight, eps),
        rotary_position_embedding=torch_rope,
        scaled_dot_product_attention=attention,
        silu=F.silu,
    )
    model = e2e.build_model(e2e.parse(["--smoke"]), DEVICE)
    prompt = torch.randint(0, model.config.vocab_size, (2, 8), device=DEVICE)
    assert e2e.check(model, opsets.ours_opset(ops), prompt)["logits_error"] < 1e-2


def test_code_metrics_measure_both_sides():
    """``code_metrics.py`` finds every baseline's kernel code, and the library's."""
    pytest.importorskip("radon")
    import code_metrics

    rows = {row["task"]: row for row in code_metrics.measure({})}
    assert set(rows) == set(code_metrics.TASKS)
    assert all(row["triton"]["V"] > 0 and row["triton"]["LLOC"] > 0 for row in rows.values())
    assert rows["mm"]["ours"]["V"] < rows["mm"]["triton"]["V"]
