"""Loops in the partial evaluator: static loops unrolled, data-dependent ones kept for the host.

A loop over a ModuleList/ModuleDict or a fixed range, or over a zip of one with
run-time values (rewrite/zips.py), is unrolled with its variable as a constant
(a data-dependent `break` becomes a host flag guarding the later iterations).
A `while`, or a `for t in range(n)` with a data-dependent bound or `break`,
stays a host loop whose body is lowered once.
"""
from __future__ import annotations

import libcst as cst

from .cfg import IfNode, LoopNode, Stmt
from .diagnostics import Abandoned
from .kinds import JumpKind, LoopKind, LoopMode, TestKind
from .jumps import Frame, assigned_names, has_break, has_jump, splice, terminates
from .staticeval import fold, iteration_items, representation, value_of
from .values import ModRef, Static, TensorConst, Unknown
from .walk import find
from .zips import ZipLoops

__all__ = ["LoopLowering"]


class LoopLowering(ZipLoops):
    """Mixin of PartialEvaluator: `for` and `while` statements."""

    def visit_For(self, node: cst.For, frame: Frame, out: list) -> bool:
        scope = frame.scope
        hoisted: list = []
        iterable = self.expression(node.iter, frame, hoisted, node)
        out.extend(hoisted)
        items = self._zip_items(node, iterable, frame, out)  # `zip(chunks, self.experts)`: rewrite/zips.py
        # The source expression first: folding writes `self.layers` as its path from the model
        # (`self.initial.layers`), which an inlined submodule's scope, where `self` is the submodule,
        # cannot resolve.
        for expr in (node.iter, iterable) if items is None else ():
            try:
                items = iteration_items(expr, scope)
                break
            except Unknown:
                continue
        is_range = isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) \
            and iterable.func.value == "range" and "range" not in scope.rename
        if items is None and not is_range and self._tensor_iterable(iterable, frame):
            return self._index_loop(node, iterable, frame, out)
        if items is None and not is_range:
            self._error("dynamic-loop", frame.src, node.iter, "loop over a value known only at run time",
                        "a loop's items must be fixed by the model (a ModuleList, a ModuleDict, a zip with one of "
                        "them), a range of integers, or the rows of one tensor or list; zip, enumerate and dict "
                        "views of run-time values only have no index the host can step",
                        "loop over `range(len(x))` and index each value")
            return False
        peel = False
        if is_range and (items is None or has_break(node.body)):
            if self._host_for(node, iterable, frame, out, fallback=items is not None):
                return False
            # The body changes conversion-time state (an object forward created starts to hold tensors
            # on the first iteration): the first iteration unrolled, then the rest as a host loop.
            peel = isinstance(iterable, cst.Call) and len(items) > 2
        if node.orelse is not None:
            self._error("for-else", frame.src, node.orelse, "`for ... else` in forward",
                        "the else clause of a loop is not supported", "use a flag variable instead")
        saved_exits = {k: frame.exits[k] for k in (JumpKind.BREAK, JumpKind.CONTINUE)}
        iterations = []
        exits = []
        for index, item in enumerate(items):
            frame.exits[JumpKind.BREAK], frame.exits[JumpKind.CONTINUE] = [], []
            if peel and index == 1:
                rest = self._rest_as_host_loop(node, iterable, frame, guarded=bool(exits))
                if rest is not None:
                    iterations.append(rest)
                    break
            reads = self._bind_item(node.target, item, frame, node)
            frame.loops.append(LoopMode.UNROLLED)
            guarded = bool(exits)  # after a data-dependent `break`, an iteration runs under a flag
            self.guarded += guarded
            try:
                body, terminated = self.block([*reads, *node.body.body], frame)
            finally:
                frame.loops.pop()
                self.guarded -= guarded
            iterations.append(body)
            conts = frame.exits[JumpKind.CONTINUE]
            flows = ([(scope.env, body)] if not terminated else []) + conts
            if flows:
                scope.env = self.merge(flows, frame, node)
            exits.extend(frame.exits[JumpKind.BREAK])
            if terminated and not conts:
                break
        frame.exits.update(saved_exits)
        fall_through: list = []
        if exits:
            scope.env = self.merge([(scope.env, fall_through)] + exits, frame, node)
        lowered = self._join_iterations(iterations, fall_through, frame, node)
        out.extend(lowered)
        return terminates(lowered)

    @staticmethod
    def _tensor_iterable(iterable, frame: Frame) -> bool:
        """A run-time value iterated along its first axis: a tensor (`for row in t`, `for i in m.nonzero()`)
        or a list built at run time. Dict views and zips have no index and stay unsupported."""
        try:
            if isinstance(value_of(iterable, frame.scope), (ModRef, Static)):
                return False  # fixed by the model, yet not something a loop can step: reported
        except Exception:
            pass
        if isinstance(iterable, (cst.Name, cst.Attribute, cst.Subscript)):
            return True
        return isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) \
            and iterable.func.attr.value not in ("items", "keys", "values", "named_children", "children")

    def _index_loop(self, node: cst.For, iterable, frame: Frame, out: list) -> bool:
        """`for row in t:` as the host loop `for i in range(len(t)): row = t[i]`; `t` is evaluated once."""
        if node.orelse is not None:
            self._error("for-else", frame.src, node.orelse, "`for ... else` in forward",
                        "the else clause of a loop is not supported", "use a flag variable instead")
            return False
        scope = frame.scope
        items = self.names.fresh("items")
        index = self.names.fresh("index")
        scope.rename[items] = items
        scope.rename[index] = index
        out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(items))], iterable), self.origin(frame, node.iter)))
        row = cst.Subscript(cst.Name(items), [cst.SubscriptElement(cst.Index(cst.Name(index)))])
        bind = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(node.target)], row)])
        body = node.body.with_changes(body=[bind, *node.body.body])
        bound = cst.Call(cst.Name("range"), [cst.Arg(cst.Call(cst.Name("len"), [cst.Arg(cst.Name(items))]))])
        loop = node.with_changes(target=cst.Name(index), iter=bound, body=body)
        for new in (loop, bound, bind, bind.body[0]):
            frame.src.alias(new, node.iter)
        self._host_for(loop, bound, frame, out, fallback=False)
        return False

    def _host_for(self, node: cst.For, iterable, frame: Frame, out: list, fallback: bool) -> bool:
        """`for t in range(n)` with a data-dependent break or bound: a host loop, body lowered once.

        With `fallback`, a body that only works unrolled (it indexes modules with
        the loop variable) is rolled back and unrolled instead; returns False then.
        """
        scope = frame.scope
        if not isinstance(node.target, cst.Name):
            if not fallback:
                self._error("loop-target", frame.src, node.target, "host loop over a tuple target",
                            "a data-dependent loop needs a plain integer loop variable", "use `for t in range(...)`")
            return not fallback
        saved = (len(self.diagnostics), dict(scope.env), set(scope.poisoned), dict(scope.rename), dict(scope.state))
        tentative: list = []
        variant = set(assigned_names(node.body)) | {node.target.value}
        depth = len(frame.variants)
        self.tentative += fallback  # the first diagnostic ends the attempt (partial_eval._error)
        try:
            self._enter_loop(variant, frame, tentative, node)
            body = self._loop_body(node.body.body, frame)
            self._leave_loop(frame)
        except Abandoned:
            if not fallback:
                raise
            del frame.variants[depth:]
        finally:
            self.tentative -= fallback
        if fallback and len(self.diagnostics) > saved[0]:
            del self.diagnostics[saved[0]:]
            scope.env, scope.poisoned, scope.rename = saved[1], saved[2], saved[3]
            scope.state.clear()  # shared by every scope: restored in place (objects forward created)
            scope.state.update(saved[4])
            return False
        out.extend(tentative)
        target = cst.Name(scope.local(node.target.value))
        out.append(LoopNode(LoopKind.FOR, body, self.origin(frame, node.iter, text=True), target=target, iter=iterable))
        return True

    def _rest_as_host_loop(self, node: cst.For, iterable: cst.Call, frame: Frame, guarded: bool) -> list | None:
        """`for _ in range(n)` after its first iteration: a host loop over `range(1, n)` (under the `break`
        flag of the first), or None when its body is not the same on every iteration either."""
        try:
            remaining = value_of(iterable, frame.scope).value[1:]
        except Exception:
            return None
        if not isinstance(remaining, range):
            return None
        bound = cst.Call(cst.Name("range"), [cst.Arg(cst.Integer(str(v)))
                                             for v in (remaining.start, remaining.stop, remaining.step)])
        loop = node.with_changes(iter=bound)
        frame.src.alias(loop, node)
        frame.src.alias(bound, node.iter)
        lowered: list = []
        self.guarded += guarded
        try:
            hosted = self._host_for(loop, bound, frame, lowered, fallback=True)
        finally:
            self.guarded -= guarded
        return lowered if hosted else None

    def _join_iterations(self, iterations: list[list], fall_through: list, frame: Frame, node) -> list:
        """Unrolled iterations in sequence; `continue` skips the rest of its iteration.

        A data-dependent `break` sets a host flag that guards the later
        iterations, so code grows linearly with the trip count.
        """
        last = len(iterations) - 1
        # A `break` anywhere needs the flag: one after an `if` whose other arm continues is conditional too.
        if not any(has_jump(s, {JumpKind.BREAK}) for body in iterations for s in body):
            lowered = []
            for k, body in enumerate(iterations):
                tail = fall_through if k == last else []
                lowered.extend(splice(body, {JumpKind.CONTINUE: tail, JumpKind.BREAK: [], JumpKind.FALL_THROUGH: tail}))
            return lowered if iterations else fall_through
        origin = self.origin(frame, node)
        flag = self.names.fresh(f"broke_L{origin.first}")
        frame.scope.rename[flag] = flag

        def set_flag(value: bool) -> Stmt:
            return Stmt(cst.Assign([cst.AssignTarget(cst.Name(flag))], cst.Name(str(value))), origin)

        lowered = [set_flag(False)]
        for k, body in enumerate(iterations):
            tail = fall_through if k == last else []
            spliced = splice(body, {JumpKind.CONTINUE: tail, JumpKind.BREAK: [set_flag(True)],
                                   JumpKind.FALL_THROUGH: tail})
            if k == 0:
                lowered.extend(spliced)
            else:
                test = cst.UnaryOperation(cst.Not(), cst.Name(flag))
                lowered.append(IfNode(test, spliced, [], origin, kind=TestKind.GUARD))
        return lowered

    def bind(self, target, value, frame: Frame, node) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            if isinstance(value, TensorConst):
                value.hold()
            frame.scope.env[name] = value
            frame.scope.poisoned.discard(name)
            frame.scope.conflicts.discard(name)
            return
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, tuple) and len(value) == len(target.elements):
            for el, v in zip(target.elements, value):
                self.bind(el.value, v, frame, node)
            return
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, Static) and isinstance(value.value, (tuple, list)):
            self.bind(target, tuple(Static(v) for v in value.value), frame, node)
            return
        self._error("loop-target", frame.src, target, "cannot unpack the loop variable",
                    "the loop target does not match the items the loop iterates over",
                    "use a plain name or a tuple matching the items")

    def visit_While(self, node: cst.While, frame: Frame, out: list) -> bool:
        """A `while` stays a host loop; its body is lowered once."""
        if node.orelse is not None:
            self._error("loop-else", frame.src, node.orelse, "`while ... else` in forward",
                        "the else clause of a loop is not supported", "use a flag variable instead")
        variant = set(assigned_names(node.body))
        self._enter_loop(variant, frame, out, node)
        if self._calls_to_inline(node.test, frame):
            self._error("loop-test-call", frame.src, node.test, "loop condition calls a method that must be inlined",
                        "a while condition is evaluated every iteration and cannot hold inlined code",
                        "compute the condition into a variable before the loop and at the end of the body")
        test = fold(node.test, frame.scope)
        if self._truth(test, frame) is False:
            self.static_decisions += 1
            self._leave_loop(frame)
            return False
        body = self._loop_body(node.body.body, frame)
        self._leave_loop(frame)
        if self._truth(test, frame) and not _leaves(body, top=True):
            self._error("endless-loop", frame.src, node, "loop that never ends",
                        "the loop condition is always true and no `break`, `return` or `raise` in its body "
                        "can be reached, so forward never returns",
                        "add a reachable `break`, or bound the loop (`for _ in range(max_steps):`)")
        out.append(LoopNode(LoopKind.WHILE, body, self.origin(frame, node.test, text=True), test=test))
        return False

    def _enter_loop(self, variant: set[str], frame: Frame, out: list, node) -> None:
        """Names a host loop assigns hold run-time values in it: write their static values out first."""
        scope = frame.scope
        origin = self.origin(frame, node)
        for name in sorted(variant):
            value = scope.env.pop(name, None)
            if value is not None:
                rep = representation(value)
                if rep is None or isinstance(value, ModRef):
                    scope.poisoned.add(name)
                    continue
                out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(scope.local(name)))], rep), origin))
            scope.rename.setdefault(name, name)
        frame.variants.append(variant)

    def _leave_loop(self, frame: Frame) -> None:
        for name in frame.variants.pop():
            frame.scope.env.pop(name, None)

    def _loop_body(self, stmts, frame: Frame) -> list:
        frame.loops.append(LoopMode.HOST)
        self.host_depth += 1
        saved = dict(frame.exits)
        frame.exits = {JumpKind.BREAK: [], JumpKind.CONTINUE: [], JumpKind.RETURN: frame.exits[JumpKind.RETURN]}
        try:
            body, _ = self.block(stmts, frame)
        finally:
            frame.loops.pop()
            self.host_depth -= 1
            frame.exits = saved
        return body

    def _calls_to_inline(self, expr, frame: Frame) -> bool:
        return any(self._inline_target(c, frame) is not None for c in find(expr, cst.Call))


def _leaves(lowered: list, top: bool) -> bool:
    """Can a lowered loop body leave the loop: a `break` of its own (`top`), forward's return or a raise?
    (An inlined helper's `return` is a Jump: it leaves the helper only.)"""
    for node in lowered:
        if isinstance(node, Stmt) and (isinstance(node.node, (cst.Return, cst.Raise))
                                       or top and isinstance(node.node, cst.Break)):
            return True
        if isinstance(node, IfNode) and (_leaves(node.body, top) or _leaves(node.orelse, top)):
            return True
        if isinstance(node, LoopNode) and _leaves(node.body, False):
            return True
    return False
