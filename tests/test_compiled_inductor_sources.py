"""Our kernels' sources as Inductor pastes them into its generated module.

Inductor copies a user kernel's source (and its helpers') unescaped between
``'''`` quotes of its wrapper module (``async_compile.triton(name, '''...''')``):
a backslash escape there becomes another character and the module may not
even import.  The emitted function's module (``nt_triton.emitted``) drops the
string statements (docstrings) and refuses what would still change meaning.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from torch._inductor.codegen.wrapper import (
    user_defined_triton_kernel_transitive_closure_source_code as closure,
)

from ninetoothed.library import (
    flash_decoding,
    mm_split,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
    scaled_mm,
    split_sum,
)
from ninetoothed.library.build.catalogue import OPS, Options, kernels, op_names
from ninetoothed.library.ops import kernels as library
from nt_triton import emitted
from nt_triton._kernel import LOADED

pytestmark = pytest.mark.interpreter_only  # reads generated sources only


@pytest.fixture(autouse=True)
def compiled_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Triton's JIT mode: Inductor copies ``@triton.jit`` functions, not interpreted ones.
    The kernels made here replace, in the table of loaded kernels (weak references),
    the library's own of the same source, then go: the table is restored after."""
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    loaded = dict(LOADED)
    yield
    LOADED.update(loaded)


def kernel(module: ModuleType, **variant: Any) -> Any:
    """The module's kernel for ``variant``, made afresh: not the ops' shared one, which
    this module's JIT mode would give other tests the GPU's tuning options."""
    return library._make(module, variant, None)


def _library_kernels() -> Iterator[Any]:
    """A kernel of every library module: the first and last variant the C library
    builds of each forward op, and every part of the others."""
    for entry in kernels(op_names(list(OPS)), Options()):
        for variant in (entry.variants[0], entry.variants[-1]):
            yield kernel(entry.module, **variant.premake)
    for part in flash_decoding.PARTS:
        yield kernel(flash_decoding, part=part)
    for part in scaled_dot_product_attention_backward.PARTS:
        yield kernel(scaled_dot_product_attention_backward, part=part)
    yield kernel(mm_split)
    yield kernel(split_sum)
    yield kernel(split_sum, input_pattern=(None, None))
    for rowwise in (False, True):
        yield kernel(scaled_mm, rowwise=rowwise)


def _embedded(source: str) -> str:
    """``source`` read back from between ``'''`` quotes, as Inductor's module reads it."""
    namespace: dict[str, Any] = {}
    exec(compile(f"text = '''{source}'''\n", "<embedded>", "exec"), namespace)  # noqa: S102
    text: str = namespace["text"]
    return text


def test_every_library_kernel_reads_back_as_written() -> None:
    seen = 0
    for made in _library_kernels():
        source = closure(emitted.emitted_function(made.generated))
        assert _embedded(source) == source, made.generated.spec.label
        seen += 1
    assert seen > 30


def test_a_docstring_with_an_escape_is_dropped() -> None:
    """The attention kernel's inlined helpers bring docstrings with ``\\n`` escapes."""
    attention = kernel(
        scaled_dot_product_attention, gqa=False, few_queries=False, head_bound=64
    ).generated
    assert emitted.embedding_problem(attention.source) is not None
    function = emitted.emitted_function(attention)
    assert function is not attention.function
    assert "\\" not in closure(function)


def test_a_source_that_cannot_be_embedded_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = kernel(split_sum).generated
    monkeypatch.setattr(generated, "source", generated.source + "NOTE = 'a\\tb'\n")
    monkeypatch.setattr(emitted, "_EMITTED", {})
    with pytest.raises(emitted.NotEmbeddable, match="split_sum.*'\\\\\\\\' on its line"):
        emitted.emitted_function(generated)


class _Undocumented(ast.NodeTransformer):
    """Drops expression statements that are a string constant (``pass`` in an empty body)."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                kept = [s for s in body if not _is_string(s)]
                setattr(node, field, kept or [ast.Pass()])
        return node


def _is_string(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(
        getattr(statement.value, "value", None), str
    )


@pytest.mark.parametrize(
    "source",
    [
        'def f(x):\n    """doc\\n"""\n    return x\n',
        'def f(x):\n    if x:\n        "only this"\n    else:\n        y = "kept"\n',
        "def f(x):\n    'a'; y = 1\n    return y\n",  # shares its line: stays
        'def f(x):\n    """\n    two\n    lines\n    """  # and a comment\n    return x\n',
    ],
)
def test_dropping_string_statements_keeps_everything_else(source: str) -> None:
    dropped = emitted.without_string_statements(source)
    want = _Undocumented().visit(ast.parse(source))
    if "; y" in source:  # not on lines of its own: left for the check to refuse or not
        assert dropped == source
        return
    assert ast.dump(ast.parse(dropped)) == ast.dump(want)


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("x = 'a\\tb'\n", "'\\\\' on its line 1"),
        ("x = '''a'''\n", "\"'''\" on its line 1"),
        ("x = 1\n", None),
    ],
)
def test_what_cannot_be_embedded_is_named(source: str, problem: str | None) -> None:
    found = emitted.embedding_problem(source)
    assert found == problem if problem is None else problem in (found or "")
    if problem is None:
        assert _embedded(source) == source
    else:
        with pytest.raises((SyntaxError, AssertionError)):
            assert _embedded(source) == source
