"""Broadcasting one level's shape to another's, as NumPy and torch do: ``Tensor.expand_as``.

Shapes line up at their last dimensions.  The shorter one gets leading
dimensions of size 1, and each dimension declared with the literal size 1
takes the other's size: it is expanded, so every index reads its index 0.
A dimension whose size is a symbol is kept as it is, even where it is 1 at
run time: ``Tensor(shape=(1, None))`` declares a broadcast row, ``Tensor(2)``
a matrix whose sizes must match.  Whether kept sizes agree with the other
tensor's is then checked where sizes are compared (the launch grid, and the
agreements :mod:`ninetoothed.spec._agreement` derives), never assumed; two
different literal sizes are refused at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from ninetoothed.arrangement._checks import is_literal
from ninetoothed.arrangement.symbol import SymbolLike
from ninetoothed.errors import MetaOperationError

__all__ = ["broadcast_sizes"]


def broadcast_sizes(
    shape: Sequence[SymbolLike], target: Sequence[SymbolLike], tensor: str
) -> tuple[int, tuple[SymbolLike, ...]]:
    """How many leading dimensions a level of ``shape`` needs to broadcast to
    ``target``, and the sizes ``expand`` then takes (``-1`` keeps a dimension).

    ``tensor`` names the source tensor in errors.
    """
    leading = len(target) - len(shape)
    if leading < 0:
        raise MetaOperationError(
            f"expand_as on {tensor}: other has {len(target)} dimensions (shape "
            f"{tuple(target)}), fewer than the tensor's {len(shape)} (shape {tuple(shape)}); "
            "broadcasting only adds dimensions"
        )
    sizes: list[SymbolLike] = []
    for index, (size, wanted) in enumerate(zip((1,) * leading + tuple(shape), target)):
        if is_literal(size, 1):
            sizes.append(wanted)
        elif isinstance(size, int) and isinstance(wanted, int) and size != wanted:
            raise MetaOperationError(
                f"expand_as on {tensor}: dimension {index - leading} has size {size}, which "
                f"does not broadcast to size {wanted} of other's dimension {index} (only a "
                "size declared as 1 expands)"
            )
        else:
            sizes.append(-1)
    return leading, tuple(sizes)
