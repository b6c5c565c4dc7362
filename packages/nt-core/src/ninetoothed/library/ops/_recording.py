"""Recording an op's calls of its framework hook, and the plan that repeats them.

A :class:`Recorder` stands in for the framework while an op runs: it passes
every call on, and notes the allocations, reshapes and kernel runs with their
arguments written as references (an argument of the op's call, a result of an
earlier step) or constants (numbers, strings, kernels and other callables).  :meth:`Recorder.plan`
turns the notes into a generated function of ``(framework, args, kwargs)``
that makes the same calls on another call's tensors.  The op's reads
(``describe``) are not repeated: the memo's key fixes what they return.

Where the framework offers them, a plan calls what lies below the hook, made
once at recording: ``allocation(like, shape, dtype)``, a function of no
argument making the output ``empty`` would (the key fixes ``like``'s dtype
and device), and ``launch_of(kernel)``, the kernel's launch for calls known
not to be traced, writing into its arguments as :class:`InPlace`'s ``run``
does (the plan runs only untraced calls: the memo asks first).

A plan makes no view it need not make (:mod:`~ninetoothed.library.ops._stand_ins`):
where the framework offers ``launch_of_stand_ins``, a launch given views of
contiguous tensors gets the tensors themselves, and an output allocated flat
and viewed in its final shape is allocated in that shape; the launch makes the
views only when its checks send the call back to the kernel's full path.

A recording cannot be repeated, and ``plan`` returns None, when a step got a
tensor that is neither an argument nor a step's result (the op made it some
other way), when the op used a part of the hook other than ``describe``,
``empty``, ``reshape`` and ``run``, when the result is not made of step
results and arguments, or when an argument tensor never reached the hook
(the op may have read it some other way, for instance its value).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ninetoothed.library.ops import _stand_ins
from ninetoothed.library.ops._common import contiguous
from ninetoothed.library.ops._precision import setting
from ninetoothed.library.ops._stand_ins import Allocation, Launch, View
from ninetoothed.library.ops.framework import Framework, InPlace
from ninetoothed.runtime.hookspecs import TensorInfo
from ninetoothed.runtime.syntax_trees import LOCK

__all__ = ["Plan", "Recorder"]

Plan = Callable[[Framework, tuple[Any, ...], dict[str, Any]], Any]
"""A recording made a function: ``plan(framework, args, kwargs)`` is the op's result."""

_LITERALS = (bool, int, str, type(None))


class Recorder:
    """A framework hook that passes calls on to ``framework`` and notes them."""

    def __init__(self, framework: Framework, args: tuple[Any, ...], kwargs: dict[str, Any]):
        self._framework = framework
        self.name = framework.name
        self._references: dict[int, str] = {}
        self._kept: list[Any] = []  # keeps each noted object alive, so its id stays its own
        self._inputs: dict[int, str] = {}
        self._used: set[int] = set()
        self._lines: list[str] = []
        self._uses: list[list[str]] = []  # the references each line reads
        self._using: list[str] = []  # the references read since the last line (or result)
        # What the plan may make without views (see _stand_ins): by the name they bind.
        self._views: dict[str, View] = {}
        self._allocations: dict[str, Allocation] = {}
        self._launches: list[Launch] = []
        self._constants: dict[str, Any] = {}
        self._repeatable = True
        # Values the memo keys by value (the framework's dtypes): constants of the plan.
        self._keyed: tuple[type, ...] = tuple(getattr(framework, "keyed_values", ()))
        for path, value in _tensors(args, kwargs, self._keyed):
            if id(value) not in self._references:
                self._note(value, path)
                self._inputs[id(value)] = path

    def describe(self, tensor: Any) -> TensorInfo:
        """The framework's description (a read: not repeated by the plan)."""
        return self._framework.describe(tensor)

    def float32_products(self) -> str | None:
        """The framework's float32 product precision (a read: the memo keys on it)."""
        return setting(self._framework)

    def empty(self, *args: Any, **kwargs: Any) -> Any:
        """The framework's allocation, noted (as its ``allocation`` where it has one)."""
        allocation = getattr(self._framework, "allocation", None)
        if allocation is None:
            return self._step("empty", args, kwargs)
        result = self._framework.empty(*args, **kwargs)
        self._encode_all(args, kwargs)  # the arguments reached the hook
        name = f"s{len(self._lines)}"
        self._allocations[name] = Allocation(len(self._lines), allocation, args, kwargs)
        self._add(f"{name} = {self._constant(allocation(*args, **kwargs))}()")
        self._note(result, name)
        return result

    def reshape(self, *args: Any, **kwargs: Any) -> Any:
        """The framework's reshape, noted (a view of a contiguous tensor where the plan
        may pass the tensor itself: :mod:`~ninetoothed.library.ops._stand_ins`)."""
        result = self._step("reshape", args, kwargs)
        if (
            len(args) == 2
            and not kwargs
            and id(args[0]) in self._references
            and hasattr(self._framework, "launch_of_stand_ins")
        ):
            info = self._framework.describe(args[0])
            if contiguous(info):
                name = f"s{len(self._lines) - 1}"
                source = self._references[id(args[0])]
                self._views[name] = View(len(self._lines) - 1, source, tuple(args[1]))
        return result

    def run(self, *args: Any, **kwargs: Any) -> list[Any]:
        """The framework's kernel run, noted; each output is a reference of its own
        (for an :class:`InPlace` framework, the argument it was written into)."""
        if isinstance(self._framework, InPlace):
            return self._launch(self._framework, *args, **kwargs)
        outputs = self._step("run", args, kwargs)
        name = self._lines[-1].split(" = ", 1)[0].strip()
        for index, output in enumerate(outputs):
            self._note(output, f"{name}[{index}]")
        return outputs  # type: ignore[no-any-return]

    def _launch(
        self, framework: InPlace, kernel: Any, arguments: Sequence[Any], outputs: Sequence[int]
    ) -> list[Any]:
        """``run`` of an in-place framework, noted as a call of the kernel's launch."""
        results = framework.run(kernel, arguments, outputs)
        launch = self._constant(framework.launch_of(kernel))
        encoded = [self._encode(argument) for argument in arguments]
        self._launches.append(Launch(len(self._lines), kernel, encoded))
        self._add(f"{launch}({', '.join(encoded)})")
        return results  # the arguments at ``outputs``: noted already

    def __getattr__(self, name: str) -> Any:
        """Any other part of the hook: passed on, and the recording is not repeated."""
        self._repeatable = False
        return getattr(self._framework, name)

    def plan(self, result: Any) -> Plan | None:
        """The function repeating the notes and returning ``result``'s counterpart, or
        None when the recording cannot be repeated."""
        returned = self._encode(result)
        if not self._repeatable or self._used != set(self._inputs):
            return None
        lines = list(self._lines)
        if getattr(self._framework, "launch_of_stand_ins", None) is not None:
            lines = _stand_ins.rewrite(
                lines, self._uses, self._using, self._views, self._allocations,
                self._launches, self._stand_in_launch, self._constant,
            )  # fmt: skip
        body = "".join(f"    {line}\n" for line in lines)
        source = f"def plan(framework, args, kwargs):\n{body}    return {returned}\n"
        namespace = dict(self._constants)
        with LOCK:  # CPython's compiler is not safe to run from several threads at once
            exec(compile(source, "<ninetoothed op plan>", "exec"), namespace)  # noqa: S102
        plan: Plan = namespace["plan"]
        return plan

    def _stand_in_launch(self, kernel: Any, conversions: _stand_ins.Conversions) -> str | None:
        """The plan's name of ``kernel``'s launch of stand-ins, which views those at
        ``conversions`` for the kernel where it must; None where the framework has no
        such launch for ``kernel``."""
        views = _stand_ins.viewer(self._framework.reshape, conversions)
        launch = self._framework.launch_of_stand_ins(kernel, views)  # type: ignore[attr-defined]
        if launch is None:
            return None
        return self._constant(launch)

    def _step(self, method: str, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        result = getattr(self._framework, method)(*args, **kwargs)
        arguments = self._encode_all(args, kwargs)
        name = f"s{len(self._lines)}"
        self._add(f"{name} = framework.{method}({', '.join(arguments)})")
        self._note(result, name)
        return result

    def _add(self, line: str) -> None:
        """``line`` appended to the plan, with the references its encoding read (every
        line is encoded, then added: what is read next belongs to the next one)."""
        self._lines.append(line)
        self._uses.append(self._using)
        self._using = []

    def _encode_all(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[str]:
        """A call's arguments as the plan's expressions."""
        arguments = [self._encode(value) for value in args]
        return arguments + [f"{name}={self._encode(value)}" for name, value in kwargs.items()]

    def _note(self, value: Any, reference: str) -> None:
        self._references[id(value)] = reference
        self._kept.append(value)

    def _encode(self, value: Any) -> str:
        """``value`` as an expression of the plan."""
        reference = self._references.get(id(value))
        if reference is not None:
            if id(value) in self._inputs:
                self._used.add(id(value))
            self._using.append(reference)
            return reference
        kind = type(value)
        if kind in _LITERALS:
            return repr(value)
        if kind is tuple:
            return f"({''.join(f'{self._encode(item)}, ' for item in value)})"
        if kind is list:
            return f"[{', '.join(self._encode(item) for item in value)}]"
        # A kernel is callable; a keyed value is part of the memo's key.
        if not (isinstance(value, (float, *self._keyed)) or callable(value)):
            self._repeatable = False  # a tensor the op made or got some other way
        return self._constant(value)

    def _constant(self, value: Any) -> str:
        """The plan's name of a constant."""
        name = f"c{len(self._constants)}"
        self._constants[name] = value
        return name


def _tensors(
    args: tuple[Any, ...], kwargs: dict[str, Any], keyed: tuple[type, ...] = ()
) -> list[tuple[str, Any]]:
    """Each argument that is not a plain value nor of a type in ``keyed``, with its path
    (``args[0]``, ``kwargs['weight']``, ``args[2][1]``)."""
    found: list[tuple[str, Any]] = []

    def visit(value: Any, path: str) -> None:
        if isinstance(value, (tuple, list)):
            for index, item in enumerate(value):
                visit(item, f"{path}[{index}]")
        elif not isinstance(value, (*_LITERALS, float, *keyed)):
            found.append((path, value))

    for index, value in enumerate(args):
        visit(value, f"args[{index}]")
    for name, value in kwargs.items():
        visit(value, f"kwargs[{name!r}]")
    return found
