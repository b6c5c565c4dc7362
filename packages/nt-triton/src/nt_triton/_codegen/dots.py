"""``make(..., input_precision=...)``: the precision of the products ``tl.dot`` computes
for float32 operands, given once for a whole application.

Triton rounds float32 operands of ``tl.dot`` to TF32 unless a call says otherwise
(``input_precision="ieee"`` computes float32 products, ``"tf32x3"`` about float32's
precision in three TF32 passes).  A kernel library that follows its framework's
float32 matmul setting (PyTorch's ``fp32_precision``, JAX's default matmul
precision) makes one kernel per setting; the option writes the setting into every
``dot`` of the application that does not name its own, so the generated source says
it, whichever path compiles it (our launcher, jax-triton, Inductor, ahead of time).
"""

from __future__ import annotations

import ast

__all__ = ["with_precision"]

_OWN = frozenset({"input_precision", "allow_tf32"})
"""Keywords with which a ``dot`` call names its own precision (``allow_tf32``: Triton's
older spelling)."""


def with_precision(node: ast.Call, precision: str | None) -> ast.Call:
    """``node`` (a rewritten call) with ``input_precision=precision`` added when it is a
    ``dot`` that names no precision of its own and ``precision`` is given."""
    if precision is None or not _is_dot(node.func):
        return node
    if not any(keyword.arg in _OWN for keyword in node.keywords):
        node.keywords.append(ast.keyword("input_precision", ast.Constant(precision)))
    return node


def _is_dot(func: ast.expr) -> bool:
    """Whether ``func`` is Triton's ``dot`` as a rewritten application calls it
    (``tl.dot``: ``ntl.dot`` and ``ninetoothed.language.dot`` are written so)."""
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "dot"
        and isinstance(func.value, ast.Name)
        and func.value.id in ("tl", "ntl")
    )
