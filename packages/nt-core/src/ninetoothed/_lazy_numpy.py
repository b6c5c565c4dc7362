"""numpy, imported on first use: ``import ninetoothed`` must stay cheap.

numpy takes about 130 ms to import and only the reference semantics
(:mod:`ninetoothed.arrangement.reference`, :mod:`ninetoothed.compat.eval`) use
it, never ``make`` or a launch.  Modules write ``from ninetoothed._lazy_numpy import np`` and use
``np`` as usual; type checkers see numpy itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:

    class _Numpy:
        """Forwards attribute reads to numpy, importing it on the first."""

        def __getattr__(self, name: str) -> Any:
            import numpy

            return getattr(numpy, name)

    np = _Numpy()

__all__ = ["np"]
