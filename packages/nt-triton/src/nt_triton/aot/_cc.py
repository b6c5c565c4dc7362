"""Building the shared library with the system's C compiler.

The compiler is ``$CC`` if set, else the first of ``cc``, ``gcc``, ``clang``
found on ``PATH``; no CUDA toolkit is needed: ``<cuda.h>`` is the copy
Triton's wheel ships, and the library loads the CUDA driver at run time
(it links against nothing of CUDA).  Translation units compile in parallel,
one compiler process per CPU core, then link into ``<kernel_name>.so``,
written through a temporary file and a rename so that a process running
the old library is not disturbed.
"""

from __future__ import annotations

import concurrent.futures
import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ninetoothed.errors import CodegenError

__all__ = ["compiler", "cuda_include", "link", "objects"]

FLAGS = ("-O2", "-fPIC", "-std=gnu11", "-Wall", "-Wno-unused-function")


def compiler() -> list[str]:
    """The C compiler's command (``$CC`` split as a shell would, or the first found)."""
    configured = os.environ.get("CC", "").strip()
    if configured:
        command = shlex.split(configured)
        if shutil.which(command[0]) is None:
            raise CodegenError(
                f"CC={configured!r} names no program on PATH; set CC to a C compiler (gcc, "
                "clang) or unset it"
            )
        return command
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found is not None:
            return [found]
    raise CodegenError(
        "no C compiler found (looked for $CC, cc, gcc and clang on PATH): building a C "
        "library needs one; install gcc (Debian/Ubuntu: apt install gcc; Fedora: dnf install "
        "gcc; conda: conda install -c conda-forge c-compiler) or point CC at one"
    )


def cuda_include() -> Path:
    """The directory of the ``cuda.h`` Triton ships."""
    import triton

    path = Path(triton.__file__).parent / "backends" / "nvidia" / "include"
    if not (path / "cuda.h").is_file():
        raise CodegenError(f"Triton's installation has no cuda.h (looked in {path})")
    return path


def _run(command: Sequence[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip()
        raise CodegenError(
            f"the C compiler failed {what} (status {result.returncode}):\n"
            f"{shlex.join(command)}\n{output[-4000:]}"
        )


def objects(sources: Sequence[Path], include: Sequence[Path], directory: Path) -> list[Path]:
    """Compile ``sources`` into object files in ``directory``, in parallel; an object
    newer than its source and the headers beside it is reused."""
    command = compiler()
    includes = [f"-I{path}" for path in [*include, cuda_include()]]
    targets = [directory / (source.name + ".o") for source in sources]

    def one(pair: tuple[Path, Path]) -> None:
        source, target = pair
        if _current(source, target):
            return
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        _run(
            [*command, *FLAGS, *includes, "-c", str(source), "-o", str(temporary)],
            f"on {source.name}",
        )
        os.replace(temporary, target)

    workers = max(1, min(len(sources), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(workers) as executor:
        list(executor.map(one, zip(sources, targets)))
    return targets


def _current(source: Path, target: Path) -> bool:
    """Whether ``target`` was compiled after ``source`` and the headers beside it changed."""
    try:
        built = target.stat().st_mtime_ns
    except OSError:
        return False
    inputs = [source, *source.parent.glob("*.h")]
    return all(path.stat().st_mtime_ns < built for path in inputs)


def link(objects: Sequence[Path], library: Path) -> None:
    """Link ``objects`` into the shared library ``library`` (replaced atomically)."""
    temporary = library.with_name(f".{library.name}.{os.getpid()}.tmp")
    try:
        _run(
            [*compiler(), "-shared", *map(str, objects), "-o", str(temporary), "-ldl", "-lpthread"],
            f"linking {library.name}",
        )
        os.replace(temporary, library)
    finally:
        temporary.unlink(missing_ok=True)
