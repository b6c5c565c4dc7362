"""Which tensor parameters' values can meet, read from the application's source.

A size check between two parameters guards against one being masked where
the other is not, which is silently wrong only when their values meet: one
is stored into the other, or both reach a third that is written.  ntops's
attention with a KV cache copies a one-token ``present_key`` into its cache
slot in the same kernel as the attention over the query: the two groups
never meet, so the present tensors need not have the query's sizes.

:func:`flow_groups` splits the tensor parameters into groups that no value
crosses, conservatively: any statement that assigns a value made from some
parameters (or under a condition or loop over them) ties them to what it
assigns; a call ties all of its arguments together (a helper may store one
into another) and may assign each variable it is given (helpers are inlined,
so they can fold values into the caller's accumulators); a local variable
carries what it was made from.  Reading a
parameter's ``shape``, ``dtype`` or ``ndim`` carries no value.  Where the
source cannot be read, every parameter is in one group.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ninetoothed.spec._usage import function_definition

__all__ = ["flow_groups"]

_NO_VALUE_ATTRIBUTES = frozenset({"shape", "dtype", "ndim"})
"""Attributes of a parameter that carry no element values."""


def flow_groups(
    application: Callable[..., Any], names: Sequence[str], anchor: str | None = None
) -> tuple[frozenset[str], ...]:
    """The tensor parameters ``names`` split into groups no value crosses (see the module);
    one group of all of them where the application's source cannot be read.

    A group that writes no parameter (read only, or not used at all) joins
    ``anchor``'s group (default: the first name's): only a computation of its own
    stands apart.
    """
    definition = function_definition(application)
    if definition is None or not names:
        return (frozenset(names),)
    parents = {name: name for name in names}

    def find(name: str) -> str:
        while parents[name] != name:
            parents[name] = parents[parents[name]]
            name = parents[name]
        return name

    def unite(group: Iterable[str]) -> None:
        members = [find(n) for n in group if n in parents]
        for member in members[1:]:
            parents[member] = members[0]

    carried: dict[str, frozenset[str]] = {name: frozenset({name}) for name in names}
    written: set[str] = set()
    changed = True
    while changed:  # locals assigned in loops carry what later statements give them
        before = dict(carried)
        _Walker(carried, unite, written).run(definition.body, frozenset())
        changed = carried != before
    anchor = anchor if anchor in parents else names[0]
    writing = {find(name) for name in written}  # uniting into the anchor keeps these roots
    for name in names:
        if find(name) not in writing:
            unite((anchor, name))
    groups: dict[str, set[str]] = {}
    for name in names:
        groups.setdefault(find(name), set()).add(name)
    return tuple(frozenset(group) for group in groups.values())


class _Walker:
    """One pass over the statements: what each local carries, and the ties."""

    def __init__(
        self,
        carried: dict[str, frozenset[str]],
        unite: Callable[[Iterable[str]], None],
        written: set[str],
    ) -> None:
        self.carried = carried
        self.unite = unite
        self.written = written

    def run(self, statements: Sequence[ast.stmt], context: frozenset[str]) -> None:
        for statement in statements:
            self.statement(statement, context)

    def statement(self, node: ast.stmt, context: frozenset[str]) -> None:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = self.values(node.value) if node.value is not None else frozenset()
            for target in targets:
                self.assign(target, value | context | self.target_reads(target))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            inner = context | self.values(node.iter)
            self.assign(node.target, inner)
            self.run(node.body, inner)
            self.run(node.orelse, inner)
        elif isinstance(node, (ast.If, ast.While)):
            inner = context | self.values(node.test)
            self.run(node.body, inner)
            self.run(node.orelse, inner)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            self.run(node.body, context)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                self.run(block, context)
            for handler in node.handlers:
                self.run(handler.body, context)
        else:  # expressions (calls), returns, asserts, ...: their calls tie their arguments
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.values(child)

    def assign(self, target: ast.expr, value: frozenset[str]) -> None:
        """``target`` (a name, an element of one, or a tuple of them) receives ``value``."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.assign(element, value)
            return
        if isinstance(target, ast.Starred):
            self.assign(target.value, value)
            return
        root = _root_name(target)
        if root is None:
            return
        if root in self.carried and self.carried[root] == frozenset({root}):
            self.written.add(root)  # a parameter assigned (not a local)
        now = self.carried.get(root, frozenset())
        self.carried[root] = now | value
        # A parameter (or a local that holds parameters' values, such as a view of
        # one) receiving a value ties it to everything the value was made from.
        self.unite(now | value)

    def target_reads(self, target: ast.expr) -> frozenset[str]:
        """Values a target's subscripts read (``out[idx]`` reads ``idx``)."""
        reads: frozenset[str] = frozenset()
        for node in ast.walk(target):
            if isinstance(node, ast.Subscript):
                reads |= self.values(node.slice)
        return reads

    def values(self, node: ast.expr) -> frozenset[str]:
        """The parameters whose values ``node`` may carry; its calls tie their arguments."""
        if isinstance(node, ast.Name):
            return self.carried.get(node.id, frozenset())
        if isinstance(node, ast.Attribute) and node.attr in _NO_VALUE_ATTRIBUTES:
            return frozenset()
        if isinstance(node, ast.Lambda):
            return self.values(node.body)
        result: frozenset[str] = frozenset()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                result |= self.values(child)
            elif isinstance(child, ast.keyword):
                result |= self.values(child.value)
            elif isinstance(child, ast.comprehension):
                result |= self.values(child.iter)
                for condition in child.ifs:
                    result |= self.values(condition)
        if isinstance(node, ast.Call):
            self.unite(result)
            # Helpers are inlined: one may assign the caller's variables it is given
            # (the library's attention folds its keys into the caller's acc, l_i, m_i).
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                while isinstance(argument, ast.Starred):
                    argument = argument.value
                if isinstance(argument, ast.Name):
                    self.carried[argument.id] = self.carried.get(argument.id, frozenset()) | result
        return result


def _root_name(target: ast.expr) -> str | None:
    """The name a target stores into: ``x`` of ``x``, ``x[i]``, ``x.a[i]``."""
    while isinstance(target, (ast.Subscript, ast.Attribute, ast.Starred)):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None
