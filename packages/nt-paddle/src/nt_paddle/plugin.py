"""The ``paddle`` entry point: registers the PaddlePaddle framework adapter.

``ninetoothed`` loads every installed adapter plugin, so this module stays
cheap: PaddlePaddle is imported only when an argument's type comes from it.
"""

from ninetoothed.hookspecs import hookimpl
from ninetoothed.plugins import lazy_adapter_hook

ninetoothed_framework_adapter = hookimpl(
    lazy_adapter_hook(("paddle",), "nt_paddle.adapter:PaddleAdapter")
)
"""Return the PaddlePaddle adapter if it recognises an object, else ``None``."""
