"""Ahead of time, a kernel's candidates for float32 tensors start with the configurations
that fit them (``nt_triton.description.describe_configurations``): without a GPU a build
takes the first, and the first of mm's arrangement's space generated from its block
sizes' bounds does not fit float32 tiles.  (``mm``'s own pinned list starts with one
that does: ``tests/library/test_matmul.py`` checks that.)"""

from __future__ import annotations

import pytest

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.library import mm
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import _tuning as tuning
from nt_triton.description import describe_configurations


def _spec(dtype: object) -> KernelSpec:
    premade = mm.premake(2)
    tensors = tuple(Tensor(2, dtype=dtype) for _ in range(3))
    generated_space = {"max_num_configs": 16}
    made = ninetoothed.make(premade.arrangement, premade.application, tensors, **generated_space)
    return made.spec


def _fits(description, element_bytes: int) -> bool:
    space = {
        (tuple(sorted(c.values.items())), c.num_warps, c.num_stages): c
        for c in _space(description.spec)
    }
    values = {k: v for k, v in description.meta.items() if k in description.spec.meta_symbols}
    configuration = space[
        (tuple(sorted(values.items())), description.num_warps, description.num_stages)
    ]
    tiles = _sizing(description.spec).tiles(configuration.kwargs())
    return tiles.fits(element_bytes, configuration.num_warps, configuration.num_stages)


def _generated(spec):
    from nt_triton import _codegen as codegen

    return codegen.generate(spec)


def _space(spec):
    generated = _generated(spec)
    return tuning.configurations(
        spec, generated.footprint, generated.signature, "tl.dot(" in generated.source
    )


def _sizing(spec):
    generated = _generated(spec)
    return tuning.Sizing(generated.signature, generated.footprint, "tl.dot(" in generated.source)


@pytest.fixture
def on_a_gpu_s_space(monkeypatch: pytest.MonkeyPatch) -> None:
    """The space a GPU build uses (the interpreter's is two configurations)."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("NINETOOTHED_MAX_NUM_CONFIGS", raising=False)


def test_float32_candidates_start_with_those_that_fit(on_a_gpu_s_space):
    spec = _spec(ninetoothed.float32)
    first = _space(spec)[0]
    tiles = _sizing(spec).tiles(first.kwargs())
    assert not tiles.fits(4, first.num_warps, first.num_stages)  # the case this is about
    described = describe_configurations(spec, 4)
    assert len(described) == 4 and all(_fits(d, 4) for d in described)


def test_float16_candidates_keep_the_space_s_order(on_a_gpu_s_space):
    spec = _spec(ninetoothed.float16)
    (described,) = describe_configurations(spec, 1)
    first = _space(spec)[0]
    assert (described.num_warps, described.num_stages) == (first.num_warps, first.num_stages)
    assert all(described.meta[k] == v for k, v in first.values.items())
