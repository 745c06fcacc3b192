"""Dicts, sets and lists fixed at conversion time that the code goes on to mutate.

Library code builds a dict from its configuration and edits it: transformers' `capture_outputs`
writes `collected_outputs = {k: [] for k, v in recordable_keys.items() if v}`, tests
`if len(collected_outputs) > 0:`, later `collected_outputs.pop("_hidden_states_layers", None)`.
With static flags the dict is a conversion-time value, and so is every decision on it.

Before such a value is bound to a name, every use of the name in the function is read. It stays
a conversion-time value only when each use is a read, a mutating method called as a statement
(`d.pop(k, None)`, `s.add(k)`) or an item assignment (`d[k] = v`); those run when converting, on a
copy the binding owns (the model's own dicts are never touched), and one whose arguments are not
known then is reported. Any other use (`x = d.pop(k)`, `d[k] += 1`, `del d[k]`) leaves the name a
run-time value, as before.
"""
from __future__ import annotations

import copy

import libcst as cst

from .cfg import Stmt
from .jumps import Frame
from .kinds import LoopMode
from .staticeval import _plain, representation, value_of
from .syntax import MUTATORS
from .values import Alias, Pack, Static, Unknown, is_literal

__all__ = ["MutableStatics", "mutated_safely", "read_only"]

_PACK_REMOVERS = ("pop",)

_CONTAINERS = (dict, set)  # lists have rewrite/lists.py


def mutated_safely(func_node: cst.CSTNode, name: str) -> bool:
    """Whether every mutation of `name` in `func_node` is a statement the evaluator runs when converting."""
    ok = True

    class _V(cst.CSTVisitor):
        def visit_Expr(self, node):
            call = node.value
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and _is(call.func.value, name):
                self._allowed.add(id(call.func))

        def visit_AssignTarget(self, node):
            if isinstance(node.target, cst.Subscript) and _is(node.target.value, name):
                self._allowed.add(id(node.target))

        def visit_Attribute(self, node):
            nonlocal ok
            if _is(node.value, name) and node.attr.value in MUTATORS and id(node) not in self._allowed:
                ok = False

        def visit_AugAssign(self, node):
            nonlocal ok
            if _roots_at(node.target, name):
                ok = False

        def visit_Del(self, node):
            nonlocal ok
            if _roots_at(node.target, name):
                ok = False

    visitor = _V()
    visitor._allowed = set()
    func_node.visit(visitor)
    return ok


def read_only(func_node: cst.CSTNode, name: str) -> bool:
    """Whether `name` is never changed in place in `func_node`: no mutating method, no item assignment,
    augmented assignment or `del` (`is_full = [... for ... in zip(cache.is_sliding, ...)]`, then
    `is_full.index(True)`): a list fixed at conversion time stays one."""
    changed = False

    class _V(cst.CSTVisitor):
        def visit_Attribute(self, node):
            nonlocal changed
            changed = changed or _is(node.value, name) and node.attr.value in MUTATORS | {"sort", "reverse"}

        def visit_AssignTarget(self, node):
            nonlocal changed
            changed = changed or not isinstance(node.target, cst.Name) and _roots_at(node.target, name)

        def visit_AugAssign(self, node):
            nonlocal changed
            changed = changed or _roots_at(node.target, name)

        def visit_Del(self, node):
            nonlocal changed
            changed = changed or _roots_at(node.target, name)

    func_node.visit(_V())
    return not changed


def _is(node, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _roots_at(node, name: str) -> bool:
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        node = node.value
    if isinstance(node, (cst.Tuple, cst.List)):
        return any(_roots_at(el.value, name) for el in node.elements)
    return _is(node, name)


class MutableStatics:
    """Mixin of PartialEvaluator: bind, and mutate when converting, dicts/sets/lists fixed then."""

    def _bind_mutable(self, node: cst.Assign, frame: Frame) -> bool:
        """`d = {...}` (or a comprehension, or a call returning a container) fixed at conversion time and
        only mutated by statements: bound to a copy the evaluator owns. True when bound."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return False
        name = node.targets[0].target.value
        if frame.variant(name):
            return False  # a value built per iteration of a host loop: run time
        try:
            value = value_of(node.value, frame.scope)
        except Exception:
            return False
        if not isinstance(value, Static) or not mutated_safely(frame.src.node, name) \
                or not (isinstance(value.value, _CONTAINERS) or isinstance(value.value, list)
                        and is_literal(value.value) and read_only(frame.src.node, name)):
            return False
        self._own(name, value.value, frame)
        return True

    def _own(self, name: str, container, frame: Frame) -> None:
        """Bind `name` to a copy of `container` that conversion may change."""
        owned = copy.copy(container)
        self._owned_containers[id(owned)] = (self.arms, frame.loops.count(LoopMode.HOST))
        self._owned_keep.append(owned)  # ids stay unique while the evaluator runs
        frame.scope.env[name] = Static(owned)
        frame.scope.poisoned.discard(name)

    def _container(self, expr, frame: Frame):
        """A dict or set `expr` evaluates to when converting (a helper's `return {...}`), else None."""
        try:
            value = value_of(expr, frame.scope)
        except Exception:
            return None
        return value if isinstance(value, Static) and isinstance(value.value, _CONTAINERS) else None

    def _owned(self, target, frame: Frame):
        """The dict or set a name holds at conversion time, else None (it may be the model's own: only the
    ones _own bound are changed in place)."""
        if not isinstance(target, cst.Name):
            return None
        held = frame.scope.env.get(target.value)
        if isinstance(held, Static) and isinstance(held.value, _CONTAINERS):
            return held.value
        return None

    def _mutate_owned(self, node, frame: Frame, out: list, line) -> bool:
        """`d.pop(k, None)` as a statement or `d[k] = v` on an owned container: run now, when its arguments
        are known and it runs exactly when the container was built (not in one arm of a run-time `if`, nor
        in a host loop around it). Otherwise the container is written out as it is and becomes a run-time
        value that the statement then changes. True when handled here."""
        if isinstance(node, cst.Expr) and isinstance(node.value, cst.Call) \
                and isinstance(node.value.func, cst.Attribute) and node.value.func.attr.value in MUTATORS:
            call = node.value
            target = call.func.value

            def run(owned):
                args = [_plain(value_of(a.value, frame.scope)) for a in call.args if not a.star and a.keyword is None]
                if len(args) != len(call.args):
                    raise Unknown("arguments")
                getattr(owned, call.func.attr.value)(*args)
        elif isinstance(node, cst.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0].target, cst.Subscript):
            store = node.targets[0].target
            target = store.value

            def run(owned):
                if len(store.slice) != 1 or not isinstance(store.slice[0].slice, cst.Index):
                    raise Unknown("slice")
                key = _plain(value_of(store.slice[0].slice.value, frame.scope))
                owned[key] = _plain(value_of(node.value, frame.scope))
        else:
            return False
        owned = self._owned(target, frame)
        if owned is None:
            return False
        if self._owned_containers.get(id(owned)) == (self.arms, frame.loops.count(LoopMode.HOST)):
            trial = copy.copy(owned)
            try:
                run(trial)
            except (Unknown, KeyError, IndexError, ValueError, TypeError, AttributeError):
                pass
            else:
                run(owned)
                return True
        rep = representation(Static(owned))
        if rep is None:
            self._error("static-container", frame.src, node, "a container fixed at conversion time is changed at "
                        "run time", "the dict or set was built from the configuration and holds values that the "
                        "package cannot rebuild, but this change depends on a run-time value or decision",
                        "keep the run-time values in a container of their own")
            return True
        name = frame.scope.local(target.value)
        self._set_dynamic(target.value, frame)
        out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(name))], rep), self.origin(frame, line)))
        return False

    # -- `**kwargs` edited in place ---------------------------------------------------
    def _mutate_pack(self, node, frame: Frame, out: list, line) -> bool:
        """`kwargs["k"] = v`, `kwargs.pop("k", d)` and `x = kwargs.pop("k", d)` on matched keyword arguments:
        the Pack the name holds changes, so a later `f(**kwargs)` passes exactly what Python would (a
        wrapper that sets `kwargs["use_cache"] = False` before calling the model). True when handled."""
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Subscript):
            store = node.targets[0].target
            pack = self._pack_named(store.value, frame)
            if pack is None:
                return False
            if len(store.slice) != 1 or not isinstance(store.slice[0].slice, cst.Index):
                return self._pack_error(node, frame)
            try:
                key = _plain(value_of(store.slice[0].slice.value, frame.scope))
            except Exception:
                return self._pack_error(node, frame)
            value = self._argument_value(node.value, frame, out, line)
            frame.scope.env[store.value.value] = Pack(pack.items, {**pack.keywords, key: value})
            return True
        call, target = None, None
        if isinstance(node, cst.Expr):
            call = node.value
        elif isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            call, target = node.value, node.targets[0].target
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in _PACK_REMOVERS):
            return False
        pack = self._pack_named(call.func.value, frame)
        if pack is None:
            return False
        try:
            key = _plain(value_of(call.args[0].value, frame.scope)) if call.args else None
            value = value_of(call, frame.scope)
        except Exception:
            return self._pack_error(node, frame)
        frame.scope.env[call.func.value.value] = Pack(pack.items, {k: v for k, v in pack.keywords.items() if k != key})
        if target is not None:
            if isinstance(value, Alias):
                name = frame.scope.local(target.value)
                self._set_dynamic(target.value, frame)
                out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(frame.scope.local(target.value)))],
                                           cst.Name(value.name)), self.origin(frame, line)))
            else:
                self.bind(target, value, frame, line)
        return True

    def _pack_named(self, node, frame: Frame):
        if not isinstance(node, cst.Name):
            return None
        held = frame.scope.env.get(node.value)
        return held if isinstance(held, Pack) else None

    def _argument_value(self, expr, frame: Frame, out: list, line):
        """A value to keep in a Pack: static as it is, run-time through a variable of its own."""
        static = self._static(expr, frame)
        if static is not None:
            return static
        hoisted: list = []
        value = self.expression(expr, frame, hoisted, line)
        out.extend(hoisted)
        name = self.names.fresh("arg")
        frame.scope.rename[name] = name
        out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(name))], value), self.origin(frame, line)))
        return Alias(name)

    def _pack_error(self, node, frame: Frame) -> bool:
        self._error("star-args", frame.src, node, "`**kwargs` changed by a key only known at run time",
                    "the keyword arguments a function passes on are matched when converting",
                    "set the keyword with a constant name")
        return True
