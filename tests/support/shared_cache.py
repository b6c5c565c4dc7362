"""One process of the shared-cache tests (``tests/test_shared_cache.py``).

``python -m support.shared_cache INDEX COUNT BARRIER MODE``, run by
:func:`support.processes.run_processes` with ``NINETOOTHED_CACHE_DIR`` shared:

* ``make``: make two kernels (a vector addition, and the library's ``mm``
  through ``nt_torch.ops``) and call them, checked against torch; on the GPU
  (``NT_TEST_GPU=1``) on ``cuda:<INDEX mod GPUs>``;
* ``compile``: compile the addition for sm_90 (no GPU needed) through the
  fast path's ``compile_kernel``;
* ``tables``: even processes add entries to one tuning table, odd ones read
  the file meanwhile, each read parsed whole.

It answers, as one JSON line: which kernels code generation ran for, which
files the cache wrote, the binaries Triton compiled (its cache misses) and
any failure.  ``NT_NO_FLOCK=1`` makes ``flock`` fail as on a file system
without it (``ENOLCK``).
"""

from __future__ import annotations

import errno
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import ninetoothed
from ninetoothed import Tensor
from support.processes import wait_for_the_others

RECORD: dict[str, list[Any]] = {"generated": [], "written": [], "compiled": []}


def arrangement(x, y, z, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008 - the DSL idiom
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def application(x, y, z):
    z = x + y  # noqa: F841 - assigning to a parameter stores its tile


def _count() -> None:
    """Record code generation, the cache's writes and Triton's compiles in :data:`RECORD`."""
    from nt_triton import _codegen as codegen
    from nt_triton.cache import _layout

    generate, write = codegen.generate, _layout.write_atomically

    def generated(spec: Any) -> Any:
        RECORD["generated"].append(spec.name)
        # A generation that takes a while (large kernels do): every process released
        # with this one arrives while it runs.
        time.sleep(0.5)
        return generate(spec)

    def written(path: Path, data: bytes) -> None:
        RECORD["written"].append(str(path))
        write(path, data)

    codegen.generate = generated  # type: ignore[assignment]
    _layout.write_atomically = written  # type: ignore[assignment]
    try:
        from triton import knobs
    except ImportError:
        return

    def listener(*, src: Any, metadata: Any, metadata_group: Any, times: Any, cache_hit: bool):
        if not cache_hit:
            RECORD["compiled"].append(metadata["hash"])

    knobs.compilation.listener = listener


def _no_flock() -> None:
    import fcntl

    def refused(descriptor: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    fcntl.flock = refused  # type: ignore[assignment]


def make_and_call(index: int) -> dict[str, Any]:
    """Make the two kernels and check what they compute."""
    import torch

    import nt_torch

    gpus = torch.cuda.device_count() if os.environ.get("NT_TEST_GPU") == "1" else 0
    device = f"cuda:{index % gpus}" if gpus else "cpu"
    if gpus:
        torch.cuda.set_device(device)
    kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    x, y = (torch.randn(1000, device=device) for _ in range(2))
    z = torch.full_like(x, float("nan"))
    kernel(x, y, z, BLOCK_SIZE=128)  # pinned: several programs under the interpreter too
    a, b = torch.randn(40, 24, device=device), torch.randn(24, 33, device=device)
    product = nt_torch.ops.mm(a, b)
    if gpus:
        torch.cuda.synchronize()
    torch.testing.assert_close(z, x + y)
    expected = (a.double() @ b.double()).float()
    torch.testing.assert_close(product, expected, atol=1e-2 if gpus else 1e-5, rtol=1e-2)
    return {"device": device, "source": kernel.generated.source_path}


def compile_for_sm90() -> dict[str, Any]:
    """Compile the addition for Hopper through ``compile_kernel`` (Triton's cache shared)."""
    from triton.backends.compiler import GPUTarget

    from nt_triton._launch import compiled

    kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    generated = kernel.generated
    meta = dict(generated.configurations[0].kwargs())
    parameters, values, pointers = [], [], {}
    for position, parameter in enumerate(generated.signature):
        parameters.append((parameter.name, parameter.constexpr))
        if parameter.kind == "pointer":
            values.append(0)
            pointers[position] = ("fp32", True)
        elif parameter.constexpr:
            values.append(meta.get(parameter.name, False if parameter.kind == "int64_flag" else 32))
        else:
            values.append(4096)
    specialisation = compiled.specialise(parameters, values, pointers)
    binary = compiled.compile_kernel(
        generated.function, specialisation, GPUTarget("cuda", 90, 32), 4, 3
    )
    return {"hash": binary.hash}


def tables(index: int, count: int) -> dict[str, Any]:
    """Writers add entries to one table; readers parse the file whole meanwhile."""
    from nt_triton.cache import _tables

    path = _tables.directory() / "shared_0.json"
    writers = (count + 1) // 2
    done = Path(sys.argv[3]) / "written"
    if index % 2 == 0:
        padding = "x" * 20000  # a table of some size: a torn write would show
        for entry in range(25):
            _tables.write("shared_0", f"{index}-{entry}", {"padding": padding})
        (done / str(index)).parent.mkdir(exist_ok=True)
        (done / str(index)).touch()
        return {"reads": 0}
    reads = 0
    while not (done.exists() and len(list(done.glob("*"))) >= writers):
        try:
            text = path.read_bytes()
        except FileNotFoundError:
            time.sleep(0.001)
            continue
        json.loads(text)  # raises on half a file
        reads += 1
    return {"reads": reads}


def main() -> None:
    """Run one process's part; print its answer."""
    index, count, barrier, mode = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    if os.environ.get("NT_NO_FLOCK") == "1":
        _no_flock()
    _count()
    if mode == "make":
        import nt_torch  # noqa: F401 - imported before the race, as a program would

    wait_for_the_others(index, barrier)
    if mode == "make":
        answer = make_and_call(index)
    elif mode == "compile":
        answer = compile_for_sm90()
    else:
        answer = tables(index, count)
    print(json.dumps({**answer, **RECORD}))


if __name__ == "__main__":
    main()
