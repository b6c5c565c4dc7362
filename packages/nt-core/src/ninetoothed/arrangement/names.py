"""The names of tensors the user left unnamed, and how messages lose them.

``Tensor(1)`` gets a generated name (``ninetoothed_tensor_7``) until the
kernel's parameters name it.  Errors worded before that (a meta-operation in
the arrangement, a launch requirement it records) would show the generated
name; :func:`renamed` puts the user's names in their place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["GENERATED_PREFIX", "renamed"]

GENERATED_PREFIX = "ninetoothed_tensor_"
"""The start of every generated tensor name."""


def renamed(message: str, names: Mapping[str, str]) -> str:
    """``message`` with each generated tensor name among ``names``' keys (and its
    ``_size_d`` locals' stems) replaced by the name it maps to."""
    for generated, name in names.items():
        if generated.startswith(GENERATED_PREFIX) and generated != name:
            message = re.sub(rf"\b{re.escape(generated)}(?=\b|_size)", name, message)
    return message
