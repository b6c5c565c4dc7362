"""``FILE:NAME`` on the command line: load ``FILE`` as a module and take ``NAME`` from it.

The commands that act on a user's kernel (``ninetoothed show``, ``ninetoothed
build``) name it the way ``python -m`` tools name entry points: a file and an
object in it.  The file is loaded as ``python FILE`` would see it (its folder
first on ``sys.path``, so its sibling modules import), under its own module
name, or run as ``__main__`` when the command asks for it.
"""

from __future__ import annotations

import difflib
import importlib.util
import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CommandError",
    "Reference",
    "describe_value",
    "load",
    "parse_reference",
    "run_file",
    "take",
]


class CommandError(Exception):
    """A mistake on the command line, reported as one line on stderr (exit status 1)."""


@dataclass(frozen=True)
class Reference:
    """``FILE:NAME``, split."""

    path: Path
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.name}"


def parse_reference(text: str, what: str) -> Reference:
    """Split ``FILE:NAME`` (the last colon separates them); ``what`` names ``NAME`` in errors."""
    path, colon, name = text.rpartition(":")
    if not colon or not path or not name.isidentifier():
        raise CommandError(f"expected FILE:{what.upper()} (e.g. add.py:kernel), got {text!r}")
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"no such file: {path!r} (in {text!r})")
    return Reference(file, name)


def load(reference: Reference, *, as_main: bool = False) -> Any:
    """The object ``reference.name`` of the file, after loading (or running) the file."""
    return take(run_file(reference.path, as_main=as_main), reference)


def run_file(path: Path, *, as_main: bool = False) -> dict[str, Any]:
    """Load ``path`` as a module (or run it, ``as_main``) and return its globals.

    ``as_main`` runs the file as ``python FILE`` does (``__name__ ==
    "__main__"``, so its ``if __name__ == "__main__":`` part runs too).  An
    exception raised by the file's own code is reported with its traceback, as
    Python would show it.
    """
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    try:
        return _run(path, as_main)
    finally:
        if folder in sys.path:
            sys.path.remove(folder)


def take(namespace: dict[str, Any], reference: Reference) -> Any:
    """``reference.name`` from a file's globals, or an error naming close matches."""
    if reference.name not in namespace:
        raise CommandError(_missing(reference, namespace))
    return namespace[reference.name]


def _run(path: Path, as_main: bool) -> dict[str, Any]:
    """Execute ``path`` and return its globals."""
    try:
        if as_main:
            return runpy.run_path(str(path), run_name="__main__")
        name = path.stem if path.stem.isidentifier() else "ninetoothed_user_module"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise CommandError(f"cannot load {str(path)!r} as a Python module")
        module = importlib.util.module_from_spec(spec)
        # Registered under its name, as an import would: kernels made while it
        # loads may refer back to the module (helpers, pickled configurations).
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return vars(module)
    except CommandError:
        raise
    except SystemExit as exit:
        raise CommandError(f"{path} exited (status {exit.code}) while it was loaded") from None
    except BaseException as error:
        shown = "".join(traceback.format_exception(error))
        raise CommandError(f"loading {path} failed:\n{shown.rstrip()}") from None


def _missing(reference: Reference, namespace: dict[str, Any]) -> str:
    names = [name for name in namespace if not name.startswith("_")]
    close = difflib.get_close_matches(reference.name, names, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"{reference.path} defines no {reference.name!r}{hint}"


def describe_value(value: Any) -> str:
    """``a function``, ``an int``, ``a list``: what a name turned out to be, for errors."""
    kind = "function" if callable(value) else type(value).__name__
    return f"{'an' if kind[0].lower() in 'aeiou' else 'a'} {kind}"
