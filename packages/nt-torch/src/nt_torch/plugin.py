"""The ``torch`` entry point: registers the PyTorch framework adapter.

``ninetoothed`` loads every installed adapter plugin, so this module stays
cheap: PyTorch is imported only when an argument's type comes from it.
"""

from ninetoothed.hookspecs import hookimpl
from ninetoothed.plugins import lazy_adapter_hook

ninetoothed_framework_adapter = hookimpl(
    lazy_adapter_hook(("torch",), "nt_torch.adapter:TorchAdapter")
)
"""Return the PyTorch adapter if it recognises an object, else ``None``."""
