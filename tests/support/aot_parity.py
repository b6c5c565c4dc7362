"""The C launcher against the just-in-time host code, call by call (stand-in driver).

For one call (shapes, strides, pointers, scalars) :func:`check` runs the
just-in-time kernel's host function (``generated.prepare``) and the C library's
launch function, and compares: the same refusal, or the same grid, the
arguments the chosen specialisation passes equal to the host's, and the chosen
specialisation the first of the chain whose assumptions the host's values
satisfy.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

from ninetoothed._aot.kernel import load_library
from ninetoothed.aot import Status
from ninetoothed.errors import LaunchError
from ninetoothed.runtime import binding
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_triton._codegen import naming
from nt_triton.aot import _variants
from nt_triton.description import ParameterKind, describe
from support.aot import FakeCuda, binaries, scalar, tensor


def make_aot(
    arrangement: Any, application: Any, tensors: Any, directory: Any, name: str, **options: Any
) -> Any:
    """``make(..., caller="cuda")`` for sm_90 into ``directory`` (and ``options``)."""
    import ninetoothed

    return ninetoothed.make(
        arrangement,
        application,
        tensors,
        caller="cuda",
        kernel_name=name,
        output_dir=directory,
        target="sm_90",
        **options,
    )


class Harness:
    """A kernel made both ways, with what comparing them needs."""

    def __init__(self, aot: Any, jit: Any, fake: FakeCuda) -> None:
        self.aot, self.jit, self.fake = aot, jit, fake
        self.description = describe(aot.spec)
        self.plans = _variants.plans(self.description)
        self.cubins = binaries(aot.library.source)
        self.function = getattr(load_library(aot.library.library), aot.library.function)
        self.last_error = load_library(aot.library.library).ninetoothed_last_error
        self.last_error.restype = ctypes.c_char_p
        self.last_status, self.last_message = 0, ""
        """The C launch function's status and message in the latest :meth:`check`."""

    def call_c(self, arguments: Sequence[Any]) -> int:
        """The launch function on NineToothedTensor ``arguments`` (stream 0)."""
        return int(self.function(ctypes.c_void_p(0), *arguments))

    def check(
        self,
        shapes: Sequence[Sequence[int]],
        strides: Sequence[Sequence[int] | None] | None = None,
        pointers: Sequence[int] | None = None,
        scalars: dict[str, float] | None = None,
    ) -> int | None:
        """Compare one call; returns the index of the specialisation launched (None: refused)."""
        spec = self.aot.spec
        strides = strides or [None] * len(shapes)
        # Far apart (2^48 bytes): only the calls that mean to share memory do.
        pointers = pointers or [(i + 1) << 48 for i in range(len(shapes))]
        made = [tensor(p, s, st) for p, s, st in zip(pointers, shapes, strides)]
        dtypes = [p.source.dtype.name for p in spec.tensor_parameters]
        infos = [
            TensorInfo(tuple(s), tuple(m.strides[d] for d in range(len(s))), dtype, "cuda:0", p)
            for s, m, p, dtype in zip(shapes, made, pointers, dtypes)
        ]
        scalars = dict(scalars or {})
        arguments, jit_error = [], None
        iterator = iter(made)
        for parameter in spec.parameters:
            if parameter.is_scalar:
                arguments.append(scalar(scalars.get(parameter.name, 0.0)))
            else:
                arguments.append(next(iterator))
        try:
            _bound_checks(spec, infos)
            plan = self.jit.generated.prepare(infos, list(pointers), scalars)
            grid = plan.grid(dict(self.description.meta)) if callable(plan.grid) else plan.grid
        except LaunchError as error:
            jit_error = error
        launches = self.fake.get("fake_launches")
        status = self.last_status = self.call_c(arguments)
        message = self.last_message = self.last_error().decode() if status else ""
        if jit_error is not None:
            assert status == _status(jit_error), (status, message, jit_error)
            if not isinstance(jit_error, _BoundError):  # the host's refusal: its very words
                assert message == str(jit_error), (message, str(jit_error))
            return None
        expected_programs = math.prod(grid)
        if expected_programs == 0:
            assert status == 0 and self.fake.get("fake_launches") == launches
            return None
        assert status == 0, message
        assert self.fake.get("fake_launches") == launches + 1
        launch = self.fake.launch()
        assert launch["grid"] == (expected_programs, 1, 1)
        host = dict(zip((p.name for p in self.jit.generated.signature.host), plan.arguments))
        expected = self._expected(host, pointers)
        chosen = self._chosen(launch["module"], expected)
        plan_ = self.plans[chosen]
        types = [
            ".u64" if p.kind is ParameterKind.POINTER else _ptx(plan_, p) for p in plan_.passed
        ]
        recorded = self.fake.parameters(types)
        for parameter, value in zip(plan_.passed, recorded):
            want = host[parameter.name]
            if parameter.kind is ParameterKind.SCALAR:
                assert abs(value - want) <= 1e-6 * max(1.0, abs(want)), (
                    parameter.name,
                    value,
                    want,
                )
            else:
                assert value == want, (parameter.name, value, want)
        assert chosen == expected, (chosen, expected)
        self._check_alignment(plan_, host, pointers)
        return chosen

    def _check_alignment(self, plan: Any, host: dict[str, Any], pointers: Sequence[int]) -> None:
        """A 32-bit call whose pointers are 16-byte aligned, innermost strides 1 and other
        strides multiples of 16 launches a binary that knows all of it, as the just-in-time
        kernel's specialisation does (what lets Triton vectorise loads)."""
        if plan.variant.wide:
            return
        tensors = self.aot.spec.tensor_parameters
        strides = self.description.signature.of_kind(ParameterKind.STRIDE)
        innermost = {
            p.name for p in strides if p.dim == tensors[p.tensor_index or 0].source.ndim - 1
        }
        if any(p % 16 for p in pointers) or any(
            host[p.name] != 1 if p.name in innermost else host[p.name] % 16 for p in strides
        ):
            return
        compiled = plan.specialisation
        names = [name for name, _ in compiled.signature]
        divisible = {names[index] for index, flag in compiled.attrs if flag}
        constants = dict(compiled.constexprs)
        for parameter in self.description.signature:
            name = parameter.name
            if parameter.kind is ParameterKind.POINTER or (
                parameter.kind is ParameterKind.STRIDE and name not in innermost
            ):
                assert name in divisible, (name, plan.describe())
            elif name in innermost:
                assert constants.get(name) == 1, (name, plan.describe())

    def _chosen(self, module: int, expected: int) -> int:
        """The specialisation launched: ``expected`` if its binary is the one (two
        specialisations may compile to the same binary), else the first that is."""
        image = self.fake.image(module)
        matches = [i for i, cubin in enumerate(self.cubins) if cubin == image]
        assert matches, "the launched binary is none of the library's"
        return expected if expected in matches else matches[0]

    def _expected(self, host: dict[str, Any], pointers: Sequence[int]) -> int:
        """The first specialisation whose assumptions hold for the host's values."""
        signature = self.description.signature
        for index, plan in enumerate(self.plans):
            if _serves(plan, host, signature, pointers):
                return index
        raise AssertionError("no specialisation serves the call")


class _BoundError(LaunchError):
    """What ``bind_call`` refuses (its message is the binding's, not the host code's)."""


def _status(error: LaunchError) -> int:
    """The status the C launcher returns for the host's refusal ``error``: arguments
    sharing memory are invalid together, everything else does not fit the shapes."""
    text = str(error)
    shared = "share memory:" in text or "are one tensor, and the kernel writes" in text
    return Status.INVALID_ARGUMENT if shared else Status.SHAPE


def _bound_checks(spec: Any, infos: Sequence[TensorInfo]) -> None:
    """What ``bind_call`` checks of shapes: declared sizes, sizes the arrangement ties
    (a broadcast view, stride 0, may be longer than the others: its own rule)."""
    for parameter, info in zip(spec.tensor_parameters, infos):
        for dim, size in enumerate(parameter.source.shape):
            if isinstance(size, int) and info.shape[dim] != size:
                raise _BoundError("a declared size differs")
    for agreement in spec.agreements:
        if len({infos[t].shape[d] for t, d in agreement.dims}) > 1:
            try:
                binding._check_with_broadcasts(spec, agreement, list(infos), agreement.dims)
            except LaunchError as error:
                raise _BoundError("sizes the arrangement ties differ") from error


def _ptx(plan: Any, parameter: Any) -> str:
    if parameter.kind is ParameterKind.SCALAR:
        return ".f32"
    return ".u64" if plan.variant.wide else ".u32"


def _serves(plan: Any, host: dict[str, Any], signature: Any, pointers: Sequence[int]) -> bool:
    """Whether every assumption ``plan``'s binary was compiled with holds for the host's
    values: 32-bit ints, its constants, and every parameter Triton was told is divisible
    by 16 (read from the compiled specialisation, not from the launcher's conditions)."""
    variant = plan.variant
    ints = [p for p in plan.passed if p.kind in (ParameterKind.SIZE, ParameterKind.STRIDE)]
    if not variant.wide and (
        host[naming.INT64_FLAG] or any(not -(2**31) <= host[p.name] < 2**31 for p in ints)
    ):
        return False
    for name, value in plan.constants.items():
        kind = signature.by_name[name].kind
        if kind is ParameterKind.LAYOUT_FLAG and value and not host[name]:
            return False
        if kind is ParameterKind.SIZE_ALIGNMENT and host[name] % value:
            return False
        if kind is ParameterKind.STRIDE and host[name] != 1:
            return False
    compiled = plan.specialisation
    names = [name for name, _ in compiled.signature]
    divisible = {names[index] for index, flag in compiled.attrs if flag}
    pointer_of = {
        p.name: pointers[p.tensor_index] for p in plan.passed if p.kind is ParameterKind.POINTER
    }
    return all(pointer_of.get(name, host.get(name, 0)) % 16 == 0 for name in divisible)
