"""Compiled kernels are embedded in the C source as string literals: every byte value
reads back exactly, whatever follows it (a digit after an octal escape, a quote, a
backslash, a question mark), in an array of exactly the binary's length."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nt_triton.aot._writer import c_bytes

CC = shutil.which(os.environ.get("CC", "cc"))


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("width", [96, 7])
def test_every_byte_reads_back_exactly(tmp_path: Path, width: int) -> None:
    data = bytes(range(256)) + b'\x001?\\"??=\x07\x0089' + os.urandom(3000)
    program = tmp_path / "bytes.c"
    program.write_text(
        "#include <stdio.h>\n"
        f"static const unsigned char image[{len(data)}] = {c_bytes(data, width)};\n"
        "int main(void) {\n"
        "    fwrite(image, 1, sizeof image, stdout);\n"
        "    return 0;\n"
        "}\n"
    )
    binary = tmp_path / "bytes"
    subprocess.run(  # noqa: S603 - the system compiler on our own source
        [CC, "-std=gnu11", "-Wall", "-Werror", "-o", str(binary), str(program)], check=True
    )
    written = subprocess.run([str(binary)], capture_output=True, check=True).stdout  # noqa: S603
    assert written == data


def test_an_empty_binary_is_an_empty_literal() -> None:
    assert c_bytes(b"") == '""'
