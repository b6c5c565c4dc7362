"""Benchmark NineToothed kernels against hand-written Triton and PyTorch.

Usage::

    python benchmarks/run.py [--quick] [--only add,matmul]
    python benchmarks/run.py --interpret-smoke   # tiny CPU shapes, TRITON_INTERPRET=1

Timings are medians from ``triton.testing.do_bench``; nothing is asserted about
them. Correctness is reported as ``||out - ref|| / ||ref||`` where ``ref`` is
PyTorch run on float32 copies of the inputs.
"""

from __future__ import annotations

import os
import sys

# The interpreter flag is read when ``@triton.jit`` decorates a function, so it
# must be set before triton (and our baselines) are imported.
if "--interpret-smoke" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"

import argparse
import importlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch
import triton
import triton.testing

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# Running as ``python benchmarks/run.py`` already puts this directory first on
# sys.path; make it explicit so other entry points work too.
sys.path.insert(0, str(BENCH_DIR))

from baselines import add as triton_add  # noqa: E402 (needs sys.path above)
from baselines import mm as triton_mm  # noqa: E402 (needs sys.path above)
from baselines import softmax as triton_softmax  # noqa: E402 (needs sys.path above)

Tensors = tuple[torch.Tensor, ...]


@dataclass
class Case:
    """One benchmark case: inputs plus the three implementations to compare."""

    name: str
    make_inputs: Callable[[], Tensors]
    torch_fn: Callable[..., torch.Tensor]
    triton_fn: Callable[..., torch.Tensor]
    ours_name: str  # attribute of benchmarks/kernels.py
    work: Callable[..., float]  # bytes moved (memory-bound) or FLOPs (compute)
    bound: str  # "memory" or "compute"
    tol: float  # relative error above which a result is flagged WRONG


def _bytes(*tensors: torch.Tensor) -> float:
    return float(sum(t.numel() * t.element_size() for t in tensors))


def _add_work(x: torch.Tensor, y: torch.Tensor) -> float:
    return 3 * _bytes(x)  # read x, read y, write z


def _softmax_work(x: torch.Tensor) -> float:
    return 2 * _bytes(x)  # read the input once, write the output once


def _matmul_work(a: torch.Tensor, b: torch.Tensor) -> float:
    return 2.0 * a.shape[0] * a.shape[1] * b.shape[1]


def _randn(*shape: int, device: str) -> torch.Tensor:
    # Random data, never zeros: an all-zero input hides indexing bugs.
    return torch.randn(*shape, dtype=torch.float16, device=device)


def full_cases(device: str) -> list[Case]:
    """The paper's shapes (section 5.3.1), in fp16."""
    n = 16_777_216
    s = 4096
    return [
        Case(
            "add",
            lambda: (_randn(n, device=device), _randn(n, device=device)),
            torch.add,
            triton_add.add,
            "add",
            _add_work,
            "memory",
            1e-3,
        ),
        Case(
            "matmul",
            lambda: (_randn(s, s, device=device), _randn(s, s, device=device)),
            torch.matmul,
            triton_mm.mm,
            "matmul",
            _matmul_work,
            "compute",
            1e-2,
        ),
        Case(
            "matmul-same-space",
            lambda: (_randn(s, s, device=device), _randn(s, s, device=device)),
            torch.matmul,
            triton_mm.mm,
            "matmul_same_space",
            _matmul_work,
            "compute",
            1e-2,
        ),
        Case(
            "matmul-same-config",
            lambda: (_randn(s, s, device=device), _randn(s, s, device=device)),
            torch.matmul,
            lambda a, b: triton_mm.mm(a, b, config=triton_mm.mm_tuned_config(a, b)),
            "matmul_same_config",
            _matmul_work,
            "compute",
            1e-2,
        ),
        Case(
            "softmax",
            lambda: (_randn(s, s, device=device),),
            lambda x: torch.softmax(x, dim=-1),
            triton_softmax.softmax,
            "softmax",
            _softmax_work,
            "memory",
            1e-2,
        ),
    ]


def smoke_cases(device: str) -> list[Case]:
    """Tiny, awkward shapes (not block multiples) plus non-contiguous inputs.

    Baselines run with one fixed config each: autotuning under the interpreter
    would only multiply the runtime without testing anything new.
    """
    add_cfg = {"BLOCK_SIZE": 256}
    mm_cfg = {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 2}

    def add_fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return triton_add.add(x, y, config=add_cfg)

    def mm_fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return triton_mm.mm(a, b, config=mm_cfg)

    def softmax_ref(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)

    def r(*shape: int) -> torch.Tensor:
        return _randn(*shape, device=device)

    return [
        Case(
            "add",
            lambda: (r(1000), r(1000)),
            torch.add,
            add_fn,
            "add",
            _add_work,
            "memory",
            1e-3,
        ),
        Case(
            "add strided",
            lambda: (r(2001)[::2], r(3003)[::3]),
            torch.add,
            add_fn,
            "add",
            _add_work,
            "memory",
            1e-3,
        ),
        Case(
            "matmul",
            lambda: (r(70, 90), r(90, 50)),
            torch.matmul,
            mm_fn,
            "matmul",
            _matmul_work,
            "compute",
            1e-2,
        ),
        Case(
            "matmul transposed",
            lambda: (r(90, 70).t(), r(50, 90).t()),
            torch.matmul,
            mm_fn,
            "matmul",
            _matmul_work,
            "compute",
            1e-2,
        ),
        Case(
            "softmax",
            lambda: (r(7, 100),),
            softmax_ref,
            triton_softmax.softmax,
            "softmax",
            _softmax_work,
            "memory",
            1e-2,
        ),
        Case(
            "softmax transposed",
            lambda: (r(100, 7).t(),),
            softmax_ref,
            triton_softmax.softmax,
            "softmax",
            _softmax_work,
            "memory",
            1e-2,
        ),
    ]


# --- "ours": imported lazily so a broken code generator cannot stop the run ---

_ours: ModuleType | BaseException | None = None


def load_ours() -> ModuleType | BaseException:
    """Import benchmarks/kernels.py once; return the module or the exception."""
    global _ours
    if _ours is None:
        try:
            try:
                _ours = importlib.import_module("kernels")
            except ModuleNotFoundError as e:
                if e.name != "ninetoothed":
                    raise
                # Not installed: fall back to the source tree of this repo.
                for src in sorted(REPO_ROOT.glob("packages/*/src")):
                    sys.path.append(str(src))
                _ours = importlib.import_module("kernels")
        except BaseException as e:  # report anything, but let Ctrl-C through
            if isinstance(e, KeyboardInterrupt):
                raise
            traceback.print_exc()
            _ours = e
    return _ours


def get_ours(case: Case) -> Callable[..., torch.Tensor]:
    """Return the NineToothed implementation for ``case`` or raise its error."""
    mod = load_ours()
    if isinstance(mod, BaseException):
        raise mod
    return getattr(mod, case.ours_name)


# --- measurement -----------------------------------------------------------------


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """``||out - ref|| / ||ref||`` in float32."""
    ref = ref.float()
    return (torch.linalg.vector_norm(out.float() - ref) / torch.linalg.vector_norm(ref)).item()


def short_error(e: BaseException) -> str:
    """One-line, table-safe description of an exception."""
    lines = str(e).strip().splitlines()
    msg = f"{type(e).__name__}: {lines[0] if lines else ''}".strip()
    if len(msg) > 160:
        msg = msg[:157] + "..."
    return "error: " + msg.replace("|", "\\|")


class Bencher:
    """Median ``do_bench`` timing, after one untimed call (absorbs autotuning)."""

    def __init__(self, quick: bool) -> None:
        self.warmup, self.rep = (5, 20) if quick else (25, 100)

    def __call__(self, fn: Callable[[], object]) -> float:
        fn()  # compile + autotune outside the timed region
        torch.cuda.synchronize()
        return triton.testing.do_bench(fn, warmup=self.warmup, rep=self.rep, return_mode="median")


def measure_copy_bandwidth(bench: Bencher, device: str) -> float:
    """Device-to-device ``copy_`` bandwidth in bytes/s (read + write)."""
    src = _randn(1 << 27, device=device)  # 256 MiB, far larger than L2
    dst = torch.empty_like(src)
    ms = bench(lambda: dst.copy_(src))
    return 2 * _bytes(src) / (ms * 1e-3)


def measure_matmul_flops(bench: Bencher, device: str) -> float:
    """FLOP/s of a torch fp16 8192^3 matmul: a practical tensor-core ceiling."""
    n = 8192
    a, b = _randn(n, n, device=device), _randn(n, n, device=device)
    ms = bench(lambda: torch.matmul(a, b))
    return 2.0 * n**3 / (ms * 1e-3)


@dataclass
class Result:
    """What one implementation did on one case."""

    ms: float | None = None
    err: float | None = None
    error: str | None = None  # set if it raised

    def time_cell(self, tol: float) -> str:
        if self.error is not None:
            return self.error
        cell = f"{self.ms:.4f}" if self.ms is not None else "-"
        if self.err is not None and not self.err <= tol:
            cell += " (WRONG)"
        return cell

    def status_cell(self, tol: float) -> str:
        if self.error is not None:
            return self.error
        return "ok" if self.err is not None and self.err <= tol else "WRONG"

    def err_cell(self) -> str:
        return "-" if self.err is None else f"{self.err:.2e}"


def run_impl(
    fn: Callable[..., torch.Tensor],
    inputs: Tensors,
    ref: torch.Tensor,
    bench: Bencher | None,
) -> Result:
    """Check ``fn`` against ``ref`` and (if ``bench``) time it; never raises."""
    res = Result()
    try:
        res.err = rel_error(fn(*inputs), ref)
        if bench is not None:
            res.ms = bench(lambda: fn(*inputs))
    except Exception as e:  # one failure must not end the run
        traceback.print_exc()
        res.error = short_error(e)
    return res


def ratio(num: Result, den: Result) -> str:
    if num.ms is None or den.ms is None or num.error or den.error:
        return "n/a"
    return f"{num.ms / den.ms:.3f}"


def fraction_of_limit(res: Result, work: float, limit: float) -> str:
    """Achieved rate (``work`` per second) as a fraction of the measured ceiling."""
    if res.ms is None or res.error:
        return "n/a"
    return f"{work / (res.ms * 1e-3) / limit:.1%}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter do_bench windows")
    parser.add_argument("--only", help="comma-separated case names, e.g. add,matmul")
    parser.add_argument(
        "--interpret-smoke",
        action="store_true",
        help="tiny CPU shapes under TRITON_INTERPRET=1; correctness only",
    )
    args = parser.parse_args()

    smoke = args.interpret_smoke
    if not smoke and not torch.cuda.is_available():
        parser.error("no CUDA device; use --interpret-smoke for a CPU check")
    device = "cpu" if smoke else "cuda"
    torch.manual_seed(0)
    # The fp32 reference must really be fp32, not TF32.
    torch.backends.cuda.matmul.allow_tf32 = False

    cases = smoke_cases(device) if smoke else full_cases(device)
    if args.only:
        wanted = {name.strip() for name in args.only.split(",")}
        known = {c.name.split()[0] for c in cases}
        if unknown := wanted - known:
            parser.error(f"unknown case(s) {sorted(unknown)}; known: {sorted(known)}")
        cases = [c for c in cases if c.name.split()[0] in wanted]

    device_name = "CPU (TRITON_INTERPRET=1)" if smoke else torch.cuda.get_device_name()
    versions = f"torch {torch.__version__}, triton {triton.__version__}"
    info = [f"device: {device_name}", f"{versions}, python {sys.version.split()[0]}"]
    bench = None if smoke else Bencher(args.quick)
    copy_bw = mm_flops = float("nan")
    if bench is not None:
        copy_bw = measure_copy_bandwidth(bench, device)
        mm_flops = measure_matmul_flops(bench, device)
        torch.cuda.empty_cache()
        info.append(f"ceiling: device-to-device copy {copy_bw / 1e9:.1f} GB/s")
        info.append(f"ceiling: torch fp16 matmul 8192^3 {mm_flops / 1e12:.1f} TFLOP/s")
    for line in info:
        print(line, flush=True)

    rows: list[list[str]] = []
    baseline_ok = True
    for case in cases:
        print(f"running {case.name} ...", flush=True)
        inputs = case.make_inputs()
        ref = case.torch_fn(*(t.float() for t in inputs))
        hand = run_impl(case.triton_fn, inputs, ref, bench)
        torch_res = run_impl(case.torch_fn, inputs, ref, bench)
        # "ours" runs last: a fault in generated code (e.g. a sticky CUDA error)
        # must not hide this case's baseline numbers.
        try:
            ours_fn = get_ours(case)
        except Exception as e:  # already printed by load_ours
            ours = Result(error=short_error(e))
        else:
            ours = run_impl(ours_fn, inputs, ref, bench)
        baseline_ok &= hand.status_cell(case.tol) == "ok"
        work = case.work(*inputs)
        limit = copy_bw if case.bound == "memory" else mm_flops

        errs = [ours.err_cell(), hand.err_cell(), torch_res.err_cell()]
        if smoke:
            rows.append(
                [
                    case.name,
                    ours.status_cell(case.tol),
                    *errs,
                    hand.status_cell(case.tol),
                ]
            )
        else:
            rows.append(
                [
                    case.name,
                    ours.time_cell(case.tol),
                    hand.time_cell(case.tol),
                    torch_res.time_cell(case.tol),
                    ratio(ours, hand),
                    ratio(ours, torch_res),
                    fraction_of_limit(ours, work, limit),
                    fraction_of_limit(hand, work, limit),
                    *errs,
                ]
            )

    if smoke:
        header = ["case", "ours", "err ours", "err triton", "err torch", "triton"]
    else:
        header = [
            "case",
            "ours (ms)",
            "triton (ms)",
            "torch (ms)",
            "ours/triton",
            "ours/torch",
            "ours % limit",
            "triton % limit",
            "err ours",
            "err triton",
            "err torch",
        ]
    table = markdown_table(header, rows)
    print()
    print(table)

    if out_dir := os.environ.get("OUT"):
        path = Path(out_dir) / ("smoke.md" if smoke else "bench.md")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(f"- {line}" for line in info) + "\n\n" + table + "\n")
        print(f"wrote {path}")
    # Non-zero only if a hand-written baseline is wrong: that is a harness bug.
    # "ours" failing is a result to report, not a reason to fail the run.
    return 0 if baseline_ok else 1


if __name__ == "__main__":
    sys.exit(main())
