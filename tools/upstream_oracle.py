"""Run ``tests/upstream`` against upstream NineToothed, to check what the tests expect.

    pip download ninetoothed --no-deps -d /tmp/up && unzip -q /tmp/up/*.whl -d /tmp/up/src
    .nox/tests/bin/python tools/upstream_oracle.py /tmp/up/src [PYTEST ARGS...]

The acceptance suite in ``tests/upstream`` is written as upstream users write
programs; where upstream gives the right answer, its tests should pass on
upstream too.  This runs them with upstream's ``ninetoothed`` first on the
path, under Triton's interpreter on the CPU, with ``--runxfail`` (the xfail
markers describe *our* gaps, not upstream's).  Upstream needs sympy, which
torch brings.

Two things let upstream run without a GPU: a stand-in for Triton's active
driver (upstream asks it for device properties when it generates code), and
a normalisation of the annotation ``triton.language.constexpr``, which
upstream writes and Triton's interpreter only recognises as ``tl.constexpr``.

Expected failures: the tests of our deliberate departures (misspelt options
name their close matches; ahead-of-time options raise; a placeholder whose
flag is on, or that code outside a switched-off branch touches, is refused
where upstream checks no dtype or device), upstream's quirk on
an arrangement returning its tensors unchanged (every program addresses
element 0), the debugging test that draws on our visualization example,
and in ``test_call_forms.py`` the tests of our error messages (upstream
raises Python's ``TypeError`` s), of pinning a meta symbol by keyword (ours),
and of PaddlePaddle and JAX (upstream runs on torch only).
``test_visualization.py`` tests our own module and is left out;
``test_aot_function.py`` names the target architecture, which upstream's
``aot`` has no parameter for (it compiles for the current GPU).  Also
expected to fail on 0.26: ``test_math_promotion.py``'s float16 and
bfloat16 cases (newer upstream promotes them), ``test_meta_any_integer.py``
(0.26's ``tl.arange`` takes the non-power-of-two value itself),
``test_module_globals.py`` (0.26 raises ``NameError`` for value globals)
and ``test_outermost_ranks.py``'s refusals (0.26 masks silently); some
modules import ``ninetoothed.errors``, which upstream lacks.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class _StandInUtils:
    def get_device_properties(self, device: int) -> dict[str, int]:
        return {"max_shared_mem": 2**17, "max_num_regs": 65536, "multiprocessor_count": 4}


class _StandInDriver:
    """Just enough of Triton's active driver for upstream's code generator and autotuner."""

    utils = _StandInUtils()

    def get_current_device(self) -> int:
        return 0

    def get_benchmarker(self) -> Any:
        def run_once(function: Any, *args: Any, **kwargs: Any) -> float:
            function()
            return 1.0

        return run_once


def _prepare() -> None:
    import triton.runtime.jit as jit
    from triton.runtime import driver

    try:
        driver.active.get_current_device()
    except RuntimeError:  # "0 active drivers": no GPU here
        driver.set_active(_StandInDriver())

    normalize = jit._normalize_ty

    def normalize_spelled_out(ty: Any) -> Any:
        if isinstance(ty, str) and ty.strip().startswith("triton.language."):
            ty = "tl." + ty.strip().removeprefix("triton.language.")
        return normalize(ty)

    jit._normalize_ty = normalize_spelled_out


def main(arguments: list[str]) -> int:
    """Run pytest on ``tests/upstream`` with upstream's sources at ``arguments[0]``."""
    if not arguments or not (Path(arguments[0]) / "ninetoothed" / "__init__.py").is_file():
        print(__doc__)
        return 2
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, str(Path(arguments[0]).resolve()))
    _prepare()
    import pytest

    import ninetoothed

    print(f"upstream ninetoothed from {Path(ninetoothed.__file__).parent}", flush=True)
    os.chdir(ROOT)
    return pytest.main(
        [
            "-p",
            "no:cacheprovider",
            "--runxfail",
            "-rf",
            "--ignore=tests/upstream/test_visualization.py",
            "tests/upstream",
            *arguments[1:],
        ]
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
