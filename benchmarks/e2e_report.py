"""What ``e2e.py`` writes: a table of tokens per second for each output length
and op set, the issue's end-to-end floor, a JSON file and a bar chart like the
paper's Figure 7."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
from pathlib import Path

import torch
from report import markdown

OPSETS = ("ours", "triton", "torch")


def describe(args: argparse.Namespace, model: torch.nn.Module, device: str, skipped: list) -> dict:
    """What was run: the model's dimensions, the protocol, the machine."""
    import transformers

    config = model.config
    return {
        "device": torch.cuda.get_device_name() if device == "cuda" else "CPU (TRITON_INTERPRET=1)",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "model": (
            f"LlamaForCausalLM, random weights, float16: hidden {config.hidden_size}, "
            f"MLP {config.intermediate_size}, {config.num_attention_heads} heads "
            f"({config.num_key_value_heads} key/value), vocabulary {config.vocab_size}, "
            f"{config.num_hidden_layers} layers"
            + (" (Llama 3 8B has 32)" if config.hidden_size == 4096 else "")
        ),
        "parameters": sum(p.numel() for p in model.parameters()),
        "batch": args.batch,
        "prompt_tokens": args.prompt,
        "new_tokens": args.lengths,
        "skipped_for_budget": skipped,
        "protocol": f"{args.warmups} warm-up and {args.iterations} measured generations "
        "per (length, op set), greedy, op sets in turns; tokens/s = batch * new tokens / s",
    }


def tokens_per_s(seconds: list[float], batch: int, new_tokens: int) -> dict[str, float]:
    """Mean (the paper's figure), min and max tokens per second."""
    rates = [batch * new_tokens / s for s in seconds]
    return {"mean": statistics.mean(rates), "min": min(rates), "max": max(rates)}


def summary(times: dict, batch: int) -> dict[str, dict[str, dict[str, float]]]:
    """Tokens per second for each op set and length."""
    return {
        name: {length: tokens_per_s(values, batch, int(length)) for length, values in by.items()}
        for name, by in times.items()
    }


def _cell(rates: dict | None) -> str:
    if rates is None:
        return "-"
    return f"{rates['mean']:.1f} [{rates['min']:.1f}-{rates['max']:.1f}]"


def _ratio(mean: dict, a: str, b: str) -> str:
    return f"{mean[a] / mean[b]:.3f}" if mean[a] and mean[b] else "-"


PAIRS = (("ours", "triton"), ("ours", "torch"), ("triton", "torch"))


def table(meta: dict, status: dict, rates: dict) -> str:
    """Tokens per second (mean [min-max]) by length and op set, ratios, the floor."""
    rows = []
    for length in (str(n) for n in meta["new_tokens"]):
        cells = {name: rates.get(name, {}).get(length) for name in OPSETS}
        mean = {name: cell["mean"] if cell else None for name, cell in cells.items()}
        floor = "-"
        if mean["ours"] and mean["triton"]:
            floor = "met" if mean["ours"] >= mean["triton"] else "MISSED"
        row = [length, *(_cell(cells[name]) for name in OPSETS)]
        rows.append(row + [_ratio(mean, *pair) for pair in PAIRS] + [floor])
    header = ["new tokens", *(f"{name} (tokens/s)" for name in OPSETS)]
    header += [f"{a}/{b}" for a, b in PAIRS] + ["floor: ours >= triton"]
    notes = [
        f"{name}: {s.get('failure') or 'ok'}, logits error {s.get('logits_error')}"
        for name, s in status.items()
    ]
    head = f"{meta['device']}; {meta['model']}; batch {meta['batch']}, prompt "
    head += f"{meta['prompt_tokens']} tokens; {meta['protocol']}"
    if meta["skipped_for_budget"]:
        head += f"; skipped for the time budget: {meta['skipped_for_budget']}"
    return "\n\n".join([head, markdown(header, rows), "\n".join(f"- {n}" for n in notes)])


def chart(path: Path, meta: dict, rates: dict) -> str:
    """Grouped bars of tokens per second by output length, like the paper's Figure 7."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no chart: matplotlib is not installed"
    lengths = [str(n) for n in meta["new_tokens"]]
    figure, axes = plt.subplots(figsize=(7, 4))
    for offset, name in enumerate(OPSETS):
        values = [rates.get(name, {}).get(n, {}).get("mean", 0.0) for n in lengths]
        axes.bar([i + (offset - 1) * 0.27 for i in range(len(lengths))], values, 0.27, label=name)
    axes.set_xticks(range(len(lengths)), [f"{n} new tokens" for n in lengths])
    axes.set_ylabel("tokens per second")
    axes.set_title(meta["model"], fontsize=8)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return f"wrote {path}"


def write(out: Path, meta: dict, status: dict, times: dict, batch: int) -> str:
    """Write e2e.json, e2e.md and e2e.png; return the table's text."""
    rates = summary(times, batch)
    text = table(meta, status, rates)
    record = {"meta": meta, "opsets": status, "seconds": times, "tokens_per_s": rates}
    (out / "e2e.json").write_text(json.dumps(record, indent=1) + "\n")
    (out / "e2e.md").write_text(text + "\n")
    return text + "\n" + chart(out / "e2e.png", meta, rates)
