"""The torch ops' native allocation (``nt_torch._native``): a plan's outputs by ``at::empty``.

The native module's ``empty(like, sizes)`` must make what ``like.new_empty(sizes)``
makes (sizes, strides, dtype, device, no grad, fresh memory); the express
extension's ``Allocate`` must call it once it is set and the Python allocation
until then; and an op served by its plan must compute the reference with
outputs of its own on every call.  Where the module cannot be built, plans keep
the Python allocation and compute the same.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from support.base import ON_GPU

from ninetoothed.library import pinned_block_sizes
from ninetoothed.library.ops import _memo
from nt_torch import _express, _native, ops

pytestmark = pytest.mark.skipif(
    _express.extension() is None or _native._compiler() is None,
    reason="no C or C++ compiler: neither extension can be built",
)

DEVICE = "cuda" if ON_GPU else "cpu"
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.int64, torch.bool]
SHAPES = [(), (0,), (1,), (3, 5), (2, 0, 4), (7, 1, 3)]


@pytest.fixture
def native() -> Any:
    """The built module: a compiler is here, so a failed build is a failure."""
    module = _native.extension()
    assert module is not None, "a C++ compiler is here but the native module did not build"
    return module


@pytest.fixture
def express() -> Iterator[Any]:
    """The express extension, its native allocation restored after the test."""
    module = _express.extension()
    saved = module.native()
    yield module
    module.set_native(saved)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_empty_makes_what_new_empty_makes(native: Any, dtype: torch.dtype, shape: tuple) -> None:
    like = torch.empty(0, dtype=dtype, device=DEVICE)
    expected = like.new_empty(shape)
    got, other = native.empty(like, shape), native.empty(like, shape)
    for tensor in (got, other):
        assert type(tensor) is torch.Tensor
        assert tensor.shape == expected.shape and tensor.stride() == expected.stride()
        assert tensor.dtype == dtype and tensor.device == expected.device
        assert tensor.layout == torch.strided and not tensor.requires_grad
    if got.numel():
        assert got.data_ptr() != other.data_ptr() != like.data_ptr()  # fresh memory each


def test_empty_refuses_bad_arguments_by_name(native: Any) -> None:
    like = torch.empty(0, device=DEVICE)
    with pytest.raises(RuntimeError, match="negative dimension"):
        native.empty(like, (2, -1))
    with pytest.raises(TypeError, match="a tensor and a tuple of ints"):
        native.empty(like, [2, 3])
    with pytest.raises(TypeError, match="a tensor and a tuple of ints"):
        native.empty("like", (2,))
    with pytest.raises(TypeError):
        native.empty(like, (2.5,))


def test_allocate_calls_the_native_allocation_once_set(express: Any) -> None:
    like = torch.empty(0, dtype=torch.float16, device=DEVICE)
    asked: list[tuple[Any, ...]] = []

    def recording(*arguments: Any) -> str:
        asked.append(arguments)
        return "native"

    allocate = express.Allocate(like, (3, 4), lambda: "python")
    express.set_native(recording)
    assert allocate() == "native" and asked == [(like, (3, 4))]
    express.set_native(None)
    assert allocate() == "python" and len(asked) == 1
    with pytest.raises(TypeError, match="no argument"):
        allocate(1)
    with pytest.raises(TypeError, match="callable or None"):
        express.set_native(3)


def test_plans_allocate_natively_with_fresh_outputs(native: Any, express: Any) -> None:
    """The op's plan allocates through the native module: a spy set as the native
    allocation sees each served call, and every call gets an output of its own."""
    assert _native.install(express) and express.native() is native.empty
    calls: list[tuple[int, ...]] = []

    def spy(like: torch.Tensor, sizes: tuple[int, ...]) -> torch.Tensor:
        calls.append(sizes)
        result: torch.Tensor = native.empty(like, sizes)
        return result.fill_(float("nan")) if result.is_floating_point() else result

    _memo.forget()
    with pinned_block_sizes(16):
        x, y = torch.randn(5, 37, device=DEVICE), torch.randn(5, 37, device=DEVICE)
        ops.add(x, y), ops.add(x, y)  # the second records the plan
        express.set_native(spy)
        outputs = [ops.add(x, y) for _ in range(3)]
    _memo.forget()
    # One allocation a call, of the output's elements (in its shape, or flat and viewed).
    assert len(calls) == 3 and all(math.prod(sizes) == 5 * 37 for sizes in calls)
    expected = (x.double() + y.double()).float()
    for output in outputs:
        torch.testing.assert_close(output, expected)
    assert len({output.data_ptr() for output in outputs}) == len(outputs)


def test_the_compiler_is_cxx_split_as_a_shell_would(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "ccache g++ -m64")
    assert _native._compiler() == ["ccache", "g++", "-m64"]
    command = _native.command(["ccache", "g++"], _native.SOURCE, _native.SOURCE.with_suffix(".so"))
    assert command[:2] == ["ccache", "g++"] and "-ltorch_python" in command


@pytest.mark.parametrize("environment", [{"NINETOOTHED_NATIVE": "off"}, {"CXX": "false"}])
def test_without_the_native_module_plans_allocate_from_python(environment: dict) -> None:
    """Off, or a compiler that fails: no native module, and the op computes the same
    through its plan (the Python allocation)."""
    script = (
        "import torch\n"
        "from ninetoothed.library import pinned_block_sizes\n"
        "from nt_torch import _express, _native, ops\n"
        f"x = torch.randn(9, 33, device={DEVICE!r}); y = torch.randn(9, 33, device={DEVICE!r})\n"
        "with pinned_block_sizes(16):\n"
        "    results = [ops.add(x, y) for _ in range(4)]\n"
        "print(_native.extension(), _express.extension().native())\n"
        "expected = (x.double() + y.double()).float()\n"
        "print(all(torch.allclose(r, expected) for r in results))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env={**os.environ, **environment},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "None", "True"]


def _cases() -> dict[str, tuple[list[torch.Tensor], Any]]:
    """Recorded tensors and what is then checked (a tuple of values, or a function
    making them, called in a context of its own)."""
    x = torch.randn(4, 6, device=DEVICE)
    y = torch.randn(4, 6, dtype=torch.float16, device=DEVICE)
    z = torch.randn(3, 4, 2, dtype=torch.complex64, device=DEVICE)
    return {
        "the same tensors": ([x, y], (x, y)),
        "others of the same layout": ([x, y], (torch.zeros_like(x), torch.ones_like(y))),
        "swapped": ([x, y], (y, x)),
        "another shape": ([x], (torch.randn(4, 7, device=DEVICE),)),
        "another stride": ([x], (torch.randn(6, 4, device=DEVICE).t(),)),
        "a transposed record": ([x.t()], (torch.randn(6, 4, device=DEVICE).t(),)),
        "another dtype": ([x], (x.double(),)),
        "requiring grad": ([x], (x.clone().requires_grad_(),)),
        "a parameter (a subclass)": ([x], (torch.nn.Parameter(x.clone()),)),
        "a conjugate view": ([z], (z.conj(),)),
        "a negative view": ([z.conj()], (z.conj(),)),
        "fewer values": ([x, y], (x,)),
        "not a tensor": ([x], (4,)),
        "0-d and empty": ([x[0, 0], x[:0]], (x[1, 1], x[2:2])),
        "size 1": ([x[:1]], (x[3:4],)),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_guard_answers_as_torchs_tensor_guards(native: Any, case: str) -> None:
    """The native guard must agree with PyTorch's own guard (TensorGuards) wherever
    the memo asks it: every case, in and out of no_grad and inference mode."""
    from nt_torch.fastpath import guard_factory

    factory = guard_factory()
    if factory is None:
        pytest.skip("this PyTorch's TensorGuards answers otherwise than expected")
    recorded, values = _cases()[case]
    ours, torchs = native.Guard(recorded), factory(recorded)

    def answer(guard: Any) -> bool:
        try:
            return bool(guard(*values))
        except TypeError:  # TensorGuards refuses another count; ours answers False
            return False

    for context in (torch.enable_grad, torch.no_grad, torch.inference_mode):
        with context():
            assert ours(*values) is answer(torchs), (case, context.__name__)


def test_guard_sees_the_threads_dispatch_keys(native: Any) -> None:
    """Recorded outside autocast, not valid inside it (its keys change what operators
    do), as TensorGuards; Python's dispatch keys are left to the mode check."""
    x = torch.randn(8, 8, device=DEVICE)
    guard = native.Guard([x])
    assert guard(x)
    with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
        assert not guard(x)
    assert guard(x)


def test_guard_refuses_what_it_cannot_record(native: Any) -> None:
    with pytest.raises(TypeError, match="not a tensor"):
        native.Guard([torch.zeros(2), 3])
    with pytest.raises(TypeError, match="not a strided tensor"):
        native.Guard([torch.zeros(2).to_sparse()])
    with pytest.raises(TypeError):
        native.Guard(5)


def test_the_memo_guards_with_the_native_guard(native: Any) -> None:
    from nt_torch import _framework

    x = torch.randn(3, 5, device=DEVICE)
    guard = _framework.TorchFramework.signature_guard([x])
    assert type(guard).__name__ == "Guard" and guard(x) and not guard(x.t())


def test_guard_holds_the_types_it_recorded(native: Any) -> None:
    """A recorded type is held: were it freed, another type made at its address would
    pass for it."""

    class Tagged(torch.Tensor):
        pass

    tagged = torch.zeros(3, device=DEVICE).as_subclass(Tagged)
    before = sys.getrefcount(Tagged)
    guard = native.Guard([tagged, tagged])
    assert sys.getrefcount(Tagged) == before + 2
    assert guard(tagged, tagged) and not guard(tagged, torch.zeros(3, device=DEVICE))
    del guard
    assert sys.getrefcount(Tagged) == before
    with pytest.raises(TypeError):
        native.Guard([tagged, "no"])
    assert sys.getrefcount(Tagged) == before


def test_processes_building_at_once_build_once(tmp_path: Any) -> None:
    """Two processes with an empty cache build at the same time: the file lock lets one
    compile while the other waits, both load the same module, and no partial file is
    left behind (neither theirs nor one a dead build left)."""
    script = (
        "from nt_torch import _native\n"
        "module = _native.extension()\n"
        "print(module is not None and module.__file__)\n"
    )
    # The compiler, wrapped to count its runs.
    compiler = shutil.which("c++") or shutil.which("g++")
    assert compiler is not None
    wrapper, runs = tmp_path / "cxx", tmp_path / "runs"
    wrapper.write_text(f'#!/bin/sh\necho run >> "{runs}"\nexec "{compiler}" "$@"\n')
    wrapper.chmod(0o755)
    environment = {**os.environ, "HOME": str(tmp_path), "CXX": str(wrapper)}
    environment.pop("NINETOOTHED_NATIVE", None)
    # What a process that died while building leaves: a partial module, cleared by the
    # next build.
    directory = tmp_path / ".ninetoothed" / "native" / _native._key([str(wrapper)])
    directory.mkdir(parents=True)
    (directory / f"{_native.PARTIAL}dead.so").write_bytes(b"half a module")
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=600) for process in processes]
    assert all(process.returncode == 0 for process in processes), outputs
    files = {out.strip() for out, _ in outputs}
    assert len(files) == 1 and str(tmp_path) in files.pop()
    assert runs.read_text().split() == ["run"]  # one compile for both
    built = [path for path in (tmp_path / ".ninetoothed" / "native").rglob("*") if path.is_file()]
    assert sorted(path.suffix for path in built) == ["", ".so"], built  # the lock, the module
