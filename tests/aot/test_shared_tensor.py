"""One symbolic Tensor given for several parameters, made ahead of time: the C launcher
refuses arguments whose shapes differ (the kernel has one size for them), with the
just-in-time call's status, as it launches arguments of one shape."""

from __future__ import annotations

import pytest
from support import aot_kernels as k
from support.aot_parity import Harness, make_aot

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.aot import Status

pytestmark = pytest.mark.interpreter_only


@pytest.fixture(scope="module")
def shared_mm(tmp_path_factory, fake_cuda) -> Harness:
    """``support.aot_kernels``' matmul made with one float16 Tensor for its three parameters."""
    directory = tmp_path_factory.mktemp("shared")
    one = Tensor(2, dtype=ninetoothed.float16)
    tensors = (one, one, one)
    aot = make_aot(k.mm_arrangement, k.mm_application, tensors, directory, "shared_mm")
    jit = ninetoothed.make(k.mm_arrangement, k.mm_application, tensors, kernel_name="shared_mm")
    return Harness(aot, jit, fake_cuda)


def test_shapes_that_differ_are_refused_in_c(shared_mm):
    assert shared_mm.check([(64, 128), (128, 64), (64, 64)]) is None
    assert shared_mm.last_status == Status.SHAPE, shared_mm.last_message
    assert "make was given one Tensor object for both" in shared_mm.last_message
    assert "'a' (dimension 0) and 'b' (dimension 0)" in shared_mm.last_message


def test_one_shape_for_all_launches(shared_mm):
    assert shared_mm.check([(64, 64)] * 3) is not None
