"""End-to-end inference, like the paper's section 5.3.2: tokens per second of a
Llama-architecture model with its Attention (with rope), Linear, RMSNorm and
SiLU replaced by an op set (``opsets.py``).

    python benchmarks/e2e.py                        # GPU: 8B dimensions, 4 layers
    python benchmarks/e2e.py --layers 32            # the whole 8B model (~16 GB)
    python benchmarks/e2e.py --smoke                # a tiny model on the CPU, interpreted

The model is transformers' ``LlamaForCausalLM`` built from a config with
random weights (nothing is downloaded): Llama 3 8B's dimensions (hidden 4096,
MLP 14336, 32 heads, 8 key/value heads, vocabulary 128256), float16, with
fewer layers by default so that the run fits a short GPU session (the output
says how many).  Batch 2, a 32-token random prompt, greedy generation of
exactly 128, 512 and 2048 new tokens (``min_new_tokens = max_new_tokens``).
Op sets: ``torch`` is the unmodified model; ``triton`` the hand-written
baselines; ``ours`` ``nt_torch.ops`` when it has the five ops.  Before timing,
each op set's logits on the prompt are checked against the unmodified model's.
Each (length, op set) gets one warm-up and three measured generations; the
op sets take turns within each iteration.  Writes ``e2e.md``, ``e2e.json``
and ``e2e.png`` under ``--out``, else ``$OUT``, else ``bench-out/``.
"""

from __future__ import annotations

import os
import sys

SMOKE = "--smoke" in sys.argv
if SMOKE:  # before anything imports triton
    os.environ["TRITON_INTERPRET"] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_report  # noqa: E402
import opsets  # noqa: E402
import torch  # noqa: E402
from llama_patch import patched  # noqa: E402
from measure import relative_error, short  # noqa: E402

LLAMA_8B = {
    "vocab_size": 128256,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-5,
    "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
    "max_position_embeddings": 8192,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
}
TINY = {
    **LLAMA_8B,
    "vocab_size": 256,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
LOGITS_TOLERANCE = 2e-2
"""Relative error allowed on the prompt's logits (float16 through every layer)."""


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, help="decoder layers (default 4; smoke 2)")
    parser.add_argument("--lengths", default=None, help="new tokens (default 128,512,2048)")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--prompt", type=int, default=None, help="prompt tokens (default 32)")
    parser.add_argument("--opsets", default="torch,triton,ours")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--budget-s", type=float, default=300.0, help="stop starting work after")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--smoke", action="store_true", help="tiny model, CPU, interpreter")
    args = parser.parse_args(argv)
    args.layers = args.layers or (2 if args.smoke else 4)
    args.lengths = [
        int(n) for n in (args.lengths or ("4,8" if args.smoke else "128,512,2048")).split(",")
    ]
    args.prompt = args.prompt or (8 if args.smoke else 32)
    return args


def build_model(args: argparse.Namespace, device: str) -> torch.nn.Module:
    """``LlamaForCausalLM`` with random weights, in float16 on ``device``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**(TINY if args.smoke else LLAMA_8B), num_hidden_layers=args.layers)
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM._from_config(config, dtype=torch.float16)
    # transformers 5 may build the weights on the CPU whatever the device
    # context says (seen with 5.17 on the GPU machine): move them explicitly.
    model = model.to(device)
    if config.hidden_act != "silu":
        raise ValueError(f"the MLP activation is {config.hidden_act}, not silu")
    return model.eval()


def generate(model: torch.nn.Module, prompt: torch.Tensor, new_tokens: int) -> float:
    """Seconds for one greedy generation of exactly ``new_tokens`` tokens."""
    sync = torch.cuda.synchronize if prompt.is_cuda else (lambda: None)
    sync()
    start = time.perf_counter()
    output = model.generate(
        input_ids=prompt,
        attention_mask=torch.ones_like(prompt),
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        pad_token_id=model.config.eos_token_id,
    )
    sync()
    elapsed = time.perf_counter() - start
    if output.shape[1] != prompt.shape[1] + new_tokens:
        raise RuntimeError(
            f"generated {output.shape[1] - prompt.shape[1]} tokens, not {new_tokens}"
        )
    return elapsed


def check(model: torch.nn.Module, opset: opsets.OpSet, prompt: torch.Tensor) -> dict:
    """The op set's logits on the prompt against the unmodified model's."""
    with torch.inference_mode():
        expected = model(prompt).logits.float()
        with patched(model, opset) as counts:
            actual = model(prompt).logits.float()
    return {"replaced": counts, "logits_error": relative_error(actual, expected)}


class Runner:
    """Builds, checks and times the op sets; remembers everything for the report."""

    def __init__(self, args: argparse.Namespace, device: str) -> None:
        self.args, self.device = args, device
        self.started = time.perf_counter()
        self.model = build_model(args, device)
        self.prompt = torch.randint(
            0, self.model.config.vocab_size, (args.batch, args.prompt), device=device
        )
        self.sets: dict[str, opsets.OpSet | None] = {}
        self.status: dict[str, dict] = {}
        self.times: dict[str, dict[str, list[float]]] = {}

    def prepare(self, name: str) -> None:
        """Build and check op set ``name``; a failure leaves it out, with the reason."""
        try:
            opset = opsets.build(name)
            status = {"replaced": {}, "logits_error": 0.0} if name == "torch" else None
            status = status or check(self.model, opset, self.prompt)
            if not status["logits_error"] <= LOGITS_TOLERANCE:
                status["failure"] = f"WRONG: logits error {status['logits_error']:.1e}"
        except Exception as error:  # an op set that cannot run is a result
            if not isinstance(error, ModuleNotFoundError):
                traceback.print_exc()
            opset, status = None, {"failure": "error: " + short(error)}
        self.sets[name] = opset if "failure" not in status else None
        self.status[name] = status
        print(f"op set {name}: {status}", flush=True)

    def run_once(self, name: str, new_tokens: int) -> float:
        """One generation with op set ``name`` (``torch``: the unmodified model)."""
        with torch.inference_mode():
            if name == "torch":
                return generate(self.model, self.prompt, new_tokens)
            with patched(self.model, self.sets[name]):
                return generate(self.model, self.prompt, new_tokens)

    def measure(self, new_tokens: int) -> None:
        """Warm up each valid op set, then time them in turns."""
        names = [name for name, opset in self.sets.items() if opset is not None]
        key = str(new_tokens)
        for name in names:
            for _ in range(self.args.warmups):
                self.run_once(name, new_tokens)
        for iteration in range(self.args.iterations):
            turn = names[iteration % len(names) :] + names[: iteration % len(names)]
            for name in turn:
                seconds = self.run_once(name, new_tokens)
                self.times.setdefault(name, {}).setdefault(key, []).append(seconds)
                print(f"  {name} {new_tokens} tokens: {seconds:.2f} s", flush=True)

    def predicted_s(self, new_tokens: int) -> float:
        """Time the next length should take, from the slowest per-token time so far."""
        per_token = [
            statistics.mean(times) / int(length)
            for lengths in self.times.values()
            for length, times in lengths.items()
        ]
        runs = self.args.warmups + self.args.iterations
        valid = sum(opset is not None for opset in self.sets.values())
        return max(per_token, default=0.0) * new_tokens * runs * valid

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


def main(argv: list[str]) -> int:
    """Run every length with every op set (within the budget) and report."""
    args = parse(argv)
    if not args.smoke and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: use --smoke for a CPU run under the interpreter")
    device = "cpu" if args.smoke else "cuda"
    runner = Runner(args, device)
    for name in args.opsets.split(","):
        runner.prepare(name.strip())
    skipped: list[int] = []
    out = args.out or Path(os.environ.get("OUT") or "bench-out")
    out.mkdir(parents=True, exist_ok=True)
    for new_tokens in args.lengths:
        left = args.budget_s - runner.elapsed()
        if runner.predicted_s(new_tokens) > left:
            skipped.append(new_tokens)
            print(f"skipping {new_tokens} tokens: {left:.0f} s of budget left", flush=True)
        else:
            print(f"{new_tokens} new tokens", flush=True)
            runner.measure(new_tokens)
        # Written after every length: a run stopped by a time limit keeps its numbers.
        meta = e2e_report.describe(args, runner.model, device, skipped)
        text = e2e_report.write(out, meta, runner.status, runner.times, args.batch)
    print("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
