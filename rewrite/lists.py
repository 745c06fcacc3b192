"""Lists built in forward whose length is fixed at conversion time.

Library code collects things in lists: `hooked = []` then `hooked.append((module, hook))` in a
static loop, later `for module, hook in reversed(hooked):` (transformers' accelerate hooks), or
`to_cat = []`, `to_cat.append(self.cls_token.expand(...))`, later `if to_cat:` and
`torch.cat(to_cat + [x])` (timm's ViT).

Before a `name = []` is bound, every use of `name` in the function is read:
- when each one is an `append` statement, a loop over it (also `reversed`/`enumerate`/`zip`), `len()`
  or a truth test, the list is a conversion-time value (StaticList) as long as every appended
  value is known then: nothing of it reaches the package;
- when each one is that, or a read in arithmetic (`to_cat + [x]`) or an index, the list is a
  run-time list whose length is known (SizedList): `if to_cat:` and `len(to_cat)` fold.
An `append` in a host loop, or of a run-time value to a StaticList whose items cannot be written
out, leaves the length unknown; any other use keeps the list a plain run-time value.
"""
from __future__ import annotations

import libcst as cst

from .cfg import Stmt
from .jumps import Frame
from .kinds import LoopMode
from .staticeval import representation, value_of
from .values import ModRef, SizedList, StaticList, Unknown

__all__ = ["ListBuilding"]

_LOOP_WRAPPERS = ("reversed", "enumerate")


def _uses(func_node: cst.CSTNode, name: str) -> tuple[bool, bool]:
    """(static_ok, sized_ok): whether every use of `name` in the function allows each mode."""
    allowed_static: set[int] = set()
    allowed_sized: set[int] = set()
    assignments = 0

    class _V(cst.CSTVisitor):
        def visit_Expr(self, node):
            call = node.value
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                    and call.func.attr.value == "append" and _is(call.func.value) and len(call.args) == 1:
                allowed_static.add(id(call.func.value))

        def visit_For(self, node):
            it = node.iter
            if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in _LOOP_WRAPPERS \
                    and it.args:
                it = it.args[0].value
            zipped = isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "zip"
            for item in [a.value for a in it.args] if zipped else [it]:  # zip: rewrite/zips.py
                if _is(item):
                    allowed_static.add(id(item))

        def visit_Call(self, node):
            if isinstance(node.func, cst.Name) and node.func.value == "len" and len(node.args) == 1 \
                    and _is(node.args[0].value):
                allowed_static.add(id(node.args[0].value))

        def _test(self, test):
            while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test = test.expression
            if _is(test):
                allowed_static.add(id(test))

        def visit_If(self, node):
            self._test(node.test)

        def visit_While(self, node):
            self._test(node.test)

        def visit_BinaryOperation(self, node):
            for side in (node.left, node.right):
                if _is(side):
                    allowed_sized.add(id(side))

        def visit_Subscript(self, node):
            if _is(node.value):
                allowed_sized.add(id(node.value))

        def visit_AssignTarget(self, node):
            nonlocal assignments
            if _is(node.target):
                assignments += 1
                allowed_static.add(id(node.target))

        def visit_AugAssign(self, node):
            nonlocal assignments
            if _is(node.target):
                assignments += 2  # `xs += [...]`: not tracked

    def _is(node) -> bool:
        return isinstance(node, cst.Name) and node.value == name

    func_node.visit(_V())
    if assignments != 1:
        return False, False
    uses = [id(n) for n in _names(func_node, name)]
    static_ok = all(u in allowed_static for u in uses)
    sized_ok = all(u in allowed_static or u in allowed_sized for u in uses)
    return static_ok, sized_ok


def _names(node: cst.CSTNode, name: str) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _V(cst.CSTVisitor):
        def visit_Attribute(self, attr):  # `obj.name` is an attribute, not the variable
            attr.value.visit(self)
            return False

        def visit_Arg(self, arg):  # `f(name=...)`: a keyword, not the variable
            arg.value.visit(self)
            return False

        def visit_Name(self, n):
            if n.value == name:
                found.append(n)

    node.visit(_V())
    return found


class ListBuilding:
    """Mixin of PartialEvaluator: `name = []` and `name.append(v)` with a length known when converting."""

    def _list_assignment(self, node: cst.Assign, frame: Frame, out: list, line) -> bool:
        """`name = [...]`: bound as a StaticList (items known) or SizedList when its uses allow; True when handled."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name) \
                or not isinstance(node.value, cst.List) \
                or any(isinstance(el, cst.StarredElement) for el in node.value.elements):
            return False
        name = node.targets[0].target.value
        if frame.variant(name):
            return False
        items = [self._list_item(el.value, frame) for el in node.value.elements]
        static_ok, sized_ok = _uses(frame.src.node, name)
        if static_ok and all(i is not None for i in items):  # `names = ["use_cache", ...]`, then a loop
            held = StaticList(tuple(items), self._list_depth(frame))
            rep = representation(held)
            if rep is not None:  # the run-time list too, in case an append of a run-time value comes
                self._set_dynamic(name, frame)
                out.append(Stmt(node.with_changes(targets=[node.targets[0].with_changes(
                    target=cst.Name(self._local(name, frame)))], value=rep), self.origin(frame, line)))
            frame.scope.env[name] = held
            frame.scope.poisoned.discard(name)
            return True
        if not sized_ok:
            return False
        self._set_dynamic(name, frame)
        hoisted: list = []
        value = self.expression(node.value, frame, hoisted, line)
        out.extend(hoisted)
        out.append(Stmt(node.with_changes(targets=[node.targets[0].with_changes(
            target=cst.Name(self._local(name, frame)))], value=value), self.origin(frame, line)))
        frame.scope.env[name] = SizedList(len(node.value.elements))
        return True

    def _list_append(self, node: cst.Expr, frame: Frame, out: list, line) -> bool:
        """`name.append(v)` on a tracked list; True when the statement was handled here."""
        call = node.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "append" and isinstance(call.func.value, cst.Name)
                and len(call.args) == 1 and not call.args[0].star and call.args[0].keyword is None):
            return False
        name = call.func.value.value
        held = frame.scope.env.get(name)
        if not isinstance(held, (StaticList, SizedList)):
            return False
        in_host_loop = LoopMode.HOST in frame.loops
        if isinstance(held, StaticList):
            item = None if in_host_loop else self._list_item(call.args[0].value, frame)
            if item is not None:
                frame.scope.env[name] = StaticList(held.items + (item,), held.depth)
                return True
            if not self._materialize(name, held, frame, out, line, call):
                return True
            held = frame.scope.env.get(name)
        if isinstance(held, SizedList) and not in_host_loop:
            hoisted: list = []
            value = self.expression(call.args[0].value, frame, hoisted, line)
            out.extend(hoisted)
            out.append(Stmt(node.with_changes(value=call.with_changes(
                func=call.func.with_changes(value=cst.Name(self._local(name, frame))),
                args=[call.args[0].with_changes(value=value)])), self.origin(frame, line)))
            frame.scope.env[name] = SizedList(held.length + 1)
            return True
        frame.scope.env.pop(name, None)  # appended per iteration of a host loop: length unknown
        return False

    def _list_item(self, expr: cst.BaseExpression, frame: Frame):
        """The conversion-time value of an appended item (a tuple of values item by item), or None."""
        if isinstance(expr, cst.Tuple):
            items = [self._list_item(el.value, frame) if not isinstance(el, cst.StarredElement) else None
                     for el in expr.elements]
            return None if any(i is None for i in items) else tuple(items)
        try:
            value = value_of(expr, frame.scope)
        except Unknown:
            return None
        except Exception:
            return None
        return self._constant(value)

    def _list_depth(self, frame: Frame) -> tuple:
        return self.arms, frame.loops.count(LoopMode.HOST)

    def _materialize(self, name: str, held: StaticList, frame: Frame, out: list, line, call) -> bool:
        """Write a StaticList out as a run-time list (a value appended to it is known only at run time).

        Its assignment wrote the list as it was then; items appended since are written here, which
        is only right where no run-time decision lies between the two."""
        reps = [representation(v) for v in held.items]
        if len(held.items) and held.depth != self._list_depth(frame):
            self._error("static-list", frame.src, call, f"`{name}` gets a run-time value under a decision "
                        "after values known when converting",
                        "the values appended before the decision would have to be written out on its every path",
                        "append the run-time values to a list of their own")
            return False
        if any(r is None or isinstance(v, (ModRef, tuple)) for r, v in zip(reps, held.items)):
            self._error("static-list", frame.src, call, f"`{name}` mixes model objects and run-time values",
                        "the list holds values known only when converting (modules, functions) and a value "
                        "known only at run time, so neither the host nor a region can hold it",
                        "keep the run-time values in a list of their own")
            return False
        self._set_dynamic(name, frame)
        local = cst.Name(self._local(name, frame))
        out.append(Stmt(cst.Assign([cst.AssignTarget(local)], cst.List([cst.Element(r) for r in reps])),
                        self.origin(frame, line)))
        _, sized_ok = _uses(frame.src.node, name)
        if sized_ok:
            frame.scope.env[name] = SizedList(len(reps))
        return True
