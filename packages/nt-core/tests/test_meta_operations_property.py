"""Meta-operations against real tensor operations.

For random chains of meta-operations, :func:`ninetoothed.arrangement.reference.evaluate`
(which source element every element of every level reads, and which elements
are masked) must agree with the same view built by torch on a tensor of source
indices: ``torch.arange(numel).reshape(shape)`` viewed with ``unfold``,
``permute``, ``flatten``, ``expand``, slicing and ``F.pad``.  Out-of-range and
padded elements hold :data:`SENTINEL` in the torch view and must be exactly the
masked ones.

The torch twin of a hierarchical tensor is one tensor whose dimensions are the
levels' dimensions, outermost level first (a tiled level is its tile-grid
dimensions followed by the tile's), plus the number of dimensions of each level.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from ninetoothed import Symbol, Tensor, block_size
from ninetoothed.arrangement.reference import evaluate

SENTINEL = -1
"""The torch view's value for an element outside the source (a masked one)."""

MAX_ELEMENTS = 20_000
"""Operations that would make the torch view bigger than this are skipped."""

CHAIN_EXAMPLES = 2000
"""Examples per random-chain property (there are two: concrete and symbolic sizes)."""


# ---------------------------------------------------------------- torch twin
@dataclass
class Twin:
    """The torch view of an arranged tensor: source flat indices, ``SENTINEL`` where masked."""

    values: torch.Tensor
    level_ndims: list[int]

    def level_shapes(self) -> tuple[tuple[int, ...], ...]:
        """The shape of each level, outermost first."""
        shapes, start = [], 0
        for ndim in self.level_ndims:
            shapes.append(tuple(self.values.shape[start : start + ndim]))
            start += ndim
        return tuple(shapes)


def source_twin(shape: tuple[int, ...]) -> Twin:
    """The twin of an untouched source tensor: every element reads itself."""
    return Twin(torch.arange(math.prod(shape)).reshape(shape), [len(shape)])


def on_level(twin: Twin, level: int, operation, *arguments) -> Twin:
    """Apply ``operation`` to the dimensions of ``level`` of ``twin``.

    ``operation(values, ndim, *arguments)`` sees a tensor whose dimension 0
    stands for all other levels' dimensions and whose other dimensions are the
    level's ``ndim`` ones; it returns the new tensor and the new levels' ndims.
    """
    offset = sum(twin.level_ndims[:level])
    ndim = twin.level_ndims[level]
    values = twin.values
    total = values.ndim
    values = values.movedim(list(range(offset, offset + ndim)), list(range(total - ndim, total)))
    others = values.shape[: total - ndim]
    values = values.reshape(-1, *values.shape[total - ndim :])
    values, new_ndims = operation(values, ndim, *arguments)
    values = values.reshape((*others, *values.shape[1:]))
    moved = list(range(len(others), values.ndim))
    values = values.movedim(moved, list(range(offset, offset + len(moved))))
    level_ndims = twin.level_ndims[:level] + new_ndims + twin.level_ndims[level + 1 :]
    return Twin(values, level_ndims)


def torch_tile(values, ndim, tile_shape, strides, dilation, floor_mode):
    """``unfold`` every dimension; ceil mode first pads each dimension's end with
    ``stride - 1`` sentinels, so the last window may stick out (masked)."""
    for dim in range(ndim):
        size = values.shape[1 + dim]
        tile_size = size if tile_shape[dim] == -1 else tile_shape[dim]
        stride = tile_size if strides[dim] == -1 else strides[dim]
        window = dilation[dim] * (tile_size - 1) + 1
        if not floor_mode:
            values = pad_end(values, 1 + dim, stride - 1)
        values = values.unfold(1 + dim, window, stride)[..., :: dilation[dim]]
    return values, [ndim, ndim]


def pad_end(values, dim, amount):
    """``values`` with ``amount`` sentinels appended along ``dim``."""
    shape = list(values.shape)
    shape[dim] = amount
    return torch.cat([values, torch.full(shape, SENTINEL, dtype=values.dtype)], dim)


def torch_expand(values, ndim, sizes):
    """``Tensor.expand`` (``-1`` keeps a size); non-singleton sizes are passed as ``-1``."""
    return values.expand(-1, *sizes), [ndim]


def torch_squeeze(values, ndim, dims):
    """``Tensor.squeeze`` of the given dimensions of the level."""
    dims = [dims] if isinstance(dims, int) else dims
    return values.squeeze(tuple(1 + dim % ndim for dim in dims)), [ndim - len(dims)]


def torch_unsqueeze(values, ndim, dim):
    """``Tensor.unsqueeze`` (a negative ``dim`` counts among ``ndim + 1`` dimensions)."""
    position = dim if dim >= 0 else dim + ndim + 1
    return values.unsqueeze(1 + position), [ndim + 1]


def torch_permute(values, ndim, dims):
    """``Tensor.permute``."""
    return values.permute(0, *(1 + dim % ndim for dim in dims)), [ndim]


def torch_flatten(values, ndim, start_dim, end_dim):
    """``Tensor.flatten`` with NineToothed's exclusive ``end_dim`` (slice-like bounds)."""
    start, stop, _ = slice(start_dim, end_dim).indices(ndim)
    return values.flatten(1 + start, stop), [ndim - (stop - start) + 1]


def torch_pad(values, ndim, padding):
    """``F.pad`` with the sentinel (``F.pad`` lists the last dimension first)."""
    flat = [amount for pair in reversed(padding) for amount in pair]
    if not flat:
        return values, [ndim]
    return F.pad(values, flat, value=SENTINEL), [ndim]


def torch_getitem(values, ndim, key):
    """Python indexing of the level: ints, slices (negative steps too, which torch
    lacks, so they go through ``index_select``), ``None`` and ``...``."""
    items = list(key) if isinstance(key, tuple) else [key]
    consuming = sum(item is not None and item is not Ellipsis for item in items)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (ndim - consuming)
    else:
        items += [slice(None)] * (ndim - consuming)
    position = 1
    for item in items:
        if item is None:
            values = values.unsqueeze(position)
            position += 1
        elif isinstance(item, int):
            values = values.select(position, item)
        else:
            chosen = list(range(values.shape[position]))[item]
            values = values.index_select(position, torch.tensor(chosen, dtype=torch.long))
            position += 1
    return values, [position - 1]


def ravel_twin(twin: Twin, level: int) -> Twin:
    """``ravel`` from ``level``: that level and every deeper one become one level."""
    return Twin(twin.values, twin.level_ndims[:level] + [sum(twin.level_ndims[level:])])


# ------------------------------------------------------------ the comparison
def flat_source_index(indices: np.ndarray, source_shape) -> np.ndarray:
    """Row-major flat index of multi-indices ``indices[..., source_ndim]``."""
    strides = [math.prod(source_shape[dim + 1 :]) for dim in range(len(source_shape))]
    return indices @ np.asarray(strides, dtype=np.int64)


def assert_evaluation_matches(tensor, source_shape, symbols, expected, level_ndims):
    """``evaluate(tensor)`` has the levels of ``expected`` and reads, where unmasked,
    the source element it holds; it masks exactly its ``SENTINEL`` elements."""
    evaluation = evaluate(tensor, source_shape, symbols)
    expected = np.asarray(expected)
    shapes, start = [], 0
    for ndim in level_ndims:
        shapes.append(tuple(expected.shape[start : start + ndim]))
        start += ndim
    assert evaluation.level_shapes == tuple(shapes)
    unmasked = expected != SENTINEL
    np.testing.assert_array_equal(evaluation.mask, unmasked, err_msg="mask")
    flat = flat_source_index(evaluation.indices, source_shape)
    np.testing.assert_array_equal(flat[unmasked], expected[unmasked], err_msg="source index")


# -------------------------------------------------------- drawing operations
class Chain:
    """A tensor and its torch twin, changed together one meta-operation at a time."""

    def __init__(self, data, shape, symbolic):
        self.data = data
        self.symbolic = symbolic
        self.tensor = Tensor(len(shape)) if symbolic else Tensor(shape=shape)
        self.twin = source_twin(shape)
        self.symbols: dict[str, int] = {}
        self.log: list[str] = []

    def draw(self, strategy, label):
        """Draw from ``strategy`` (labelled in Hypothesis's report)."""
        return self.data.draw(strategy, label=label)

    def size(self, value, prefix):
        """``value`` as given to a meta-operation: in symbolic chains, sometimes a symbol."""
        if not self.symbolic or value == -1 or not self.draw(st.booleans(), f"{prefix} symbolic"):
            return value
        name = f"{prefix}_{len(self.symbols)}"
        self.symbols[name] = value
        return Symbol(name, constexpr=True)

    def apply(self, level, method, arguments, twin_operation):
        """Apply ``method`` to ``level`` of the tensor, and its twin to the twin's.

        Skipped when the twin would exceed :data:`MAX_ELEMENTS`.
        """
        twin = twin_operation()
        if twin.values.numel() > MAX_ELEMENTS:
            event("skipped: too many elements")
            return
        self.log.append(f"level {level}: {method}{arguments}")
        note(self.log[-1])
        event(f"{method} on {'an inner' if level else 'the outermost'} level")
        if level == 0:
            self.tensor = getattr(self.tensor, method)(*arguments)
        else:
            parent = self.tensor.levels()[level - 1]
            parent.dtype = getattr(parent.dtype, method)(*arguments)
        self.twin = twin

    def step(self, level=None, name=None):
        """Draw one meta-operation (``name`` if given) on one level (``level`` if
        given) and apply it."""
        if level is None:
            level = self.draw(st.integers(0, len(self.twin.level_ndims) - 1), "level")
        sizes = self.twin.level_shapes()[level]
        literal_ones = literal_singletons(self.tensor.levels()[level].shape)
        names = ["tile", "unsqueeze", "pad", "getitem", "ravel"]
        if sizes:
            names += ["permute", "flatten"]
        if 1 in sizes:
            names += ["squeeze"]
        if literal_ones:
            names += ["expand"]
        if name is None:
            name = self.draw(st.sampled_from(names), "operation")
        if name == "ravel":
            self.apply(level, "ravel", (), lambda: ravel_twin(self.twin, level))
            return
        draw_arguments = getattr(self, f"draw_{name}")
        arguments, twin_arguments = draw_arguments(sizes, literal_ones)
        method = "__getitem__" if name == "getitem" else name
        twin_operation = globals()[f"torch_{name}"]
        self.apply(
            level,
            method,
            arguments,
            lambda: on_level(self.twin, level, twin_operation, *twin_arguments),
        )

    # Each draw_* gets the level's concrete sizes and which of its sizes are a literal 1,
    # and returns (arguments for the meta-operation, arguments for the twin).
    def draw_tile(self, sizes, literal_ones):
        floor_mode = self.draw(st.booleans(), "floor_mode")
        tile_shape, strides, dilation = [], [], []
        for size in sizes:
            whole = self.draw(st.integers(0, 3), "whole") == 0
            tile_size = size if whole else self.draw(st.integers(1, size + 2), "tile size")
            if floor_mode:
                tile_size = min(tile_size, size)
            # Ceil mode pads stride - 1 elements, so the window must fit in size + stride - 1.
            lowest_stride = 1 if floor_mode else max(1, tile_size - size + 1)
            stride = self.draw(
                st.one_of(st.just(-1), st.integers(lowest_stride, tile_size + 1)), "stride"
            )
            room = size - 1 + (0 if floor_mode else (tile_size if stride == -1 else stride) - 1)
            most_dilation = room // (tile_size - 1) if tile_size > 1 else 3
            tile_shape.append(-1 if whole else tile_size)
            strides.append(stride)
            dilation.append(self.draw(st.integers(1, min(3, most_dilation)), "dilation"))
        twin_arguments = (tile_shape, strides, dilation, floor_mode)
        arguments = (
            tuple(self.size(value, "TILE") for value in tile_shape),
            tuple(self.size(value, "STRIDE") for value in strides),
            tuple(self.size(value, "DILATION") for value in dilation),
            floor_mode,
        )
        return arguments, twin_arguments

    def draw_expand(self, sizes, literal_ones):
        """Only literal singletons expand; other dimensions are kept with ``-1``."""
        targets = [
            self.draw(st.sampled_from([-1, 1, 2, 3, 4]), "expand to") if dim in literal_ones else -1
            for dim in range(len(sizes))
        ]
        arguments = tuple(self.size(value, "EXPAND") for value in targets)
        return (arguments,), (targets,)

    def draw_squeeze(self, sizes, literal_ones):
        """Any dimension of size 1: a symbolic size becomes a requirement, met here."""
        ones = [dim for dim, size in enumerate(sizes) if size == 1]
        dims = self.draw(st.lists(st.sampled_from(ones), min_size=1, unique=True), "dims")
        dims = [dim - len(sizes) if self.draw(st.booleans(), "negative") else dim for dim in dims]
        argument = dims[0] if len(dims) == 1 and self.draw(st.booleans(), "as int") else dims
        return (argument,), (argument,)

    def draw_unsqueeze(self, sizes, literal_ones):
        dim = self.draw(st.integers(-len(sizes) - 1, len(sizes)), "dim")
        return (dim,), (dim,)

    def draw_permute(self, sizes, literal_ones):
        order = self.draw(st.permutations(range(len(sizes))), "order")
        dims = tuple(
            dim - len(sizes) if self.draw(st.booleans(), "negative") else dim for dim in order
        )
        return (dims,), (dims,)

    def draw_flatten(self, sizes, literal_ones):
        ndim = len(sizes)
        start = self.draw(st.integers(0, ndim - 1), "start")
        stop = self.draw(st.integers(start + 1, ndim), "stop")
        start_dim = self.draw(
            st.sampled_from([start, start - ndim] + ([None] if start == 0 else [])), "start_dim"
        )
        end_dim = self.draw(
            st.sampled_from([stop, None] if stop == ndim else [stop, stop - ndim]), "end_dim"
        )
        return (start_dim, end_dim), (start_dim, end_dim)

    def draw_pad(self, sizes, literal_ones):
        """Pads of up to 2, and crops (negative pads) of 1 that leave an element."""
        pairs = []
        for size in sizes:
            before = self.draw(st.integers(-min(max(size - 1, 0), 1), 2), "pad before")
            after = self.draw(st.integers(-min(max(size + before - 1, 0), 1), 2), "pad after")
            pairs.append((before, after))
        return (tuple(pairs),), (pairs,)

    def draw_getitem(self, sizes, literal_ones):
        items = [self.draw_index(size) for size in sizes]
        if self.draw(st.booleans(), "ellipsis"):
            start = self.draw(st.integers(0, len(items)), "ellipsis start")
            stop = self.draw(st.integers(start, len(items)), "ellipsis stop")
            items[start:stop] = [Ellipsis]
        elif self.draw(st.booleans(), "drop trailing full slices"):
            while items and items[-1] == slice(None):
                items.pop()
        for _ in range(self.draw(st.integers(0, 2), "new axes")):
            items.insert(self.draw(st.integers(0, len(items)), "new axis at"), None)
        key = items[0] if len(items) == 1 and self.draw(st.booleans(), "bare") else tuple(items)
        return (key,), (key,)

    def draw_index(self, size):
        """An int, or a slice selecting at least one element, for a dimension of ``size``."""
        kind = self.draw(st.sampled_from(["int", "slice", "full"]), "index kind")
        if kind == "full":
            return slice(None)
        if kind == "int":
            return self.draw(st.integers(-size, size - 1), "int index")
        step = self.draw(st.sampled_from([None, 1, 2, 3, -1, -2, -3]), "step")
        # Symbolic sizes cannot clamp out-of-range bounds, so those stay in range.
        reach = 0 if self.symbolic else 2
        bound = st.one_of(st.none(), st.integers(-size - reach, size + reach))
        start, stop = self.draw(bound, "start"), self.draw(bound, "stop")
        item = slice(start, stop, step)
        chosen = range(size)[item]
        if not chosen or (self.symbolic and not in_range_slice(item, size)):
            return slice(None, None, step)
        return item


def literal_singletons(shape) -> list[int]:
    """The dimensions whose size is the literal ``1`` (not a symbol that may be 1)."""
    return [dim for dim, size in enumerate(shape) if isinstance(size, int) and size == 1]


def in_range_slice(item: slice, size: int) -> bool:
    """Whether the bounds of ``item`` need no clamping for a dimension of ``size``."""
    step = item.step or 1
    start_ok = item.start is None or -size <= item.start < size
    stop_ok = item.stop is None or -size <= item.stop <= (size if step > 0 else size - 1)
    if not (start_ok and stop_ok):
        return False
    first = (0 if step > 0 else size - 1) if item.start is None else item.start % size
    if item.stop is None:
        return True
    last = item.stop + size if item.stop < 0 else item.stop
    return first < last if step > 0 else first > last


shapes = (
    st.lists(st.integers(1, 9) | st.just(1), min_size=1, max_size=4)
    .map(tuple)
    .filter(lambda shape: math.prod(shape) <= 2_000)
)


def run_chain(data, shape, symbolic):
    """Apply 1–4 random meta-operations and compare the result with its torch twin."""
    chain = Chain(data, shape, symbolic)
    if data.draw(st.booleans(), label="start with a tile"):
        chain.step(level=0, name="tile")  # as arrangements do: most chains are hierarchical
    for _ in range(data.draw(st.integers(1, 4), label="chain length")):
        chain.step()
    event(f"{len(chain.twin.level_ndims)} levels")
    assert_evaluation_matches(
        chain.tensor, shape, chain.symbols, chain.twin.values, chain.twin.level_ndims
    )


@settings(max_examples=CHAIN_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), shapes)
def test_chains_on_concrete_shapes_match_torch(data, shape):
    run_chain(data, shape, symbolic=False)


@settings(max_examples=CHAIN_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), shapes)
def test_chains_on_symbolic_shapes_match_torch(data, shape):
    run_chain(data, shape, symbolic=True)


# ------------------------------------------------------------------- fixed
def test_a_wrong_twin_is_caught():
    """The comparison fails on a wrong mapping, a wrong mask and wrong level shapes."""
    tensor = Tensor(2).tile((2, 2))
    twin = on_level(source_twin((4, 4)), 0, torch_tile, (2, 2), (-1, -1), (1, 1), False)
    assert_evaluation_matches(tensor, (4, 4), {}, twin.values, twin.level_ndims)
    wrong_index = twin.values.clone()
    wrong_index[0, 0, 0, 0] = 5
    wrong_mask = twin.values.clone()
    wrong_mask[0, 0, 0, 0] = SENTINEL
    for wrong, level_ndims in [(wrong_index, [2, 2]), (wrong_mask, [2, 2]), (twin.values, [3, 1])]:
        with pytest.raises(AssertionError):
            assert_evaluation_matches(tensor, (4, 4), {}, wrong, level_ndims)


def size_symbols(tensors, shapes):
    """The values of the size symbols of ``tensors``: an arrangement may size one
    tensor's levels by another's sizes."""
    return {
        tensor.size_string(dim): size
        for tensor, shape in zip(tensors, shapes)
        for dim, size in enumerate(shape)
    }


def matmul_arrangement(
    input,
    other,
    output,
    BLOCK_SIZE_M=block_size(),  # noqa: B008 (as in the listing)
    BLOCK_SIZE_N=block_size(),  # noqa: B008 (as in the listing)
    BLOCK_SIZE_K=block_size(),  # noqa: B008 (as in the listing)
):
    """The matrix multiplication arrangement of seed 002 and the paper (Listing 5)."""
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged = other_arranged.tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)

    return input_arranged, other_arranged, output_arranged


def blocks_of(matrix: torch.Tensor, rows: int, columns: int) -> torch.Tensor:
    """``matrix`` cut into ``(rows, columns)`` blocks, ragged ones filled with sentinels:
    shape ``(row_blocks, column_blocks, rows, columns)``."""
    row_blocks, column_blocks = -(-matrix.shape[0] // rows), -(-matrix.shape[1] // columns)
    padded = torch.full((row_blocks * rows, column_blocks * columns), SENTINEL, dtype=matrix.dtype)
    padded[: matrix.shape[0], : matrix.shape[1]] = matrix
    return padded.reshape(row_blocks, rows, column_blocks, columns).permute(0, 2, 1, 3)


def expected_matmul(input, other, output, block_m, block_n, block_k):
    """What the matmul arrangement reads, per program ``(i, j)``: the ``k``-th block of
    row ``i`` of ``input``, of column ``j`` of ``other``, and block ``(i, j)`` of ``output``."""
    output_blocks = blocks_of(output, block_m, block_n)
    m_blocks, n_blocks = output_blocks.shape[:2]
    input_blocks = blocks_of(input, block_m, block_k)  # (i, k, ...)
    other_blocks = blocks_of(other, block_k, block_n).permute(1, 0, 2, 3)  # (j, k, ...)
    input_expected = input_blocks[:, None].expand(m_blocks, n_blocks, *input_blocks.shape[1:])
    other_expected = other_blocks[None].expand(m_blocks, n_blocks, *other_blocks.shape[1:])
    return input_expected, other_expected, output_blocks


MATMUL_CASES = [
    # (M, K, N, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    (4, 4, 4, 2, 2, 2),
    (10, 7, 12, 4, 8, 2),
    (5, 9, 3, 16, 2, 4),
    (1, 1, 1, 1, 1, 1),
]


@pytest.mark.parametrize(("m", "k", "n", "block_m", "block_n", "block_k"), MATMUL_CASES)
def test_matmul_arrangement(m, k, n, block_m, block_n, block_k):
    tensors = (Tensor(2), Tensor(2), Tensor(2))
    blocks = (block_size(), block_size(), block_size())
    arranged = matmul_arrangement(*tensors, *blocks)
    shapes = ((m, k), (k, n), (m, n))
    # input is expanded to output's column blocks and other to its row blocks.
    symbols = size_symbols(tensors, shapes)
    symbols.update({block.name: value for block, value in zip(blocks, (block_m, block_n, block_k))})
    matrices = [torch.arange(rows * columns).reshape(rows, columns) for rows, columns in shapes]

    expected = expected_matmul(*matrices, block_m, block_n, block_k)

    level_ndims = ([2, 1, 2], [2, 1, 2], [2, 2])
    for tensor, shape, values, ndims in zip(arranged, shapes, expected, level_ndims):
        assert_evaluation_matches(tensor, shape, symbols, values, ndims)


def im2col_arrangement(input, filter):
    """The input part of the paper's 2D convolution arrangement (Listing 8)."""
    input_arranged = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=3).flatten(start_dim=1)
    return input_arranged


def conv2d_arrangement(input, filter, output):
    """The paper's 2D convolution arrangement (Listing 8), reusing the matmul one."""
    input_arranged = im2col_arrangement(input, filter)

    filter_arranged = filter.flatten(start_dim=1)
    filter_arranged = filter_arranged.permute((1, 0))

    output_arranged = output.permute((0, 2, 3, 1)).flatten(end_dim=3)

    return matmul_arrangement(input_arranged, filter_arranged, output_arranged)


CONV2D_CASES = [
    # (N, C, H, W), (K, R, S)
    ((1, 1, 3, 3), (1, 2, 2)),
    ((2, 3, 6, 5), (4, 3, 2)),
    ((1, 2, 4, 7), (3, 1, 3)),
]


def conv2d_tensors(input_shape, filter_shape, symbolic):
    """Input, filter and output tensors: symbolic as in the paper, or of concrete shape."""
    n, c, h, w = input_shape
    k, r, s = filter_shape
    shapes = ((n, c, h, w), (k, c, r, s), (n, k, h - r + 1, w - s + 1))
    if symbolic:
        tensors = tuple(Tensor(4, shape_options={"constexpr": True}) for _ in range(3))
    else:
        tensors = tuple(Tensor(shape=shape) for shape in shapes)
    return tensors, shapes, size_symbols(tensors, shapes)


def im2col(input_shape, filter_shape):
    """torch's im2col (``F.unfold``) of a tensor of source indices: ``(N * P * Q, C * R * S)``."""
    n, c, h, w = input_shape
    _, r, s = filter_shape
    source = torch.arange(n * c * h * w, dtype=torch.float64).reshape(n, c, h, w)
    columns = F.unfold(source, (r, s))  # (N, C * R * S, P * Q)
    return columns.transpose(1, 2).reshape(-1, columns.shape[1]).long()


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "concrete"])
@pytest.mark.parametrize(("input_shape", "filter_shape"), CONV2D_CASES)
def test_conv2d_input_arrangement_is_im2col(input_shape, filter_shape, symbolic):
    (input, filter, _), shapes, symbols = conv2d_tensors(input_shape, filter_shape, symbolic)

    arranged = im2col_arrangement(input, filter)

    expected = im2col(input_shape, filter_shape)
    assert_evaluation_matches(arranged, shapes[0], symbols, expected, [2])


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "concrete"])
@pytest.mark.parametrize(("input_shape", "filter_shape"), CONV2D_CASES)
def test_conv2d_arrangement_is_a_matmul_of_im2col(input_shape, filter_shape, symbolic):
    tensors, shapes, symbols = conv2d_tensors(input_shape, filter_shape, symbolic)
    blocks = dict(zip(("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"), (4, 2, 8)))

    arranged = conv2d_arrangement(*tensors)

    # The meta symbols are the block_size() defaults of matmul_arrangement.
    defaults = matmul_arrangement.__defaults__
    symbols.update({block.name: blocks[name] for block, name in zip(defaults, blocks)})
    k, c, r, s = shapes[1]
    filter_matrix = torch.arange(k * c * r * s).reshape(k, c * r * s).T
    output_matrix = torch.arange(math.prod(shapes[2])).reshape(shapes[2])
    output_matrix = output_matrix.permute(0, 2, 3, 1).reshape(-1, k)
    expected = expected_matmul(
        im2col(input_shape, filter_shape), filter_matrix, output_matrix, *blocks.values()
    )
    level_ndims = ([2, 1, 2], [2, 1, 2], [2, 2])
    for tensor, shape, values, ndims in zip(arranged, shapes, expected, level_ndims):
        assert_evaluation_matches(tensor, shape, symbols, values, ndims)


VECTOR_SIZE = 7


def window_fits(tile_size, stride, dilation, floor_mode, size=VECTOR_SIZE):
    """Whether at least one tile starts in a dimension of ``size`` (ceil mode may pad
    ``stride - 1`` elements)."""
    tile_size = size if tile_size == -1 else tile_size
    stride = tile_size if stride == -1 else stride
    room = size if floor_mode else size + stride - 1
    return dilation * (tile_size - 1) + 1 <= room


TILE_OPTIONS = [
    ((tile_size,), (stride,), (dilation,), floor_mode)
    for tile_size, stride, dilation, floor_mode in itertools.product(
        [3, -1, 9], [-1, 1, 2, 4], [1, 2], [False, True]
    )
    if window_fits(tile_size, stride, dilation, floor_mode)
]


@pytest.mark.parametrize(("tile_shape", "strides", "dilation", "floor_mode"), TILE_OPTIONS)
def test_tile_options_on_a_vector(tile_shape, strides, dilation, floor_mode):
    """Every tile option on one small vector, symbolic and concrete."""
    size = VECTOR_SIZE
    twin = on_level(source_twin((size,)), 0, torch_tile, tile_shape, strides, dilation, floor_mode)
    for source in (Tensor(1), Tensor(shape=(size,))):
        tensor = source.tile(tile_shape, strides=strides, dilation=dilation, floor_mode=floor_mode)
        assert_evaluation_matches(tensor, (size,), {}, twin.values, twin.level_ndims)


def test_every_slice_of_a_vector():
    """Every slice of a vector of 5 (clamped bounds too where the size is concrete)."""
    size = 5
    bounds = [None, *range(-size - 2, size + 3)]
    for start, stop, step in itertools.product(bounds, bounds, [None, 1, 2, 3, -1, -2, -3]):
        item = slice(start, stop, step)
        chosen = list(range(size))[item]
        if not chosen:
            continue
        sources = [Tensor(shape=(size,))]
        if in_range_slice(item, size):
            sources.append(Tensor(1))
        for source in sources:
            evaluation = evaluate(source[item], (size,))
            assert evaluation.level_shapes == ((len(chosen),),), (item, source)
            assert evaluation.indices[..., 0].tolist() == chosen, (item, source)
            assert evaluation.mask.all(), (item, source)
