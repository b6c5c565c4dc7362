"""Code metrics of our kernels against their Triton baselines, as the paper's Table 2.

    python benchmarks/code_metrics.py [--out DIR] [--ours TASK=MODULE[:NAME,NAME...]]

radon measures, for each task, the kernel's code on both sides, with what
tunes it but without the functional wrapper that allocates outputs (as the
paper measures kernel files):

* Triton: the ``@triton.jit`` functions a baseline module launches (its
  ``KERNELS``, with their decorators), its configuration list and pruning
  function; shared launch helpers (``_common``) are not counted.
* ours: the kernel library's module of the op (``ninetoothed.library.<op>``:
  arrangement, application and the variants ``make`` builds), plus ``mm`` for
  ``bmm``, which only reuses it, and the functions of the shared arrangement
  pieces (``ninetoothed.library.tiling``) the kernel calls.  ``--ours`` names another source.

Columns: LOC, LLOC, SLOC, cyclomatic complexity G (the largest block's),
Halstead vocabulary, length, volume and difficulty, maintainability index.
The issue's floor: our Halstead volume at most 40% of the baseline's.
Writes ``code_metrics.md`` and ``code_metrics.json`` under ``--out``, else
``$OUT``, else ``bench-out/``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
for _source in sorted(BENCH.parent.glob("packages/*/src")):  # ninetoothed, uninstalled
    sys.path.append(str(_source))

TASKS = ["add", "addmm", "bmm", "conv2d", "mm", "rms_norm", "rope", "sdpa", "silu", "softmax"]
TASKS += ["max_pool2d", "swiglu", "fused_add_rms_norm"]

LIBRARY = {
    "bmm": ("mm", "bmm"),  # bmm is mm's arrangement and application on 3-D tensors
    "rope": ("rotary_position_embedding",),
    "sdpa": ("scaled_dot_product_attention",),
}
"""The ``ninetoothed.library`` modules of a task's kernel, where not the task's name."""

TUNING = ("CONFIGS", "INTERPRET_CONFIG", "_prune", "tune")


def extract(path: Path, names: list[str]) -> str:
    """The module's imports and the top-level definitions of ``names`` (all of
    the module when ``names`` is empty), without docstrings' effect on counts
    beyond radon's own handling."""
    text = path.read_text()
    if not names:
        return text
    tree = ast.parse(text)
    kept = []
    for node in tree.body:
        defined = set()
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined = {node.name}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined = {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(node, (ast.Import, ast.ImportFrom)) or defined & set(names):
            kept.append(ast.get_source_segment(text, node, padded=False))
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.decorator_list:
                first = node.decorator_list[0].lineno - 1
                kept[-1] = "\n".join(text.splitlines()[first : node.end_lineno])
    return "\n\n".join(kept) + "\n"


def _function(kernel: object) -> object:
    while hasattr(kernel, "fn"):
        kernel = kernel.fn
    return kernel


def triton_source(task: str) -> tuple[str, str]:
    """The baseline kernels of ``task`` with their tuning setup, and a label."""
    module = importlib.import_module(f"baselines.{task}")
    parts, labels = [], []
    for kernel in module.KERNELS:
        function = _function(kernel)
        home = sys.modules[function.__module__]
        names = [function.__name__] + [n for n in TUNING if hasattr(home, n)]
        if not hasattr(home, "CONFIGS") and hasattr(kernel, "configs"):
            shared = importlib.import_module("baselines._elementwise")
            parts.append(extract(Path(shared.__file__), [n for n in TUNING if hasattr(shared, n)]))
        parts.append(extract(Path(home.__file__), names))
        labels.append(f"{home.__name__}.{function.__name__}")
    return "\n".join(parts), ", ".join(labels)


def ours_source(task: str, override: dict[str, str]) -> tuple[str, str] | None:
    """Our kernel's code for ``task`` and a label, or None when there is none."""
    if task in override:
        module_name, _, names = override[task].partition(":")
        module = importlib.import_module(module_name)
        return extract(Path(module.__file__), [n for n in names.split(",") if n]), override[task]
    names = LIBRARY.get(task, (task,))
    modules = [importlib.import_module(f"ninetoothed.library.{name}") for name in names]
    source = "\n".join(extract(Path(str(module.__file__)), []) for module in modules)
    tiling = importlib.import_module("ninetoothed.library.tiling")
    helpers = used_helpers(source, Path(str(tiling.__file__)))
    source += "\n" + extract(Path(str(tiling.__file__)), helpers) if helpers else ""
    label = " + ".join(module.__name__ for module in modules)
    return source, label + (f" + tiling: {', '.join(helpers)}" if helpers else "")


def used_helpers(source: str, helpers_path: Path) -> list[str]:
    """The functions of ``helpers_path`` that ``source`` imports from it, and those
    they call in turn (the shared arrangement pieces a kernel really uses)."""
    module = ".".join(helpers_path.with_suffix("").parts[-3:])  # ninetoothed.library.tiling
    tree = ast.parse(helpers_path.read_text())
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    imported = {
        alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module == module
        for alias in node.names
    }
    wanted: set[str] = set()
    pending = sorted(imported & set(functions))
    while pending:
        name = pending.pop()
        if name not in wanted:
            wanted.add(name)
            body = ast.walk(functions[name])
            pending += [n.id for n in body if isinstance(n, ast.Name) and n.id in functions]
    return sorted(wanted)


def metrics(source: str) -> dict[str, float]:
    """Table 2's columns for ``source``."""
    from radon.complexity import cc_visit
    from radon.metrics import h_visit, mi_visit
    from radon.raw import analyze

    raw = analyze(source)
    halstead = h_visit(source).total
    blocks = cc_visit(source)
    return {
        "LOC": raw.loc,
        "LLOC": raw.lloc,
        "SLOC": raw.sloc,
        "G": max((block.complexity for block in blocks), default=1),
        "eta": halstead.vocabulary,
        "N": halstead.length,
        "V": round(halstead.volume, 2),
        "D": round(halstead.difficulty, 2),
        "MI": round(mi_visit(source, multi=True), 2),
    }


def measure(override: dict[str, str]) -> list[dict]:
    """The metrics of both sides of every task."""
    rows = []
    for task in TASKS:
        source, label = triton_source(task)
        row = {"task": task, "triton": metrics(source), "triton_source": label}
        ours = ours_source(task, override)
        if ours is not None:
            row["ours"], row["ours_source"] = metrics(ours[0]), ours[1]
            row["volume_ratio"] = row["ours"]["V"] / row["triton"]["V"]
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    """Table 2, with the volume ratio and the floor (ours at most 40%)."""
    from report import markdown

    columns = ["LOC", "LLOC", "SLOC", "G", "eta", "N", "V", "D", "MI"]
    lines = []
    for row in rows:
        for side in ("triton", "ours"):
            if side not in row:
                lines.append([row["task"], side, *["-"] * len(columns), "-", "n/a", "n/a"])
                continue
            values = [str(row[side][c]) for c in columns]
            ratio = row.get("volume_ratio")
            verdict = "-" if ratio is None or side == "triton" else (
                "met" if ratio <= 0.40 else "MISSED"
            )  # fmt: skip
            cell = "-" if ratio is None or side == "triton" else f"{100 * ratio:.1f}%"
            lines.append([row["task"], side, *values, cell, verdict, row[f"{side}_source"]])
    header = ["task", "code", *columns, "V ours/triton", "floor <= 40%", "source"]
    return markdown(header, lines)


def main(argv: list[str]) -> int:
    """Measure, print and write the table and the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--ours", action="append", default=[], help="TASK=MODULE[:NAMES]")
    args = parser.parse_args(argv)
    try:
        import radon  # noqa: F401
    except ImportError:
        print("no code metrics: radon is not installed (pip install radon)")
        return 0
    os.environ.setdefault("TRITON_INTERPRET", "1")  # importing kernels needs no GPU
    override = dict(item.split("=", 1) for item in args.ours)
    rows = measure(override)
    text = table(rows)
    print(text)
    out = args.out or Path(os.environ.get("OUT") or "bench-out")
    out.mkdir(parents=True, exist_ok=True)
    (out / "code_metrics.md").write_text(text + "\n")
    (out / "code_metrics.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"wrote {out / 'code_metrics.md'} and {out / 'code_metrics.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
