"""Run a function once a module has been imported: at once if it is already, else
right after its first import completes.

``nt_torch.ops`` registers its ops with Dynamo (``torch.compiler.allow_in_graph``,
``assume_constant_result``) this way: both import ``torch._dynamo``, about 2 s
that an eager program never needs (``from nt_torch import ops`` took 2.3 s
with them and 0.2 s without, after ``import torch``, on a 2-core machine).
``torch.compile`` imports Dynamo before it traces anything, so the ops are
registered before a trace can meet them.

The mechanism is a finder first on ``sys.meta_path`` that answers for that one
module only: it finds the module's spec with the other finders and wraps the
loader, so that the callback runs once the module's code has run; then the
finder removes itself.  The module ends with its own loader in ``__loader__``
and ``__spec__.loader``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

__all__ = ["when_imported"]


def when_imported(name: str, callback: Callable[[], None]) -> None:
    """Call ``callback`` once the module ``name`` is imported: now, if it is already."""
    if name in sys.modules:
        callback()
        return
    sys.meta_path.insert(0, _Finder(name, callback))


class _Finder(importlib.abc.MetaPathFinder):
    """Finds one module through the finders after it, with its loader wrapped; steps
    aside once the module's code has run (a spec asked for without an import, as
    ``importlib.util.find_spec`` does, leaves it in place)."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self._name = name
        self._callback = callback
        self._done = False

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """The module's spec from the other finders, its loader wrapped; None otherwise."""
        if fullname != self._name or self._done:
            return None
        spec: importlib.machinery.ModuleSpec | None = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, self)
        return spec

    def imported(self, module: ModuleType) -> None:
        """The module's code has run: step aside, then call back (once)."""
        if self._done:
            return
        self._done = True
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        try:
            self._callback()
        except Exception as error:  # noqa: BLE001 - the module itself imported fine
            # Failing the import would take the module from its other users too.
            warnings.warn(
                f"nt_torch: the call after importing {module.__name__} failed: "
                f"{type(error).__name__}: {error}",
                RuntimeWarning,
                stacklevel=3,
            )


class _Loader(importlib.abc.Loader):
    """A module's own loader, telling its finder once the module's code has run."""

    def __init__(self, loader: Any, finder: _Finder) -> None:
        self._loader = loader
        self._finder = finder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        """The wrapped loader's module (None: the default one)."""
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        """Run the module's code, give it back its own loader, then tell the finder."""
        self._loader.exec_module(module)
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._finder.imported(module)
