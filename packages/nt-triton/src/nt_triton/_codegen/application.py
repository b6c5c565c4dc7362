"""The application, rewritten: tensor references become loads, stores and shapes.

:class:`ApplicationRewriter` walks the (inlined) application's statements.
A bare parameter name is its tile, loaded; ``x[k]`` goes a level deeper;
assigning to a parameter stores; attributes describe (see
:mod:`descriptions`); names of Python objects become Triton code (see
:mod:`references`).

Loads are hoisted (:mod:`hoisting`): each tile's pointers, mask and value become named
statements (``x_pointers_N``, ``x_mask_N``, ``x_tile_N``) placed before the
statement that needs them, and are reused until a store to that parameter,
or a reassignment of a name their subscripts use, makes them stale.  A
parameter read back after this program stored it gets a
``tl.debug_barrier()`` first (other threads of the program wrote it).
"""

from __future__ import annotations

import ast
import itertools
from typing import Any

from ninetoothed.errors import CodegenError
from ninetoothed.spec.parameter import Parameter
from nt_triton._codegen import descriptions, dots, gathers, inline, memory, naming, ragged_loops
from nt_triton._codegen.context import Context
from nt_triton._codegen.hoisting import Hoisted, HoistedLoads
from nt_triton._codegen.references import fold_builtin_call, reference, refusal
from nt_triton._codegen.syntax import call, constant_int
from nt_triton._codegen.views import ElementType, SourceView, TypeView, View

__all__ = ["ApplicationRewriter"]

_DESCRIPTIONS = (View, SourceView, ElementType, TypeView)


class ApplicationRewriter(HoistedLoads, ast.NodeTransformer):
    """Turns tensor references in the application into loads, stores and shapes."""

    def __init__(self, context: Context, local: set[str]) -> None:
        self.context = context
        self.local = local
        self.spec = context.spec
        self.prelude: list[ast.stmt] = []
        self.loop_depth = 0
        self.hoisting = False
        self.branching = False
        """Inside a conditional expression's branch of a hoisting statement: loads stay
        in the branch, a read-back's barrier still goes before the statement."""
        self.cache: dict[tuple[Any, ...], Hoisted] = {}
        self.counter = itertools.count()

    def rewrite_body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """Rewrite a statement list; loads are hoisted into named statements."""
        outer_prelude, outer_hoisting = self.prelude, self.hoisting
        self.cache.clear()
        result: list[ast.stmt] = []
        for statement in body:
            self.prelude, self.hoisting = [], True
            rewritten = self.visit(statement)
            result.extend(self.prelude)
            if isinstance(rewritten, list):
                result.extend(rewritten)
            elif rewritten is not None:
                result.append(rewritten)
            self.forget_assigned(statement)
        self.cache.clear()
        self.prelude, self.hoisting = outer_prelude, outer_hoisting
        return result

    def whole_indexed(self, node: ast.Subscript) -> bool:
        """Whether ``node`` subscripts a parameter the spec reads as the whole tensor
        (:attr:`~ninetoothed.spec.kernel_spec.KernelSpec.whole_indexed`)."""
        return isinstance(node.value, ast.Name) and node.value.id in self.spec.whole_indexed

    def source_subscript(self, node: ast.Subscript) -> tuple[Parameter, list[ast.expr]] | None:
        """For ``x.source[indices]``: the parameter and the rewritten index expressions.

        Also for ``x[indices]`` of a parameter the spec reads as the whole tensor
        (:attr:`~ninetoothed.spec.kernel_spec.KernelSpec.whole_indexed`)."""
        base = self.value(node.value)
        if self.whole_indexed(node) and isinstance(base, View):
            base = SourceView(base.parameter)
        if not isinstance(base, SourceView):
            return None
        indices = gathers.subscript_indices(self.context, base.parameter, node.slice)
        return base.parameter, [self.visit(index) for index in indices]

    def scatter(self, parameter: Parameter, indices: list[ast.expr], value: ast.expr) -> ast.stmt:
        """``x.source[indices] = value``; the parameter's hoisted tiles go stale."""
        statement = gathers.scatter(self.context, parameter, indices, value)
        self.stale(parameter.name)
        return statement

    def forget_assigned(self, statement: ast.stmt) -> None:
        """Drop cached addressing that mentions a name the statement assigned."""
        assigned = {
            node.id
            for node in ast.walk(statement)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
        }
        if not assigned:
            return
        for key in list(self.cache):
            if assigned & set(key[2]):
                del self.cache[key]

    # -- values -----------------------------------------------------------
    def value(self, node: ast.expr) -> object:
        """Resolve a name/attribute/subscript chain to a description or an expression."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            parameter = self.context.parameters.get(node.id)
            if parameter is None or parameter.is_scalar:
                return node
            return View(parameter, 1)
        if isinstance(node, ast.Attribute):
            base = self.value(node.value)
            if isinstance(base, View) and node.attr not in descriptions.ATTRIBUTES:
                # Any other attribute is the loaded tile's own (Triton's): x.to(dtype).
                return ast.Attribute(self.load(base), node.attr, ast.Load())
            if isinstance(base, _DESCRIPTIONS):
                return descriptions.attribute(self.context, base, node.attr, node)
            return node
        if isinstance(node, ast.Subscript):
            if self.whole_indexed(node):
                return node  # an element of the whole tensor: see source_subscript
            base = self.value(node.value)
            if isinstance(base, View):
                return self.index(base, node.slice)
            if isinstance(base, tuple):
                position = constant_int(node.slice)
                if position is None:
                    raise CodegenError(
                        f"{self.spec.label}: shapes can only be indexed with integer constants"
                    )
                return base[position]
        return node

    def index(self, view: View, index: ast.expr) -> View:
        """``x[index]``: the next level, at the application's subscripts."""
        items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        if view.element is not None:
            raise CodegenError(
                f"{self.spec.label}: {view.parameter.name!r} is already one element of its tile "
                "and cannot be indexed again"
            )
        if view.is_innermost and len(items) != view.level.ndim:
            raise CodegenError(
                f"{self.spec.label}: {view.parameter.name!r} is a tile of shape "
                f"{view.level.shape}; indexing it reads one element, which needs "
                f"{view.level.ndim} indices, got {len(items)}"
            )
        if len(items) > view.level.ndim and not view.is_innermost:
            # Upstream's x[i, k]: indices beyond this level's go on to the next levels.
            ndim = view.level.ndim
            first = [self.visit(item) for item in items[:ndim]]
            deeper = View(view.parameter, view.depth + 1, (*view.indices, tuple(first)))
            rest = items[ndim:]
            return self.index(deeper, rest[0] if len(rest) == 1 else ast.Tuple(rest, ast.Load()))
        if len(items) != view.level.ndim:
            raise CodegenError(
                f"{self.spec.label}: indexing {view.parameter.name!r} needs {view.level.ndim} "
                f"indices (one per dimension of shape {view.level.shape}), got {len(items)}"
            )
        items = [self.visit(item) for item in items]
        depth = view.depth if view.is_innermost else view.depth + 1
        return View(view.parameter, depth, (*view.indices, tuple(items)))

    def materialize(self, value: object, node: ast.expr) -> ast.expr:
        """Turn a resolved value into code (a view becomes a load)."""
        if isinstance(value, View):
            return self.load(value)
        if isinstance(value, tuple) and not isinstance(value, ast.AST):
            if value and value[0] == descriptions.OFFSETS:
                raise CodegenError(
                    f"{self.spec.label}: offsets must be called: x.offsets(dim) or x.offsets()"
                )
            return ast.Tuple(list(value), ast.Load())
        if isinstance(value, ElementType):
            return descriptions.element_type(self.context, value)
        if isinstance(value, (SourceView, TypeView)):
            raise CodegenError(
                f"{self.spec.label}: {ast.unparse(node)} is a tensor description, not a value"
            )
        assert isinstance(value, ast.expr)
        return value

    def target_view(self, target: ast.expr) -> View | None:
        """The view an assignment target stores into, or None for a plain local."""
        if isinstance(target, ast.Name):
            parameter = self.context.parameters.get(target.id)
            if parameter is None:
                return None
            if parameter.is_scalar:
                raise CodegenError(
                    f"{self.spec.label}: {target.id!r} is a scalar parameter and cannot be "
                    "assigned to"
                )
            return View(parameter, 1)
        if isinstance(target, ast.Subscript):
            base = (
                self.target_view(target.value)
                if isinstance(target.value, (ast.Name, ast.Subscript))
                else None
            )
            if base is None:
                return None
            return self.index(base, target.slice)
        return None

    def resolved_reference(self, node: ast.expr) -> ast.expr | None:
        """Code for the Python object ``node`` names, if it names one Triton knows."""
        resolved = inline.resolve(node, self.local)
        if resolved is inline.UNRESOLVED:
            return None
        code = reference(self.context, resolved)
        why = refusal(self.context, resolved) if code is None else None
        if why is not None:
            raise CodegenError(
                f"{self.spec.label}: the application uses the global {ast.unparse(node)!r}"
                f"{inline.located(node)}, "
                f"{why}; a kernel may use module-level numbers, bools, strings, None and tuples of "
                "them, dtypes, tl.constexpr values, ninetoothed.language and triton names, "
                "plain helper functions (inlined) and triton.jit functions; pass other "
                "values as parameters (a Tensor, or Tensor(0, constexpr=True) for a constant)"
            )
        return code

    # -- visitors: expressions ---------------------------------------------
    def visit_Name(self, node: ast.Name) -> ast.expr:
        if not isinstance(node.ctx, ast.Load):
            return node
        value = self.value(node)
        if value is not node:
            return self.materialize(value, node)
        if node.id in self.local:
            return node
        return self.resolved_reference(node) or node

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        value = self.value(node)
        if value is not node:
            return self.materialize(value, node)
        code = self.resolved_reference(node)
        if code is not None:
            return code
        node.value = self.visit(node.value)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        if isinstance(node.ctx, ast.Load):
            gathered = self.source_subscript(node)
            if gathered is not None:
                parameter, indices = gathered
                return gathers.gather(self.context, parameter, indices)
            value = self.value(node)
            if value is not node:
                return self.materialize(value, node)
        node.value = self.visit(node.value)
        node.slice = self.visit(node.slice)
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if isinstance(node.func, ast.Attribute) and node.func.attr == descriptions.OFFSETS:
            base = self.value(node.func.value)
            if isinstance(base, View):
                if len(node.args) > 1 or node.keywords:
                    raise CodegenError(
                        f"{self.spec.label}: offsets takes at most one argument, the dim"
                    )
                dim = constant_int(node.args[0]) if node.args else None
                if node.args and dim is None:
                    raise CodegenError(f"{self.spec.label}: offsets(dim) needs an integer constant")
                return memory.offsets(self.context, base, dim)
        if isinstance(node.func, ast.Attribute) and node.func.attr in gathers.METHODS:
            base = self.value(node.func.value)
            if isinstance(base, View):
                base = SourceView(base.parameter)  # upstream: any level's is the source's
            if isinstance(base, SourceView):
                node.args = [self.visit(arg) for arg in node.args]
                return gathers.method(self.context, base.parameter, node.func.attr, node)
        folded = fold_builtin_call(node, self.local)
        if folded is not None:
            return folded
        node.func = self.visit(node.func)
        node.args = [self.visit(arg) for arg in node.args]
        node.keywords = [ast.keyword(k.arg, self.visit(k.value)) for k in node.keywords]
        return dots.with_precision(node, self.spec.options.get("input_precision"))

    # -- visitors: statements ----------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> ast.stmt | list[ast.stmt]:
        value = self.visit(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
            scattered = self.source_subscript(node.targets[0])
            if scattered is not None:
                return self.scatter(*scattered, value)
        if len(node.targets) == 1:
            view = self.target_view(node.targets[0])
            if view is not None:
                return self.store(view, value)
        for target in node.targets:
            if self.target_view(target) is not None or any(
                self.target_view(t) is not None
                for t in ast.walk(target)
                if isinstance(t, (ast.Name, ast.Subscript)) and t is not target
            ):
                raise CodegenError(
                    f"{self.spec.label}: store to a tensor parameter with a plain assignment "
                    f"({ast.unparse(target)} = ...), not chained or unpacked"
                )
        node.targets = [self.visit(t) for t in node.targets]
        node.value = value
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        node.left = self.visit(node.left)
        node.right = self.visit(node.right)
        return self.added(node.left, node.op, node.right)

    def added(self, left: ast.expr, op: ast.operator, right: ast.expr) -> ast.expr:
        """``left op right``; a ``+`` of two values that may both be bools calls
        :data:`naming.ADD` (a literal number, a tuple or a ``tl.dot`` cannot be one,
        and ``accumulator += tl.dot(...)`` stays as Triton fuses it best)."""
        if not isinstance(op, ast.Add) or not (_may_be_bool(left) and _may_be_bool(right)):
            return ast.BinOp(left, op, right)
        self.context.uses_add = True
        return call(naming.ADD, [left, right])

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        view = self.target_view(node.target)
        if view is not None:
            current = self.load(view)
            return self.store(view, self.added(current, node.op, self.visit(node.value)))
        node.value = self.visit(node.value)
        if isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name):
            value = self.added(ast.Name(node.target.id, ast.Load()), node.op, node.value)
            if isinstance(value, ast.Call):
                return ast.Assign(targets=[node.target], value=value, lineno=0)
        node.target = self.visit(node.target)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt | list[ast.stmt]:
        if node.value is None:
            return []
        if isinstance(node.target, ast.Name) and self.target_view(node.target) is None:
            # A local keeps its annotation: Triton makes ``mode: tl.constexpr = "ieee"``
            # a compile-time constant, which ``tl.dot(input_precision=mode)`` needs.
            node.annotation = self.visit(node.annotation)
            node.value = self.visit(node.value)
            node.target = self.visit(node.target)
            return node
        return self.visit_Assign(ast.Assign(targets=[node.target], value=node.value, lineno=0))

    def visit_For(self, node: ast.For) -> ast.stmt | list[ast.stmt]:
        node.iter = self.visit(node.iter)
        return ragged_loops.split(self.context, node, self._loop, self.fresh)

    def visit_While(self, node: ast.While) -> ast.stmt:
        # The test runs before every iteration: its loads cannot be hoisted.
        hoisting, self.hoisting = self.hoisting, False
        node.test = self.visit(node.test)
        self.hoisting = hoisting
        return self._loop(node)

    def _loop(self, node: ast.For | ast.While) -> ast.stmt:
        """A loop's body and ``else``, once its header is rewritten."""
        context = self.context
        context.has_loop = True
        self.cache.clear()
        if not self.loop_depth:
            context.loop, context.loops = context.loops, context.loops + 1
        self.loop_depth += 1
        node.body = self.rewrite_body(node.body)
        self.loop_depth -= 1
        if not self.loop_depth:
            context.loop = None
        node.orelse = self.rewrite_body(node.orelse)
        return node

    def visit_If(self, node: ast.If) -> ast.stmt:
        node.test = self.visit(node.test)
        node.body = self.rewrite_body(node.body)
        node.orelse = self.rewrite_body(node.orelse)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        # Only the branch the condition selects runs (a constexpr condition compiles
        # only that one), so its loads stay in it: hoisted before the statement, they
        # would read a tensor the call may leave unused (see ninetoothed.spec._guards).
        node.test = self.visit(node.test)
        hoisting, branching = self.hoisting, self.branching
        self.hoisting, self.branching = False, hoisting or branching
        try:
            node.body = self.visit(node.body)
            node.orelse = self.visit(node.orelse)
        finally:
            self.hoisting, self.branching = hoisting, branching
        return node

    def visit_With(self, node: ast.With) -> ast.stmt:
        node.body = self.rewrite_body(node.body)
        return node

    def visit_Return(self, node: ast.Return) -> ast.stmt:
        if node.value is not None:
            raise CodegenError(
                f"{self.spec.label}: an application returns nothing; assign to an output "
                "parameter to store results"
            )
        return node


def _may_be_bool(node: ast.expr) -> bool:
    """Whether an operand of ``+`` may be a bool (not a literal, a tuple or a dot)."""
    if isinstance(node, (ast.Constant, ast.Tuple, ast.List)):
        return False
    return not (isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.dot")
