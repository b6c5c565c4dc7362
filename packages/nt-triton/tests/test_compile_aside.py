"""Background compiles (``nt_triton._compile_aside``): once per key, in another thread;
a call is ready only once its compile has ended, and not for a first load while the
caller captures; a failure warns once and stays refused."""

from __future__ import annotations

import threading
import warnings

import pytest

from nt_triton._compile_aside import Aside


def _held() -> tuple[list[threading.Thread], threading.Event, object]:
    started: list[threading.Thread] = []
    release = threading.Event()

    def compile() -> None:
        started.append(threading.current_thread())
        assert release.wait(30)

    return started, release, compile


def test_a_key_compiles_once_in_another_thread() -> None:
    aside = Aside("kernel")
    started, release, compile = _held()
    assert not aside.ready("a", compile, start=False)
    assert started == [] and not aside._states  # asked, not started
    assert not aside.ready("a", compile)
    assert not aside.ready("a", compile)  # under way: not started again
    release.set()
    aside.settle()
    assert len(started) == 1 and started[0] is not threading.current_thread()
    assert aside.ready("a", compile) and aside.ready("a", compile)
    assert len(started) == 1
    assert not aside.ready("b", compile)  # another specialisation compiles apart
    aside.settle()
    assert len(started) == 2 and aside.ready("b", compile)


def test_wait_joins_the_compile() -> None:
    aside = Aside("kernel")
    started, release, compile = _held()
    assert not aside.ready("a", compile)
    threading.Timer(0.2, release.set).start()
    assert aside.ready("a", compile, wait=True)
    assert aside.ready("c", lambda: None, wait=True)  # a first call that waits


def test_the_first_load_waits_for_the_capture_to_end() -> None:
    aside = Aside("kernel")
    assert aside.ready("a", lambda: None, wait=True, may_load=True)
    assert not aside.ready("b", lambda: None, wait=True, may_load=False)  # would load it
    assert not aside.ready("b", lambda: None, may_load=False)
    assert aside.ready("b", lambda: None, may_load=True)
    assert aside.ready("b", lambda: None, may_load=False)  # loaded: a capture may launch it


def test_a_failed_compile_warns_once_and_stays_refused() -> None:
    aside = Aside("kernel")

    def compile() -> None:
        raise RuntimeError("no shared memory")

    with pytest.warns(RuntimeWarning, match="kernel failed to compile.*no shared memory"):
        assert not aside.ready("a", compile, wait=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second warning would raise
        assert not aside.ready("a", compile, wait=True)


def test_the_compiled_kernel_is_handed_out_once_a_launch_may_go_ahead() -> None:
    """``compiled`` gives what the compile returned (Triton's compiled kernel, launched
    directly), but only once ``ready`` let a launch of its key go ahead: never before
    the compile ends, nor while it would be the first load during a capture."""
    aside = Aside("kernel")
    kernel = object()
    started, release, compile = _held()
    assert not aside.ready("a", lambda: (compile(), kernel)[1])
    assert aside.compiled("a") is None  # compiling
    release.set()
    aside.settle()
    assert aside.compiled("a") is None  # compiled, not yet let through
    assert not aside.ready("a", compile, may_load=False)
    assert aside.compiled("a") is None
    assert aside.ready("a", compile)
    assert aside.compiled("a") is kernel
    assert aside.compiled("b") is None
    assert not aside.ready("c", _failing, wait=False)
    aside.settle()
    with pytest.warns(RuntimeWarning):
        assert not aside.ready("c", _failing)
    assert aside.compiled("c") is None


def _failing() -> None:
    raise RuntimeError("no")
