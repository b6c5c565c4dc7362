"""The first call of ``nt_torch.ops.mm`` at 4096^3 (tuning included), per rank.

    torchrun --standalone --nproc-per-node=N benchmarks/first_call_tuning.py [--together]

Run in a fresh cache (``NINETOOTHED_CACHE_DIR`` and ``TRITON_CACHE_DIR`` pointing
at empty folders) so the first call tunes.  Each rank times its first call
(float16, synchronised), and the configuration the tuner chose; with
``--together`` the ranks tune together (``nt_triton.tuner.tune_together``).
Rank 0 prints one JSON line: the seconds of every rank's first call, every
rank's configuration, and whether they are all the same; and per rank where
the time went (``phases``: seconds compiling its candidates, which includes
loading each as it compiles, measuring them, and waiting in the ranks'
collectives, within the whole tuning) and
the CPUs and compile workers it had.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import torch
import torch.distributed as dist

from nt_torch import ops
from nt_torch._distributed import process_group
from nt_triton import knobs
from nt_triton.tuner import _together as together
from nt_triton.tuner import tune_together


def _record_choices() -> list[dict[str, Any]]:
    """The configurations the tuner chooses in this process, as they are chosen."""
    from nt_triton.tuner._core import Tuner

    chosen: list[dict[str, Any]] = []
    choose = Tuner.choose

    def recorded(self: Tuner, *args: Any, **kwargs: Any) -> Any:
        configuration = choose(self, *args, **kwargs)
        chosen.append(
            {
                "kernel": self.name,
                "values": dict(configuration.values),
                "num_warps": configuration.num_warps,
                "num_stages": configuration.num_stages,
            }
        )
        return configuration

    Tuner.choose = recorded  # type: ignore[method-assign]
    return chosen


def _record_phases() -> dict[str, float]:
    """Seconds this process spends tuning, compiling (loading each candidate as it
    compiles), measuring, and in the ranks' collectives (summed over tunings)."""
    from nt_triton.tuner._core import Tuner

    phases = {"tune": 0.0, "compile": 0.0, "measure": 0.0, "collectives": 0.0}

    def timed(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                phases[name] += time.perf_counter() - began

        return wrapper

    for name, method in (("tune", "tune"), ("compile", "_compile"), ("measure", "_measure")):
        setattr(Tuner, method, timed(name, getattr(Tuner, method)))
    for collective in ("agree", "gather"):  # the tuner calls them through the module
        setattr(together, collective, timed("collectives", getattr(together, collective)))
    return phases


def main() -> None:
    """Time the first call on every rank; rank 0 prints the summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--together", action="store_true")
    parser.add_argument("--size", type=int, default=4096)
    arguments = parser.parse_args()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    tune_together(arguments.together)
    chosen = _record_choices()
    phases = _record_phases()
    n = arguments.size
    a = torch.randn(n, n, dtype=torch.float16, device=device)
    b = torch.randn(n, n, dtype=torch.float16, device=device)
    dist.barrier()
    torch.cuda.synchronize()
    start = time.perf_counter()
    c = ops.mm(a, b)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    error = float((c.float() - a.float() @ b.float()).abs().max())
    answers: list[Any] = [None] * dist.get_world_size()
    sharing = together.sharing(together.group(process_group))
    mine = {
        "seconds": seconds,
        "chosen": chosen,
        "error": error,
        "phases": {name: round(value, 3) for name, value in phases.items()},
        "cpus": knobs.usable_cpus(),
        "compile_workers": knobs.compile_workers(sharing),
    }
    dist.all_gather_object(answers, mine)
    if dist.get_rank() == 0:
        summary = {
            "ranks": len(answers),
            "together": arguments.together,
            "first_call_seconds": [round(answer["seconds"], 3) for answer in answers],
            "same_configuration": all(a["chosen"] == answers[0]["chosen"] for a in answers),
            "configurations": [answer["chosen"] for answer in answers],
            "max_error": max(answer["error"] for answer in answers),
            "phases": [answer["phases"] for answer in answers],
            "cpus": answers[0]["cpus"],
            "compile_workers": [answer["compile_workers"] for answer in answers],
        }
        print(json.dumps(summary))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
