"""The seed documents' snippets about symbols and tensors, run as written.

The transcripts below are copied from the seed documents (the Chinese
tutorial ``000``, the English tutorial ``002`` and the paper ``004``).  Unnamed
tensors are numbered by a process-wide counter (the first one is
``ninetoothed_tensor_0``), so each transcript runs as a doctest in a fresh
interpreter.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ninetoothed
from ninetoothed import Symbol, Tensor, block_size
from ninetoothed.arrangement.symbol import evaluate
from ninetoothed.errors import ArrangementError
from ninetoothed.spec._build import build_spec

SOURCE_ROOT = Path(ninetoothed.__file__).resolve().parents[1]
"""The ``src`` folder holding the ``ninetoothed`` package."""

REPOSITORY = Path(__file__).resolve().parents[3]
VENDORED = REPOSITORY / "tests" / "seeds"
"""The repository's copy of the seed documents (it travels with every clone)."""
SHARED = REPOSITORY.parent / "shared" / "seeds"
"""The seed documents beside a developer's checkout, when present."""
SEEDS = Path(os.environ.get("NT_SEEDS_DIR") or (SHARED if SHARED.is_dir() else VENDORED))
"""Where the seed documents are read from: ``$NT_SEEDS_DIR``, else ``../shared/seeds``
beside the repository root, else the repository's copy (``tests/seeds``)."""

# --------------------------------------------------------------- transcripts
# 000 (Chinese tutorial), "符号", "符号张量" and "面向张量的元编程", verbatim.
TUTORIAL_000 = """\
>>> from ninetoothed import Symbol
>>> BLOCK_SIZE_M = Symbol("BLOCK_SIZE_M")
>>> BLOCK_SIZE_M
BLOCK_SIZE_M
>>> BLOCK_SIZE_N = Symbol("BLOCK_SIZE_N")
>>> BLOCK_SIZE_N
BLOCK_SIZE_N
>>> BLOCK_SIZE_M * BLOCK_SIZE_N
BLOCK_SIZE_M * BLOCK_SIZE_N

>>> from ninetoothed import Tensor
>>> x = Tensor(2)
>>> x.shape
(ninetoothed_tensor_0_size_0, ninetoothed_tensor_0_size_1)

>>> x_tiled = x.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
>>> x_tiled.shape
((ninetoothed_tensor_0_size_0 - (BLOCK_SIZE_M - 1) - 1 + BLOCK_SIZE_M - 1) // BLOCK_SIZE_M + 1, (ninetoothed_tensor_0_size_1 - (BLOCK_SIZE_N - 1) - 1 + BLOCK_SIZE_N - 1) // BLOCK_SIZE_N + 1)
>>> x_tiled.dtype.shape
(BLOCK_SIZE_M, BLOCK_SIZE_N)

>>> BLOCK_SIZE_M = 2
>>> BLOCK_SIZE_N = 2
>>> x = Tensor(shape=(4, 8))
>>> x_tiled = x.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
>>> x_tiled.shape
(2, 4)
>>> x_tiled.dtype.shape
(2, 2)
"""  # noqa: E501

# 002 (English tutorial, "The Basics"): the code blocks of "Symbols",
# "Symbolic Tensors" and "Tensor-Oriented Metaprogramming", verbatim.
TUTORIAL_002 = """\
>>> from ninetoothed import Symbol
>>> BLOCK_SIZE_M = Symbol("BLOCK_SIZE_M")
>>> BLOCK_SIZE_M
BLOCK_SIZE_M
>>> BLOCK_SIZE_N = Symbol("BLOCK_SIZE_N")
>>> BLOCK_SIZE_N
BLOCK_SIZE_N
>>> BLOCK_SIZE_M * BLOCK_SIZE_N
BLOCK_SIZE_M * BLOCK_SIZE_N

>>> from ninetoothed import Tensor
>>> x = Tensor(2)
>>> x.shape
(ninetoothed_tensor_0_size_0, ninetoothed_tensor_0_size_1)

>>> x_tiled = x.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
>>> x_tiled.shape
((ninetoothed_tensor_0_size_0 - (BLOCK_SIZE_M - 1) - 1 + BLOCK_SIZE_M - 1) // BLOCK_SIZE_M + 1, (ninetoothed_tensor_0_size_1 - (BLOCK_SIZE_N - 1) - 1 + BLOCK_SIZE_N - 1) // BLOCK_SIZE_N + 1)
>>> x_tiled.dtype.shape
(BLOCK_SIZE_M, BLOCK_SIZE_N)

>>> BLOCK_SIZE_M = 2
>>> BLOCK_SIZE_N = 2
>>> x = Tensor(shape=(4, 8))
>>> x_tiled = x.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
>>> x_tiled.shape
(2, 4)
>>> x_tiled.dtype.shape
(2, 2)
"""  # noqa: E501

# 004 (the paper), Listing 2.  The listing leaves out the import.
PAPER_LISTING_2 = """\
>>> from ninetoothed import Tensor
>>> x = Tensor(2, name="x")
>>> x.shape
(x_size_0, x_size_1)
>>> x.strides
(x_stride_0, x_stride_1)
"""

TRANSCRIPTS = {
    "000": TUTORIAL_000,
    "002": TUTORIAL_002,
    "004": PAPER_LISTING_2,
}

SEED_FILES = {
    "000": "000_aef077b89913a792.txt",
    "002": "002_dcdadde5d1c27f60.txt",
    "004": "004_6fdaf360cca150e4.txt",
}


def run_doctest_in_fresh_interpreter(
    transcript: str, directory: Path
) -> subprocess.CompletedProcess:
    """Run ``transcript`` with ``python -m doctest`` in a new process.

    A fresh process starts the tensor counter at 0, as in the seed sessions.
    """
    path = directory / "transcript.txt"
    path.write_text(transcript, encoding="utf-8")
    environment = {**os.environ, "PYTHONPATH": str(SOURCE_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "doctest", str(path)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def normalize_whitespace(text: str) -> str:
    """``text`` with every run of whitespace made one space (002 is stored on one line)."""
    return re.sub(r"\s+", " ", text).strip()


def transcript_blocks(transcript: str) -> list[str]:
    """The blocks of a transcript (separated by blank lines): each is one code block
    of the seed document."""
    return [block for block in transcript.split("\n\n") if block.strip()]


@pytest.mark.parametrize("seed", sorted(TRANSCRIPTS))
def test_seed_transcript_prints_what_the_seed_says(seed, tmp_path):
    result = run_doctest_in_fresh_interpreter(TRANSCRIPTS[seed], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("seed", sorted(TRANSCRIPTS))
def test_transcripts_are_copied_verbatim_from_the_seeds(seed):
    """Guards the copies above against typos, where the seed documents are present."""
    path = SEEDS / SEED_FILES[seed]
    assert path.exists(), f"seed document {path} not found (NT_SEEDS_DIR points elsewhere?)"
    document = normalize_whitespace(path.read_text(encoding="utf-8"))
    for block in transcript_blocks(TRANSCRIPTS[seed]):
        if seed == "004":
            block = block.removeprefix(">>> from ninetoothed import Tensor\n")
        assert normalize_whitespace(block) in document


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/seeds beside this checkout")
def test_the_repositorys_copy_of_the_seeds_matches_the_shared_one():
    """The copy in tests/seeds (what CI reads) has not drifted from ../shared/seeds."""
    shared = sorted(path.name for path in SHARED.glob("*.txt"))
    assert shared == sorted(path.name for path in VENDORED.glob("*.txt"))
    for name in shared:
        assert (VENDORED / name).read_bytes() == (SHARED / name).read_bytes(), name


def test_transcripts_fail_when_the_output_differs(tmp_path):
    """The doctest runner really compares outputs (a wrong expectation fails)."""
    wrong = PAPER_LISTING_2.replace("(x_size_0, x_size_1)", "(x_size_0, x_size_2)")
    result = run_doctest_in_fresh_interpreter(wrong, tmp_path)
    assert result.returncode != 0


# ------------------------------------------------------------ arrangements
def application(input, other, output):
    """A stand-in application: ``build_spec`` only reads its parameter names."""


def matmul_arrangement_000(lhs, rhs, output):
    """The matrix multiplication arrangement of seed 000 (``Symbol(meta=True)``)."""
    BLOCK_SIZE_M = Symbol("BLOCK_SIZE_M", meta=True)
    BLOCK_SIZE_N = Symbol("BLOCK_SIZE_N", meta=True)
    BLOCK_SIZE_K = Symbol("BLOCK_SIZE_K", meta=True)

    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    lhs_arranged = lhs.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    lhs_arranged = lhs_arranged.tile((1, -1))
    lhs_arranged = lhs_arranged.expand((-1, output_arranged.shape[1]))
    lhs_arranged.dtype = lhs_arranged.dtype.squeeze(0)

    rhs_arranged = rhs.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    rhs_arranged = rhs_arranged.tile((-1, 1))
    rhs_arranged = rhs_arranged.expand((output_arranged.shape[0], -1))
    rhs_arranged.dtype = rhs_arranged.dtype.squeeze(1)

    return lhs_arranged, rhs_arranged, output_arranged


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


def matmul_arrangement_before_expand(
    input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K
):
    """The tutorial's intermediate matmul arrangement: row and column blocks, no ``expand``.

    The tutorial points out that its outermost shapes disagree.
    """
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))
    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))
    return input_arranged, other_arranged, output_arranged


class mm:
    """Stands for the paper's ``mm`` module, whose arrangement Listing 8 reuses."""

    arrangement = staticmethod(matmul_arrangement)
    application = staticmethod(application)


def conv2d_arrangement(input, filter, output):
    """The paper's 2D convolution arrangement (Listing 8), verbatim."""
    input_arranged = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=3).flatten(start_dim=1)

    filter_arranged = filter.flatten(start_dim=1)
    filter_arranged = filter_arranged.permute((1, 0))

    output_arranged = output.permute((0, 2, 3, 1)).flatten(end_dim=3)

    return mm.arrangement(input_arranged, filter_arranged, output_arranged)


def size_values(tensors, layouts, sizes):
    """Values for the size symbols of ``tensors``: ``layouts[i][d]`` names the size
    (a key of ``sizes``) of dimension ``d`` of tensor ``i``."""
    values = {}
    for tensor, layout in zip(tensors, layouts):
        for index, dim in enumerate(layout):
            values[tensor.size_string(index)] = sizes[dim]
    return values


def concrete(shape, values):
    """``shape`` with every size evaluated on ``values``."""
    return tuple(evaluate(size, values) for size in shape)


def level_shapes(tensor):
    """The shape of every level of ``tensor``, outermost first."""
    return [level.shape for level in tensor.levels()]


def test_matmul_arrangement_of_seed_000_builds():
    tensors = (Tensor(2), Tensor(2), Tensor(2))
    spec = build_spec(application, tensors, matmul_arrangement_000(*tensors))

    assert set(spec.meta_symbols) == {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"}
    assert spec.constexpr_symbols == {} and spec.runtime_symbols == {}
    lhs_arranged, rhs_arranged, _ = (p.arranged for p in spec.parameters)
    assert [len(shape) for shape in level_shapes(lhs_arranged)] == [2, 1, 2]
    assert [len(shape) for shape in level_shapes(rhs_arranged)] == [2, 1, 2]
    BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K = map(
        Symbol, ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K")
    )
    assert lhs_arranged.dtype.dtype.shape == (BLOCK_SIZE_M, BLOCK_SIZE_K)
    assert rhs_arranged.dtype.dtype.shape == (BLOCK_SIZE_K, BLOCK_SIZE_N)

    # (M, K) = (10, 7), (K, N) = (7, 12), blocks (4, 8, 2): every outermost level is (3, 2).
    values = size_values(tensors, ("MK", "KN", "MN"), {"M": 10, "K": 7, "N": 12})
    values.update({"BLOCK_SIZE_M": 4, "BLOCK_SIZE_N": 8, "BLOCK_SIZE_K": 2})
    for parameter in spec.parameters:
        assert concrete(parameter.arranged.shape, values) == (3, 2)
    assert concrete(spec.grid, values) == (3, 2)


def test_matmul_arrangement_of_seed_002_and_the_paper_builds():
    tensors = (Tensor(2), Tensor(2), Tensor(2))
    spec = build_spec(application, tensors, matmul_arrangement(*tensors))

    assert [p.name for p in spec.parameters] == ["input", "other", "output"]
    assert len(spec.meta_symbols) == 3
    assert all(symbol.power_of_two for symbol in spec.meta_symbols.values())
    assert all(name.startswith("BLOCK_SIZE_") for name in spec.meta_symbols)
    input_arranged, other_arranged, _ = (p.arranged for p in spec.parameters)
    # input[k] and other[k] are the k-th blocks of a row and of a column.
    assert input_arranged.dtype.ndim == other_arranged.dtype.ndim == 1

    # (M, K) = (10, 7), (K, N) = (7, 12), blocks (4, 8, 2): every outermost level is (3, 2).
    values = size_values(tensors, ("MK", "KN", "MN"), {"M": 10, "K": 7, "N": 12})
    values.update(zip(spec.meta_symbols, (4, 8, 2)))
    for parameter in spec.parameters:
        assert concrete(parameter.arranged.shape, values) == (3, 2)
    assert concrete(spec.grid, values) == (3, 2)


def test_the_tutorials_outermost_shapes_before_expand_are_the_ones_it_lists():
    """002: 'the shapes of the outermost tensors ... are (4, 1), (1, 4), and (4, 4)'."""
    tensors = tuple(Tensor(shape=(8, 8)) for _ in range(3))
    arranged = matmul_arrangement_before_expand(*tensors, 2, 2, 2)
    assert [tensor.shape for tensor in arranged] == [(4, 1), (1, 4), (4, 4)]


def test_matmul_arrangement_before_expand_is_an_arrangement_error_naming_each_shape():
    tensors = tuple(Tensor(shape=(8, 8)) for _ in range(3))
    arranged = matmul_arrangement_before_expand(*tensors, 2, 2, 2)

    with pytest.raises(ArrangementError) as raised:
        build_spec(application, tensors, arranged)

    message = str(raised.value)
    assert "input: (4, 1)" in message
    assert "other: (1, 4)" in message
    assert "output: (4, 4)" in message


def test_symbolic_matmul_arrangement_before_expand_is_an_arrangement_error():
    tensors = (Tensor(2), Tensor(2), Tensor(2))
    blocks = (block_size(), block_size(), block_size())
    arranged = matmul_arrangement_before_expand(*tensors, *blocks)

    with pytest.raises(ArrangementError) as raised:
        build_spec(application, tensors, arranged)

    message = str(raised.value)
    for parameter, tensor in zip(("input", "other", "output"), arranged):
        sizes = ", ".join(str(size) for size in tensor.shape)
        assert f"{parameter}: ({sizes})" in message
    # The row blocks of input have one column, the column blocks of other one row.
    assert re.search(r"input: \(.*, 1\)", message)
    assert re.search(r"other: \(1, .*\)", message)


CONV2D_LAYOUTS = ("NCHW", "KCRS", "NKPQ")
CONV2D_SIZES = {"N": 2, "C": 3, "H": 6, "W": 5, "K": 4, "R": 3, "S": 2, "P": 4, "Q": 4}
"""A small convolution: P = H - R + 1 and Q = W - S + 1."""


def test_conv2d_arrangement_of_the_paper_builds():
    shape_options = {"constexpr": True}
    tensors = tuple(Tensor(4, shape_options=shape_options) for _ in range(3))

    spec = build_spec(mm.application, tensors, conv2d_arrangement(*tensors))

    assert len(spec.meta_symbols) == 3
    assert spec.runtime_symbols == {}
    for tensor in tensors:
        assert all(size.constexpr for size in tensor.shape)
    # The im2col matrix is (N * P * Q, C * R * S) = (32, 18) and the output (32, K) = (32, 4):
    # blocks of 16 give a grid of (2, 1) programs.
    values = size_values(tensors, CONV2D_LAYOUTS, CONV2D_SIZES)
    values.update(dict.fromkeys(spec.meta_symbols, 16))
    for parameter in spec.parameters:
        assert concrete(parameter.arranged.shape, values) == (2, 1)


def test_conv2d_arrangement_builds_on_tensors_of_concrete_shape():
    tensors = tuple(
        Tensor(shape=tuple(CONV2D_SIZES[dim] for dim in layout)) for layout in CONV2D_LAYOUTS
    )

    spec = build_spec(mm.application, tensors, conv2d_arrangement(*tensors))

    assert len(spec.meta_symbols) == 3
    values = dict.fromkeys(spec.meta_symbols, 16)
    for parameter in spec.parameters:
        assert concrete(parameter.arranged.shape, values) == (2, 1)
