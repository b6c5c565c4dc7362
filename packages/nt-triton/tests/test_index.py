"""Generated kernels kept by fingerprint (``nt_triton.cache._reuse``): hits behave, changes miss.

A hit is a ``make`` that does not run code generation (counted by wrapping
``nt_triton._codegen.generate``).  Every change that alters the generated code
must miss, and the kernel made after it must compute the new thing: each test
runs the kernels on fresh random inputs, outputs poisoned first, against a
float64 reference.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import linecache
import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import triton.language as tl

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor
from ninetoothed.spec.fingerprint import spec_fingerprint
from nt_triton import VERSIONED_MODULES, knobs
from nt_triton import _codegen as codegen
from nt_triton.cache import _reuse as index

BLOCK = Symbol("BLOCK", meta=True)
SCALE = 2.0
DEVICE = "cuda" if os.environ.get("NT_TEST_GPU") == "1" else "cpu"


@pytest.fixture
def generations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """An empty cache directory and memo; yields the kernels code generation ran for."""
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    index.forget()
    ran: list[str] = []
    generate = codegen.generate

    def counted(spec: Any) -> Any:
        ran.append(spec.name)
        return generate(spec)

    monkeypatch.setattr(codegen, "generate", counted)
    yield ran
    index.forget()


def arrangement(x, y, BLOCK=BLOCK):
    return x.tile((BLOCK,)), y.tile((BLOCK,))


def scaled(x, y):
    y = x * SCALE  # noqa: F841


def make(application: Callable[..., Any], **options: Any) -> ninetoothed.Kernel:
    return ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1)), **options)


def run(kernel: ninetoothed.Kernel, size: int = 37) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernel's output on random input (several programs: BLOCK pinned to 8), and the input."""
    x = torch.randn(size, dtype=torch.float32, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    kernel(x, y, BLOCK=8)
    return y, x.double()


def check(kernel: ninetoothed.Kernel, expected: Callable[[torch.Tensor], torch.Tensor]) -> None:
    for size in (1, 8, 37):
        y, x = run(kernel, size)
        torch.testing.assert_close(y, expected(x).float())  # float32 tolerances


def test_a_second_make_is_a_hit_and_behaves_the_same(generations: list[str]) -> None:
    first = make(scaled)
    second = make(scaled)
    assert generations == ["scaled"]
    assert second.source == first.source and second.source_path == first.source_path
    check(second, lambda x: x * 2)


def test_another_process_loads_the_kept_kernel(generations: list[str], tmp_path: Path) -> None:
    make(scaled)
    index.forget()  # as a new process: only the disk index is left
    kernel = make(scaled)
    assert generations == ["scaled"]
    check(kernel, lambda x: x * 2)


def test_a_fresh_process_hits_the_disk_index(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys
        from nt_triton import _codegen as codegen
        ran = []
        generate = codegen.generate
        codegen.generate = lambda spec: ran.append(1) or generate(spec)
        sys.path.insert(0, sys.argv[1])
        import test_index
        test_index.check(test_index.make(test_index.scaled), lambda x: x * 2)
        print("generated", len(ran))
        """
    )
    environment = {**os.environ, "NINETOOTHED_CACHE_DIR": str(tmp_path)}
    folder = str(Path(__file__).parent)
    outputs = [
        subprocess.run(
            [sys.executable, "-c", code, folder], env=environment, capture_output=True,
            text=True, check=True,
        ).stdout.split()[-1]
        for _ in range(2)
    ]  # fmt: skip
    assert outputs == ["1", "0"]


def test_the_same_kernel_made_after_other_tensors_is_a_hit(generations: list[str]) -> None:
    first = make(scaled)
    Tensor(3).tile((2, 2, 2))  # moves the counters of fresh tensor and index names
    second = make(scaled)
    assert generations == ["scaled"]
    assert second.spec.parameters[0].source.name != first.spec.parameters[0].source.name
    check(second, lambda x: x * 2)


# --------------------------------------------------------------------- misses


def write_module(folder: Path, name: str, text: str) -> Any:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_edited_body_misses_even_with_the_same_file_size_and_time(
    generations: list[str], tmp_path: Path
) -> None:
    folder = tmp_path / "modules"
    folder.mkdir()
    text = """
    def application(x, y):
        y = x + 1.0  # noqa: F841
    """
    first = write_module(folder, "edited", text)
    check(make(first.application), lambda x: x + 1)
    status = (folder / "edited.py").stat()
    # The same length, and the file's time put back: only the code tells them apart.
    second = write_module(folder, "edited", text.replace("+ 1.0", "- 1.0"))
    os.utime(folder / "edited.py", ns=(status.st_atime_ns, status.st_mtime_ns))
    assert (folder / "edited.py").stat().st_size == status.st_size
    linecache.cache.pop(str(folder / "edited.py"), None)  # it would not notice either
    check(make(second.application), lambda x: x - 1)
    assert generations == ["application", "application"]


def test_a_changed_global_constant_misses(
    generations: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check(make(scaled), lambda x: x * 2)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 3.0)
    check(make(scaled), lambda x: x * 3)
    assert generations == ["scaled", "scaled"]


def test_a_changed_closure_value_misses(generations: list[str]) -> None:
    def application_adding(value: float) -> Callable[..., None]:
        def application(x, y):
            y = x + value  # noqa: F841

        return application

    check(make(application_adding(2.0)), lambda x: x + 2)
    check(make(application_adding(5.0)), lambda x: x + 5)
    check(make(application_adding(5.0)), lambda x: x + 5)
    assert generations == ["application", "application"]


def times(x, factor=2.0):
    return x * factor


def through_helper(x, y):
    y = times(x)  # noqa: F841


def test_a_changed_default_of_an_inlined_helper_misses(
    generations: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check(make(through_helper), lambda x: x * 2)
    monkeypatch.setattr(times, "__defaults__", (4.0,))
    check(make(through_helper), lambda x: x * 4)
    assert generations == ["through_helper", "through_helper"]


def test_a_changed_arrangement_default_misses(generations: list[str]) -> None:
    def strided(x, y, step=2):
        return x[::step].tile((BLOCK,)), y.tile((BLOCK,))

    def copied(x, y):
        y = x  # noqa: F841

    tensors = (Tensor(1), Tensor(1))
    for step in (2, 3):
        strided.__defaults__ = (step,)
        kernel = ninetoothed.make(strided, copied, tensors)
        x = torch.randn(37, dtype=torch.float32, device=DEVICE)
        y = torch.full_like(x[::step], float("nan"))
        kernel(x, y, BLOCK=8)
        torch.testing.assert_close(y, x[::step])
    assert generations == ["copied", "copied"]


def test_a_changed_option_misses(generations: list[str]) -> None:
    four = make(scaled, num_warps=4)
    eight = make(scaled, num_warps=8)
    make(scaled, num_warps=8)
    assert generations == ["scaled", "scaled"]
    assert four.generated.launch_options == (4, 3) and eight.generated.launch_options == (8, 3)
    pinned = make(scaled, configs=[{"BLOCK": 16}])
    assert pinned.generated.configurations[0].values == {"BLOCK": 16}
    assert make(scaled, configs=[{"BLOCK": 32}]).generated.configurations[0].values == {"BLOCK": 32}
    assert len(generations) == 4


def test_a_changed_knob_or_library_misses(
    generations: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make(scaled)
    # Counted from here: an earlier test in this process may have generated it.
    before = len(generations)
    # A value the knob does not have yet (the GPU suite's environment may set it).
    cap = 1 if knobs.max_num_configs() != 1 else 2
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", str(cap))
    assert len(make(scaled).generated.configurations) <= cap
    assert len(generations) == before + 1
    monkeypatch.setattr(index, "library_stamp", lambda: "an edited ninetoothed")
    make(scaled)
    assert len(generations) == before + 2


def test_a_changed_attribute_of_a_users_module_misses(
    generations: list[str], tmp_path: Path
) -> None:
    settings = write_module(tmp_path, "settings_of_test_index", "OFFSET = 1.0\n")
    sys.modules[settings.__name__] = settings
    module = write_module(
        tmp_path,
        "reads_settings",
        """
        import settings_of_test_index as settings

        def application(x, y):
            y = x + settings.OFFSET  # noqa: F841
        """.replace("settings_of_test_index", settings.__name__),
    )
    try:
        check(make(module.application), lambda x: x + 1)
        settings.OFFSET = 7.0
        check(make(module.application), lambda x: x + 7)
    finally:
        del sys.modules[settings.__name__]
    assert generations == ["application", "application"]


# ----------------------------------------------------------------- not kept


class Opaque:
    factor = 2.0


OPAQUE = Opaque()


def reads_an_object(x, y):
    y = x * OPAQUE.factor  # noqa: F841


def test_what_cannot_be_fingerprinted_is_generated_every_time(generations: list[str]) -> None:
    kernel = make(reads_an_object)
    assert spec_fingerprint(kernel.spec) is None
    make(reads_an_object)
    assert generations == ["reads_an_object", "reads_an_object"]


def test_a_corrupted_index_entry_is_a_miss(generations: list[str], tmp_path: Path) -> None:
    make(scaled)
    (entry,) = (tmp_path / "index").iterdir()
    entry.write_bytes(b"not a pickle")
    index.forget()
    check(make(scaled), lambda x: x * 2)
    assert generations == ["scaled", "scaled"]
    assert isinstance(pickle.loads(entry.read_bytes()), index.Entry)  # rewritten


def negated(x, y):
    y = -x  # noqa: F841


def _entry_paths(tmp_path: Path, *kernels: ninetoothed.Kernel) -> list[Path]:
    """The index files of ``kernels``, by their fingerprints."""
    return [
        tmp_path / "index" / f"{spec_fingerprint(k.spec, index.context())}.pickle" for k in kernels
    ]


def test_swapped_index_entries_are_misses(generations: list[str], tmp_path: Path) -> None:
    """Each entry names what it was made for: one under another kernel's fingerprint
    is not that kernel."""
    first, second = _entry_paths(tmp_path, make(scaled), make(negated))
    data = first.read_bytes()
    first.write_bytes(second.read_bytes())
    second.write_bytes(data)
    index.forget()
    check(make(scaled), lambda x: x * 2)
    check(make(negated), lambda x: -x)
    assert generations == ["scaled", "negated", "scaled", "negated"]


def test_an_entry_naming_another_kernels_source_is_a_miss(
    generations: list[str], tmp_path: Path
) -> None:
    """The source an entry names must be the text it was made with (its hash).  Both
    kernels have one name, so the other source defines the function the entry names."""
    first, second = _entry_paths(tmp_path, make(scaled, name="twin"), make(negated, name="twin"))
    theirs = pickle.loads(second.read_bytes())
    ours = pickle.loads(first.read_bytes())
    first.write_bytes(pickle.dumps(dataclasses.replace(ours, file=theirs.file)))
    index.forget()
    check(make(scaled, name="twin"), lambda x: x * 2)
    assert generations == ["twin", "twin", "twin"]


def test_a_deleted_source_is_written_again(generations: list[str]) -> None:
    path = Path(make(scaled).source_path)
    path.unlink()
    kernel = make(scaled)  # this process's entry: the source is put back
    assert Path(kernel.source_path).read_text() == kernel.source
    path.unlink()
    index.forget()
    check(make(scaled), lambda x: x * 2)  # the disk's entry names a missing file: a miss
    assert generations == ["scaled", "scaled"]


@pytest.mark.parametrize(
    ("op", "variant"),
    [
        ("mm", {}),
        ("softmax", {"ndim": 2, "dim": -1}),
        ("rms_norm", {"ndim": 3, "weighted": True}),
        ("scaled_dot_product_attention", {}),
        ("conv2d", {"stride": (2, 1), "padding": (1, 0)}),
        ("rotary_position_embedding", {"interleaved": True}),
    ],
)
def test_library_kernels_from_the_index_equal_generated_ones(
    generations: list[str], monkeypatch: pytest.MonkeyPatch, op: str, variant: dict[str, Any]
) -> None:
    module = importlib.import_module(f"ninetoothed.library.{op}")
    premade = module.premake(**variant)

    def made() -> Any:
        return ninetoothed.make(premade.arrangement, premade.application, premade.tensors,
                                name=op, **premade.options).generated  # fmt: skip

    first = made()
    Tensor(2).tile((2, 2))  # other counters
    kept = made()
    assert len(generations) == 1
    monkeypatch.setattr(index, "fingerprint", lambda spec: None)
    fresh = made()
    assert kept.source == fresh.source == first.source
    assert kept.host_source == fresh.host_source
    assert kept.signature == fresh.signature
    assert kept.configurations == fresh.configurations


def test_the_jit_decorator_is_kept_too(generations: list[str]) -> None:
    def decorate() -> ninetoothed.Kernel:
        @ninetoothed.jit
        def twice(x: Tensor(1).tile((BLOCK,)), y: Tensor(1).tile((BLOCK,))):  # noqa: F821
            y = x * 2  # noqa: F841

        return twice

    decorate()
    check(decorate(), lambda x: x * 2)
    assert generations == ["twice"]


def test_ntl_reads_are_named_not_refused(generations: list[str]) -> None:
    def exponential(x, y):
        y = ntl.exp(x)  # noqa: F841

    check(make(exponential), torch.exp)
    make(exponential)
    assert generations == ["exponential"]


def exponential_through_triton(x, y):
    y = tl.exp(x)  # noqa: F841


def test_the_backend_names_the_modules_its_fingerprint_versions(generations: list[str]) -> None:
    """Core trusts no backend's module by itself: Triton's ``tl.exp`` is named only because
    nt-triton declares ``triton`` among the modules its context versions."""
    kernel = make(exponential_through_triton)
    assert spec_fingerprint(kernel.spec) is None
    assert spec_fingerprint(kernel.spec, versioned=VERSIONED_MODULES) is not None
    check(kernel, torch.exp)
    make(exponential_through_triton)
    assert generations == ["exponential_through_triton"]


def test_a_disk_hit_gives_triton_the_source_lines_it_reads_itself(
    generations: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nt_triton.cache import _sources as cache

    monkeypatch.setenv("TRITON_INTERPRET", "0")  # a real JITFunction (made, never launched)
    first = make(scaled).generated.function
    index.forget()
    kept = make(scaled).generated.function
    assert generations == ["scaled"]
    path = Path(make(scaled).source_path)
    plain = getattr(cache.load(path, {}), first.__name__)  # inspect.getsourcelines itself
    assert type(kept).__name__ == "JITFunction"
    assert kept.src == plain.src == first.src
    line = "starting_line_number"  # Triton 3.3 on; absent before
    assert getattr(kept, line, None) == getattr(plain, line, None)
    assert kept.cache_key == plain.cache_key
