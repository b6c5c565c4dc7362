"""The ``ninetoothed`` command's help: every command listed, each described as it behaves."""

from __future__ import annotations

import pytest

import ninetoothed as package


def test_the_help_lists_every_command_with_its_summary(ninetoothed):
    result = ninetoothed("--help", script=True)
    assert result.returncode == 0
    summaries = {
        "show": "describe a kernel: arrangement, grid, generated source",
        "build": "build a kernel's variants into a C library (ninetoothed.build)",
        "cache": "locate, size and clear NineToothed's cache",
        "tune": "export and import tuning results",
    }
    for command, summary in summaries.items():
        assert f"    {command} " in result.stdout and summary in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (("show",), ["FILE:KERNEL", "--run", "--no-source", "ninetoothed show add.py:kernel"]),
        (("build",), ["FILE:PREMAKE", "--configs", "--meta-parameters", "--target", "sm_90"]),
        (("tune",), ["export", "import", "NINETOOTHED_TUNING=cached"]),
        (("cache",), ["info", "clear"]),
    ],
)
def test_each_command_s_help_names_its_arguments(ninetoothed, command, words):
    result = ninetoothed(*command, "--help")
    assert result.returncode == 0, result.stderr
    for word in words:
        assert word in result.stdout


def test_version_and_no_command(ninetoothed):
    assert ninetoothed("--version").stdout.strip() == f"ninetoothed {package.__version__}"
    result = ninetoothed()
    assert result.returncode == 2 and "COMMAND" in result.stderr
