"""A compile worker: ``python -m nt_triton.aot._worker``, driven by :mod:`._compile`.

Reads one JSON job per line on stdin (:func:`nt_triton.description.compile_job`
plus ``"out"``, where the binary goes), compiles it for the job's target
with Triton (no GPU needed) and answers one JSON line on its original stdout:
what launching the binary needs (:func:`nt_triton.aot._compile.metadata`), or
the error.
"""

from __future__ import annotations

from typing import Any

__all__ = ["main", "run"]


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Compile one job, write its binary to ``job["out"]``; the answer describes it."""
    from nt_triton.aot import _compile
    from nt_triton.description import compile_from_job

    kernel = compile_from_job(job)
    with open(job["out"], "wb") as file:
        file.write(kernel.asm["cubin"])
    return {"ok": True, **_compile.metadata(kernel)}


def main() -> None:
    """Serve jobs until stdin closes."""
    from nt_triton.description import serve

    serve(run, 6000)


if __name__ == "__main__":
    main()
