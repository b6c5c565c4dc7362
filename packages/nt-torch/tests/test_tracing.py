"""``nt_torch.tracing``: the dispatch-mode test agrees with PyTorch's Python dispatch key.

``traced()`` and the express lane ask whether a dispatch mode is active by the
length of the thread's mode stack, a plain C call, instead of asking whether the
Python key is in the thread's included set (a slower pybind11 call).  The two
must agree in every state a user reaches, on the PyTorch installed: these tests
fail if a PyTorch version parts them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from nt_torch import tracing

_PYTHON = torch._C.DispatchKey.Python


def _python_key_included() -> bool:
    return bool(torch._C._dispatch_tls_is_dispatch_key_included(_PYTHON))


class _Recording(TorchDispatchMode):
    """A user's mode that notes, inside its own handler, what both tests answer."""

    def __init__(self) -> None:
        super().__init__()
        self.inside: list[tuple[bool, bool]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        self.inside.append((bool(tracing.TRACING_CHECKS[2][0]()), _python_key_included()))
        return func(*args, **(kwargs or {}))


def _fake() -> AbstractContextManager[Any]:
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


def _functional() -> AbstractContextManager[Any]:
    from torch._subclasses.functional_tensor import FunctionalTensorMode

    return FunctionalTensorMode()


@contextmanager
def _nested() -> Iterator[None]:
    with _Recording(), _fake():
        yield


@contextmanager
def _disabled() -> Iterator[None]:
    from torch.utils._python_dispatch import _disable_current_modes

    with _Recording(), _disable_current_modes():
        yield


CONTEXTS: dict[str, Callable[[], AbstractContextManager[Any]]] = {
    "none": nullcontext,
    "user mode": _Recording,
    "fake tensors": _fake,
    "functional tensors": _functional,
    "two modes": _nested,
    "modes disabled": _disabled,
    "no grad": torch.no_grad,
}


@pytest.mark.parametrize("context", CONTEXTS.values(), ids=list(CONTEXTS))
def test_the_mode_check_agrees_with_the_python_key(context: Callable[[], Any]) -> None:
    check, arguments = tracing.TRACING_CHECKS[2]
    with context():
        assert bool(check(*arguments)) == _python_key_included()
        expected = _python_key_included() or torch._C._are_functorch_transforms_active()
        assert tracing.traced() == expected


def test_inside_a_modes_handler_neither_sees_the_mode() -> None:
    mode = _Recording()
    with mode:
        torch.ones(3) + 1
    assert mode.inside and all(pair == (False, False) for pair in mode.inside)


def test_make_fx_is_seen_by_both() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    seen: list[tuple[bool, bool]] = []

    def function(x: torch.Tensor) -> torch.Tensor:
        seen.append((tracing.traced(), _python_key_included()))
        return x + 1

    make_fx(function)(torch.ones(2))
    make_fx(function, tracing_mode="fake")(torch.ones(2))
    assert seen == [(True, True), (True, True)]
