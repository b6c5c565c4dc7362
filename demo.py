"""NineToothed demo: what a user does first, then the kernel library checked against PyTorch.

    python demo.py           # or: python3 dev.py demo (installs everything first)

First it writes the README's first kernel (``add.py``, read from the README
itself) into a temporary folder and runs it as the README says.  Then it
calls every op of ``nt_torch.ops`` (the kernel library, written once in
NineToothed in ``ninetoothed.library``) on torch tensors and compares each
result with torch's own operator; then shows a few lines of matrix
multiplication's arrangement beside the Triton code generated from it, and
the configuration the last call used.  On a machine where torch sees a CUDA
GPU the kernels run there, in float16, and each op is timed against torch;
otherwise the demo sets ``TRITON_INTERPRET=1`` *before Triton is imported*
(Triton decides at import time whether kernels are compiled or interpreted)
and runs them in Triton's CPU interpreter, in float32 on small ragged
shapes, since the interpreter executes programs one by one in Python (and
tunes nothing: the first configuration is used).

Exits with status 1, saying what failed and why, if the first kernel or an
op cannot be built or launched or gives a wrong result.
"""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Setup:
    """Where the ops run, on what sizes and in what precision."""

    device: str
    interpreted: bool
    dtype: str
    big: bool


def choose_setup() -> Setup:
    """The GPU if torch sees one, else Triton's interpreter on the CPU.

    Must run before anything imports Triton, since it may set TRITON_INTERPRET.
    """
    import torch

    interpreted = os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available()
    if interpreted:
        if "triton" in sys.modules:
            raise RuntimeError("Triton was imported before TRITON_INTERPRET could be set")
        os.environ["TRITON_INTERPRET"] = "1"
        return Setup("cpu", True, "float32", False)
    return Setup("cuda", False, "float16", True)


@dataclass(frozen=True)
class Case:
    """One op: its inputs' shapes (small, big), our call and torch's."""

    name: str
    shapes: tuple[list[tuple[int, ...]], list[tuple[int, ...]]]
    ours: Callable[..., Any]
    torch: Callable[..., Any]


def cases() -> list[Case]:
    """Every op of the library, the way a user calls it, beside torch's version."""
    import torch
    import torch.nn.functional as F

    from nt_torch import ops

    def torch_rope(x, sin, cos):  # torch has no rope op: Llama's half-split layout
        sin, cos = sin[None, :, None, :], cos[None, :, None, :]
        a, b = x.chunk(2, dim=-1)
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)

    rows = ([(37, 200)], [(4096, 4096)])
    big_square = [(4096, 4096)]
    attention = ([(1, 2, 37, 32)] * 3, [(4, 48, 1024, 64)] * 3)
    return [
        Case("add", ([(1000,)] * 2, [(1 << 24,)] * 2), ops.add, torch.add),
        Case(
            "addmm",
            ([(70, 90), (70, 50), (50, 90)], big_square * 3),
            lambda i, a, b: ops.addmm(i, a, b, beta=0.5, alpha=2.0),
            lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=2.0),
        ),
        Case("bmm", ([(3, 40, 50), (3, 50, 30)], [(4, 2048, 2048)] * 2), ops.bmm, torch.bmm),
        Case(
            "conv2d",
            ([(2, 5, 9, 11), (7, 5, 3, 3)], [(4, 512, 14, 14), (512, 512, 3, 3)]),
            lambda x, w: ops.conv2d(x, w, padding=1),
            lambda x, w: F.conv2d(x, w, padding=1),
        ),
        Case("mm", ([(70, 50), (50, 90)], big_square * 2), ops.mm, torch.mm),
        Case("rms_norm", rows, ops.rms_norm, lambda x: F.rms_norm(x, x.shape[-1:], eps=1e-6)),
        Case(
            "rotary_position_embedding",
            ([(2, 5, 3, 16), (5, 8), (5, 8)], [(4, 1024, 48, 64), (1024, 32), (1024, 32)]),
            lambda x, s, c: ops.rotary_position_embedding(x, s, c, interleaved=False),
            torch_rope,
        ),
        Case(
            "scaled_dot_product_attention",
            attention,
            lambda q, k, v: ops.scaled_dot_product_attention(q, k, v, is_causal=True),
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        ),
        Case("silu", ([(1000,)], [(1 << 24,)]), ops.silu, F.silu),
        Case("softmax", rows, ops.softmax, lambda x: torch.softmax(x, dim=-1)),
        Case(
            "max_pool2d",
            ([(2, 3, 11, 13)], [(32, 64, 112, 112)]),
            lambda x: ops.max_pool2d(x, 3, stride=2, padding=1),
            lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
        ),
        Case(
            "swiglu",
            ([(37, 200)] * 2, [(4096, 14336)] * 2),
            ops.swiglu,
            lambda a, b: a * F.silu(b),
        ),
        Case(
            "fused_add_rms_norm",
            ([(37, 200), (37, 200), (200,)], [(4096, 4096), (4096, 4096), (4096,)]),
            lambda x, r, w: ops.fused_add_rms_norm(x, r, w)[0],
            lambda x, r, w: F.rms_norm(x + r, w.shape, w, eps=1e-6),
        ),
    ]


def relative_error(actual: Any, expected: Any) -> float:
    """``|actual - expected| / |expected|`` (Frobenius norms, in float32)."""
    difference = (actual.float() - expected.float()).norm()
    return float(difference / expected.float().norm().clamp_min(1e-30))


TOLERANCE = {"float32": 1e-4, "float16": 5e-3}
"""How far an op computing in float32 and rounding once may be from torch's result."""


def check(case: Case, setup: Setup) -> tuple[list[Any], float]:
    """Run ``case`` on fresh random inputs; return the inputs and the relative error."""
    import torch

    dtype = getattr(torch, setup.dtype)
    shapes = case.shapes[setup.big]
    inputs = [torch.randn(shape, dtype=dtype, device=setup.device) for shape in shapes]
    error = relative_error(case.ours(*inputs), case.torch(*inputs))
    if not error < TOLERANCE[setup.dtype]:
        raise AssertionError(f"relative error {error:.3g} against torch")
    return inputs, error


def timing(case: Case, inputs: list[Any]) -> str:
    """Median times of ours and torch's (GPU only), and their ratio."""
    from triton.testing import do_bench

    ours = do_bench(lambda: case.ours(*inputs), return_mode="median")
    theirs = do_bench(lambda: case.torch(*inputs), return_mode="median")
    return f"{ours:.3f} ms vs torch {theirs:.3f} ms ({theirs / ours:.2f}x torch's speed)"


def terminal_width() -> int:
    """The terminal's width in columns (100 when not a terminal, as in CI logs)."""
    return shutil.get_terminal_size((100, 24)).columns


def side_by_side(left: list[str], right: list[str], width: int | None = None) -> str:
    """Two columns of text in ``width`` columns, long lines wrapped (never cut)."""
    width = width or terminal_width()
    usable = max(width - 5, 20)  # 2 of indent, " | " between the columns
    left_width = min(max((len(line) for line in left), default=0), usable // 2)
    right_width = usable - left_width
    left_rows = [row for line in left for row in _wrap(line, left_width)]
    right_rows = [row for line in right for row in _wrap(line, right_width)]
    lines = []
    for index in range(max(len(left_rows), len(right_rows))):
        a = left_rows[index] if index < len(left_rows) else ""
        b = right_rows[index] if index < len(right_rows) else ""
        lines.append(f"  {a:<{left_width}} | {b}".rstrip())
    return "\n".join(lines)


def _wrap(line: str, width: int) -> list[str]:
    """``line`` in rows of at most ``width`` characters, continuations indented.

    Code breaks best after a space, a dot, a comma or an opening parenthesis,
    so rows end there; a longer run of characters is split where it must.
    """
    indent = "    "
    rows: list[str] = []
    row = ""
    for piece in re.findall(r"[^\s.,(]*[.,(]?\s*", line):
        limit = width - (len(indent) if rows else 0)
        if row and len(row) + len(piece.rstrip()) > limit:
            rows.append(row.rstrip())
            row = ""
            limit = width - len(indent)
        row += piece
        while len(row) > limit:  # a piece longer than a row
            rows.append(row[:limit])
            row = row[limit:]
            limit = width - len(indent)
    if row.strip() or not rows:
        rows.append(row.rstrip())
    return [rows[0], *(indent + rest for rest in rows[1:])]


def configuration_note(kernel: Any) -> str:
    """The configuration the kernel's last call used, and how it was chosen."""
    # Said as `ninetoothed show` says it.
    from ninetoothed._commands.show import describe_configuration, how_chosen

    config = getattr(kernel.generated, "best_config", None)
    if config is None:
        return "configuration of the last call: none (not called)"
    return (
        f"configuration of the last call: {describe_configuration(config)} ({how_chosen(kernel)})"
    )


def show_matmul() -> None:
    """mm's arrangement beside an excerpt of the Triton generated from it, and the
    configuration of the last call."""
    from ninetoothed.library import made_kernels, mm

    source = inspect.getsource(mm.arrangement).splitlines()
    arranged = [line.strip() for line in source if "arranged" in line and "=" in line][:8]
    kernel = made_kernels("mm")[-1]
    keys = ("tl.program_id", "for ", "tl.load(", "tl.dot(", "tl.store(")
    lines = kernel.source.splitlines()
    generated = [line.strip() for line in lines if any(key in line for key in keys)]
    print("\nmm: the arrangement (NineToothed)  |  the Triton generated from it (excerpt)")
    print(side_by_side(arranged, generated[:8]))
    print("\n".join("  " + row for row in _wrap(configuration_note(kernel), terminal_width() - 2)))
    print(f"  the whole generated source: {kernel.source_path}")


def first_kernel_source() -> str:
    """The README's first kernel: its ``add.py`` block, as a reader copies it."""
    sys.path.insert(0, str(ROOT))
    from tools import docblocks

    blocks = docblocks.parse(ROOT / "README.md")
    return next(block.code for block in blocks if block.marks.get("file") == "add.py")


def run_first_kernel(setup: Setup, folder: Path) -> bool:
    """Write the README's first kernel into ``folder`` and run it as the README says."""
    path = folder / "add.py"
    path.write_text(first_kernel_source())
    command = "TRITON_INTERPRET=1 python add.py" if setup.interpreted else "python add.py"
    print(f"The README's first kernel, written to {path}:\n")
    print(textwrap.indent(path.read_text().rstrip(), "    "))
    print(f"\n  $ {command}")
    environment = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if setup.interpreted:
        environment["TRITON_INTERPRET"] = "1"
    result = subprocess.run(
        [sys.executable, str(path)], cwd=folder, env=environment, capture_output=True, text=True
    )
    print(textwrap.indent((result.stdout + result.stderr).rstrip(), "  "))
    ok = result.returncode == 0 and result.stdout.strip() == "True"
    if not ok:
        print("[FAIL] the README's first kernel did not print True", file=sys.stderr)
    return ok


def run(setup: Setup) -> list[str]:
    """Check (and on a GPU time) every op; return the names of those that failed."""
    failures = []
    for case in cases():
        try:
            inputs, error = check(case, setup)
            detail = "" if setup.interpreted else "; " + timing(case, inputs)
        except Exception:
            failures.append(case.name)
            print(f"[FAIL] {case.name}:", file=sys.stderr)
            traceback.print_exc()
            continue
        shapes = ", ".join(str(tuple(x.shape)) for x in inputs)
        print(f"[ok] {case.name}({shapes}): relative error vs torch {error:.1e}{detail}")
    return failures


def main() -> int:
    """Run every op; return 0 if all match torch, 1 otherwise."""
    try:
        setup = choose_setup()
        import torch
        import triton

        import ninetoothed
    except ImportError as exc:
        print(
            f"demo: cannot import {exc.name}: install the packages first "
            "(python3 dev.py demo does it in a fresh environment)",
            file=sys.stderr,
        )
        return 1

    torch.manual_seed(0)
    where = (
        "Triton's CPU interpreter (TRITON_INTERPRET=1: no CUDA GPU visible to torch)"
        if setup.interpreted
        else f"CUDA GPU: {torch.cuda.get_device_name()}"
    )
    print(f"NineToothed {getattr(ninetoothed, '__version__', '?')}, triton {triton.__version__}")
    print(f"torch {torch.__version__}; running on {where}, {setup.dtype}\n")
    with tempfile.TemporaryDirectory(prefix="ninetoothed-demo-") as folder:
        first_ok = run_first_kernel(setup, Path(folder))
    print("\nEvery op of the kernel library (nt_torch.ops), checked against torch:\n")
    failures = run(setup) + ([] if first_ok else ["the README's first kernel"])
    if "mm" not in failures:
        show_matmul()
    if failures:
        print(f"\ndemo FAILED: {', '.join(failures)}", file=sys.stderr)
        return 1
    print("\nthe first kernel runs and every op matches torch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
