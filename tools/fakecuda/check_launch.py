"""Run Triton's real launchers against a stand-in libcuda, without a GPU.

    python tools/fakecuda/check_launch.py

Builds ``fakecuda.c`` into a ``libcuda.so.1`` under the temporary directory
(needs ``gcc`` and Python's headers, as Triton's own launcher build does),
re-runs itself with ``TRITON_LIBCUDA_PATH`` and ``LD_LIBRARY_PATH`` pointing
there, and then, with Triton's real ``CudaUtils``/``CudaLauncher`` behind a
stand-in driver object:

1. compiles ``benchmarks/launch_probe.py``'s add kernel for sm_90 and launches it
   through each way ``DirectLaunch`` knows (raw pointers, tensors, everything
   precomputed, ``CompiledKernel.run``), for ``n=4096`` and for ``n=1`` (which
   Triton turns into a constexpr the launcher drops); the stand-in
   ``cuLaunchKernelEx`` records grid, block, shared memory, stream, function
   and parameters, which must be what the kernel expects;
2. launches through ``JITFunction.run`` end to end;
3. times each path's host cost per call with a driver that does nothing: the
   Python and C wrapper work alone (the GPU machine adds the CUDA driver's own
   cost, which ``benchmarks/launch_probe.py`` measures there).

Exit status 1 when a launch does not carry what the kernel expects.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.util
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MARK = "NINETOOTHED_FAKECUDA"


def build() -> Path:
    """``libcuda.so.1`` from ``fakecuda.c``, built once per source version."""
    source = HERE / "fakecuda.c"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    directory = Path(tempfile.gettempdir()) / f"ninetoothed-fakecuda-{digest}"
    library = directory / "libcuda.so.1"
    if not library.exists():
        directory.mkdir(parents=True, exist_ok=True)
        partial = directory / f"libcuda.so.1.{os.getpid()}"
        command = ["gcc", "-shared", "-fPIC", "-O2", "-Wl,-soname,libcuda.so.1"]
        subprocess.check_call([*command, "-o", str(partial), str(source)])
        partial.replace(library)
    return directory


def reexec() -> None:
    directory = str(build())
    environment = dict(os.environ)
    environment[MARK] = directory
    environment["TRITON_LIBCUDA_PATH"] = directory
    environment["LD_LIBRARY_PATH"] = os.pathsep.join(
        [directory, *filter(None, [os.environ.get("LD_LIBRARY_PATH")])]
    )
    environment.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # silences Triton 3.9's warning
    os.execve(sys.executable, [sys.executable, __file__, *sys.argv[1:]], environment)


def load_probe() -> Any:
    path = ROOT / "benchmarks" / "launch_probe.py"
    spec = importlib.util.spec_from_file_location("launch_probe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["launch_probe"] = module
    spec.loader.exec_module(module)
    return module


def per_call(fn: Callable[[], Any], count: int = 50_000, rounds: int = 5) -> float:
    results = []
    for _ in range(rounds):
        began = time.perf_counter()
        for _ in range(count):
            fn()
        results.append((time.perf_counter() - began) * 1e6 / count)
    return statistics.median(results)


def set_stand_in_driver(stream: int) -> None:
    """Make Triton's active driver its real CUDA utilities and launcher behind a stand-in
    that names sm_90, device 0 and ``stream`` (the libcuda underneath is the stand-in)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia import driver as nvidia

    class StandInDriver:
        def __init__(self) -> None:
            self.utils = nvidia.CudaUtils()  # Triton's driver.c, built against the stand-in
            self.launcher_cls = nvidia.CudaLauncher

        def get_current_target(self) -> Any:
            return GPUTarget("cuda", 90, 32)

        def get_current_device(self) -> int:
            return 0

        def get_current_stream(self, device: int | None = None) -> int:
            return stream

        def map_python_to_cpp_type(self, ty: str) -> str:
            return nvidia.ty_to_cpp(ty)

    triton.runtime.driver.set_active(StandInDriver())


def main() -> int:
    import torch
    import triton

    probe = load_probe()
    fake = ctypes.CDLL(str(Path(os.environ[MARK]) / "libcuda.so.1"))
    record = (ctypes.c_uint64 * 32).in_dll(fake, "fake_record")
    launches = ctypes.c_int.in_dll(fake, "fake_launches")
    stream = 0xABC

    set_stand_in_driver(stream)
    storage = torch.zeros(4096 + 8, dtype=torch.float16)
    a, b, c = storage[:4096], storage[8:], torch.zeros(4096, dtype=torch.float16)
    pa, pb, pc = a.data_ptr(), b.data_ptr(), c.data_ptr()
    add = probe.add_kernel
    failures = 0
    print(f"triton {triton.__version__}, stand-in libcuda")
    for n in (4096, 1):
        kernel = probe.compile_kernel(add, (a, b, c, n, 1024))
        direct = probe.DirectLaunch(kernel)
        # n == 1 is a constexpr: the launcher drops it; the two scratch pointers follow.
        expected = [pa, pb, pc, *([n] if n != 1 else []), 0, 0]
        fake.fake_set_nparams(len(expected))

        def via_run(kernel: Any = kernel, n: int = n) -> None:
            function, packed = kernel.function, kernel.packed_metadata
            kernel.run(4, 1, 1, stream, function, packed, None, None, None, pa, pb, pc, n, None)

        ways = {
            "raw pointers": lambda d=direct, n=n: d.launch(4, stream, pa, pb, pc, n, None),
            "tensors": lambda d=direct, n=n: d.launch(4, stream, a, b, c, n, None),
            "precomputed": direct.precomputed(4, stream, (pa, pb, pc, n, None)),
            "CompiledKernel.run": via_run,
        }
        for label, call in ways.items():
            before = launches.value
            call()
            head = list(record[:7])
            params = list(record[8 : 8 + len(expected)])
            if n != 1:
                params[3] &= 0xFFFFFFFF  # an i32 parameter: the low half
            ok = (
                launches.value == before + 1
                and head == [4, 1, 1, 128, 0, stream, kernel.function]
                and params == expected
            )
            failures += not ok
            detail = "" if ok else f" launch={head} params={params} expected={expected}"
            print(f"  {'ok' if ok else 'WRONG'}  n={n:<5} {direct.style[:4]} {label}{detail}")
    # The probe's own paths (wrappers included) on CPU tensors, the stand-in
    # driver and a stand-in for torch's current device and stream.
    x, y, out = (torch.zeros(4096, dtype=torch.float16) for _ in range(3))
    expected = [x.data_ptr(), y.data_ptr(), out.data_ptr(), 4096, 0, 0]
    fake.fake_set_nparams(len(expected))
    wrappers = {}
    for current in (-1, 0):  # CPU tensors are on "device -1": 0 makes the wrappers switch
        cuda = probe.CudaApi(lambda c=current: c, lambda index: stream, contextlib.nullcontext)
        paths, state = probe.torch_paths({}, 1, x, y, out, cuda)
        if current == -1:
            wrappers = {name: state[name] for name in ("wrapper", "planned")}
        for path in paths[1:]:  # all but torch.add
            for _ in range(2):  # the exact-shape plan's first call fills its table
                before = launches.value
                path.call()
            head = list(record[:7])
            params = list(record[8 : 8 + len(expected)])
            params[3] &= 0xFFFFFFFF
            ok = launches.value == before + 1 and head[:6] == [4, 1, 1, 128, 0, stream]
            ok = ok and params == expected
            failures += not ok
            detail = "" if ok else f" launch={head} params={params} expected={expected}"
            print(f"  {'ok' if ok else 'WRONG'}  probe path, current device {current}: {path.name}")
            if detail:
                print(f"      {detail}")
    fake.fake_set_nparams(0)
    before = launches.value
    add[(4,)](a, c, c, 4096, BLOCK=1024)
    reached = launches.value == before + 1
    failures += not reached
    print(f"  {'ok' if reached else 'WRONG'}  JITFunction.run reaches cuLaunchKernelEx")

    kernel = probe.compile_kernel(add, (a, c, c, 4096, 1024))
    direct = probe.DirectLaunch(kernel)
    function, packed = kernel.function, kernel.packed_metadata
    timings = {
        "JITFunction.run": lambda: add[(4,)](a, c, c, 4096, BLOCK=1024),
        "CompiledKernel.run": lambda: kernel.run(
            4, 1, 1, 0, function, packed, None, None, None, pa, pc, pc, 4096, None
        ),
        "direct, raw pointers": lambda: direct.launch(4, 0, pa, pc, pc, 4096, None),
        "direct, tensors": lambda: direct.launch(4, 0, a, c, c, 4096, None),
        "direct, precomputed": direct.precomputed(4, 0, (pa, pc, pc, 4096, None)),
        "probe's wrapper (specialisation key)": lambda: wrappers["wrapper"](x, y, out),
        "probe's wrapper (exact-shape plan)": lambda: wrappers["planned"](x, y, out),
    }
    print("  host µs per call with a driver that does nothing:")
    for label, call in timings.items():
        print(f"    {label:38} {per_call(call):6.2f}")
    return 1 if failures else 0


if __name__ == "__main__":
    if MARK not in os.environ:
        if not sysconfig.get_paths().get("include"):
            sys.exit("check_launch: Python's headers are needed to build Triton's launcher")
        reexec()
    sys.exit(main())
