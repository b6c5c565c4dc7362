"""What the benchmark writes: text tables, the issue's floors, a JSON file and a
bar chart like the paper's Figure 6.

A task's record (``TaskRecord``) holds one ``measure.Result`` per
implementation (``ours``, ``triton``, ``torch``).  Ratios are of median times,
``ours/triton`` above 1 meaning ours is slower; an implementation that failed
or was wrong gets no time and no ratio.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from measure import Result

IMPLEMENTATIONS = ("ours", "triton", "torch")


@dataclass
class TaskRecord:
    """The measurements of one task."""

    name: str
    title: str
    bound: str
    work: float
    results: dict[str, Result]

    def median(self, implementation: str) -> float | None:
        """The median over rounds of ``implementation``'s times, if it has any."""
        stats = self.results[implementation].stats()
        return stats["median"] if stats else None

    def ratio(self, numerator: str, denominator: str) -> float | None:
        """Median time of ``numerator`` over that of ``denominator``."""
        top, bottom = self.median(numerator), self.median(denominator)
        return top / bottom if top and bottom else None

    def rate(self, implementation: str) -> float | None:
        """Achieved bytes/s (memory-bound) or FLOP/s (compute-bound), at the median."""
        ms = self.median(implementation)
        return self.work / (ms * 1e-3) if ms else None


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _time_cell(result: Result) -> str:
    stats = result.stats()
    if stats is None:
        return result.failure or "n/a"
    return f"{stats['median']:.4f} [{stats['min']:.4f}-{stats['max']:.4f}]"


def markdown(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def times_table(records: list[TaskRecord]) -> str:
    """Median [min-max] ms of each implementation, and the ratios of medians."""
    header = ["task", "ours (ms)", "triton (ms)", "torch (ms)", "ours/triton", "ours/torch"]
    header += ["triton/torch", "ours from"]
    rows = [
        [r.name, *(_time_cell(r.results[i]) for i in IMPLEMENTATIONS)]
        + [_number(r.ratio("ours", "triton")), _number(r.ratio("ours", "torch"))]
        + [_number(r.ratio("triton", "torch")), r.results["ours"].source]
        for r in records
    ]
    return markdown(header, rows)


def throughput_table(records: list[TaskRecord], ceilings: dict[str, float]) -> str:
    """Achieved GB/s or TFLOP/s, as a fraction of the measured ceiling; first-call
    seconds; relative errors."""
    header = ["task", "unit", *IMPLEMENTATIONS, "% of limit (ours/triton/torch)"]
    header += ["first call s (ours/triton/torch)", "error (ours/triton/torch)"]
    rows = []
    for r in records:
        memory = r.bound == "memory"
        limit = ceilings["copy_bytes_per_s" if memory else "matmul_flops"]
        rates = [r.rate(i) for i in IMPLEMENTATIONS]
        unit = 1e9 if memory else 1e12
        first = [r.results[i].first_call_s for i in IMPLEMENTATIONS]
        errors = [r.results[i].error for i in IMPLEMENTATIONS]
        rows.append(
            [r.name, "GB/s" if memory else "TFLOP/s"]
            + [_number(rate / unit if rate else None, 1) for rate in rates]
            + ["/".join(_number(100 * rate / limit if rate else None, 1) for rate in rates)]
            + ["/".join(_number(value, 2) for value in first)]
            + ["/".join("-" if e is None else f"{e:.1e}" for e in errors)]
        )
    return markdown(header, rows)


def _floor(record: TaskRecord, ceilings: dict[str, float]) -> list[tuple[str, float | None, float]]:
    """The issue's floors for ``record``: (what, measured, required minimum)."""
    name = record.name
    speed = lambda other: record.ratio(other, "ours")  # noqa: E731 (ours' speed-up)
    floors = [("triton time / ours", speed("triton"), 1 / 1.02)]
    if name in ("mm", "bmm", "addmm"):
        floors.append(("torch time / ours", speed("torch"), 0.97))
    if name in ("add", "silu", "softmax", "rms_norm"):
        best = [t for t in (record.median("torch"), record.median("triton")) if t]
        ours = record.median("ours")
        floors.append(("fastest other / ours", min(best) / ours if best and ours else None, 0.95))
    if name in ("add_2p28", "silu_2p28"):
        rate = record.rate("ours")
        copy = ceilings["copy_bytes_per_s"]
        floors.append(("ours / copy bandwidth", rate / copy if rate else None, 0.90))
    if name == "sdpa":
        floors.append(("torch time / ours", speed("torch"), 0.80))
        first = record.results["ours"].first_call_s
        floors.append(("30 s - ours first call", None if first is None else 30 - first, 0.0))
    if name == "conv2d":
        floors.append(("torch time / ours", speed("torch"), 0.60))
    return floors


def floors_table(records: list[TaskRecord], ceilings: dict[str, float]) -> tuple[str, list]:
    """The issue's single-kernel floors (for ours), each met, missed or not measurable."""
    rows, verdicts = [], []
    for record in records:
        for what, value, minimum in _floor(record, ceilings):
            verdict = "n/a" if value is None else ("met" if value >= minimum else "MISSED")
            verdicts.append({"task": record.name, "floor": what, "value": value, "min": minimum})
            verdicts[-1]["verdict"] = verdict
            rows.append([record.name, what, _number(value), f">= {minimum:.3f}", verdict])
    return markdown(["task", "floor", "value", "required", "verdict"], rows), verdicts


def write_json(path: Path, meta: dict, records: list[TaskRecord], floors: list) -> None:
    """Everything measured, with the statistics and ratios spelled out."""
    tasks = []
    for r in records:
        implementations = {
            name: {**asdict(result), "stats": result.stats(), "rate": r.rate(name)}
            for name, result in r.results.items()
        }
        ratios = {
            f"{a}/{b}": r.ratio(a, b)
            for a, b in (("ours", "triton"), ("ours", "torch"), ("triton", "torch"))
        }
        tasks.append({"name": r.name, "title": r.title, "bound": r.bound, "work": r.work}
                     | {"implementations": implementations, "ratios": ratios})  # fmt: skip
    path.write_text(json.dumps({"meta": meta, "tasks": tasks, "floors": floors}, indent=1) + "\n")


def write_chart(path: Path, records: list[TaskRecord], subtitle: str) -> str:
    """Grouped bars of each implementation's speed relative to the Triton
    baseline (its median time over theirs; error bars from min and max), like
    the paper's Figure 6.  Returns what it did, as matplotlib may be missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no chart: matplotlib is not installed"
    shown = [r for r in records if r.median("triton")]
    figure, axes = plt.subplots(figsize=(max(8, 0.9 * len(shown) + 2), 4.5))
    width = 0.27
    for offset, name in enumerate(IMPLEMENTATIONS):
        heights, lows, highs = [], [], []
        for r in shown:
            stats, base = r.results[name].stats(), r.median("triton")
            speed = base / stats["median"] if stats else 0.0
            heights.append(speed)
            lows.append(speed - base / stats["max"] if stats else 0.0)
            highs.append(base / stats["min"] - speed if stats else 0.0)
        positions = [i + (offset - 1) * width for i in range(len(shown))]
        axes.bar(positions, heights, width, yerr=[lows, highs], capsize=2, label=name)
    axes.axhline(1.0, color="grey", linewidth=0.8)
    axes.set_xticks(range(len(shown)), [r.name for r in shown], rotation=30, ha="right")
    axes.set_ylabel("speed relative to the Triton baseline")
    axes.set_title(f"Single-kernel tasks, float16 ({subtitle})", fontsize=10)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return f"wrote {path}"
