"""Plugin discovery and dispatch (``ninetoothed.runtime.plugins``), with fake plugins.

Needs only nt-core: adapters and backends here are fakes registered by hand,
and the errors raised when nothing answers name the distribution to install.
The installed plugins themselves are tested in the repository's ``tests/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from support.threads import run_threads

from ninetoothed import errors
from ninetoothed.runtime import plugins
from ninetoothed.runtime.hookspecs import hookimpl

# --- Fakes: a tensor type and an adapter that recognises it ------------------------------


class FakeTensor:
    """A stand-in for a framework's tensor."""


class OtherFakeTensor:
    """A stand-in for a second framework's tensor."""


@dataclass
class FakeAdapter:
    """A framework adapter recognising instances of ``tensor_type``."""

    name: str
    tensor_type: type
    distribution: str = "nt-fake"
    asked: list[object] = field(default_factory=list)

    def recognizes(self, obj: object) -> bool:
        self.asked.append(obj)
        return isinstance(obj, self.tensor_type)


class FakeAdapterPlugin:
    """A plugin object answering the adapter hook with ``adapter``."""

    def __init__(self, adapter: FakeAdapter) -> None:
        self.adapter = adapter

    @hookimpl
    def ninetoothed_framework_adapter(self, obj: object) -> FakeAdapter | None:
        return self.adapter if self.adapter.recognizes(obj) else None


class FakeBackendPlugin:
    """A plugin object providing a backend called ``fake``."""

    backend = object()

    @hookimpl
    def ninetoothed_codegen_backend(self, name: str) -> object | None:
        return self.backend if name == "fake" else None


@pytest.fixture
def registered() -> Iterator[list[object]]:
    """Plugins appended to the yielded list are unregistered after the test."""
    plugins_to_remove: list[object] = []
    yield plugins_to_remove
    for plugin in plugins_to_remove:
        plugins.unregister(plugin)


@pytest.fixture
def without_plugin() -> Iterator[object]:
    """Call the yielded function with an entry-point name to unregister that
    plugin for the test; it is registered again afterwards."""
    manager = plugins.plugin_manager()
    removed: dict[str, object] = {}

    def remove(name: str) -> None:
        plugin = manager.get_plugin(name)
        if plugin is not None:
            plugins.unregister(plugin)
            removed[name] = plugin

    yield remove
    for name, plugin in removed.items():
        plugins.register(plugin, name=name)


def test_plugin_manager_is_a_singleton() -> None:
    assert plugins.plugin_manager() is plugins.plugin_manager()


# --- Registration by hand -----------------------------------------------------------------


def test_registered_adapter_is_used_and_unregistered(registered: list[object]) -> None:
    adapter = FakeAdapter("fake", FakeTensor)
    plugin = FakeAdapterPlugin(adapter)
    assert plugins.register(plugin, name="fake-adapter") == "fake-adapter"
    registered.append(plugin)

    tensor = FakeTensor()
    assert plugins.adapter_for(tensor) is adapter
    assert plugins.adapter_for(FakeTensor()) is adapter  # served from the per-type memo

    plugins.unregister(plugin)
    registered.remove(plugin)
    with pytest.raises(errors.AdapterNotFoundError, match="FakeTensor"):
        plugins.adapter_for(tensor)


def test_unregister_by_name() -> None:
    adapter = FakeAdapter("fake", FakeTensor)
    plugins.register(FakeAdapterPlugin(adapter), name="fake-by-name")
    assert plugins.adapter_for(FakeTensor()) is adapter
    plugins.unregister("fake-by-name")
    assert plugins.plugin_manager().get_plugin("fake-by-name") is None
    with pytest.raises(errors.AdapterNotFoundError):
        plugins.adapter_for(FakeTensor())


def test_registered_backend_is_used(registered: list[object]) -> None:
    plugin = FakeBackendPlugin()
    plugins.register(plugin)
    registered.append(plugin)
    assert plugins.codegen_backend("fake") is FakeBackendPlugin.backend


def test_adapter_for_arguments_skips_scalars(registered: list[object]) -> None:
    adapter = FakeAdapter("fake", FakeTensor)
    plugin = FakeAdapterPlugin(adapter)
    plugins.register(plugin)
    registered.append(plugin)

    args = (3, 2.5, True, None, "name", FakeTensor(), FakeTensor())
    assert plugins.adapter_for_arguments(args) is adapter
    # Python scalars are never offered to adapters.
    assert all(isinstance(obj, FakeTensor) for obj in adapter.asked)


def test_adapter_for_arguments_rejects_mixed_frameworks(registered: list[object]) -> None:
    for name, tensor_type in (("fakeone", FakeTensor), ("faketwo", OtherFakeTensor)):
        plugin = FakeAdapterPlugin(FakeAdapter(name, tensor_type))
        plugins.register(plugin)
        registered.append(plugin)

    with pytest.raises(errors.LaunchError, match="two frameworks") as raised:
        plugins.adapter_for_arguments((FakeTensor(), 1, OtherFakeTensor()))
    message = str(raised.value)
    assert "FakeTensor (fakeone)" in message
    assert "OtherFakeTensor (faketwo)" in message


def test_adapter_for_arguments_without_tensors() -> None:
    with pytest.raises(errors.AdapterNotFoundError, match="none of the kernel's arguments"):
        plugins.adapter_for_arguments((1, 2.0))
    with pytest.raises(errors.AdapterNotFoundError, match=r"numpy\.ndarray"):
        plugins.adapter_for_arguments((1, np.ones(2)))


# --- Errors when nothing answers ----------------------------------------------------------


@pytest.mark.parametrize(("obj", "type_name"), [([1, 2, 3], "list"), (np.ones(3), "numpy.ndarray")])
def test_unknown_type_lists_supported_frameworks(obj: object, type_name: str) -> None:
    with pytest.raises(errors.AdapterNotFoundError) as raised:
        plugins.adapter_for(obj)
    message = str(raised.value)
    assert type_name in message
    for distribution in ("nt-torch", "nt-paddle", "nt-jax"):
        assert distribution in message


@pytest.mark.parametrize(
    ("module", "entry_point", "distribution"),
    [
        ("paddle.something", "paddle", "nt-paddle"),
        ("torch", "torch", "nt-torch"),
        ("jaxlib._jax", "jax", "nt-jax"),
    ],
)
def test_missing_adapter_names_its_distribution(
    without_plugin, module: str, entry_point: str, distribution: str
) -> None:
    without_plugin(entry_point)
    fake_type = type("Tensor", (), {"__module__": module})
    with pytest.raises(errors.AdapterNotFoundError) as raised:
        plugins.adapter_for(fake_type())
    message = str(raised.value)
    assert f"{module}.Tensor" in message
    assert f"install the {distribution} distribution" in message


def test_subclass_of_framework_tensor_is_attributed_to_the_framework(without_plugin) -> None:
    without_plugin("paddle")
    base = type("Tensor", (), {"__module__": "paddle"})
    subclass = type("MyTensor", (base,), {"__module__": "mymodel"})
    with pytest.raises(errors.AdapterNotFoundError, match="nt-paddle"):
        plugins.adapter_for(subclass())


def test_missing_backend_names_its_distribution(without_plugin) -> None:
    without_plugin("triton")
    with pytest.raises(errors.BackendNotFoundError) as raised:
        plugins.codegen_backend("triton")
    assert str(raised.value) == (
        "no code-generation backend 'triton' is installed: install the nt-triton distribution"
    )


def test_unknown_backend_lists_known_ones() -> None:
    with pytest.raises(errors.BackendNotFoundError, match="'cuda'.*'triton' \\(in nt-triton\\)"):
        plugins.codegen_backend("cuda")


def test_type_comes_from() -> None:
    assert plugins.type_comes_from(np.ones(1), ("numpy",))
    assert plugins.type_comes_from(np.ones(1), "numpy")
    assert not plugins.type_comes_from(np.ones(1), ("torch", "jax"))
    assert not plugins.type_comes_from([1], ("torch",))


def test_error_hierarchy() -> None:
    for error in (
        errors.BackendNotFoundError,
        errors.AdapterNotFoundError,
        errors.ArrangementError,
        errors.MetaOperationError,
        errors.LaunchError,
        errors.CodegenError,
    ):
        assert issubclass(error, errors.NineToothedError)
    assert issubclass(errors.AdapterNotFoundError, TypeError)
    for error in (errors.ArrangementError, errors.MetaOperationError, errors.LaunchError):
        assert issubclass(error, ValueError)


# --- Call guards ----------------------------------------------------------------------------


class GuardPlugin:
    """A plugin whose call guard records its calls under ``label``."""

    def __init__(self, label: str, calls: list[str]) -> None:
        self.label, self.calls = label, calls

    def guard(self) -> None:
        self.calls.append(self.label)

    @hookimpl
    def ninetoothed_call_guard(self) -> object:
        return self.guard


def test_a_single_call_guard_is_called_directly_and_guards_go_with_their_plugins(
    registered: list[object], without_plugin: Callable[[str], None]
) -> None:
    without_plugin("paddle")  # the one installed plugin with a guard (once Paddle is imported)
    calls: list[str] = []
    assert calls_of(plugins.call_guard, calls) == []
    first, second = GuardPlugin("first", calls), GuardPlugin("second", calls)
    plugins.register(first)
    registered.append(first)
    # Itself, not a wrapper: Paddle's translator recognises its guard only as the callee.
    assert plugins.call_guard == first.guard
    plugins.register(second)
    registered.append(second)
    assert sorted(calls_of(plugins.call_guard, calls)) == ["first", "second"]
    plugins.unregister(first)
    registered.remove(first)
    assert plugins.call_guard == second.guard
    plugins.unregister(second)
    registered.remove(second)
    assert calls_of(plugins.call_guard, calls) == []


def calls_of(guard: Callable[[], None], calls: list[str]) -> list[str]:
    """What calling ``guard`` appends to ``calls``."""
    calls.clear()
    guard()
    return list(calls)


def test_an_adapter_first_asked_for_by_eight_threads_is_imported_once_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The adapter's module is imported by the first thread; the others wait for it,
    rather than take the half-run module from ``sys.modules``."""
    import sys

    (tmp_path / "slow_framework.py").write_text("class Tensor:\n    pass\n")
    (tmp_path / "slow_adapter.py").write_text(
        "import time\ntime.sleep(0.3)\n\nclass Adapter:\n    name = 'slow'\n\n"
        "    def recognizes(self, obj):\n        return True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import slow_framework

    hook = plugins.lazy_adapter_hook(["slow_framework"], "slow_adapter:Adapter")
    found: list[object] = []
    failures = run_threads(lambda _: found.append(hook(slow_framework.Tensor())))
    monkeypatch.delitem(sys.modules, "slow_adapter")
    monkeypatch.delitem(sys.modules, "slow_framework")
    assert not failures, repr(failures[0])
    assert len(found) == 8 and all(type(a).__name__ == "Adapter" for a in found)
