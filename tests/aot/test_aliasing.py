"""The C launcher refuses arguments that share written memory as the just-in-time host does.

Each call runs both ways (:class:`support.aot_parity.Harness`): the same
refusal, with the same message (the host's words, filled in by C) and the
status of its kind (``NINETOOTHED_ERROR_INVALID_ARGUMENT`` for arguments
sharing memory, ``NINETOOTHED_ERROR_SHAPE`` for an output overlapping
itself), or the same launch.  Pointers are in bytes; the kernels' elements
are float16 (add, mm) or float32 (flat, the two below).
"""

from __future__ import annotations

import random
import subprocess

import pytest
import torch
from support import aot_kernels as k
from support.aot_parity import Harness, make_aot

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.aot import HEADER_PATH, Status
from ninetoothed.errors import LaunchError
from ninetoothed.runtime.aliasing import _overlaps_itself
from nt_triton.aot import _cc
from nt_triton.aot._sources import translation_unit

pytestmark = pytest.mark.interpreter_only

FAR = 1 << 40
"""A pointer far from the others."""

ELSEWHERE = 1 << 44
"""Another."""


def two_outputs_application(x, y, z):
    y = x  # noqa: F841
    z = x + 1  # noqa: F841


def transposed_arrangement(x, y):
    return x.permute((1, 0)).tile((16, 16)), y.tile((16, 16))


@pytest.fixture(scope="module")
def extra(built, tmp_path_factory, fake_cuda):
    """Kernels with two outputs, and one that reads what other programs write."""
    directory = tmp_path_factory.mktemp("aliasing")
    made = {}
    for name, arrangement, application, tensors in (
        (
            "two_outputs",
            k.add_arrangement,
            two_outputs_application,
            lambda: tuple(Tensor(1, dtype=ninetoothed.float32) for _ in range(3)),
        ),
        (
            "transpose",
            transposed_arrangement,
            k.copy_application,
            lambda: tuple(Tensor(2, dtype=ninetoothed.float32) for _ in range(2)),
        ),
    ):
        aot = make_aot(arrangement, application, tensors(), directory, name)
        jit = ninetoothed.make(arrangement, application, tensors(), kernel_name=name)
        made[name] = Harness(aot, jit, fake_cuda)
    return made


def _refused(harness: Harness, status: Status, words: str, *call, **options) -> None:
    """``call`` is refused both ways (the harness compares the messages), with ``status``."""
    assert harness.check(*call, **options) is None
    assert harness.last_status == status, (harness.last_status, harness.last_message)
    assert words in harness.last_message, harness.last_message


def test_a_written_tensor_overlapping_an_input_is_refused(built):
    add = built["add"]
    shapes = [(1000,)] * 3
    # z begins 2 bytes (one element) past x: each program would read what another wrote.
    _refused(
        add, Status.INVALID_ARGUMENT, "share memory", shapes, pointers=[FAR, ELSEWHERE, FAR + 2]
    )
    _refused(
        add,
        Status.INVALID_ARGUMENT,
        "'y' (read; shape (1000,), strides (1,)) and 'z' "
        "(written; shape (1000,), strides (1,)) share memory",
        shapes,
        pointers=[ELSEWHERE, FAR + 1998, FAR],
    )
    # x reversed over z's memory (a negative stride reaches below its pointer):
    _refused(
        add,
        Status.INVALID_ARGUMENT,
        "'x' (read; shape (1000,), strides (-1,))",
        shapes,
        [(-1,), (1,), (1,)],
        pointers=[FAR + 1998, ELSEWHERE, FAR],
    )


def test_tensors_that_only_touch_or_have_no_elements_are_launched(built):
    add = built["add"]
    shapes = [(1000,)] * 3
    assert add.check(shapes, pointers=[FAR, ELSEWHERE, FAR + 2000]) is not None  # z just after x
    assert add.check(shapes, pointers=[FAR + 2000, ELSEWHERE, FAR]) is not None  # x just after z
    assert add.check([(0,)] * 3, pointers=[FAR, FAR, FAR]) is None  # empty: nothing launched
    assert add.last_status == Status.SUCCESS
    assert add.check([(0,)] * 3, pointers=[0, 0, 0]) is None and add.last_status == 0
    # Strided, interleaved but disjoint (x the even elements, z the odd ones): the
    # host compares the memory the tensors span, so this is refused too.
    _refused(
        add,
        Status.INVALID_ARGUMENT,
        "share memory",
        shapes,
        [(2,), (1,), (2,)],
        pointers=[FAR, ELSEWHERE, FAR + 2],
    )


def test_the_same_view_read_and_written_runs_in_place(built):
    add, flat = built["add"], built["flat"]
    assert add.check([(1000,)] * 3, pointers=[FAR, ELSEWHERE, FAR]) is not None  # add(x, y, x)
    assert add.check([(1000,)] * 3, pointers=[ELSEWHERE, FAR, FAR]) is not None  # add(x, y, y)
    assert flat.check([(4, 8, 16)] * 2, pointers=[FAR, FAR]) is not None
    # Not the same view: the same pointer, another stride.
    _refused(
        add,
        Status.INVALID_ARGUMENT,
        "share memory",
        [(500,)] * 3,
        [(2,), (1,), (1,)],
        pointers=[FAR, ELSEWHERE, FAR],
    )


def test_one_view_read_where_other_programs_write_is_refused(built, extra):
    mm, transpose = built["mm"], extra["transpose"]
    _refused(
        mm,
        Status.INVALID_ARGUMENT,
        "'a' and 'c' are one tensor, and the kernel writes 'c'",
        [(64, 64)] * 3,
        pointers=[FAR, ELSEWHERE, FAR],
    )
    _refused(
        transpose,
        Status.INVALID_ARGUMENT,
        "'x' and 'y' are one tensor",
        [(32, 32)] * 2,
        pointers=[FAR, FAR],
    )


def test_two_written_tensors_sharing_memory_are_refused_even_as_one_view(extra):
    two = extra["two_outputs"]
    _refused(
        two,
        Status.INVALID_ARGUMENT,
        "'y' (written; shape (512,), strides (1,)) and 'z' (written",
        [(512,)] * 3,
        pointers=[ELSEWHERE, FAR, FAR],
    )
    _refused(
        two,
        Status.INVALID_ARGUMENT,
        "share memory",
        [(512,)] * 3,
        pointers=[ELSEWHERE, FAR, FAR + 1024],
    )


def test_an_output_overlapping_itself_is_refused(built):
    flat, mm = built["flat"], built["mm"]
    _refused(
        flat,
        Status.SHAPE,
        "the output 'y' (shape (4, 8, 16), strides (128, 16, 0)) has stride 0",
        [(4, 8, 16)] * 2,
        [None, (128, 16, 0)],
    )
    # Interleaved strides: offsets 2i + j repeat (counted one by one).
    _refused(
        mm,
        Status.SHAPE,
        "the output 'c' (shape (64, 64), strides (2, 1)) overlaps itself",
        [(64, 64)] * 3,
        [None, None, (2, 1)],
    )
    # Interleaved but distinct (offsets 2i + 3j of a 3 x 2 tensor): launched.
    assert mm.check([(3, 16), (16, 2), (3, 2)], [None, None, (2, 3)]) is not None
    # Interleaved and above the counted limit (2^20 elements): refused as overlapping.
    _refused(
        mm,
        Status.SHAPE,
        "overlaps itself",
        [(1024, 16), (16, 1025), (1024, 1025)],
        [None, None, (1025, 1024)],
    )
    # A size-1 dimension's stride reaches nothing: no overlap.
    assert flat.check([(4, 1, 16)] * 2, [None, (16, 0, 1)]) is not None


def test_the_python_callable_raises_the_just_in_time_message(built, fake_cuda, on_gpu):
    add = built["add"]
    base = torch.empty(1001, dtype=torch.float16)
    x, y, z = base[:1000], torch.empty(1000, dtype=torch.float16), base[1:]
    with pytest.raises(LaunchError) as jit_error:
        add.jit(x, y, z)  # refused by the host before anything runs
    expected = f"{jit_error.value} (status 2, NINETOOTHED_ERROR_INVALID_ARGUMENT)"
    assert expected.startswith(f"{add.jit.spec.label}: unsupported operation: 'x' (read; shape")
    launches = fake_cuda.get("fake_launches")
    for _ in range(2):  # the full path, then the fast one
        with pytest.raises(LaunchError) as error:
            add.aot(x, y, z)
        assert str(error.value) == expected
    add.aot(x, y, x)  # in place: launched
    assert fake_cuda.get("fake_launches") == launches + 1


def test_the_c_overlap_test_answers_as_python_s(tmp_path):
    """Random layouts (interleaved, negative, zero and huge strides; empty and size-1
    dimensions): C's ``nt_overlaps_itself`` says what Python's says."""
    rng = random.Random(11)
    strides = [0, 1, 2, 3, 4, 5, 6, 7, 12, 30, 2**40, 2**62]
    layouts = []
    for _ in range(400):
        ndim = rng.randint(1, 4)
        shape = [rng.choice([0, 1, 2, 3, 4, 5, 7, 64]) for _ in range(ndim)]
        layout = [rng.choice(strides) * rng.choice([1, -1]) for _ in range(ndim)]
        layouts.append((shape, layout))
    layouts.append(([1100, 1000], [2, 2197]))  # interleaved, over 2^20 elements: "overlaps"
    layouts.append(([2, 3], [3, 2]))  # interleaved and distinct
    rows = [
        f"{{{len(shape)}, {{{', '.join(map(str, shape))}}}, {{{', '.join(map(str, layout))}}}}}"
        for shape, layout in layouts
    ]
    body = "\n".join(
        [
            "typedef struct { int ndim; int64_t sizes[4]; int64_t strides[4]; } layout_t;",
            f"static const layout_t layouts[] = {{{', '.join(rows)}}};",
            "int main(void) {",
            f"    for (int i = 0; i < {len(layouts)}; ++i)",
            '        printf("%d\\n", nt_overlaps_itself(layouts[i].sizes, layouts[i].strides, '
            "layouts[i].ndim));",
            "    return 0;",
            "}",
        ]
    )
    source = tmp_path / "overlaps.c"
    source.write_text(translation_unit("ninetoothed.h", 1, body, "a test"))
    binary = tmp_path / "overlaps"
    includes = [f"-I{_cc.cuda_include()}", f"-I{HEADER_PATH.parent}"]
    subprocess.run(
        [*_cc.compiler(), *includes, str(source), "-o", str(binary), "-ldl", "-lpthread"],
        check=True,
    )
    printed = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    expected = [int(_overlaps_itself(shape, layout)) for shape, layout in layouts]
    assert [int(v) for v in printed.split()] == expected
    assert expected[-2:] == [1, 0] and 0 < sum(expected) < len(expected) - 50
