"""The ``paddle`` entry point: registers the PaddlePaddle framework adapter.

Loading this module must stay cheap and must not import PaddlePaddle: ``ninetoothed``
loads every installed adapter plugin, and most programs use one framework.
The adapter, and with it PaddlePaddle, is imported only when an argument's type comes
from PaddlePaddle (or subclasses one of its types).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ninetoothed.hookspecs import hookimpl
from ninetoothed.plugins import type_comes_from

if TYPE_CHECKING:
    from nt_paddle.adapter import PaddleAdapter

FRAMEWORK_MODULES: tuple[str, ...] = ("paddle",)
"""Top-level modules that define PaddlePaddle's array types."""


@functools.cache
def _adapter() -> PaddleAdapter:
    """The process-wide adapter, created on first use."""
    from nt_paddle.adapter import PaddleAdapter

    return PaddleAdapter()


@hookimpl
def ninetoothed_framework_adapter(obj: object) -> PaddleAdapter | None:
    """Return the PaddlePaddle adapter if it recognises ``obj``, else ``None``."""
    # Look at the type's module before importing anything, so that objects of
    # other frameworks never pay for importing PaddlePaddle.
    if not type_comes_from(obj, FRAMEWORK_MODULES):
        return None
    adapter = _adapter()
    return adapter if adapter.recognizes(obj) else None
