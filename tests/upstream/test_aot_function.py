"""``ninetoothed.aot.aot``: upstream's public function behind ``make(..., caller="cuda")``.

Upstream programs import it (``from ninetoothed.aot import aot``) and hand it
a function annotated like an ``@ninetoothed.jit`` one.  It compiles the same
C library as ``make``: here for sm_90 (``target`` is ours; upstream compiles
for the current GPU), so the library is built without one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ninetoothed
from ninetoothed import Symbol, Tensor
from ninetoothed.errors import ArrangementError

BLOCK = Symbol("BLOCK", constexpr=True)


def _scaled_copy(
    src: Tensor(1, dtype=ninetoothed.float32).tile((64,)),
    dst: Tensor(1, dtype=ninetoothed.float32).tile((64,)),
):
    dst = src * 2  # noqa: F841


def test_aot_is_importable_from_the_aot_module():
    from ninetoothed.aot import aot

    assert callable(aot)


def test_aot_builds_the_library_make_builds(tmp_path: Path):
    from ninetoothed.aot import aot

    kernel = aot(
        _scaled_copy, caller="cuda", kernel_name="scaled_copy", output_dir=tmp_path, target="sm_90"
    )
    header = (tmp_path / "scaled_copy.h").read_text()
    assert "NineToothedResult launch_scaled_copy(NineToothedStream stream, " in header
    assert "NineToothedTensor src, NineToothedTensor dst);" in header
    assert (tmp_path / "scaled_copy.so").is_file()
    assert [p.name for p in kernel.spec.tensor_parameters] == ["src", "dst"]


def test_aot_refuses_an_unannotated_parameter(tmp_path: Path):
    from ninetoothed.aot import aot

    def application(src: Tensor(1).tile((BLOCK,)), dst):
        dst = src  # noqa: F841

    with pytest.raises(ArrangementError, match=r"aot: parameter 'dst' of application"):
        aot(application, kernel_name="bad", output_dir=tmp_path, target="sm_90")


def test_aot_refuses_the_just_in_time_caller():
    from ninetoothed.aot import aot

    with pytest.raises(TypeError, match=r"caller='torch' compiles just in time"):
        aot(_scaled_copy, caller="torch")
