"""Kernels with declared backwards: one declaration, every framework's autodiff.

``linear(a, b) = a @ b`` is the matmul kernel made functional; its backward
is written with the same kernel (``g @ b.T``, ``a.T @ g``), so it runs
unchanged on PyTorch, Paddle and JAX tensors.  ``scaled_add(x, y, alpha)``
shows a scalar input (it gets no gradient).  Tiles are pinned small so that
grids have several programs per dimension under the interpreter.
"""

import ninetoothed
from ninetoothed import Symbol, Tensor
from support.tutorial import matmul

BM, BN, BK = (Symbol(name, meta=True) for name in ("BM", "BN", "BK"))
PINNED_MATMUL = [{"BM": 16, "BN": 16, "BK": 16}]


def mm_arrangement(input, other, output):
    return matmul.arrangement(input, other, output, BM, BN, BK)


mm = ninetoothed.make(
    mm_arrangement,
    matmul.application,
    (Tensor(2), Tensor(2), Tensor(2)),
    name="nt_mm",
    configs=PINNED_MATMUL,
)

mm_functional = ninetoothed.functional(
    mm, outputs={"output": lambda a, b: ((a.shape[0], b.shape[1]), a)}
)


def linear_backward(inputs, outputs, grads):
    a, b = inputs
    (g,) = grads
    return mm_functional(g, b.T), mm_functional(a.T, g)


linear = ninetoothed.differentiable(mm_functional, linear_backward)

BLOCK = Symbol("BLOCK", meta=True)


def scaled_add_arrangement(x, y, alpha, z):
    return x.tile((BLOCK,)), y.tile((BLOCK,)), alpha, z.tile((BLOCK,))


def scaled_add_application(x, y, alpha, z):
    z = x + alpha * y  # noqa: F841


scaled_add_kernel = ninetoothed.make(
    scaled_add_arrangement,
    scaled_add_application,
    (Tensor(1), Tensor(1), Tensor(0), Tensor(1)),
    name="nt_scaled_add",
    configs=[{"BLOCK": 32}],
)
ninetoothed.batching(scaled_add_kernel, "loop")


def scaled_add_backward(inputs, outputs, grads):
    _, _, alpha = inputs
    (g,) = grads
    return g, alpha * g, None


scaled_add = ninetoothed.differentiable(scaled_add_kernel, scaled_add_backward)
