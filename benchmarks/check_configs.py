"""Compile every GPU configuration of the baselines for Hopper, without a GPU.

    python benchmarks/check_configs.py [--tasks mm,sdpa] [--out DIR]

The interpreter runs one small configuration per kernel; the GPU tunes over
the real spaces, and a configuration that does not compile there (a
``CompilationError`` is not caught by the autotuner: it ends the call) or
that needs more shared memory than a block gets would first show up on the
device.  This script calls each baseline at the benchmarks' shapes (the
paper's, and the end-to-end model's decoding steps) on CPU tensors with the
launch intercepted, prunes the configurations as the autotuner would, and
compiles each with Triton's own argument specialisation for ``sm_90``.  It
reports shared memory, registers and spills (ptxas), and compile seconds: the
cold first call on a GPU costs about their sum, plus one benchmark per
configuration.  Triton here may be newer than the GPU machine's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.pop("TRITON_INTERPRET", None)  # the GPU configuration spaces
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # 3.9 warns when unset
if "TRITON_CACHE_DIR" not in os.environ:  # compile seconds of a cold cache
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import baselines  # noqa: E402
import tasks  # noqa: E402, F401 (imports every baseline module)
import torch  # noqa: E402
import triton  # noqa: E402
from report import markdown  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource, make_backend  # noqa: E402
from triton.runtime.autotuner import Heuristics  # noqa: E402
from triton.runtime.jit import create_function_from_signature  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
SHARED_LIMIT = 227 * 1024


def e2e_calls() -> list[tuple[str, object]]:
    """The baselines as the end-to-end model's decoding steps call them."""
    from baselines import mm, rms_norm, rope, sdpa

    h = lambda *shape: torch.randn(*shape, dtype=torch.float16)  # noqa: E731
    return [
        ("e2e mm 2x4096x14336", lambda: mm.mm(h(2, 4096), h(14336, 4096).t())),
        ("e2e mm 64x4096x4096", lambda: mm.mm(h(64, 4096), h(4096, 4096).t())),
        ("e2e sdpa decode", lambda: sdpa.sdpa(h(2, 32, 1, 128), *[h(2, 8, 100, 128)] * 2)),
        ("e2e sdpa prefill", lambda: sdpa.sdpa(h(2, 32, 32, 128), *[h(2, 8, 32, 128)] * 2, True)),
        ("e2e rope", lambda: rope.rope(h(2, 1, 32, 128), h(1, 64), h(1, 64), False)),
        ("e2e rms_norm", lambda: rms_norm.rms_norm(h(2, 1, 4096), h(4096))),
    ]  # fmt: skip


def benchmark_calls(names: set[str] | None) -> list[tuple[str, object]]:
    """The single-kernel tasks at their shapes (the 2^28 ones add nothing)."""
    from tasks import all_tasks

    calls = []
    for task in all_tasks():
        if task.default and not task.name.endswith("2p28") and (not names or task.name in names):
            calls.append((task.name, lambda task=task: task.triton(*task.make(False, "cpu"))))
    return calls


def record_launches(call) -> list[tuple]:
    """The (kernel, arguments, constexprs) each launch of ``call`` would make."""
    launched = []

    def record(kernel, grid, *args, config=None, **constexprs):
        launched.append((kernel, args, constexprs))

    modules = [m for m in vars(baselines).values() if hasattr(m, "launch")]
    saved = [(m, m.launch) for m in modules]
    for module, _ in saved:
        module.launch = record
    try:
        call()
    finally:
        for module, launch in saved:
            module.launch = launch
    return launched


def compile_config(kernel, args: tuple, constexprs: dict, config: triton.Config) -> dict:
    """Compile ``kernel`` with ``config`` for ``TARGET``; shared bytes, registers,
    spills and seconds (or the error)."""
    kwargs = {**constexprs, **config.all_kwargs()}
    function = kernel.fn
    named = dict(zip(kernel.arg_names, args))
    if isinstance(function, Heuristics):
        for name, rule in function.values.items():
            kwargs[name] = rule({**named, **kwargs})
        function = function.fn
    backend = make_backend(TARGET)
    binder = create_function_from_signature(function.signature, function.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constants, attrs = function._pack_args(
        backend, kwargs, bound, specialization, options
    )
    log = io.StringIO()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(log):
            triton.knobs.nvidia.dump_ptxas_log = True
            compiled = triton.compile(
                ASTSource(function, signature, constants, attrs), TARGET, options.__dict__
            )
    except Exception as error:
        return {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:150]}"}
    registers = re.findall(r"Used (\d+) registers", log.getvalue())
    spills = re.findall(r"(\d+) bytes spill stores", log.getvalue())
    return {
        "shared": compiled.metadata.shared,
        "registers": int(registers[-1]) if registers else None,
        "spills": int(spills[-1]) if spills else None,
        "seconds": time.perf_counter() - start,
    }


def describe(config: triton.Config) -> str:
    """``BLOCK_M=128 BLOCK_N=64 w4 s3``."""
    meta = " ".join(f"{key}={value}" for key, value in config.kwargs.items())
    return f"{meta} w{config.num_warps} s{config.num_stages}".strip()


def check(name: str, call) -> list[list[str]]:
    """Rows of the report for every pruned configuration of every launch of ``call``."""
    rows = []
    for kernel, args, constexprs in record_launches(call):
        named = {**dict(zip(kernel.arg_names, args)), **constexprs}
        configs = kernel.configs
        if kernel.early_config_prune:
            configs = kernel.early_config_prune(configs, named)
        for config in configs:
            result = compile_config(kernel, args, constexprs, config)
            verdict = result.get("error") or (
                "over shared memory" if result["shared"] > SHARED_LIMIT else "ok"
            )  # fmt: skip
            rows.append(
                [name, kernel.base_fn.__name__, describe(config)]
                + [str(result.get(key, "-")) for key in ("shared", "registers", "spills")]
                + [f"{result.get('seconds', 0):.1f}", verdict]
            )
            print(" | ".join(rows[-1]), flush=True)
    return rows


def main(argv: list[str]) -> int:
    """Compile, print and write the table; exit 1 if a configuration fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", help="comma-separated tasks (default all, and e2e)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    names = set(args.tasks.split(",")) if args.tasks else None
    calls = benchmark_calls(names)
    calls += [c for c in e2e_calls() if not names or "e2e" in names]
    rows = [row for name, call in calls for row in check(name, call)]
    header = ["call", "kernel", "config", "shared B", "registers", "spills B", "compile s"]
    text = markdown([*header, "verdict"], rows)
    total = sum(float(row[6]) for row in rows)
    text += f"\n\n{len(rows)} configurations, {total:.0f} s of compilation here"
    out = args.out or Path(os.environ.get("OUT") or "bench-out")
    out.mkdir(parents=True, exist_ok=True)
    (out / "check_configs.md").write_text(text + "\n")
    print(text.rsplit("\n", 1)[-1])
    return 0 if all(row[-1] == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
