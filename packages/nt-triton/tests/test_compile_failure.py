"""``failures.compile_failure``: the message of a kernel Triton's compiler rejects."""

from __future__ import annotations

from ninetoothed.errors import LaunchError
from nt_triton import _failures as failures


class CompilationError(Exception):
    """Stands in for Triton's (the function compares types, not names)."""


def application(x, y):
    y = x  # noqa: F841


def _trampoline_failure() -> CompilationError:
    """The trampoline's error at its call of the kernel, raised from the kernel's own
    (``raise ... from`` inside ``except``: both ``__cause__`` and ``__context__``)."""
    try:
        try:
            raise CompilationError("at 16:11:\n    pair = [x_tile_2 for _ in range(2)]\n    ^\nNo")
        except CompilationError as inner:
            raise CompilationError("at 2:4:\n    ninetoothed_kernel(x_pointer)\n    ^") from inner
    except CompilationError as outer:
        return outer
    raise AssertionError("unreachable")


def test_the_innermost_compilation_error_is_shown() -> None:
    """A trampoline's failure at its call of the kernel is caused by the kernel's own:
    the message shows the kernel's marked line, not the trampoline's."""
    error = failures.compile_failure("copy", application, _trampoline_failure())
    assert isinstance(error, LaunchError)
    message = str(error)
    line = application.__code__.co_firstlineno
    assert message.startswith(f"copy: the kernel does not compile for the GPU (the application "
                              f"is application at {__file__}:{line})")  # fmt: skip
    assert "pair = [x_tile_2" in message and "ninetoothed_kernel(" not in message


class Marker(Exception):
    """Stands in for JAX's stack-trace marker, which replaces an error's cause."""


def test_the_kernel_error_is_found_behind_a_replaced_cause() -> None:
    outer = _trampoline_failure()
    outer.__cause__ = Marker("the JAX operation's stack")
    message = str(failures.compile_failure("copy", application, outer))
    assert "pair = [x_tile_2" in message and "ninetoothed_kernel(" not in message


def test_a_long_compiler_message_keeps_its_end() -> None:
    text = "\n".join(f"line {i}" for i in range(40))
    assert failures.compiler_excerpt(text).splitlines() == [f"line {i}" for i in range(26, 40)]
