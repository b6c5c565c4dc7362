"""A compiled Llama-shaped decoder layer, our ops against torch's (``compiled.py``'s last section).

The end-to-end benchmark's model (``e2e.build_model``: Llama 3 8B's dimensions,
random float16 weights) with one layer, twice: one copy patched with our op
set, one with torch's (``llama_patch.patched``, the same code around the ops).
Each copy's first decoder layer runs under ``torch.compile`` on a prefill
(batch 2, 512 tokens) and on a decoding-sized step (batch 32, 1 token, no
cache: the attention sees its one token), with the rotary tables the model
computes; results are checked against the unmodified layer.  Tokens per
second = tokens per call / the median time over interleaved rounds.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

SHAPES = {"prefill (2 x 512)": (2, 512), "decode step (32 x 1)": (32, 1)}
"""(batch, tokens) per call."""


def _layer_call(model: Any, batch: int, tokens: int) -> tuple[Callable[[], Any], Any]:
    """A compiled call of ``model``'s first decoder layer and its input."""
    import torch
    from measure import own_code

    hidden = torch.randn(batch, tokens, model.config.hidden_size, device="cuda")
    hidden = (hidden / 4).half()
    positions = torch.arange(tokens, device="cuda")[None].expand(batch, -1)
    embeddings = model.model.rotary_emb(hidden, positions)
    layer = model.model.layers[0]

    def step(hidden: Any) -> Any:
        output = layer(hidden, position_embeddings=embeddings)
        return output[0] if isinstance(output, tuple) else output

    # Each model and shape its own code object: on one, Dynamo's second compile would
    # make the sizes dynamic and every variant would check the others' guards.
    compiled = torch.compile(own_code(step, f"{id(model)}_{batch}x{tokens}"))
    return (lambda: compiled(hidden)), hidden


def report(rounds: int) -> str:
    """The decoder-layer section: tokens per second, ours against torch's, compiled."""
    import contextlib

    import e2e
    import opsets
    import torch
    from llama_patch import patched
    from measure import Clock, interleaved_rounds
    from torch._dynamo.utils import counters

    args = argparse.Namespace(smoke=False, layers=1)
    models = {name: e2e.build_model(args, "cuda") for name in ("ours", "torch")}
    reference = e2e.build_model(args, "cuda")
    runs: dict[str, Callable[[], object]] = {}
    tokens: dict[str, int] = {}
    torch._dynamo.reset()
    counters.clear()
    with contextlib.ExitStack() as stack, torch.inference_mode():
        for name, model in models.items():
            stack.enter_context(patched(model, opsets.build(name)))
        for shape, (batch, length) in SHAPES.items():
            for name, model in models.items():
                run, hidden = _layer_call(model, batch, length)
                expected = reference.model.layers[0](
                    hidden,
                    position_embeddings=reference.model.rotary_emb(
                        hidden, torch.arange(length, device="cuda")[None].expand(batch, -1)
                    ),
                )
                expected = expected[0] if isinstance(expected, tuple) else expected
                torch.testing.assert_close(run().float(), expected.float(), rtol=3e-2, atol=3e-2)
                runs[f"{shape}, {name}"] = run
                tokens[f"{shape}, {name}"] = batch * length
        times, failures = interleaved_rounds(runs, Clock("cuda"), rounds)
    if failures:
        raise RuntimeError(f"timing failed: {failures}")
    breaks = sum(counters["graph_break"].values())
    # Which break, and whose: the reasons Dynamo counted (the two models share the
    # layer's code, so a break in it would show once per model and shape).
    reasons = "; ".join(
        f"{count} x {str(reason).splitlines()[0][:200]}"
        for reason, count in counters["graph_break"].items()
    )
    lines = [
        f"One Llama 3 8B decoder layer under torch.compile, float16: tokens/s (medians of "
        f"{rounds} interleaved rounds; {breaks} graph breaks in all)",
        *([f"Graph breaks: {reasons}"] if reasons else []),
        "",
        "| shape | ours, tokens/s | torch, tokens/s | ours / torch |",
        "|---|---:|---:|---:|",
    ]
    for shape in SHAPES:
        rate = {
            name: tokens[f"{shape}, {name}"] / (statistics.median(times[f"{shape}, {name}"]) / 1e3)
            for name in models
        }
        lines.append(
            f"| {shape} | {rate['ours']:,.0f} | {rate['torch']:,.0f} | "
            f"{rate['ours'] / rate['torch']:.3f} |"
        )
    return "\n".join(lines)
