"""The GPU tests' C and C++ programs compile here, without a GPU.

``test_gpu.py`` links ``aot_consumer.c`` and ``aot_consumer.cpp`` against the
add, mm and attention libraries, and ``test_library_gpu.py`` builds
``ops_consumer/gpu.cpp`` against the kernel library: on a GPU only.  Here the
same sources compile, with the same flags, against headers generated for
sm_90, so a program that no longer fits the generated API fails on every
run rather than in a GPU session.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from support import aot_gpu as g
from support.aot_library import CONSUMER

from ninetoothed.aot import HEADER_PATH
from ninetoothed.library.build.catalogue import Options
from ninetoothed.library.build.header import header
from nt_triton.aot import _cc

pytestmark = pytest.mark.interpreter_only


def _compiled(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stderr}"


@pytest.fixture(scope="module")
def libraries(tmp_path_factory, fake_cuda):
    """``make_all``'s libraries for sm_90 (nothing to tune on: a configuration per key)."""
    directory = tmp_path_factory.mktemp("consumers")
    fake_cuda.set("fake_devices", 0)
    try:
        with pytest.warns(UserWarning, match="no GPU here to tune on"):
            g.make_all(directory, target="sm_90")
    finally:
        fake_cuda.set("fake_devices", 1)
    return directory


@pytest.mark.slow  # compiles add, three mm variants and attention for sm_90
@pytest.mark.parametrize("source", ["aot_consumer.c", "aot_consumer.cpp"])
def test_the_c_and_cpp_consumers_compile_against_their_libraries(libraries, source):
    compiler = "c++" if source.endswith(".cpp") else "cc"
    if shutil.which(compiler) is None:
        pytest.skip(f"no {compiler} on PATH")
    _compiled(g.consumer_command(source, libraries, libraries / f"{source}.o", None))


def test_the_kernel_library_s_gpu_consumer_compiles(tmp_path):
    if shutil.which("c++") is None:
        pytest.skip("no c++ on PATH")
    include = tmp_path / "include"
    include.mkdir()
    text = header(["add", "mm", "softmax"], ["float16"], "sm_90", Options())
    (include / "ninetoothed_ops.h").write_text(text)
    shutil.copyfile(HEADER_PATH, include / HEADER_PATH.name)
    command = ["c++", "-std=c++17", "-Wall", "-Werror", f"-I{include}", f"-I{_cc.cuda_include()}"]
    command += [str(CONSUMER / "gpu.cpp"), "-c", "-o", str(tmp_path / "gpu.o")]
    _compiled(command)
