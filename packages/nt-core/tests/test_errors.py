"""Every error of the language core: its type, and a message that names the tensor
or parameter and the expected and actual values."""

from __future__ import annotations

import re

import pytest

from ninetoothed import Symbol, Tensor
from ninetoothed.arrangement.reference import evaluate
from ninetoothed.errors import ArrangementError, MetaOperationError, NineToothedError
from ninetoothed.spec._build import build_spec


def matrix(name="x", shape=(4, 8)):
    """A named tensor of concrete shape, so messages can be matched exactly."""
    return Tensor(shape=shape, name=name)


def test_errors_are_nine_toothed_errors_and_value_errors():
    for error in (ArrangementError, MetaOperationError):
        assert issubclass(error, NineToothedError)
        assert issubclass(error, ValueError)


# ------------------------------------------------------------ wrong ranks
@pytest.mark.parametrize(
    ("operation", "name", "parameter", "argument"),
    [
        (lambda x, a: x.tile(a), "tile", "tile_shape", (2,)),
        (lambda x, a: x.tile((2, 2), strides=a), "tile", "strides", (1, 1, 1)),
        (lambda x, a: x.tile((2, 2), dilation=a), "tile", "dilation", (1,)),
        (lambda x, a: x.expand(a), "expand", "sizes", (4,)),  # extra sizes are ignored, as upstream
        (lambda x, a: x.pad(a), "pad", "padding", ((1, 1),)),
    ],
)
def test_wrong_number_of_entries(operation, name, parameter, argument):
    pattern = (
        rf"{name} on x: {parameter} {re.escape(str(argument))} has {len(argument)} entries, "
        r"but the tensor has 2 dimensions \(shape \(4, 8\)\)"
    )
    with pytest.raises(MetaOperationError, match=pattern):
        operation(matrix(), argument)


def test_wrong_number_of_entries_on_a_tile_level_names_the_source():
    tiled = matrix("source_name").tile((2, 2))
    with pytest.raises(MetaOperationError, match="tile on source_name: tile_shape"):
        tiled.dtype.tile((2,))


@pytest.mark.parametrize(
    ("operation", "pattern"),
    [
        (lambda x: x.tile(2), "tile: tile_shape must be a tuple or list, got int 2"),
        (lambda x: x.expand(4), "expand: sizes must be a tuple or list, got int 4"),
        (lambda x: x.permute(0), "permute: dims must be a tuple or list, got int 0"),
        (lambda x: x.pad(1), "pad: padding must be a tuple or list, got int 1"),
    ],
)
def test_sequence_arguments_must_be_sequences(operation, pattern):
    with pytest.raises(MetaOperationError, match=pattern):
        operation(matrix())


# ------------------------------------------------------- squeeze / expand
def test_squeezing_a_non_singleton():
    with pytest.raises(MetaOperationError, match="squeeze on x: dimension 1 has size 8, not 1"):
        matrix().squeeze(1)


def test_squeezed_symbolic_size_must_be_one_on_concrete_sizes():
    """A symbolic size may be 1 at run time, so squeezing it is a requirement, checked
    when the sizes are known."""
    squeezed = Tensor(2, name="x").squeeze(0)
    assert evaluate(squeezed, (1, 3)).level_shapes == ((3,),)
    pattern = "squeeze on x: dimension 0 must have size 1, got 4"
    with pytest.raises(ArrangementError, match=pattern):
        evaluate(squeezed, (4, 3))


def test_conv2d_channels_must_agree():
    """The paper's conv2d squeezes the input's channel tiles: C of input and filter agree."""
    input, filter = Tensor(4, name="input"), Tensor(4, name="filter")
    tiled = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1)).squeeze(1)
    filter_sizes = {filter.size_string(dim): size for dim, size in enumerate((2, 3, 2, 2))}
    assert evaluate(tiled, (1, 3, 4, 4), filter_sizes).level_shapes[0] == (1, 3, 3)
    with pytest.raises(ArrangementError, match="squeeze on input: dimension 1 must have size 1"):
        evaluate(tiled, (1, 4, 4, 4), filter_sizes)


def test_squeezing_a_dimension_twice():
    with pytest.raises(MetaOperationError, match=r"squeeze: dimension repeated in \(0, -2\)"):
        matrix(shape=(1, 8)).squeeze((0, -2))


def test_squeezing_out_of_range():
    with pytest.raises(MetaOperationError, match="squeeze on x: dimension 2 is out of range"):
        matrix().squeeze(2)


def test_expanding_a_non_singleton_to_another_size():
    pattern = "expand on x: dimension 0 has size 4, not 1, so it cannot be expanded to 8"
    with pytest.raises(MetaOperationError, match=pattern):
        matrix().expand((8, -1))


def test_expanding_to_a_negative_size():
    with pytest.raises(MetaOperationError, match=r"sizes\[0\] must be non-negative, got -2"):
        matrix(shape=(1, 8)).expand((-2, -1))


# ------------------------------------------------------------------ permute
@pytest.mark.parametrize("dims", [(0, 0), (1, -1), (0,), (1, 0, 1)])
def test_permute_with_a_non_permutation(dims):
    pattern = rf"permute on x: {re.escape(str(dims))} is not a permutation of \(0, 1\)"
    with pytest.raises(MetaOperationError, match=pattern):
        matrix().permute(dims)


@pytest.mark.parametrize(("dims", "dim"), [((0, -3), -3), ((0, 1, 2), 2)])
def test_permute_out_of_range(dims, dim):
    pattern = f"permute on x: dimension {dim} is out of range for 2 dimensions"
    with pytest.raises(MetaOperationError, match=pattern):
        matrix().permute(dims)


# ------------------------------------------------------------------ flatten
@pytest.mark.parametrize(
    ("start_dim", "end_dim", "pattern"),
    [
        (3, None, "flatten on x: start_dim 3 is out of range for 2 dimensions"),
        (-3, None, "flatten on x: start_dim -3 is out of range for 2 dimensions"),
        (None, 3, "flatten on x: end_dim 3 is out of range for 2 dimensions"),
        (1, 1, r"flatten on x: start_dim 1 must come before end_dim 1 \(exclusive\)"),
        (1, 0, r"flatten on x: start_dim 1 must come before end_dim 0 \(exclusive\)"),
        (None, -2, r"flatten on x: start_dim None must come before end_dim -2 \(exclusive\)"),
    ],
)
def test_flatten_with_bad_dims(start_dim, end_dim, pattern):
    with pytest.raises(MetaOperationError, match=pattern):
        matrix().flatten(start_dim, end_dim)


# ------------------------------------------------------------------ unsqueeze
@pytest.mark.parametrize("dim", [3, -4])
def test_unsqueeze_out_of_range(dim):
    pattern = f"unsqueeze on x: dim {dim} is out of range for 3 dimensions"
    with pytest.raises(MetaOperationError, match=pattern):
        matrix().unsqueeze(dim)


# ------------------------------------------------------------------ indexing
def test_too_many_indices():
    with pytest.raises(MetaOperationError, match="too many indices for x: 3 given, 2 dimensions"):
        matrix()[0, 0, 0]


def test_new_axes_do_not_count_as_indices():
    assert matrix()[None, 0, None, 0].shape == (1, 1)


def test_two_ellipses():
    with pytest.raises(MetaOperationError, match=r"\bx\b.*single ellipsis|single ellipsis.*\bx\b"):
        matrix()[..., 0, ...]


@pytest.mark.parametrize(("index", "dim", "size"), [(4, 0, 4), (-5, 0, 4), (8, 1, 8)])
def test_integer_index_out_of_range(index, dim, size):
    key = (index,) if dim == 0 else (slice(None), index)
    pattern = f"index {index} is out of range for dimension {dim} of x with size {size}"
    with pytest.raises(MetaOperationError, match=pattern):
        matrix()[key]


@pytest.mark.parametrize("step", [0, 1.5, Symbol("s")])
def test_slice_step_must_be_a_non_zero_int(step):
    pattern = f"slice step for dimension 1 of x must be a non-zero int, got {step}"
    with pytest.raises(MetaOperationError, match=re.escape(pattern)):
        matrix()[:, ::step]


@pytest.mark.parametrize("item", ["a", 1.5, True, [0]])
def test_index_of_unsupported_type(item):
    pattern = f"cannot index x with {type(item).__name__}"
    with pytest.raises(MetaOperationError, match=pattern):
        matrix()[item]


# ---------------------------------------------------------------------- tile
@pytest.mark.parametrize(
    ("keyword", "value", "pattern"),
    [
        ("tile_shape", (0, 2), r"tile_shape\[0\] must be positive, got 0"),
        ("tile_shape", (2, -2), r"tile_shape\[1\] must be positive, got -2"),
        ("strides", (0, -1), r"strides\[0\] must be positive, got 0"),
        ("dilation", (1, 0), r"dilation\[1\] must be positive, got 0"),
        ("tile_shape", (2, 2.5), r"tile_shape\[1\] must be an int or a Symbol, got float 2.5"),
    ],
)
def test_tile_sizes_must_be_positive(keyword, value, pattern):
    arguments = {"tile_shape": (2, 2), keyword: value}
    with pytest.raises(MetaOperationError, match=pattern):
        matrix().tile(**arguments)


# ----------------------------------------------------------------------- pad
@pytest.mark.parametrize(
    ("padding", "pattern"),
    [
        (((1, 1), (1,)), r"pad on x: padding\[1\] must be a \(before, after\) pair .*, got \(1,\)"),
        (((1, 1), 2), r"pad on x: padding\[1\] must be a \(before, after\) pair .*, got 2"),
        (((-3, -2), (0, 0)), r"padding\[0\] = \(-3, -2\) crops more than the 4 elements"),
    ],
)
def test_bad_padding(padding, pattern):
    with pytest.raises(MetaOperationError, match=pattern):
        matrix().pad(padding)


# ------------------------------------------------------------- constructor
def test_tensor_needs_ndim_or_shape():
    with pytest.raises(MetaOperationError, match="Tensor needs ndim or shape"):
        Tensor()


def test_ndim_and_shape_disagree():
    pattern = r"ndim=3 disagrees with shape \(4, 8\) of 2 dimensions"
    with pytest.raises(MetaOperationError, match=pattern):
        Tensor(3, shape=(4, 8))


@pytest.mark.parametrize("ndim", [-1, 1.0, "2"])
def test_ndim_must_be_a_non_negative_int(ndim):
    with pytest.raises(MetaOperationError, match=f"ndim must be a non-negative int, got {ndim!r}"):
        Tensor(ndim)


def test_shape_options_length_mismatch():
    pattern = "shape_options has 3 entries, but the tensor has 2 dimensions"
    with pytest.raises(MetaOperationError, match=pattern):
        Tensor(2, shape_options=({}, {}, {}))


def test_strides_length_mismatch():
    with pytest.raises(MetaOperationError, match=r"Tensor x: strides \(1,\) do not have 2 entries"):
        Tensor(2, name="x", strides=(1,))


def test_bad_tensor_name():
    with pytest.raises(MetaOperationError, match="name must be a Python identifier, got 'x y'"):
        Tensor(2, name="x y")


@pytest.mark.parametrize("keyword", [{"constexpr": True}, {"value": 3}])
def test_constexpr_and_value_apply_to_scalars_only(keyword):
    with pytest.raises(MetaOperationError, match="Tensor x: constexpr/value apply to scalars"):
        Tensor(1, name="x", **keyword)


def test_shape_entries_must_be_non_negative_ints_or_symbols():
    with pytest.raises(MetaOperationError, match=r"shape\[1\] must be non-negative, got -4"):
        Tensor(shape=(4, -4))


# ----------------------------------------------------- levels of a hierarchy
def test_arranged_level_has_no_strides():
    tiled = matrix().tile((2, 2))
    for level in (tiled, tiled.dtype, matrix().permute((1, 0))):
        with pytest.raises(AttributeError, match="an arranged level of x has no strides"):
            _ = level.strides


def test_source_tensor_has_strides():
    assert matrix().strides == (Symbol("x_stride_0"), Symbol("x_stride_1"))


def test_dtype_from_another_source():
    x = matrix("x").tile((2, 2))
    y = matrix("y").tile((2, 2))
    pattern = (
        "the dtype of a level of x must be derived from the same source tensor, "
        "got a tensor derived from y"
    )
    with pytest.raises(MetaOperationError, match=pattern):
        x.dtype = y.dtype


def test_levels_rearranged_in_two_ways_cannot_be_united():
    x = matrix().tile((2, 2))
    inner = x.dtype
    x.dtype = inner.tile((1, 2))
    with pytest.raises(MetaOperationError, match="rearranged in two different ways"):
        x.dtype = inner.tile((2, 1))


# ------------------------------------------------------------------ build_spec
def application(input, other, output):
    """A stand-in application: only its parameter names matter."""


def test_outermost_shapes_must_agree():
    tensors = (matrix("a"), matrix("b"), matrix("c", shape=(4, 4)))
    arranged = tuple(tensor.tile((2, 2)) for tensor in tensors)
    pattern = r"input: \(2, 4\); other: \(2, 4\); output: \(2, 2\)"
    with pytest.raises(ArrangementError, match=pattern):
        build_spec(application, tensors, arranged)


def test_outermost_ranks_must_agree():
    tensors = (matrix("a"), matrix("b"), matrix("c"))
    arranged = (tensors[0].tile((2, 2)), tensors[1].tile((2, 2)), tensors[2].tile((2, 2)).ravel())
    with pytest.raises(ArrangementError, match=r"output: \(2, 4, 2, 2\)"):
        build_spec(application, tensors, arranged)


def test_application_and_tensors_disagree_in_number():
    tensors = (matrix("a"), matrix("b"))
    pattern = r"application takes 3 parameters \(input, other, output\), but 2 tensors were given"
    with pytest.raises(ArrangementError, match=pattern):
        build_spec(application, tensors, tensors)


def test_arrangement_returns_the_wrong_number_of_tensors():
    tensors = (matrix("a"), matrix("b"), matrix("c"))
    with pytest.raises(ArrangementError, match="returned 2 tensors for 3 parameters"):
        build_spec(application, tensors, tensors[:2])


def test_arrangement_returns_something_else_than_a_tensor():
    tensors = (matrix("a"), matrix("b"), matrix("c"))
    with pytest.raises(ArrangementError, match="returned int 3 for parameter 'other'"):
        build_spec(application, tensors, (tensors[0], 3, tensors[2]))


def test_arrangement_result_derived_from_another_parameter():
    tensors = (matrix("a"), matrix("b"), matrix("c"))
    pattern = (
        "result for 'other' is derived from the tensor given for 'input' \\(a\\), "
        "not from the tensor given for it \\(b\\)"
    )
    with pytest.raises(ArrangementError, match=pattern):
        build_spec(application, tensors, (tensors[0], tensors[0], tensors[2]))


def test_arrangement_result_derived_from_a_tensor_not_given():
    tensors = (matrix("a"), matrix("b"), matrix("c"))
    pattern = "result for 'other' is derived from a tensor not given to make \\(elsewhere\\)"
    with pytest.raises(ArrangementError, match=pattern):
        build_spec(application, tensors, (tensors[0], matrix("elsewhere"), tensors[2]))


# -------------------------------------------------------------------- evaluate
def test_evaluate_with_a_source_shape_of_the_wrong_rank():
    pattern = r"x has 2 dimensions, got source shape \(4,\)"
    with pytest.raises(ArrangementError, match=pattern):
        evaluate(Tensor(2, name="x").tile((2, 2)), (4,))


def test_evaluate_without_a_value_for_a_symbol():
    tiled = Tensor(1, name="x").tile((Symbol("BLOCK"),))
    with pytest.raises(ArrangementError, match="size .*BLOCK.* of x: no value for 'BLOCK'"):
        evaluate(tiled, (8,))
