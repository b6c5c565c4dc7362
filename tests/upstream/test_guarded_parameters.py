"""Placeholders for parameters a constexpr flag switches off (``ninetoothed.spec._guards``).

Upstream's operator libraries pass a placeholder for an absent optional input
(attention's mask as a meta tensor, a loss's weight as an int64 dummy) with a
constexpr flag that compiles the code touching it out.  Such a call runs and
ignores the placeholder; the same placeholder with the flag on is refused as
before, and a parameter that any code outside a switched-off branch touches
is checked as before.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor
from ninetoothed.errors import DeclaredDtypeWarning, LaunchError

# A parameter the call checks shows by its dtype: a mismatch warns, and here raises.
pytestmark = pytest.mark.filterwarnings("error::ninetoothed.errors.DeclaredDtypeWarning")

RNG = np.random.default_rng()
DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


@pytest.fixture(autouse=True)
def _tensors_on_the_test_device():
    """PyTorch tensors made without a device go to the GPU in the GPU suite."""
    with torch.device(DEVICE):
        yield


BLOCK = 16
N = 100  # several programs, a ragged end


def tiles(x, m, flag, y):
    return x.tile((BLOCK,)), m.tile((BLOCK,)), flag, y.tile((BLOCK,))


def masked_add(x, m, flag, y):
    acc = x
    if flag:
        acc = acc + m
    y = acc  # noqa: F841


def also_unguarded(x, m, flag, y):
    acc = x + 0 * m
    if flag:
        acc = acc + m
    y = acc  # noqa: F841


def float32s(flag=None):
    flag = Tensor(0, constexpr=True) if flag is None else flag
    return (Tensor(1, dtype=ninetoothed.float32), Tensor(1, dtype=ninetoothed.float32), flag,
            Tensor(1, dtype=ninetoothed.float32))  # fmt: skip


def arrays(framework):
    x, m = (RNG.standard_normal(N).astype(np.float32) for _ in range(2))
    return x, m, framework.from_numpy(x), framework.from_numpy(m)


def int_dummy(framework):
    """Wrong dtype, wrong size: what a library passes for an absent input (int32: JAX
    has no int64 by default)."""
    return framework.from_numpy(np.zeros(3, dtype=np.int32))


def test_a_switched_off_placeholder_is_not_checked(framework):
    kernel = ninetoothed.make(tiles, masked_add, float32s())
    x, m, x_in, m_in = arrays(framework)
    (y,) = framework.call(
        kernel, [x_in, int_dummy(framework), False, framework.poisoned((N,), "float32")],
        {}, outputs=[3],
    )  # fmt: skip
    np.testing.assert_array_equal(y, x)
    (y,) = framework.call(
        kernel, [x_in, m_in, True, framework.poisoned((N,), "float32")], {}, outputs=[3]
    )
    np.testing.assert_allclose(y, x + m, rtol=1e-6)


def test_a_switched_on_placeholder_is_refused(framework):
    kernel = ninetoothed.make(tiles, masked_add, float32s())
    _, _, x_in, _ = arrays(framework)
    out = framework.poisoned((N,), "float32")
    with pytest.raises(
        DeclaredDtypeWarning, match="parameter 'm' expects dtype float32, got int32"
    ):
        framework.call(kernel, [x_in, int_dummy(framework), True, out], {}, outputs=[3])


def test_a_parameter_also_used_outside_the_branch_is_checked(framework):
    kernel = ninetoothed.make(tiles, also_unguarded, float32s())
    _, _, x_in, _ = arrays(framework)
    out = framework.poisoned((N,), "float32")
    with pytest.raises(
        DeclaredDtypeWarning, match="parameter 'm' expects dtype float32, got int32"
    ):
        framework.call(kernel, [x_in, int_dummy(framework), False, out], {}, outputs=[3])


def test_a_switched_off_placeholder_of_wrong_size_under_jax_jit():
    jax_support = pytest.importorskip("support.jax_support")
    framework = jax_support.JaxSupport()
    kernel = ninetoothed.make(tiles, masked_add, float32s())
    x, m, x_in, m_in = arrays(framework)
    out = framework.poisoned((N,), "float32")
    (y,) = framework.jit_call(kernel, [x_in, int_dummy(framework), False, out], {}, [3])
    np.testing.assert_array_equal(y, x)
    (y,) = framework.jit_call(kernel, [x_in, m_in, True, out], {}, [3])
    np.testing.assert_allclose(y, x + m, rtol=1e-6)
    with pytest.raises(
        DeclaredDtypeWarning, match="parameter 'm' expects dtype float32, got int32"
    ):
        framework.jit_call(kernel, [x_in, int_dummy(framework), True, out], {}, [3])


def three_tiles(x, flag, y, extra):
    return x.tile((BLOCK,)), flag, y.tile((BLOCK,)), extra.tile((BLOCK,))


def doubled_on_request(x, flag, y, extra):
    y = x  # noqa: F841
    if flag:
        extra = 2 * x  # noqa: F841


def test_a_switched_off_output_is_left_as_given(framework):
    extra = Tensor(1, dtype=ninetoothed.float32)
    tensors = (Tensor(1), Tensor(0, constexpr=True), Tensor(1), extra)
    kernel = ninetoothed.make(three_tiles, doubled_on_request, tensors)
    x, _, x_in, _ = arrays(framework)
    dummy = int_dummy(framework)
    y, extra = framework.call(
        kernel, [x_in, False, framework.poisoned((N,), "float32"), dummy], {}, outputs=[2, 3]
    )
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(extra, np.zeros(3, dtype=np.int32))


# -- conditions (PyTorch) --------------------------------------------------------------

SIZE = Symbol("SIZE", constexpr=True)
"""A tile size given at the call, also read as a flag."""


def _not(x, m, flag, y):
    y = x  # noqa: F841
    if not flag:
        y = x + m  # noqa: F841


def _equals(x, m, flag, y):
    y = x  # noqa: F841
    if flag == 2:
        y = x + m  # noqa: F841


def _and_or(x, m, flag, y):
    y = x  # noqa: F841
    if (flag == 1 or flag == 2) and flag != 1:
        y = x + m  # noqa: F841


def _else(x, m, flag, y):
    if flag:
        y = x  # noqa: F841
    else:
        y = x + m  # noqa: F841


def _nested(x, m, flag, y):
    y = x  # noqa: F841
    if flag:
        if ntl.sum(x) > 1e30:  # a run-time condition inside a constexpr one
            y = x + m  # noqa: F841


def _conditional_expression(x, m, flag, y):
    y = x + (m if flag else 0.0)  # noqa: F841


def _symbol(x, m, flag, y):
    y = x  # noqa: F841
    if SIZE == 16:
        y = x + m  # noqa: F841


def symbol_tiles(x, m, flag, y):
    return x.tile((SIZE,)), m.tile((SIZE,)), flag, y.tile((SIZE,))


@pytest.mark.parametrize(
    "application, off, on",
    [(_not, True, False), (_equals, 1, 2), (_and_or, 1, 2), (_else, True, False),
     (_conditional_expression, False, True)],
)  # fmt: skip
def test_conditions_of_constexpr_values(application, off, on):
    kernel = ninetoothed.make(tiles, application, float32s())
    x, m = torch.randn(N), torch.randn(N)
    y = torch.full((N,), float("nan"))
    kernel(x, torch.empty(N, device="meta"), off, y)
    torch.testing.assert_close(y, x)
    kernel(x, m, on, y)
    torch.testing.assert_close(y, x + m)
    with pytest.raises(LaunchError, match="'m' is on meta"):
        kernel(x, torch.empty(N, device="meta"), on, y)


def test_a_conditional_expression_keeps_its_loads_in_its_branches():
    """Hoisted before the statement, ``m``'s load would run whatever the flag says."""
    kernel = ninetoothed.make(tiles, _conditional_expression, float32s())
    (line,) = [line for line in kernel.source.splitlines() if "m_pointer +" in line]
    assert " if flag else " in line


def test_a_run_time_condition_inside_a_switched_off_one():
    kernel = ninetoothed.make(tiles, _nested, float32s())
    x, y = torch.randn(N), torch.full((N,), float("nan"))
    kernel(x, torch.empty(N, device="meta"), False, y)
    torch.testing.assert_close(y, x)


def test_a_constexpr_symbol_given_by_keyword():
    kernel = ninetoothed.make(symbol_tiles, _symbol, float32s(Tensor(0)))
    x, m, y = torch.randn(N), torch.randn(N), torch.full((N,), float("nan"))
    kernel(x, torch.empty(N, device="meta"), 0, y, SIZE=32)
    torch.testing.assert_close(y, x)
    kernel(x, m, 0, y, SIZE=16)
    torch.testing.assert_close(y, x + m)


@pytest.mark.parametrize("passed", [False, None])
def test_a_flag_fixed_at_make(passed):
    kernel = ninetoothed.make(tiles, masked_add, float32s(Tensor(0, constexpr=True, value=False)))
    x, y = torch.randn(N), torch.full((N,), float("nan"))
    kernel(x, torch.empty(7, dtype=torch.int64), passed, y)
    torch.testing.assert_close(y, x)


def _run_time_flag(x, m, flag, y):
    y = x  # noqa: F841
    if flag:
        y = x + m  # noqa: F841


def _compared(x, m, flag, y):
    y = x  # noqa: F841
    if flag > 0:
        y = x + m  # noqa: F841


def add_helper(a, b):
    return a + b


def _helper(x, m, flag, y):
    y = add_helper(x, 0.0 * m)  # noqa: F841


@pytest.mark.parametrize(
    "application, flag",
    [(_run_time_flag, Tensor(0)), (_compared, None), (_helper, None)],
)
def test_anything_else_counts_as_used(application, flag):
    kernel = ninetoothed.make(tiles, application, float32s(flag))
    x, y = torch.randn(N), torch.empty(N)
    with pytest.raises(DeclaredDtypeWarning, match="expects dtype float32, got int64"):
        kernel(x, torch.zeros(N, dtype=torch.int64), 0, y)


def grid_from_m(m, x, flag, y):
    return m.tile((BLOCK,)), x.tile((BLOCK,)), flag, y.tile((BLOCK,))


def first_guarded(m, x, flag, y):
    y = x  # noqa: F841
    if flag:
        y = x + m  # noqa: F841


def test_a_parameter_the_grid_is_read_from_is_checked():
    kernel = ninetoothed.make(grid_from_m, first_guarded, float32s())
    assert not kernel.spec.conditional
    x, y = torch.randn(N), torch.empty(N)
    with pytest.raises(DeclaredDtypeWarning, match="expects dtype float32, got int64"):
        kernel(torch.zeros(N, dtype=torch.int64), x, False, y)


# -- the library kernels that pass placeholders, in miniature -----------------------------

FOUR_D = (None, None, {"constexpr": True}, {"constexpr": True, "upper_bound": 64})
LOG2E = 1.4426950408889634


def attention_tiles(q, k, v, mask, with_mask, scale, o, BM=16, BN=16):
    def rows(t):  # q and o: a block of query rows per program
        arranged = t.tile((1, 1, BM, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))
        return arranged

    def keys(t):  # k and v: every block of keys, for every program
        arranged = t.tile((1, 1, BN, -1)).tile((1, 1, -1, -1))
        arranged = arranged.expand((-1, -1, q_rows.shape[-2], -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))
        return arranged

    q_rows = rows(q)
    # The mask: the program's row block, as one block per key block.
    blocks = mask.tile((1, 1, BM, BN)).tile((1, 1, 1, -1))
    blocks.dtype = blocks.dtype.squeeze((0, 1, 2))
    blocks.dtype.dtype = blocks.dtype.dtype.squeeze((0, 1))
    return q_rows, keys(k), keys(v), blocks, with_mask, scale, rows(o)


def optionally_masked_attention(q, k, v, mask, with_mask, scale, o):
    scaled = q * (scale * LOG2E)
    acc = ntl.zeros((q.shape[-2], q.shape[-1]), dtype=ntl.float32)
    row_max = ntl.full((q.shape[-2],), float("-inf"), dtype=ntl.float32)
    row_sum = ntl.zeros((q.shape[-2],), dtype=ntl.float32)
    for j in range(k.shape[0]):
        s = ntl.dot(scaled, ntl.trans(k[j]))
        s = ntl.where(k[j].offsets(-2) < k.source.shape[-2], s, float("-inf"))
        if with_mask:
            s += mask[j] * LOG2E
        new_max = ntl.maximum(row_max, ntl.max(s, 1))
        p = ntl.exp2(s - new_max[:, None])
        alpha = ntl.exp2(row_max - new_max)
        acc = acc * alpha[:, None] + ntl.dot(p, v[j])
        row_sum = row_sum * alpha + ntl.sum(p, 1)
        row_max = new_max
    o = acc / row_sum[:, None]  # noqa: F841


def attention_kernel():
    tensors = (
        Tensor(4, shape_options=FOUR_D), Tensor(4, shape_options=FOUR_D),
        Tensor(4, shape_options=FOUR_D), Tensor(4), Tensor(0, constexpr=True),
        Tensor(0), Tensor(4, shape_options=FOUR_D),
    )  # fmt: skip
    return ninetoothed.make(attention_tiles, optionally_masked_attention, tensors)


# Float32 products are TF32 on the GPU (about 1e-3 relative; an H100 run erred by 1.4e-3).
TOLERANCE = 3e-3 if DEVICE == "cuda" else 1e-4


def test_attention_without_a_mask_takes_a_meta_placeholder():
    kernel = attention_kernel()
    q, k, v = torch.randn(1, 2, 20, 16), torch.randn(1, 2, 24, 16), torch.randn(1, 2, 24, 16)
    o = torch.full_like(q, float("nan"))
    placeholder = torch.empty(1, 2, 20, 24, device="meta")  # the mask's shape, no data
    kernel(q, k, v, placeholder, False, 0.25, o)
    reference = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), scale=0.25
    )
    torch.testing.assert_close(o, reference.float(), atol=TOLERANCE, rtol=TOLERANCE)

    mask = torch.randn(1, 2, 20, 24)
    kernel(q, k, v, mask, True, 0.25, o)
    reference = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), attn_mask=mask.double(), scale=0.25
    )
    torch.testing.assert_close(o, reference.float(), atol=TOLERANCE, rtol=TOLERANCE)
    with pytest.raises(LaunchError, match=f"'q' is on {q.device}(:0)? but 'mask' is on meta"):
        kernel(q, k, v, placeholder, True, 0.25, o)


# InfiniCore's flash attention with a KV cache, in miniature: the application writes
# the new keys into the cache, then hands every other parameter to the application
# without a cache, a plain helper that reads the mask only when ``with_mask`` is on.
# Its premake fixes the flag at make and declares the head dimension (16) as the
# last size of the mask too; decoding passes a mask placeholder of another shape.

HEAD_DIM = 16


def cache_tiles(q, k, v, present_k, present_k_slot, mask, with_mask, scale, o, BM=16, BN=16):
    def new_rows(t):  # the new tokens' keys, beside the query rows they belong to
        arranged = t.tile((1, 1, BM, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))
        return arranged

    q_rows, k_blocks, v_blocks, masks, with_mask, scale, o_rows = attention_tiles(
        q, k, v, mask, with_mask, scale, o, BM, BN
    )
    return (q_rows, k_blocks, v_blocks, new_rows(present_k), new_rows(present_k_slot), masks,
            with_mask, scale, o_rows)  # fmt: skip


def attention_with_cache(q, k, v, present_k, present_k_slot, mask, with_mask, scale, o):
    present_k_slot = present_k  # noqa: F841
    optionally_masked_attention(q, k, v, mask, with_mask, scale, o)


def cache_kernel(with_mask):
    q, k, v, mask, o = (Tensor(4, shape_options=FOUR_D) for _ in range(5))
    for tensor in (q, k, v, mask, o):
        tensor.shape = tensor.shape[:-1] + (HEAD_DIM,)
    tensors = (q, k, v, Tensor(4), Tensor(4), mask, Tensor(0, constexpr=True, value=with_mask),
               Tensor(0), o)  # fmt: skip
    return ninetoothed.make(cache_tiles, attention_with_cache, tensors)


def decoding_step(heads=4, keys=32):
    """One new query row per head against ``keys`` cached keys, and the new key."""
    q = torch.randn(1, heads, 1, HEAD_DIM)
    k, v = torch.randn(1, heads, keys, HEAD_DIM), torch.randn(1, heads, keys, HEAD_DIM)
    present_k = torch.randn(1, heads, 1, HEAD_DIM)
    slot, o = torch.full_like(present_k, float("nan")), torch.full_like(q, float("nan"))
    return q, k, v, present_k, slot, o


def test_a_placeholder_a_helper_reads_only_when_switched_on_is_not_checked():
    kernel = cache_kernel(with_mask=False)
    q, k, v, present_k, slot, o = decoding_step()
    placeholder = torch.empty(1, 4, 1, 32)  # not the declared last size, HEAD_DIM
    kernel(q, k, v, present_k, slot, placeholder, False, 0.25, o)
    reference = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), scale=0.25
    )
    torch.testing.assert_close(o, reference.float(), atol=TOLERANCE, rtol=TOLERANCE)
    torch.testing.assert_close(slot, present_k, atol=0, rtol=0)


def test_a_placeholder_a_helper_reads_when_switched_on_is_refused():
    kernel = cache_kernel(with_mask=True)
    q, k, v, present_k, slot, o = decoding_step()
    with pytest.raises(LaunchError, match=r"'mask' expects size 16 in dimension 3, got shape "):
        kernel(q, k, v, present_k, slot, torch.empty(1, 4, 1, 32), True, 0.25, o)


def reads_through_a_helper(x, m, flag, y):
    y = x + first_of(m, flag)  # noqa: F841


def first_of(tile, flag):
    result = tile
    if flag:
        result = 0.0 * tile
    return result


def test_a_helper_reading_a_parameter_outside_its_branches_counts_as_use():
    kernel = ninetoothed.make(tiles, reads_through_a_helper, float32s())
    assert not kernel.spec.conditional
    x, y = torch.randn(N), torch.empty(N)
    with pytest.raises(DeclaredDtypeWarning, match="expects dtype float32, got int64"):
        kernel(x, torch.zeros(N, dtype=torch.int64), False, y)


def class_tiles(input, target, loss, weight, has_weight, classes=16):
    rows = input.tile((1, classes))
    # One block of the weights, the same for every row.
    weights = weight.tile((classes,)).expand((rows.shape[0],))
    return rows, target.tile((1,)), loss.tile((1,)), weights, has_weight


def weighted_pick(input, target, loss, weight, has_weight):
    columns = ntl.arange(0, input.shape[-1])
    picked = ntl.sum(ntl.where(columns == target, input, 0.0))
    factor = 1.0
    if has_weight == True:  # noqa: E712 - the library's spelling
        factor = ntl.sum(ntl.where(columns == target, weight, 0.0))
    loss = -picked * factor  # noqa: F841


@pytest.mark.parametrize("has_weight", [False, True])
def test_a_loss_without_weights_takes_a_dummy(framework, has_weight):
    tensors = (
        Tensor(2, dtype=ninetoothed.float32, other=0.0), Tensor(1, dtype=ninetoothed.int32),
        Tensor(1, dtype=ninetoothed.float32), Tensor(1, dtype=ninetoothed.float32, other=0.0),
        Tensor(0, constexpr=True, value=has_weight),
    )  # fmt: skip
    kernel = ninetoothed.make(class_tiles, weighted_pick, tensors)
    rows, classes = 37, 10
    log_probs = RNG.standard_normal((rows, classes)).astype(np.float32)
    target = RNG.integers(0, classes, rows).astype(np.int32)
    weight = RNG.random(classes).astype(np.float32)
    # The library's dummy: a tensor like the target (another dtype, the rows' length).
    given = weight if has_weight else np.zeros(rows, dtype=np.int32)
    args = [framework.from_numpy(a) for a in (log_probs, target)]
    args += [framework.poisoned((rows,), "float32"), framework.from_numpy(given), has_weight]
    (loss,) = framework.call(kernel, args, {}, outputs=[2])
    expected = -log_probs[np.arange(rows), target] * (weight[target] if has_weight else 1.0)
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
