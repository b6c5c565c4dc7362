"""The library ops under ``torch.func`` transforms, eagerly and inside ``torch.compile``.

``vmap`` of an op batches its launches through the operators' batching rule
(the op's outputs are made with ``new_empty`` of a batched input, so they are
batched too); ``grad``, ``jacrev`` and ``vmap(grad(...))`` differentiate it
through its ``torch.autograd.Function`` (``setup_context`` style, as the
transforms require, with a generated vmap rule).  Each result is compared with
the same transform of torch's own ops, on fresh random inputs whose sizes no
block divides, with blocks of 16: several programs per launch.  Before, ``vmap``
failed reading a batched tensor's data pointer and ``grad`` refused the
Function.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nt_torch = pytest.importorskip("nt_torch")

from ninetoothed.library import pinned_block_sizes  # noqa: E402

F = torch.nn.functional
ON_GPU = os.environ.get("NT_TEST_GPU") == "1"
DEVICE = "cuda" if ON_GPU else "cpu"
BATCH = 3
HIDDEN = 37  # no power of two: a ragged last block
WEIGHT = torch.randn(HIDDEN, device=DEVICE)
RIGHT = torch.randn(HIDDEN, 19, device=DEVICE)


def _ours(name: str) -> Callable[[Any], Any]:
    """One op of ours on one example (the batch dimension is the transform's)."""
    ops = nt_torch.ops
    return {
        "silu": lambda x: ops.silu(x),
        "add": lambda x: ops.add(x, x * 2),
        "rms_norm": lambda x: ops.rms_norm(x, WEIGHT, 1e-6),
        "softmax": lambda x: ops.softmax(x, -1),
        "mm": lambda x: ops.mm(x, RIGHT),
    }[name]


def _torch(name: str) -> Callable[[Any], Any]:
    """The same computation in torch's ops."""
    return {
        "silu": F.silu,
        "add": lambda x: x + x * 2,
        "rms_norm": lambda x: F.rms_norm(x, (HIDDEN,), WEIGHT, 1e-6),
        "softmax": lambda x: torch.softmax(x, -1),
        "mm": lambda x: x @ RIGHT,
    }[name]


def _transforms(fn: Callable[[Any], Any]) -> dict[str, Callable[[Any], Any]]:
    """Each transform of ``fn`` (an op on a (rows, HIDDEN) example), applied to a batch."""
    func = torch.func

    def loss(x: Any) -> Any:
        out = fn(x)
        return (out * torch.arange(1.0, out.shape[-1] + 1, device=out.device) ** 0.5).sum()

    def squares(x: Any) -> Any:  # a loss whose gradient depends on the op's output
        return fn(x).pow(2).sum()

    return {
        "vmap": func.vmap(fn),
        "grad": func.vmap(func.grad(squares)),
        "grad of a weighted sum": lambda batch: func.grad(loss)(batch[1]),
        "jacrev": lambda batch: func.jacrev(fn)(batch[0, :2]),
        "vmap of vjp": func.vmap(lambda x: func.vjp(fn, x)[1](torch.ones_like(fn(x)))[0]),
    }


OPS = ("silu", "add", "rms_norm", "softmax", "mm")
TRANSFORMS = tuple(_transforms(F.silu))


@pytest.fixture(autouse=True)
def small_blocks() -> Any:
    """Blocks of 16: rows of 37 take three programs, and products several per axis."""
    with pinned_block_sizes(16):
        yield


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("name", OPS)
def test_a_transform_of_an_op_equals_torchs(name: str, transform: str, compiled: bool) -> None:
    batch = torch.randn(BATCH, 5, HIDDEN, device=DEVICE)
    ours = _transforms(_ours(name))[transform]
    if compiled:
        torch._dynamo.reset()
        ours = torch.compile(ours, fullgraph=True)
    expected = _transforms(_torch(name))[transform](batch)
    actual = ours(batch)
    assert actual.shape == expected.shape
    if ON_GPU and name == "mm":  # TF32 products: errors of 1e-3 of the largest values
        largest = expected.abs().max().item()
        torch.testing.assert_close(actual, expected, rtol=5e-3, atol=5e-3 * largest)
    else:
        torch.testing.assert_close(actual, expected, rtol=2e-4, atol=2e-5)


def test_vmap_over_a_second_dimension_and_an_unbatched_weight() -> None:
    """``in_dims`` other than 0, and an op whose weight the batch does not share."""
    batch = torch.randn(5, BATCH, HIDDEN, device=DEVICE)
    weights = torch.randn(BATCH, HIDDEN, device=DEVICE)
    ours = torch.func.vmap(lambda x, w: nt_torch.ops.rms_norm(x, w, 1e-6), in_dims=(1, 0))
    expected = torch.func.vmap(lambda x, w: F.rms_norm(x, (HIDDEN,), w, 1e-6), in_dims=(1, 0))
    torch.testing.assert_close(ours(batch, weights), expected(batch, weights))
