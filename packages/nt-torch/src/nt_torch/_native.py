"""The library ops' native module (``_native.cpp``): a plan's outputs made by ``at::empty``,
and the memo's tensor check (``Guard``), in C++.

An elementwise op's repeated call costs, on the host, an allocation and a
launch.  From Python the allocation goes through PyTorch's argument parser;
``_native.cpp`` calls ``at::empty`` directly (measured on the GPU machine's
host: see ``docs/design.md``, "A plan's outputs allocated in C++").  It is
PyTorch's C++ API, so it is built against the installed PyTorch's headers and
libraries with the system's C++ compiler (``CXX``, else ``c++``): once per
PyTorch build, in the background (``nt_torch._express.start``, after the
express lane's extension), into ``~/.ninetoothed/native/<key>/``.  Until it is
built, or where it cannot be (no compiler, not Linux, ``NINETOOTHED_NATIVE=off``),
plans allocate from Python and check tensors with PyTorch's ``TensorGuards`` as
before.  The express extension's ``Allocate`` switches every plan's allocation
at once (:func:`install`); a guard made before the build stays PyTorch's.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from ninetoothed.runtime.once import Once
from nt_torch._optional import optional

__all__ = ["KNOB", "NAME", "SOURCE", "build", "command", "extension", "install"]

NAME = "ninetoothed_torch_native"
"""The extension module's name (its ``PyInit_`` function's)."""

SOURCE = Path(__file__).with_name("_native.cpp")
"""The extension's C++ source."""

KNOB = "NINETOOTHED_NATIVE"
"""``off`` (or ``0``, ``false``, ``no``): plans allocate from Python."""

BUILD_SECONDS = 300
"""The compiler's time limit (a cold build takes 10-25 s)."""


def _compiler() -> list[str] | None:
    """``CXX`` split as a shell would (``ccache g++``), else ``c++`` or ``g++``."""
    named = shlex.split(os.environ.get("CXX", ""))
    if named:
        return named
    found = shutil.which("c++") or shutil.which("g++")
    return [found] if found else None


def command(compiler: list[str], source: Path, output: Path) -> list[str]:
    """The compiler's command line building ``source`` into the module ``output``,
    against the installed PyTorch (its headers, libraries and C++ ABI)."""
    import torch

    root = Path(torch.__file__).parent
    library = root / "lib"
    includes = [root / "include", root / "include" / "torch" / "csrc" / "api" / "include"]
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    return [
        *compiler, "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden",
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        *(f"-I{path}" for path in includes), f"-I{sysconfig.get_paths()['include']}",
        str(source), "-o", str(output),
        f"-L{library}", f"-Wl,-rpath,{library}",
        "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python",
    ]  # fmt: skip


def _key(compiler: list[str]) -> str:
    """What the built module depends on: the source, PyTorch, Python, the compiler."""
    import torch

    parts = [
        SOURCE.read_text(), torch.__version__, str(Path(torch.__file__).resolve()),
        sys.version, sysconfig.get_config_var("EXT_SUFFIX") or "", *compiler,
    ]  # fmt: skip
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def build() -> Any:
    """Build (or find built) and import the extension; raises where it cannot."""
    if not sys.platform.startswith("linux"):
        raise RuntimeError(f"native allocation is built on Linux only, not {sys.platform}")
    compiler = _compiler()
    if compiler is None:
        raise RuntimeError("no C++ compiler (set CXX, or install c++)")
    from ninetoothed.generation import CACHE_DIR  # makes ~/.ninetoothed: only when building

    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    directory = CACHE_DIR / "native" / _key(compiler)
    library = directory / f"{NAME}{suffix}"
    if not library.exists():
        directory.mkdir(parents=True, exist_ok=True)
        # One process builds (pytest's workers all start at once); the lock is the
        # kernel's, so a process that dies holding it releases it.
        with open(directory / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not library.exists():
                # Partial files only the lock's holder writes: any found now were left
                # by a process that died building (its daemon thread never cleaned up).
                for stale in directory.glob(f"{PARTIAL}*"):
                    stale.unlink(missing_ok=True)
                _compile(compiler, directory, library)
    spec = importlib.util.spec_from_file_location(NAME, library)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {library}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PARTIAL = ".partial-"
"""The prefix of a module being compiled (renamed to the module's name when whole)."""


def _compile(compiler: list[str], directory: Path, library: Path) -> None:
    """Compile into a temporary file beside ``library`` and rename it: another process
    finds the module whole or not at all."""
    handle, partial = tempfile.mkstemp(prefix=PARTIAL, suffix=library.suffix, dir=directory)
    os.close(handle)
    try:
        # At a low priority: it runs beside a first call's kernel compiles, which a
        # user waits for, and the Python path serves meanwhile.
        nice = shutil.which("nice")
        niced = [nice, "-n", "10"] if nice else []
        done = subprocess.run(  # noqa: S603 - our compiler command, no shell
            [*niced, *command(compiler, SOURCE, Path(partial))], capture_output=True,
            text=True, timeout=BUILD_SECONDS, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{shlex.join(compiler)} failed:\n{done.stderr[-4000:]}")
        os.replace(partial, library)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


extension: Once[Any | None] = optional(KNOB, lambda: build(), "plans allocate from Python")
"""``extension()``: the extension, built on first use; None where it is off or cannot
be built."""


def install(express: Any) -> bool:
    """Build the extension (waiting for it) and make ``express`` (the express lane's
    extension) allocate with it; whether it now does.  Callers in several threads set
    the same function (one assignment under the GIL)."""
    module = extension()
    if module is None:
        return False
    express.set_native(module.empty)
    return True
