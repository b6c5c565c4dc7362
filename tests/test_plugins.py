"""The installed plugins: found through entry points, cheap to load, answering.

Tests of plugin dispatch itself, with fakes, need only nt-core and live in
``packages/nt-core/tests/test_plugins.py``.  These check the distributions of
this repository as installed; a distribution (or framework) missing here is
skipped with the reason.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ninetoothed.runtime import plugins
from ninetoothed.runtime.hookspecs import hookimpl

# entry-point name -> (distribution, plugin module)
INSTALLED_PLUGINS = {
    "triton": ("nt-triton", "nt_triton.plugin"),
    "torch": ("nt-torch", "nt_torch.plugin"),
    "paddle": ("nt-paddle", "nt_paddle.plugin"),
    "jax": ("nt-jax", "nt_jax.plugin"),
}


def is_installed(distribution: str) -> bool:
    """Whether ``distribution`` is installed in this environment."""
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


# --- Discovery through entry points -------------------------------------------------------


@pytest.mark.parametrize("entry_point", sorted(INSTALLED_PLUGINS))
def test_installed_plugins_are_found_by_entry_point(entry_point: str) -> None:
    distribution, module = INSTALLED_PLUGINS[entry_point]
    if not is_installed(distribution):
        pytest.skip(f"{distribution} is not installed")
    plugin = plugins.plugin_manager().get_plugin(entry_point)
    assert plugin is not None, dict(plugins.plugin_manager().list_name_plugin())
    assert plugin.__name__ == module


def test_loading_plugins_imports_no_framework_or_triton() -> None:
    """Discovering plugins and asking them about a non-tensor stays cheap."""
    script = textwrap.dedent(
        """
        import sys
        import numpy
        from ninetoothed import errors
        from ninetoothed.runtime import plugins
        plugins.plugin_manager()
        for obj in ([1.0], numpy.ones(3)):
            try:
                plugins.adapter_for(obj)
            except errors.AdapterNotFoundError:
                pass
        heavy = [m for m in ("torch", "triton", "paddle", "jax", "jaxlib") if m in sys.modules]
        assert not heavy, heavy
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True)


@pytest.mark.parametrize("entry_point", ["torch", "paddle", "jax"])
def test_adapter_plugins_ignore_other_objects(entry_point: str) -> None:
    plugin = plugins.plugin_manager().get_plugin(entry_point)
    if plugin is None:
        pytest.skip(f"{INSTALLED_PLUGINS[entry_point][0]} is not installed")
    assert plugin.ninetoothed_framework_adapter(obj=np.ones(2)) is None
    assert plugin.ninetoothed_framework_adapter(obj=[1, 2]) is None


def test_triton_plugin_ignores_other_backend_names() -> None:
    plugin = plugins.plugin_manager().get_plugin("triton")
    if plugin is None:
        pytest.skip("nt-triton is not installed")
    assert plugin.ninetoothed_codegen_backend(name="cuda") is None


def test_triton_backend_is_found() -> None:
    if not is_installed("nt-triton"):
        pytest.skip("nt-triton is not installed")
    backend = plugins.codegen_backend("triton")
    assert backend.name == "triton"
    assert plugins.codegen_backend() is backend  # "triton" is the default; one instance


@pytest.mark.parametrize(
    ("framework", "make_tensor"),
    [
        ("torch", "import torch; obj = torch.ones(2)"),
        ("paddle", "import paddle; obj = paddle.ones([2])"),
        ("jax", "import jax.numpy as jnp; obj = jnp.ones(2)"),
    ],
)
def test_installed_adapter_recognises_its_tensors(framework: str, make_tensor: str) -> None:
    distribution = INSTALLED_PLUGINS[framework][0]
    if not is_installed(distribution):
        pytest.skip(f"{distribution} is not installed")
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    namespace: dict[str, object] = {}
    exec(make_tensor, namespace)
    adapter = plugins.adapter_for(namespace["obj"])
    assert adapter.name == framework
    assert adapter.distribution == distribution


# --- The call guard comes first -------------------------------------------------------------


class Refused(Exception):
    """What the test's call guard raises."""


class RefusingGuard:
    """A plugin whose call guard refuses every call."""

    @staticmethod
    def refuse() -> None:
        raise Refused

    @hookimpl
    def ninetoothed_call_guard(self) -> object:
        return self.refuse


# On a GPU a warm torch kernel launches from its fast path, which skips the guard by
# design (only frameworks whose tracer needs it, Paddle's, pay for it there).
@pytest.mark.interpreter_only
def test_every_entry_point_calls_the_guard_before_looking_at_its_arguments() -> None:
    """Kernels, functional and differentiable kernels and library ops: a call of objects
    no adapter recognises meets the guard, not the adapter lookup."""
    from support.tutorial import differentiable as examples

    import ninetoothed
    from nt_torch import ops

    plugin = RefusingGuard()
    plugins.register(plugin)
    try:
        for entry in (
            lambda: examples.mm(object(), object(), object()),
            lambda: examples.mm_functional(object(), object()),
            lambda: examples.linear(object(), object()),
            lambda: ops.add(object(), object()),
            lambda: ops.conv2d(object(), object()),
        ):
            with pytest.raises(Refused):
                entry()
    finally:
        plugins.unregister(plugin)
    with pytest.raises(ninetoothed.errors.AdapterNotFoundError):  # the lookup, guard gone
        examples.mm(object(), object(), object())
