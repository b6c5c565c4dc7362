"""The ahead-of-time builder's one view of nt-triton: its public kernel description.

The builder reads nt-triton only through :mod:`nt_triton.description` (and the
public :mod:`nt_triton` names), re-exported here so that its modules import
one place.
"""

from __future__ import annotations

from nt_triton.description import (
    INDEX_LIMIT,
    INT32_LIMIT,
    KernelDescription,
    KernelParameter,
    KernelSignature,
    ParameterKind,
    ShapeCheck,
    SizeRequirement,
    Specialisation,
    compile_from_job,
    compile_job,
    describe,
    describe_configurations,
    serve,
    size_name,
    specialisation,
    stride_name,
)

__all__ = [
    "INDEX_LIMIT",
    "INT32_LIMIT",
    "KernelDescription",
    "KernelParameter",
    "KernelSignature",
    "ParameterKind",
    "ShapeCheck",
    "SizeRequirement",
    "Specialisation",
    "compile_from_job",
    "compile_job",
    "describe",
    "describe_configurations",
    "serve",
    "size_name",
    "specialisation",
    "stride_name",
]
