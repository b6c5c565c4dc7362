"""Hopper-class speed: our attention (prefill and decoding shapes), float8 and
decoding GEMMs against torch, in one run of a few minutes.

    python benchmarks/hopper.py                          # an H100/H200, about 5 min
    python benchmarks/hopper.py --sections decode --rounds 7
    python benchmarks/hopper.py --smoke                  # tiny shapes, Triton's interpreter

Sections, float16 random inputs (``fp8``: float8), in this order:

- ``prefill``: ``scaled_dot_product_attention`` at (4, 48, 1024, 64) and
  (2, 16, 4096, 128), causal and not, and at lengths no block divides (1000
  and 4090: ragged last blocks of queries and keys), against torch's
  ``scaled_dot_product_attention`` (whatever backend torch picks); also our
  kernel made with loops over tiles kept as written (``ours, unsplit loops``:
  ``NINETOOTHED_SPLIT_LOOPS=0``, the code before whole tiles were split from
  the ragged tail), called directly; at heads of 128, also our op under
  ``torch.compile`` (``ours, torch.compile``).
- ``decode``: 1, 4 and 16 query rows of 32 heads against a key/value cache of
  8 heads (grouped-query), head dimension 128, 1k to 32k keys: our op (the
  rule's choice: flash-decoding's split of the keys, else one kernel), our one
  kernel (``pinned_key_splits(0)``), torch with ``enable_gqa`` (its own choice
  of backend: the ratios' reference) and, for one query row, torch forced to
  each fused backend (one that refuses grouped heads shows its error).
- ``fp8``: ``scaled_mm`` at 4096^3 and 8192^3, tensor-wise and row-wise
  scales, bfloat16 out, against ``torch._scaled_mm`` (cuBLASLt), with both
  sides' float32 sums (the default; ours on Hopper: the Gluon kernel,
  ``nt_triton.hopper_scaled_mm``) and with both sides' ``use_fast_accum``.
- ``configs``: each configuration of the flash-decoding split kernel
  (``flash_decoding.CONFIGS``, the op runs the first) at 4k and 32k keys.
- ``gemm``: ``mm`` of M = 1, 4, 16, 64 rows (decoding) and 1,024 (a prefill)
  through Llama-8B's weights (N, K of 4096 and 14336, and the key and value
  projections' 1024 x 4096, the weight transposed as ``F.linear`` reads it)
  against torch (cuBLAS).
- ``rows``: ``rms_norm`` and half-split ``rotary_position_embedding`` of 1, 16
  and 64 tokens (hidden size 4096; 32 heads of 128) against torch's
  ``F.rms_norm`` and torch operations.
- ``host``: the host's cost per call of ``ops.add`` (4096 elements) against
  ``torch.add``, of ``mm`` and ``rms_norm`` at decoding shapes, and of sdpa at
  decoding shapes (4k and 32k keys) against torch's, as ratios
  (``benchmarks/ops_host.py``, whose method it follows: calls back to back,
  host time only; ``--smoke``: small shapes under the interpreter).

Method: each implementation's first call (compile and tuning included) is
timed and its output checked against torch in float32 (relative error at most
5e-3; a wrong or failing one gets no time).  Then ``--rounds`` rounds, the
order rotating from round to round, each a ``triton.testing.do_bench`` median
of 50 ms of calls (L2 flushed; the output's allocation included for all).  Rows show the median
over rounds [min - max] and ``torch time / this`` (above 1: faster than
torch).  A case that would start after ``--budget`` seconds is skipped and
listed.  ``--out DIR`` also writes ``hopper.json`` (every time of every round).
"""

from __future__ import annotations

import os
import sys

SMOKE = "--smoke" in sys.argv
if SMOKE:  # read when Triton decorates a kernel: before anything imports triton
    os.environ["TRITON_INTERPRET"] = "1"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ours  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from measure import Clock, Result, first_call, interleaved_rounds  # noqa: E402

SECTIONS = ("prefill", "decode", "fp8", "configs", "gemm", "rows", "host")
"""In the order they run: the issue's floors first."""
TOLERANCE = 5e-3
FIRST_CALL_LIMIT = 120.0
"""Seconds the first calls of one case may take together (compiles and tuning)."""


@dataclass(frozen=True)
class Case:
    """One shape: its inputs' shapes, torch's function (also the float32 reference)
    and ours, by name."""

    section: str
    title: str
    shapes: tuple[tuple[int, ...], ...]
    torch_fn: Callable[..., torch.Tensor]
    ours: dict[str, Callable[..., torch.Tensor]]
    build: Callable[[str], tuple[torch.Tensor, ...]] | None = None
    """The inputs on a device, when not float16 ``randn`` of ``shapes``."""
    reference: Callable[..., torch.Tensor] | None = None
    """The float32 reference, when not ``torch_fn`` of the inputs in float32."""
    tolerance: float = TOLERANCE
    """The relative error (of the norms) a result may have against the reference."""


def _sdpa_torch(causal: bool, backend: str | None = None) -> Callable[..., torch.Tensor]:
    """torch's attention, ``enable_gqa`` only where the heads differ (it may change the
    backend torch picks); ``backend`` forces one (``"FLASH_ATTENTION"`` ...)."""

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        forced = contextlib.nullcontext()
        if backend is not None:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            forced = sdpa_kernel(getattr(SDPBackend, backend))
        with forced:
            gqa = q.shape[1] != k.shape[1]
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

    return call


def _sdpa_ours(ops: object, causal: bool, key_splits: int | None = None) -> Callable[..., object]:
    """Our op; ``key_splits`` pins flash-decoding's chunk count (0: one kernel)."""
    from ninetoothed.library import pinned_key_splits

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> object:
        pinned = contextlib.nullcontext() if key_splits is None else pinned_key_splits(key_splits)
        with pinned:
            return ops.scaled_dot_product_attention(  # type: ignore[attr-defined]
                q, k, v, is_causal=causal, enable_gqa=True
            )

    return call


def _sdpa_compiled(ops: object, causal: bool) -> Callable[..., object]:
    """Our op in a function compiled by ``torch.compile`` (one per case: its own guards)."""

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> object:
        return ops.scaled_dot_product_attention(q, k, v, is_causal=causal)  # type: ignore[attr-defined]

    return torch.compile(call, fullgraph=True, dynamic=False)


def _sdpa_unsplit(causal: bool) -> Callable[..., torch.Tensor]:
    """The op's kernel (query and key heads alike), made with ``NINETOOTHED_SPLIT_LOOPS=0``
    (one per head bound, on first use) and called directly into a new output."""
    made: dict[int, Callable[..., None]] = {}

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        head = q.shape[3]
        bound = 1 << (head - 1).bit_length()
        if bound not in made:
            made[bound] = _unsplit_kernel(bound)
        output = torch.empty_like(q)
        made[bound](q, k, v, head**-0.5, causal, output)
        return output

    return call


def _unsplit_kernel(head_bound: int) -> Callable[..., None]:
    """The library's attention kernel, its loops over tiles kept as written."""
    import ninetoothed
    from ninetoothed.library import scaled_dot_product_attention

    premade = scaled_dot_product_attention.premake(head_bound=head_bound)
    options = dict(premade.options)
    if SMOKE:  # the interpreter tries two configurations, as the library's own
        options.pop("max_num_configs", None)
    previous = os.environ.get("NINETOOTHED_SPLIT_LOOPS")
    os.environ["NINETOOTHED_SPLIT_LOOPS"] = "0"
    try:
        return ninetoothed.make(  # type: ignore[no-any-return]
            premade.arrangement, premade.application, premade.tensors,
            name="sdpa_unsplit", **options,
        )  # fmt: skip
    finally:
        if previous is None:
            del os.environ["NINETOOTHED_SPLIT_LOOPS"]
        else:
            os.environ["NINETOOTHED_SPLIT_LOOPS"] = previous


def _split_config(ops: object, config: int) -> Callable[..., object]:
    """Flash-decoding with the split kernel's ``CONFIGS[config]`` (the rule's count)."""
    from ninetoothed.library.ops import decoding

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> object:
        shape = tuple(q.shape)
        arguments = (q, k, v, shape[3] ** -0.5)
        bound = 1 << (shape[3] - 1).bit_length()
        framework = ops.framework  # type: ignore[attr-defined]
        result = decoding.attend(framework, arguments, shape, k.shape[1], bound, config=config)
        if result is None:
            raise ValueError("the rule keeps one kernel at this shape: nothing to compare")
        return result

    return call


def _rule(shapes: tuple[tuple[int, ...], ...]) -> int:
    """The key-split count the op's rule picks for query and key shapes (1: one kernel)."""
    from ninetoothed.library.ops import decoding

    (batch, heads, queries, _), (_, kv_heads, keys, _) = shapes[0], shapes[1]
    packed, _ = decoding.packing(heads // kv_heads, queries)
    return decoding.key_splits(batch * (heads // packed), keys)


def cases(ops: object, small: bool) -> Iterator[Case]:
    """Every case of every section, in order."""
    from ninetoothed.library import flash_decoding

    prefill = [(1, 2, 40, 16)] if small else [(4, 48, 1024, 64), (2, 16, 4096, 128)]
    prefill += [] if small else [(4, 48, 1000, 64), (2, 16, 4090, 128)]
    for shape in prefill:
        for causal in (False, True):
            title = f"{shape}{' causal' if causal else ''}"
            implementations = {
                "ours": _sdpa_ours(ops, causal),
                "ours, unsplit loops": _sdpa_unsplit(causal),
            }
            if shape[-1] == 128:  # under torch.compile: Inductor's launch, or the operator's
                implementations["ours, torch.compile"] = _sdpa_compiled(ops, causal)
            yield Case("prefill", title, (shape,) * 3, _sdpa_torch(causal), implementations)
    heads, kv_heads, dim = (4, 2, 16) if small else (32, 8, 128)
    lengths = (200,) if small else (1024, 4096, 16384, 32768)
    for queries in (1, 4) if small else (1, 4, 16):
        for keys in lengths:
            shapes = ((1, heads, queries, dim),) + ((1, kv_heads, keys, dim),) * 2
            implementations = {
                "ours": _sdpa_ours(ops, False),
                "ours, one kernel": _sdpa_ours(ops, False, 0),
            }
            if queries == 1 and not small:  # torch's fused backends with grouped heads
                for backend in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION"):
                    implementations[f"torch, {backend.lower()}"] = _sdpa_torch(False, backend)
            title = f"q {shapes[0]} kv {shapes[1]}, S = {_rule(shapes)}"
            yield Case("decode", title, shapes, _sdpa_torch(False), implementations)
    yield from _fp8_cases(ops, small)
    for keys in (200,) if small else (4096, 32768):
        shapes = ((1, heads, 1, dim),) + ((1, kv_heads, keys, dim),) * 2
        implementations = {
            f"ours, split config {i} {config}": _split_config(ops, i)
            for i, config in enumerate(flash_decoding.CONFIGS)
        }
        title = f"q {shapes[0]} kv {shapes[1]}"
        yield Case("configs", title, shapes, _sdpa_torch(False), implementations)
    sizes = ((32, 48),) if small else ((4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336))
    for rows in (1, 16, 80) if small else (1, 4, 16, 64, 1024):
        for n, k in sizes:
            implementations = {"ours": functools.partial(_linear, mm=ops.mm)}  # type: ignore[attr-defined]
            shapes = ((rows, k), (n, k))
            title = f"({rows}, {k}) x ({n}, {k}).T"
            yield Case("gemm", title, shapes, _linear, implementations)
    yield from _row_cases(ops, small)


def _row_cases(ops: object, small: bool) -> Iterator[Case]:
    """``rms_norm`` and half-split ``rotary_position_embedding`` at decoding shapes: 1 to
    64 tokens of Llama-8B's hidden size (4096), and of its 32 query heads of 128."""
    hidden, heads, dim = (48, 2, 16) if small else (4096, 32, 128)
    for tokens in (1, 16) if small else (1, 16, 64):
        shapes = ((tokens, hidden), (hidden,))
        implementations = {"ours": ops.rms_norm}  # type: ignore[attr-defined]
        yield Case("rows", f"rms_norm {shapes[0]}", shapes, _rms_norm, implementations)
        shapes = ((tokens, 1, heads, dim), (1, dim // 2), (1, dim // 2))
        rope = functools.partial(ops.rotary_position_embedding, interleaved=False)  # type: ignore[attr-defined]
        yield Case("rows", f"rope {shapes[0]}", shapes, _rope_half, {"ours": rope})


def _rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return F.rms_norm(x, x.shape[-1:], weight, 1e-6)


def _rope_half(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """Llama's rotation, (x[i], x[i + D/2]) pairs, in torch operations."""
    sin, cos = sin[None, :, None, :], cos[None, :, None, :]
    a, b = x.chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, a * sin + b * cos), -1)


def _fp8_cases(ops: object, small: bool) -> Iterator[Case]:
    """``scaled_mm`` against ``torch._scaled_mm``: float8 (e4m3fn) operands, the weight
    column-major as torch needs it, tensor-wise and row-wise scales, bfloat16 out; each
    with float32 sums (both sides' default) and with fast accumulation (both sides')."""
    for size in (48,) if small else (4096, 8192):
        for rowwise in (False, True):
            for fast in (False, True):
                title = f"{size}^3, {'row-wise' if rowwise else 'tensor-wise'} scales"
                title += ", fast accumulation" if fast else ""
                build = functools.partial(_fp8_inputs, size=size, rowwise=rowwise)
                ours = functools.partial(_scaled, ops.scaled_mm, fast=fast)  # type: ignore[attr-defined]
                theirs = functools.partial(_scaled, torch._scaled_mm, fast=fast)
                shapes = ((size, size),) * 2
                # Fast accumulation truncates long sums: torch's own is looser than 5e-3.
                tolerance = 3e-2 if fast else TOLERANCE
                yield Case("fp8", title, shapes, theirs, {"ours": ours}, build, _dequantised,
                           tolerance)  # fmt: skip


def _fp8_inputs(device: str, size: int, rowwise: bool) -> tuple[torch.Tensor, ...]:
    """``a``, ``b`` (column-major) in float8, and their scales."""
    a, w = (torch.randn(size, size, device=device).to(torch.float8_e4m3fn) for _ in "aw")
    if rowwise:
        scale_a = torch.rand(size, 1, device=device) + 0.5
        scale_b = torch.rand(1, size, device=device) + 0.5
    else:
        scale_a, scale_b = (torch.tensor(value, device=device) for value in (0.75, 1.25))
    return a, w.t(), scale_a, scale_b


def _scaled(
    mm: Callable[..., torch.Tensor], *inputs: torch.Tensor, fast: bool = False
) -> torch.Tensor:
    return mm(*inputs, out_dtype=torch.bfloat16, use_fast_accum=fast)


def _dequantised(a: torch.Tensor, b: torch.Tensor, sa: torch.Tensor, sb: torch.Tensor) -> object:
    """The float32 product of the dequantised operands."""
    return (a.float() * sa) @ (b.float() * sb)


def _linear(a: torch.Tensor, w: torch.Tensor, mm: Callable[..., torch.Tensor] = torch.mm) -> object:
    """``a @ w.T``, as ``F.linear`` reads its weight."""
    return mm(a, w.t())


def run_case(case: Case, clock: Clock, rounds: int, deadline: float) -> dict[str, Result]:
    """First calls (each cut off at ``deadline``, a ``time.perf_counter()``), checks,
    then interleaved rounds of every valid implementation."""
    device = clock.device
    if case.build is not None:
        inputs = case.build(device)
    else:
        inputs = tuple(torch.randn(*s, dtype=torch.float16, device=device) for s in case.shapes)
    if case.reference is not None:
        expected = case.reference(*inputs)
    else:
        expected = case.torch_fn(*(t.float() for t in inputs))
    implementations = {"torch": case.torch_fn, **case.ours}
    results = {}
    for name, fn in implementations.items():
        limit = max(1.0, deadline - time.perf_counter())
        results[name] = first_call(fn, inputs, expected, case.tolerance, clock, name, limit)
    _checked_after_background_compiles(implementations, inputs, expected, case, clock, results)
    valid = {
        name: (lambda fn=fn: fn(*inputs))
        for name, fn in implementations.items()
        if results[name].valid
    }
    times, failures = interleaved_rounds(valid, clock, rounds)
    for name, measured in times.items():
        results[name].times_ms = measured
        results[name].failure = failures.get(name)
    return results


def _checked_after_background_compiles(
    implementations: dict[str, Callable[..., object]],
    inputs: tuple[torch.Tensor, ...],
    expected: object,
    case: Case,
    clock: Clock,
    results: dict[str, Result],
) -> None:
    """Check each valid implementation's output again once the kernels its first call
    compiled in the background are ready: on Hopper, the first calls of attention and
    ``scaled_mm`` take the NineToothed kernel while the Gluon kernel compiles, and the
    rounds time the latter (``nt_triton.hopper_attention.ready``)."""
    from nt_triton import hopper_attention, hopper_scaled_mm

    hopper_attention.settle()
    hopper_scaled_mm.settle()
    for name, fn in implementations.items():
        if results[name].valid:
            again = first_call(fn, inputs, expected, case.tolerance, clock, name)
            results[name].failure = again.failure


def rows(case: Case, results: dict[str, Result]) -> list[str]:
    """The case's table rows: one per implementation."""
    torch_stats = results["torch"].stats()
    lines = []
    for name, result in results.items():
        stats = result.stats()
        first = "-" if result.first_call_s is None else f"{result.first_call_s:.2f}"
        error = "-" if result.error is None else f"{result.error:.1e}"
        if result.failure or stats is None:
            lines.append(f"| {case.title} | {name} | {first} | {error} | {result.failure} | - |")
            continue
        ratio = "-"
        if torch_stats is not None:
            ratio = f"{torch_stats['median'] / stats['median']:.3f}"
        timing = (
            f"{stats['median'] * 1e3:.1f} [{stats['min'] * 1e3:.1f} - {stats['max'] * 1e3:.1f}]"
        )
        lines.append(f"| {case.title} | {name} | {first} | {error} | {timing} | {ratio} |")
    return lines


HEADER = (
    "| shape | implementation | first call (s) | error | us: median [min - max] "
    "| torch time / this |\n|---|---|---|---|---|---|"
)


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes, interpreter")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (5)")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds (300)")
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated")
    parser.add_argument("--out", type=Path, default=None, help="folder for hopper.json")
    args = parser.parse_args(argv)
    unknown = set(args.sections.split(",")) - set(SECTIONS)
    if unknown:
        parser.error(f"--sections: unknown {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    return args


def main(argv: list[str]) -> int:
    """Run the sections; return 1 when torch itself was wrong or failed, else 0."""
    args = parse(argv)
    began = time.perf_counter()
    device = "cpu" if args.smoke else "cuda"
    # Shorter than run.py's 25 + 100 ms: about 900 timings must fit the budget, and
    # medians over the rounds absorb the noise (the smallest kernels still run
    # hundreds of times in 50 ms).
    clock = Clock(device, warmup_ms=10.0, rep_ms=50.0)
    ops = ours.module("nt_torch.ops")
    if isinstance(ops, BaseException):
        print(f"nt_torch.ops does not import: {ops!r}", file=sys.stderr)
        return 1
    name = "CPU (interpreter)" if args.smoke else torch.cuda.get_device_name()
    print(f"{name}; torch {torch.__version__}; {args.rounds} rounds", flush=True)
    wanted = args.sections.split(",")
    report: list[dict[str, object]] = []
    section, skipped, status = None, [], 0
    for case in cases(ops, args.smoke):
        if case.section not in wanted:
            continue
        remaining = args.budget - (time.perf_counter() - began)
        if remaining <= 0:
            skipped.append(f"{case.section} {case.title}")
            continue
        if case.section != section:
            section = case.section
            print(f"\n## {section}\n\n{HEADER}", flush=True)
        deadline = time.perf_counter() + min(remaining, FIRST_CALL_LIMIT)
        results = run_case(case, clock, args.rounds, deadline)
        print("\n".join(rows(case, results)), flush=True)
        status |= not results["torch"].valid
        report.append(_record(case, results))
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "hopper.json").write_text(json.dumps(report, indent=1))
    if "host" in wanted:
        report.append(_host(device, args))
        if args.out is not None:
            (args.out / "hopper.json").write_text(json.dumps(report, indent=1))
    if skipped:
        print(f"\nskipped past the {args.budget:g} s budget: " + "; ".join(skipped))
    print(f"\n{time.perf_counter() - began:.0f} s in all")
    return status


def _host(device: str, args: argparse.Namespace) -> dict[str, object]:
    """The ``host`` section: printed, and returned for the JSON."""
    import ops_host

    calls, rounds = (2, args.rounds) if args.smoke else (100, max(args.rounds, 5))
    found = list(ops_host.cases(device, stub=False, small=args.smoke))
    lines = ops_host.table(found, rounds, calls)
    print(f"\n## host (us per call, {calls} calls a round)\n\n" + "\n".join(lines), flush=True)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    return {"section": "host", "rows": lines}


def _record(case: Case, results: dict[str, Result]) -> dict[str, object]:
    """The case as JSON: every implementation's first call, error, times, failure."""
    return {
        "section": case.section,
        "shape": case.title,
        "implementations": {
            name: {
                "first_call_s": r.first_call_s,
                "error": r.error,
                "times_ms": r.times_ms,
                "median_ms": statistics.median(r.times_ms) if r.times_ms else None,
                "failure": r.failure,
            }
            for name, r in results.items()
        },
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
