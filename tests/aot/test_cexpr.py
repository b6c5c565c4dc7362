"""Sizes as C expressions: the C launcher computes what Python computes.

Random expressions over negative and positive values are written as C
(:func:`nt_triton.aot._cexpr.to_c`), compiled with the runtime's helpers and
run; each result must equal the symbol's own evaluation (Python's floor
division and modulo included).
"""

from __future__ import annotations

import random
import subprocess

import pytest

from ninetoothed.aot import HEADER_PATH
from ninetoothed.arrangement.symbol import Symbol
from ninetoothed.errors import CodegenError
from nt_triton.aot import _cc
from nt_triton.aot._cexpr import to_c
from nt_triton.aot._sources import translation_unit

pytestmark = pytest.mark.interpreter_only


_OPERATIONS = {
    "+": lambda a, b, left, right: left + right,
    "-": lambda a, b, left, right: left - right,
    "*": lambda a, b, left, right: left * right,
    "//": lambda a, b, left, right: left // right,
    "%": lambda a, b, left, right: left % right,
    "<": lambda a, b, left, right: (a + left) < right,
    "==": lambda a, b, left, right: (b + left).eq(right),
}


def _expressions(rng: random.Random, count: int) -> list[Symbol]:
    a, b, c = Symbol("a"), Symbol("b"), Symbol("c")
    leaves = [a, b, c, 3, -7, 16]
    made = []
    for _ in range(count):
        left, right = rng.choice(leaves), rng.choice(leaves)
        expression = _OPERATIONS[rng.choice(list(_OPERATIONS))](a, b, left, right)
        if isinstance(expression, Symbol):
            made.append((expression + a) // (c if rng.random() < 0.5 else 5))
    return made


def test_c_expressions_compute_what_python_computes(tmp_path):
    rng = random.Random(7)
    expressions = _expressions(rng, 60)
    values = [
        (rng.randint(-50, 50), rng.randint(-50, 50), rng.choice([-9, -4, 3, 8])) for _ in range(8)
    ]
    names = {"a": "a", "b": "b", "c": "c"}
    lines = [
        "int main(void) {",
        f"    const int64_t cases[][3] = {{{', '.join(f'{{{x}, {y}, {z}}}' for x, y, z in values)}}};",  # noqa: E501
        f"    for (int i = 0; i < {len(values)}; ++i) {{",
        "        int64_t a = cases[i][0], b = cases[i][1], c = cases[i][2];",
    ]
    for expression in expressions:
        lines.append(f'        printf("%lld\\n", (long long)({to_c(expression, names)}));')
    lines += ["    }", "    return 0;", "}"]
    source = tmp_path / "expressions.c"
    source.write_text(translation_unit("ninetoothed.h", 1, "\n".join(lines), "a test"))
    binary = tmp_path / "expressions"
    includes = [f"-I{_cc.cuda_include()}", f"-I{HEADER_PATH.parent}"]
    subprocess.run(
        [*_cc.compiler(), *includes, str(source), "-o", str(binary), "-ldl", "-lpthread"],
        check=True,
    )
    printed = subprocess.run(
        [str(binary)], capture_output=True, text=True, check=True
    ).stdout.split()
    expected = [
        int(expression.evaluate(dict(zip("abc", case))))
        for case in values
        for expression in expressions
    ]
    assert [int(v) for v in printed] == expected


def test_a_name_c_cannot_know_is_refused_at_build_time():
    with pytest.raises(CodegenError, match=r"'n' is known only when the kernel runs from Python"):
        to_c(Symbol("n") + 1, {})
