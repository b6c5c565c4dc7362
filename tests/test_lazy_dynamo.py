"""``nt_torch.ops`` leaves Dynamo unimported until something else imports it, and the ops
still reach ``torch.compile``'s graph as one call each (:mod:`nt_torch._after_import`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from nt_torch._after_import import when_imported

DEVICE = "cuda" if os.environ.get("NT_TEST_GPU") == "1" else "cpu"
"""The GPU where the suite runs on one (the child inherits TRITON_INTERPRET otherwise)."""


def test_importing_the_ops_leaves_dynamo_unimported_and_compile_still_sees_one_call() -> None:
    """In a fresh process: no ``torch._dynamo`` after the import (an eager program never
    pays for it); then a compiled call's graph holds the op itself, not its insides."""
    device = repr(DEVICE)
    script = textwrap.dedent(
        """
        import sys
        import torch
        from nt_torch import ops
        assert "torch._dynamo" not in sys.modules, "importing nt_torch.ops imported Dynamo"

        targets = []

        def backend(graph_module, example_inputs):
            targets.extend(n.target for n in graph_module.graph.nodes if n.op == "call_function")
            return graph_module.forward

        x, y = torch.randn(37, device=DEVICE), torch.randn(37, device=DEVICE)
        compiled = torch.compile(lambda a, b: ops.add(a, b) * 2, backend=backend, fullgraph=True)
        torch.testing.assert_close(compiled(x, y), (x + y) * 2)
        assert any(target is ops.add for target in targets), targets
        """
    ).replace("DEVICE", device)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` for throwaway modules (forgotten afterwards)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("nt_after_import_probe")]:
        del sys.modules[name]


def test_the_callback_runs_after_the_module_s_code_and_once(module_dir: Path) -> None:
    name = "nt_after_import_probe_a"
    (module_dir / f"{name}.py").write_text("VALUE = 42\n")
    seen: list[int] = []
    when_imported(name, lambda: seen.append(sys.modules[name].VALUE))
    assert seen == []
    import nt_after_import_probe_a  # noqa: F401

    assert seen == [42]
    module = sys.modules[name]
    assert type(module.__loader__).__name__ != "_Loader"  # its own loader again
    assert module.__spec__.loader is module.__loader__
    del sys.modules[name]
    import nt_after_import_probe_a  # noqa: F401, F811 - imported afresh: no second call

    assert seen == [42]


def test_a_spec_asked_for_before_the_import_does_not_spend_the_hook(module_dir: Path) -> None:
    """``importlib.util.find_spec`` (an availability check) consults the finders without
    importing; the import after it still calls back."""
    import importlib.util

    name = "nt_after_import_probe_c"
    (module_dir / f"{name}.py").write_text("VALUE = 3\n")
    seen: list[int] = []
    when_imported(name, lambda: seen.append(sys.modules[name].VALUE))
    assert importlib.util.find_spec(name) is not None
    assert seen == []
    import nt_after_import_probe_c  # noqa: F401

    assert seen == [3]


def test_a_module_imported_already_calls_back_at_once() -> None:
    seen: list[str] = []
    when_imported("json", lambda: seen.append("now"))
    assert seen == ["now"]


def test_a_failing_callback_warns_and_the_import_succeeds(module_dir: Path) -> None:
    (module_dir / "nt_after_import_probe_b.py").write_text("VALUE = 7\n")

    def fail() -> None:
        raise KeyError("no such op")

    when_imported("nt_after_import_probe_b", fail)
    with pytest.warns(RuntimeWarning, match="after importing nt_after_import_probe_b failed"):
        import nt_after_import_probe_b

    assert nt_after_import_probe_b.VALUE == 7
