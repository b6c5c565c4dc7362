"""Which source sizes of different parameters must agree, derived from the arrangement.

Only the outermost shapes of the arranged tensors are the launch grid and are
compared directly; sizes deeper down that must agree were never checked, so
mismatched tensors ran and returned garbage (a vector add of 1000 and 999
elements, a matmul ``(70, 50) @ (40, 90)``, an output shorter than its input).

The rule derived here: resolve each source dimension's index through the
arrangement's bindings, with the variables the kernel shares between
parameters replaced by shared names —

* the outermost level's variable at position ``i``: the program index ``i``;
* a middle level's variable at depth ``d``, position ``i``: the subscript the
  application gives there (matmul's ``k`` in ``input[k]`` and ``other[k]``);
* a tile's variable: its position in the tile among the dimensions of the same
  size (matmul's ``BLOCK_SIZE_K`` dimension of ``input`` and of ``other``;
  element-wise tiles position by position).

Two source dimensions whose indices are then the same expression read (or
write) the same positions for every program, loop step and tile element, so
their sizes must be equal; otherwise one is masked where the other is not.
This is computed once per kernel (:attr:`ninetoothed.spec.kernel_spec.KernelSpec.agreements`)
and checked on every call that :func:`ninetoothed.runtime.binding.bind_call`
validates.  Indices that mention a parameter's own sizes (``flatten``, a
``-1`` tile) never match another parameter's and tie nothing: agreements the
rule cannot see are listed in ``docs/design.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from ninetoothed.arrangement.simplify import simplify
from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.arrangement.tensor import Tensor

__all__ = ["Agreement", "derive", "positions", "shared_sources"]

_SHARED = "ninetoothed_shared_"
"""Names standing for what several parameters share (program index, subscript, tile)."""


@dataclass(frozen=True)
class Agreement:
    """Source dimensions, ``(tensor index, dimension)``, that must have one size."""

    dims: tuple[tuple[int, int], ...]
    """In tensor-parameter order; the first is the one the others are compared with."""

    index: str
    """The shared index they are read at, for messages."""

    shared: bool = False
    """Whether the tie is one symbolic tensor given for several parameters
    (:func:`shared_sources`) rather than an index the arrangement shares."""

    def split(self, group: Callable[[int], int]) -> tuple[Agreement, ...]:
        """This agreement's dimensions by the ``group`` of their tensor: one agreement
        per group that ties several tensors."""
        groups: dict[int, list[tuple[int, int]]] = {}
        for dim in self.dims:
            groups.setdefault(group(dim[0]), []).append(dim)
        return tuple(
            Agreement(tuple(dims), self.index, self.shared)
            for dims in groups.values()
            if len({position for position, _ in dims}) > 1
        )

    @property
    def reason(self) -> str:
        """Why the sizes must agree, for messages (completes "must have the same size: ")."""
        if self.shared:
            return (
                "make was given one Tensor object for both (as in '(Tensor(2),) * 3'), so the "
                "kernel has one size for them; give each parameter a Tensor of its own for "
                "sizes that differ"
            )
        return (
            f"the arrangement reads both at the same index ({self.index}), so where one ends "
            "the other would be masked and the result silently wrong"
        )


def derive(
    tensors: Sequence[Tensor], skip: AbstractSet[int] = frozenset()
) -> tuple[Agreement, ...]:
    """The agreements among the arranged ``tensors`` (tensor parameters, in order);
    the positions in ``skip`` tie nothing."""
    groups: dict[str, list[tuple[int, int]]] = {}
    labels: dict[str, str] = {}
    for position, arranged in enumerate(tensors):
        if position in skip:
            continue
        for dim, index in enumerate(_shared_indices(arranged, labels)):
            # Only indices that walk the dimension (a program index or a subscript
            # in them) tie sizes: a tile alone may read part of a dimension by
            # design (a floor-mode tile whose count is a literal 1).
            if isinstance(index, Symbol) and any(
                n.startswith((_SHARED + "program_", _SHARED + "subscript_")) for n in index.names()
            ):
                groups.setdefault(str(index), []).append((position, dim))
    return tuple(
        Agreement(tuple(dims), _readable(key, labels))
        for key, dims in groups.items()
        if len({position for position, _ in dims}) > 1
    )


def shared_sources(sources: Sequence[Tensor]) -> tuple[Agreement, ...]:
    """The agreements of tensor parameters given one symbolic tensor (``(Tensor(2),) * 3``:
    one object for three parameters): the kernel names that tensor's sizes once, for
    all of them, so each dimension must have one size in every argument."""
    groups: dict[int, list[int]] = {}
    for position, source in enumerate(sources):
        groups.setdefault(id(source), []).append(position)
    return tuple(
        Agreement(tuple((p, dim) for p in positions), f"dimension {dim}", shared=True)
        for positions in groups.values()
        if len(positions) > 1
        for dim in range(sources[positions[0]].ndim)
    )


def positions(arranged: Tensor, same_view: Tensor | None = None) -> tuple[str, ...]:
    """Per source dimension of ``arranged``, its index in terms of the program index,
    the application's subscripts and the tile positions, with the tensor's own size
    and stride symbols named as any tensor's would be (``self_size_0``): two
    parameters whose positions are equal and whose arguments have one shape reach,
    for every program, loop step and tile element, the same element of each.

    ``same_view`` is another source tensor whose argument will be the same view
    (shape and strides) as this one's: its symbols are named ``self_...`` too, so
    an arrangement that tiles ``output`` by ``input.shape[-1]`` reaches what one
    tiling ``input`` by its own does."""
    own: dict[str, str] = {}
    for source in (arranged.source, same_view) if same_view is not None else (arranged.source,):
        for dim in range(source.ndim):
            for name, kind in (
                (source.size_string(dim), "size"),
                (source.stride_string(dim), "stride"),
            ):
                own[name] = f"self_{kind}_{dim}"
                own[_identifier(name)] = f"self_{kind}_{dim}"
    texts = []
    for index in _shared_indices(arranged, {}):
        text = str(index)
        for name in sorted(own, key=len, reverse=True):  # the longer spelling first
            text = text.replace(name, own[name])
        texts.append(text)
    return tuple(texts)


def _shared_indices(arranged: Tensor, labels: dict[str, str]) -> list[SymbolLike]:
    """Per source dimension, its index in terms of the shared names (``labels``
    receives a readable text for each name)."""
    levels = arranged.levels()
    live: dict[str, SymbolLike] = {}
    for depth, level in enumerate(levels):
        seen: dict[str, int] = {}
        for position, dim in enumerate(level.dims):
            if depth == 0:
                name, label = f"{_SHARED}program_{position}", f"program_index_{position}"
            elif depth < len(levels) - 1:
                name = f"{_SHARED}subscript_{depth}_{position}"
                label = f"subscript_{position}_at_level_{depth}"
            else:
                size = str(dim.size)
                occurrence = seen.get(size, 0)
                seen[size] = occurrence + 1
                name = f"{_SHARED}tile_{_identifier(size)}_{occurrence}"
                label = f"arange({size})" if occurrence == 0 else f"arange({size})#{occurrence}"
            live[dim.variable] = Symbol(name)
            labels[name] = label
    bindings = arranged.all_bindings()
    resolved: dict[str, SymbolLike] = dict(live)

    def value_of(variable: str) -> SymbolLike:
        if variable not in resolved:
            binding = bindings.get(variable)
            if binding is None or binding.sliced:
                # Not reachable from the levels, or walked only as far as a slice's
                # own extent (``output[1:3]`` of a longer output): ties nothing.
                return Symbol(f"unresolved_{variable}")
            expression = binding.expression
            if isinstance(expression, Symbol):
                expression = expression.substitute(
                    {n: value_of(n) for n in expression.names() if n in bindings or n in live}
                )
            resolved[variable] = simplify(expression)
        return resolved[variable]

    return [value_of(variable) for variable in arranged.source.source_variables]


def _identifier(text: str) -> str:
    """``text`` made safe inside a name, keeping distinct texts distinct."""
    return "".join(c if c.isalnum() else f"_{ord(c):x}_" for c in text)


def _readable(key: str, labels: dict[str, str]) -> str:
    """A shared index for messages: program indices, subscripts and tile positions."""
    for name in sorted(labels, key=len, reverse=True):
        key = key.replace(name, labels[name])
    return key
