"""The ``torch`` entry point: registers the PyTorch framework adapter.

``ninetoothed`` loads every installed adapter plugin, so this module stays
cheap: PyTorch is imported only when an argument's type comes from it.
"""

import sys

from ninetoothed.runtime.hookspecs import hookimpl
from ninetoothed.runtime.plugins import lazy_adapter_hook

ninetoothed_framework_adapter = hookimpl(
    lazy_adapter_hook(("torch",), "nt_torch.adapter:TorchAdapter")
)
"""Return the PyTorch adapter if it recognises an object, else ``None``."""

if "torch" in sys.modules:
    # PyTorch is loaded already, so the adapter costs little to make now, and a
    # first kernel call traced by torch.compile finds it by type, without
    # importing or calling a hook (Dynamo of torch 2.11 cannot trace pluggy).
    ninetoothed_framework_adapter.load_now()
