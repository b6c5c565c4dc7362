"""The kernels the ahead-of-time GPU tests and benchmark build: add, a tuned mm, attention.

``add`` is made with ``caller="cuda"``; ``mm_premake`` is built with
``ninetoothed.build`` over dtypes (the key) and block sizes and warps
(tuned); ``attention_premake`` is an online-softmax attention over
``(batch, heads, seq, emb_dim)`` with a literal ``emb_dim`` and a float
scale, made with ``caller="cuda"``.  :func:`consumer_command` compiles the C and
C++ programs that call them (``aot_consumer.c``, ``aot_consumer.cpp``).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from pathlib import Path

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor


def add_arrangement(x, y, z, block_size=1024):
    return x.tile((block_size,)), y.tile((block_size,)), z.tile((block_size,))


def add_application(x, y, z):
    z = x + y  # noqa: F841


def add_tensors(dtype):
    return tuple(Tensor(1, dtype=dtype) for _ in range(3))


def mm_arrangement(a, b, c, block_size_m, block_size_n, block_size_k):
    c_tiled = c.tile((block_size_m, block_size_n))
    a_tiled = a.tile((block_size_m, block_size_k)).tile((1, -1)).expand((-1, c_tiled.shape[1]))
    a_tiled.dtype = a_tiled.dtype.squeeze(0)
    b_tiled = b.tile((block_size_k, block_size_n)).tile((-1, 1)).expand((c_tiled.shape[0], -1))
    b_tiled.dtype = b_tiled.dtype.squeeze(1)
    return a_tiled, b_tiled, c_tiled


def mm_application(a, b, c):
    accumulator = ntl.zeros(c.shape, dtype=ntl.float32)
    for k in range(a.shape[0]):
        accumulator += ntl.dot(a[k], b[k])
    c = accumulator  # noqa: F841


def mm_premake(dtype, block_size_m=64, block_size_n=64, block_size_k=32):
    arrangement = functools.partial(
        mm_arrangement,
        block_size_m=block_size_m,
        block_size_n=block_size_n,
        block_size_k=block_size_k,
    )
    return arrangement, mm_application, tuple(Tensor(2, dtype=dtype) for _ in range(3))


def mm_configs(dtypes=(ninetoothed.float16, ninetoothed.bfloat16, ninetoothed.float32)):
    """Per dtype, four block shapes and two warp counts to tune over."""
    return tuple(
        (
            (),
            {"dtype": dtype, "block_size_m": m, "block_size_n": n, "block_size_k": 32},
            {"num_warps": warps, "num_stages": 3},
        )
        for dtype in dtypes
        for m, n in ((64, 64), (128, 64), (64, 128), (128, 128))
        for warps in (4, 8)
    )


def _rows(tensor, block):
    arranged = tensor.tile((1, 1, block, -1))
    arranged.dtype = arranged.dtype.squeeze((0, 1))
    return arranged


def attention_arrangement(q, k, v, scale, o, block_m=64, block_n=64):
    q_arranged = _rows(q, block_m)
    count = q_arranged.shape[-2]
    walked = []
    for tensor in (k, v):
        arranged = tensor.tile((1, 1, block_n, -1)).tile((1, 1, -1, -1))
        arranged = arranged.expand((-1, -1, count, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))
        walked.append(arranged)
    return q_arranged, *walked, scale, _rows(o, block_m)


def attention_application(q, k, v, scale, o):
    scaled = (q * scale).to(q.dtype)
    total = ntl.zeros((q.shape[-2],), dtype=ntl.float32)
    peak = ntl.full((q.shape[-2],), float("-inf"), dtype=ntl.float32)
    out = ntl.zeros((q.shape[-2], q.shape[-1]), dtype=ntl.float32)
    for i in range(k.shape[0]):
        scores = ntl.dot(scaled, ntl.trans(k[i]))
        scores = ntl.where(k[i].offsets(-2)[None, :] < k.source.shape[-2], scores, float("-inf"))
        new_peak = ntl.maximum(peak, ntl.max(scores, 1))
        weights = ntl.exp(scores - new_peak[:, None])
        decay = ntl.exp(peak - new_peak)
        total = total * decay + ntl.sum(weights, 1)
        out = out * decay[:, None] + ntl.dot(weights.to(v.dtype.dtype), v[i])
        peak = new_peak
    o = out / total[:, None]  # noqa: F841


def attention_tensors(dtype, emb_dim=64):
    shape = (None, None, None, emb_dim)
    q, k, v, o = (Tensor(shape=shape, dtype=dtype) for _ in range(4))
    return q, k, v, Tensor(0, dtype=ninetoothed.float32), o


def make_all(directory, target=None, dtype=ninetoothed.float32):
    """The three libraries in ``directory``: ``add``, ``mm`` (built, tuned), ``attention``."""
    add = ninetoothed.make(
        add_arrangement,
        add_application,
        add_tensors(dtype),
        caller="cuda",
        kernel_name="add",
        output_dir=directory,
        target=target,
    )
    mm = ninetoothed.build(
        mm_premake,
        mm_configs(),
        meta_parameters=("block_size_m", "block_size_n", "block_size_k"),
        kernel_name="mm",
        output_dir=directory,
        target=target,
    )
    attention = ninetoothed.make(
        attention_arrangement,
        attention_application,
        attention_tensors(dtype),
        caller="cuda",
        kernel_name="attention",
        output_dir=directory,
        target=target,
    )
    return add, mm, attention


def libcuda_directory() -> Path:
    """The directory of the ``libcuda.so.1`` this process loads (containers mount the
    driver's outside the linker's default paths)."""
    ctypes.CDLL("libcuda.so.1")
    for line in Path("/proc/self/maps").read_text().splitlines():
        if "libcuda.so." in line.rsplit(" ", 1)[-1]:
            return Path(line.rsplit(" ", 1)[-1]).parent
    raise OSError("libcuda.so.1 is loaded but not mapped from a file")


CONSUMERS = Path(__file__).resolve().parent
"""Where ``aot_consumer.c`` and ``aot_consumer.cpp`` are."""


def consumer_command(
    source: str, directory: Path, output: Path, link: Sequence[str] | None
) -> list[str]:
    """The system compiler's command for the consumer ``source`` against the libraries
    :func:`make_all` wrote into ``directory``: linked against them and ``link`` (where
    ``libcuda.so.1`` is: ``["-L" + libcuda_directory()]``), or, with ``link=None``, compiled only
    (``output``: an object file), as a machine without a GPU can."""
    from nt_triton.aot import _cc

    cpp = source.endswith(".cpp")
    command = ["c++" if cpp else "cc", "-std=c++17" if cpp else "-std=c11", "-O1"]
    command += ["-Wall", "-Werror", f"-I{directory}", f"-I{_cc.cuda_include()}"]
    command.append(str(CONSUMERS / source))
    if link is None:
        return [*command, "-c", "-o", str(output)]
    libraries = [str(directory / f"{name}.so") for name in ("add", "mm", "attention")]
    command += [*libraries, *link, "-l:libcuda.so.1", "-lm", f"-Wl,-rpath,{directory}"]
    return [*command, "-o", str(output)]
