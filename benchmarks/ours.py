"""Where the "ours" column comes from: our op ``nt_torch.ops.<name>`` (the kernel
library), else the diagnostic kernel of ``benchmarks/kernels.py`` a task names
(the library's ``mm`` with the baseline's tuning), else nothing ("n/a").

Both imports are lazy and guarded: a code generator that fails to import or
build must cost its column, never the run.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from tasks import Task

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Ours:
    """A callable of the task's inputs and where it came from (``"nt_torch.ops.mm"``,
    ``"stand-in kernels.matmul"``); ``call`` is None when there is none, and
    ``error`` says why when an import failed."""

    call: Callable | None
    source: str
    error: str | None = None


def _import(name: str) -> ModuleType | BaseException:
    """Import ``name``, falling back on the repository's package sources; return
    the module or the exception (printed once)."""
    try:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as missing:
            if missing.name not in ("ninetoothed", "nt_torch", "nt_triton"):
                raise
            for source in sorted(REPO_ROOT.glob("packages/*/src")):
                if str(source) not in sys.path:
                    sys.path.append(str(source))
            return importlib.import_module(name)
    except ModuleNotFoundError as missing:
        if missing.name != name:  # something it needs is missing: say what
            traceback.print_exc()
        return missing
    except Exception as error:  # a broken import is a result, not a crash
        traceback.print_exc()
        return error


_MODULES: dict[str, ModuleType | BaseException] = {}


def module(name: str) -> ModuleType | BaseException:
    """``_import(name)``, once per process."""
    if name not in _MODULES:
        _MODULES[name] = _import(name)
    return _MODULES[name]


def find(task: Task, allow_standin: bool = True) -> Ours:
    """Our implementation of ``task``: the first of its op names in
    ``nt_torch.ops``, else its stand-in (called the way the op would be), else none."""
    ops = module("nt_torch.ops") if task.op_names else None
    if isinstance(ops, ModuleType):
        for name in task.op_names:
            op = getattr(ops, name, None)
            if op is not None:
                return Ours(lambda *inputs, op=op: task.ours(op, *inputs), f"nt_torch.ops.{name}")
    if allow_standin and task.standin:
        kernels = module("kernels")
        if isinstance(kernels, ModuleType):
            stand_in = getattr(kernels, task.standin)
            call = lambda *inputs: task.ours(stand_in, *inputs)  # noqa: E731 (same as an op)
            return Ours(call, f"stand-in kernels.{task.standin}")
        return Ours(None, "stand-in", f"{type(kernels).__name__}: {kernels}")
    return Ours(None, "n/a")
