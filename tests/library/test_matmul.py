"""mm, bmm, addmm and conv2d on every framework and dtype, against float64.

Shapes are ragged for the pinned 16-blocks and span several programs along
every dimension of the grid, and ``k`` takes several steps.
"""

from __future__ import annotations

import pytest
from support.library import DTYPES, assert_close, conv2d, f64, random

import ninetoothed
from ninetoothed.library import mm
from ninetoothed.library.ops import kernels, matmul


@pytest.mark.parametrize("dtype", DTYPES)
def test_mm(framework, ops, dtype):
    a, b = random((37, 50), dtype), random((50, 45), dtype)
    result = ops.mm(framework.from_numpy(a), framework.from_numpy(b))
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), dtype, matrix=True)


def test_mm_of_strided_operands(framework, ops):
    a, b = random((20, 33), "float32"), random((33, 18), "float32")
    result = ops.mm(framework.non_contiguous(a), framework.non_contiguous(b))
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), "float32", matrix=True)


def test_mm_of_a_few_rows(framework, ops):
    """Decoding's shape: the thin tiles' kernel."""
    a, b = random((6, 70), "float16"), random((70, 40), "float16")
    result = ops.mm(framework.from_numpy(a), framework.from_numpy(b))
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), "float16", matrix=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("rows", "k", "tallest"), [(1, 70, 1), (1, 1, 1), (1, 0, 1), (3, 70, 4)])
def test_mm_of_a_row_or_a_few(framework, ops, dtype, rows, k, tallest, monkeypatch):
    """Decoding's few tokens: the vector form, 3 programs of the pinned 16 columns, several
    ragged steps along ``k`` (and one, and none), 3 of 4 rows, a weight transposed as
    a Linear layer's."""
    a, w = random((rows, k), dtype), random((40, k), dtype)
    given = framework.from_numpy(a), framework.non_contiguous(w.T)
    result, variants = _called(monkeypatch, lambda: ops.mm(*given))
    assert [v["tallest"] for v in variants] == [tallest]
    assert_close(framework.to_numpy(result), f64(a) @ f64(w).T, dtype, matrix=True)


@pytest.mark.parametrize("input_shape", [(2, 45), (45,), (2, 1), (1, 1)])
def test_addmm_of_two_rows(framework, ops, input_shape, monkeypatch):
    input, a = random(input_shape, "float16"), random((2, 70), "float16")
    b = random((70, 45), "float16")
    given = [framework.from_numpy(t) for t in (input, a, b)]
    result, variants = _called(monkeypatch, lambda: ops.addmm(*given, beta=0.5, alpha=2.0))
    assert [v["tallest"] for v in variants] == [2]
    expected = 0.5 * f64(input) + 2.0 * (f64(a) @ f64(b))
    assert_close(framework.to_numpy(result), expected, "float16", matrix=True)


def test_bmm_of_one_row(framework, ops, monkeypatch):
    a, b = random((3, 1, 35), "float32"), random((3, 35, 18), "float32")
    given = framework.non_contiguous(a), framework.non_contiguous(b)
    result, variants = _called(monkeypatch, lambda: ops.bmm(*given))
    assert [v["tallest"] for v in variants] == [1]
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), "float32", matrix=True)


def _called(monkeypatch, call):
    """``call()``'s result and the GEMM kernel variants its op asked for (a call whose
    plan the memo replays asks for none, and fails the test's check)."""
    asked = []

    def kernel(module, **variant):
        asked.append(variant)
        return made(module, **variant)

    made = matmul.kernel
    monkeypatch.setattr(matmul, "kernel", kernel)
    return call(), asked


def test_the_vector_form_serves_a_few_rows_of_few_columns():
    assert mm.vector_tallest(1, 1, mm.VECTOR_COLUMNS) == 1 and mm.vector_tallest(4, 1, 512) == 1
    assert [mm.vector_tallest(1, rows, 16) for rows in (2, 3, 4)] == [2, 4, 4]
    assert mm.vector_tallest(1, mm.VECTOR_ROWS + 1, 16) is None
    assert mm.vector_tallest(1, 0, 16) is None
    assert mm.vector_tallest(1, 1, mm.VECTOR_COLUMNS + 1) is None
    assert mm.vector_tallest(8, 1, 512) is None
    assert mm.is_vector(4) and not mm.is_vector(16) and not mm.is_vector(None)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm(framework, ops, dtype):
    a, b = random((3, 20, 35), dtype), random((3, 35, 18), dtype)
    result = ops.bmm(framework.from_numpy(a), framework.from_numpy(b))
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), dtype, matrix=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("input_shape", [(19, 29), (29,), (19, 1)])
def test_addmm(framework, ops, dtype, input_shape):
    input, a, b = random(input_shape, dtype), random((19, 23), dtype), random((23, 29), dtype)
    given = [framework.from_numpy(t) for t in (input, a, b)]
    result = ops.addmm(*given, beta=0.5, alpha=2.0)
    expected = 0.5 * f64(input) + 2.0 * (f64(a) @ f64(b))
    assert_close(framework.to_numpy(result), expected, dtype, matrix=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv2d(framework, ops, dtype):
    x, w = random((2, 5, 9, 11), dtype), random((7, 5, 3, 3), dtype)
    result = ops.conv2d(framework.from_numpy(x), framework.from_numpy(w))
    assert_close(framework.to_numpy(result), conv2d(x, w), dtype, matrix=True)


@pytest.mark.parametrize(
    ("stride", "padding", "dilation"), [(2, 1, 1), ((1, 2), (2, 0), 1), (1, (2, 1), 2)]
)
def test_conv2d_options(framework, ops, stride, padding, dilation):
    x, w = random((2, 3, 10, 9), "float32"), random((17, 3, 3, 2), "float32")
    result = ops.conv2d(framework.from_numpy(x), framework.from_numpy(w), stride, padding, dilation)
    pairs = [(v, v) if isinstance(v, int) else v for v in (stride, padding, dilation)]
    assert_close(framework.to_numpy(result), conv2d(x, w, *pairs), "float32", matrix=True)


def test_conv2d_of_strided_operands(framework, ops):
    """A filter whose (c, r, s) do not lie as one block takes the decomposed offsets
    (a contiguous one the flattened index: both must agree with the definition)."""
    x, w = random((2, 3, 8, 7), "float32"), random((5, 3, 3, 2), "float32")
    result = ops.conv2d(framework.non_contiguous(x), framework.non_contiguous(w), 1, 1)
    expected = conv2d(x, w, padding=(1, 1))
    assert_close(framework.to_numpy(result), expected, "float32", matrix=True)


def test_conv2d_of_no_input_channels_is_refused(framework, ops):
    """torch gives an (N, 0, P, Q) tensor here, not the (N, K, P, Q) zeros of a sum over
    no channels: the op refuses rather than pick one."""
    x, w = random((2, 0, 5, 5), "float32"), random((3, 0, 2, 2), "float32")
    with pytest.raises(ValueError, match=r"conv2d: input .*\(2, 0, 5, 5\).* no channels"):
        ops.conv2d(framework.from_numpy(x), framework.from_numpy(w))


def test_mismatched_operands_are_refused(framework, ops):
    a = framework.from_numpy(random((4, 5), "float32"))
    with pytest.raises(ValueError, match="cannot multiply"):
        ops.mm(a, a)
    with pytest.raises(ValueError, match="must be 3-D"):
        ops.bmm(a, a)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_products_over_more_rows_of_tiles_than_a_group(framework, ops, batch):
    """Grouped program order (codegen.ordering): 10 rows of 16-tiles are a group
    of 8 and a last group of 2; every output tile must still be written once."""
    a, b = random((*batch, 150, 20), "float32"), random((*batch, 20, 40), "float32")
    op = ops.bmm if batch else ops.mm
    result = op(framework.from_numpy(a), framework.from_numpy(b))
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), "float32", matrix=True)


@pytest.fixture
def persistent_from_small_outputs(monkeypatch):
    """Large outputs take the persistent variant (mm.uses_persistent); lowered here so
    small shapes do, and the variant's programs each walk several tiles (3 programs
    under the interpreter, pinned 16-blocks)."""
    monkeypatch.setattr(mm, "PERSISTENT_ELEMENTS", 1)


def _persistent_kernels(op: str) -> list[bool]:
    return [bool(k.spec.options.get("persistent")) for k in kernels.made(op)]


# Every pair of values of any two of dtype, batched and strided at least once, not all twelve
# triples: each run costs seconds under the interpreter.
PERSISTENT_CASES = [
    ("float16", (), False),
    ("float16", (3,), True),
    ("bfloat16", (), True),
    ("bfloat16", (3,), False),
    ("float32", (), False),
    ("float32", (3,), True),
]


@pytest.mark.usefixtures("persistent_from_small_outputs")
@pytest.mark.parametrize(("dtype", "batch", "strided"), PERSISTENT_CASES)
def test_persistent_products(framework, ops, dtype, batch, strided):
    a, b = random((*batch, 70, 35), dtype), random((*batch, 35, 50), dtype)
    op = ops.bmm if batch else ops.mm
    given = framework.non_contiguous if strided else framework.from_numpy
    result = op(given(a), given(b))
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), dtype, matrix=True)
    assert True in _persistent_kernels("bmm" if batch else "mm")


@pytest.mark.usefixtures("persistent_from_small_outputs")
@pytest.mark.parametrize("input_shape", [(70, 29), (29,), (70, 1)])
def test_persistent_addmm(framework, ops, input_shape):
    input, a = random(input_shape, "float32"), random((70, 23), "float32")
    b = random((23, 29), "float32")
    result = ops.addmm(*(framework.from_numpy(t) for t in (input, a, b)), beta=0.5, alpha=2.0)
    expected = 0.5 * f64(input) + 2.0 * (f64(a) @ f64(b))
    assert_close(framework.to_numpy(result), expected, "float32", matrix=True)
    assert True in _persistent_kernels("addmm")


def test_thin_outputs_have_no_persistent_variant():
    assert not mm.uses_persistent(1, mm.THIN, 1 << 30)
    assert mm.uses_persistent(1, 2048, 2048) and not mm.uses_persistent(1, 2047, 2048)
    with pytest.raises(ValueError, match="thin GEMM"):
        mm.premake(2, tallest=16, persistent=True)


@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"tallest": 1},
        {"tallest": mm.VECTOR_ROWS},
        {"tallest": 16},
        {"tallest": 32},
        {"tallest": mm.THIN},
        {"persistent": True},
    ],
    ids=[
        "one program per tile",
        "vector 1",
        "vector 4",
        "thin 16",
        "thin 32",
        "thin 64",
        "persistent",
    ],
)
def test_a_pinned_space_s_first_configuration_fits_float32(variant):
    """``NINETOOTHED_MAX_NUM_CONFIGS`` cuts a pinned list to its first configurations
    (the GPU tests keep one): the first must fit 4-byte elements, or a float32 product
    fails (under Inductor, the whole compile; seen with the thin list's 6-stage first)."""
    premade = mm.premake(2, **variant)
    kernel = ninetoothed.make(
        premade.arrangement, premade.application, premade.tensors, **premade.options
    ).generated
    first = kernel.tuner.configurations[0]
    tiles = kernel.tuner.sizing.tiles(first.kwargs())
    assert tiles.fits(4, first.num_warps, first.num_stages), first


def test_every_one_program_per_tile_entry_fits_two_byte_elements():
    """The tuner tries only the configurations its estimate says fit the call's element
    size: an entry of ``mm.CONFIGS`` that did not fit float16 would never run.  For float32
    it leaves out the deepest pipelines (8 stages) and the widest steps; the first entry,
    and a few others, remain."""
    premade = mm.premake(2)
    kernel = ninetoothed.make(
        premade.arrangement, premade.application, premade.tensors, **premade.options
    ).generated
    tiles = kernel.tuner.sizing.tiles

    def fitting(element_bytes: int) -> list[tuple[int, ...]]:
        return [
            (m, n, k, warps, stages)
            for m, n, k, warps, stages in mm.CONFIGS
            if tiles({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k}).fits(
                element_bytes, warps, stages
            )
        ]

    assert fitting(2) == list(mm.CONFIGS)
    assert mm.CONFIGS[0] in fitting(4) and len(fitting(4)) < len(mm.CONFIGS)
    assert all(stages < 8 for *_, stages in fitting(4)), fitting(4)
