"""Helpers of the ahead-of-time tests: NineToothedTensor values and the stand-in libcuda.

``fake_cuda(directory)`` builds ``tests/support/aot_fakecuda.c`` (a libcuda.so.1
that records launches and runs nothing) and :class:`FakeCuda` reads and steers
it through ctypes.  Libraries called in this process load it when
``NINETOOTHED_LIBCUDA`` names it (the tests' conftest sets that off the GPU).
"""

from __future__ import annotations

import ctypes
import re
import shutil
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ninetoothed.aot import NineToothedTensor

SOURCE = Path(__file__).with_name("aot_fakecuda.c")


def build_fake_cuda(directory: Path) -> Path:
    """Compile the stand-in libcuda into ``directory``."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler is not None, "the ahead-of-time tests need a C compiler"
    path = directory / "libcuda.so.1"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", str(SOURCE), "-o", str(path)], check=True)
    return path


def contiguous(shape: Sequence[int]) -> list[int]:
    """The strides of a row-major tensor of ``shape`` (in elements)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= max(size, 1)
    return strides


def tensor(
    data: int, shape: Sequence[int], strides: Sequence[int] | None = None
) -> NineToothedTensor:
    """A ``NineToothedTensor`` (contiguous strides unless given)."""
    strides = contiguous(shape) if strides is None else strides
    ndim = len(shape)
    return NineToothedTensor(
        data, (ctypes.c_uint64 * ndim)(*shape), (ctypes.c_int64 * ndim)(*strides)
    )


def scalar(value: float, ctype: Any = ctypes.c_double) -> NineToothedTensor:
    """A scalar ``NineToothedTensor`` (its value kept alive by the structure)."""
    buffer = ctype(value)
    result = NineToothedTensor(ctypes.addressof(buffer), None, None)
    result._buffer = buffer  # type: ignore[attr-defined]
    return result


class FakeCuda:
    """The stand-in libcuda's state."""

    def __init__(self, path: Path) -> None:
        self.library = ctypes.CDLL(str(path))

    def get(self, name: str) -> int:
        return int(ctypes.c_int.in_dll(self.library, name).value)

    def set(self, name: str, value: int) -> None:
        ctypes.c_int.in_dll(self.library, name).value = value

    def set_context(self, value: int) -> None:
        ctypes.c_size_t.in_dll(self.library, "fake_context").value = value

    @property
    def record(self) -> list[int]:
        return list((ctypes.c_uint64 * 64).in_dll(self.library, "fake_record"))

    def launch(self) -> dict[str, Any]:
        """The last launch: grid, threads, shared memory, stream, module number."""
        record = self.record
        return {
            "grid": tuple(record[:3]),
            "threads": record[3],
            "shared": record[4],
            "stream": record[5],
            "module": record[6],
        }

    def parameters(self, types: Sequence[str]) -> list[Any]:
        """The last launch's first parameters, read as the PTX ``types`` say."""
        values = []
        for raw, ptx in zip(self.record[8:], types):
            if ptx == ".f32":
                values.append(struct.unpack("<f", struct.pack("<Q", raw)[:4])[0])
            elif ptx in (".u32", ".s32", ".b32"):
                values.append(struct.unpack("<i", struct.pack("<Q", raw)[:4])[0])
            else:
                values.append(struct.unpack("<q", struct.pack("<Q", raw))[0])
        return values

    def image(self, module: int) -> bytes:
        """The binary module ``module`` was loaded from (its ELF size read from its header)."""
        pointer = (ctypes.c_void_p * 256).in_dll(self.library, "fake_images")[module - 1]
        header = ctypes.string_at(pointer, 64)
        phoff, shoff = struct.unpack_from("<QQ", header, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", header, 0x36)
        size = max(shoff + shentsize * shnum, phoff + phentsize * phnum)
        return ctypes.string_at(pointer, size)


def binaries(source: Path) -> list[bytes]:
    """The cubins a generated C source embeds, in variant order (each an array of its
    exact length initialised by adjacent string literals of plain characters and
    three-digit octal escapes)."""
    found = re.findall(
        r'nt_binary_(\d+)\[(\d+)\] NT_ALIGNED =\s*((?:"[^"]*"\s*)+);', source.read_text()
    )
    images = []
    for _, size, literals in sorted(found, key=lambda f: int(f[0])):
        text = "".join(re.findall(r'"([^"]*)"', literals))
        data = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), text.encode("ascii"))
        assert len(data) == int(size) or (data == b"" and size == "1"), (len(data), size)
        images.append(data)
    return images
