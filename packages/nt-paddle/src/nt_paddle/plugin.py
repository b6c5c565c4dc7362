"""The ``paddle`` entry point: registers the PaddlePaddle framework adapter.

``ninetoothed`` loads every installed adapter plugin, so this module stays
cheap: PaddlePaddle is imported only when an argument's type comes from it.
The call guard (:mod:`nt_paddle.static`) is given only where Paddle is
imported already.
"""

import sys
from collections.abc import Callable

from ninetoothed.runtime.hookspecs import hookimpl
from ninetoothed.runtime.plugins import lazy_adapter_hook

ninetoothed_framework_adapter = hookimpl(
    lazy_adapter_hook(("paddle",), "nt_paddle.adapter:PaddleAdapter")
)
"""Return the PaddlePaddle adapter if it recognises an object, else ``None``."""


@hookimpl
def ninetoothed_call_guard() -> Callable[[], None] | None:
    """Make calls that Paddle's ``to_static`` translator simulates run in dynamic mode.

    ``None`` while Paddle is not imported: no Paddle tensor can reach a
    kernel yet.  The guard is asked again when a kernel is made, when the
    library's ops are bound and when the adapter loads
    (:func:`ninetoothed.runtime.plugins.refresh_call_guard`).
    """
    if "paddle" not in sys.modules:
        return None
    from nt_paddle import static

    return static.call_guard()
