"""Partially evaluate `forward` against the live model.

Static `if`s are decided, static loops unrolled with their loop variables as
constants, the model's own helper methods (and submodules whose `forward`
branches) inlined. What is left is a tree of branch-free statements and the
`if`s that really depend on run-time values.
"""
from __future__ import annotations

import inspect

import libcst as cst
from torch import nn

from .cfg import IfNode, Jump, LoopNode, Origin, Stmt
from .diagnostics import Diagnostic, Location
from .names import Namespace
from .source import FunctionSource, function_source
from .staticeval import Method, Scope, _target_names, fold, iteration_items, representation, value_of
from .values import ModRef, Static, Unknown, is_literal, to_node

__all__ = ["PartialEvaluator"]

_MAX_INLINE_DEPTH = 16


class _Frame:
    """One function being evaluated: its source, scope and jump snapshots."""

    __slots__ = ("src", "scope", "label", "exits", "result", "loops", "variants")

    def __init__(self, src: FunctionSource, scope: Scope, label: str, result: str | None):
        self.src, self.scope, self.label, self.result = src, scope, label, result
        self.exits: dict[str, list] = {"break": [], "continue": [], "return": []}
        self.loops: list[str] = []  # "host" or "unrolled", innermost last
        self.variants: list[set[str]] = []  # names assigned in each enclosing host loop

    def variant(self, name: str) -> bool:
        return any(name in v for v in self.variants)


def _user_code(obj) -> bool:
    module = getattr(obj, "__module__", "") or ""
    return not module.split(".")[0] in ("torch", "builtins", "math", "numpy", "functools", "typing")


def _has_branches(func) -> bool:
    src = function_source(func)
    if src is None:
        return False
    found = []

    class _V(cst.CSTVisitor):
        def visit_If(self, node):
            found.append(node)

        def visit_While(self, node):
            found.append(node)

        def visit_IfExp(self, node):
            found.append(node)

    src.node.body.visit(_V())
    return bool(found)


class PartialEvaluator:
    """Lowers `forward` to `Stmt`/`IfNode` trees; collects diagnostics."""

    def __init__(self, model: nn.Module, names: Namespace):
        self.model = model
        self.names = names
        self.diagnostics: list[Diagnostic] = []
        self.static_decisions = 0
        self._renames: dict[object, dict[str, str]] = {}
        self.globals: dict = {}
        self._depth = 0

    # -- entry -------------------------------------------------------------
    def lower_forward(self) -> tuple[list[str], list, Origin]:
        cls = type(self.model)
        func = cls.forward
        src = function_source(func)
        if src is None:
            raise RuntimeError(f"cannot read the source of {cls.__qualname__}.forward")
        self_ref = ModRef(self.model, cst.Name("self"))
        params = [p.name.value for p in src.node.params.params][1:]
        for kind in (src.node.params.star_arg, src.node.params.star_kwarg):
            if isinstance(kind, cst.Param):
                self._error("varargs", src, kind, "forward takes *args/**kwargs",
                            "the converted package needs a fixed positional signature",
                            "list forward's inputs as named parameters")
        defining = next(k for k in cls.__mro__ if "forward" in k.__dict__)
        scope = Scope({"self": self_ref}, func.__globals__, {p: p for p in params}, self_ref, defining)
        frame = _Frame(src, scope, "forward", None)
        self.globals = dict(func.__globals__)
        body, _ = self.block(src.node.body.body, frame)
        first, last, col = src.loc(src.node)
        return params, body, Origin(src.file, first, last, col, "forward")

    # -- diagnostics ---------------------------------------------------------
    def _error(self, kind, src: FunctionSource, node, message, explanation, hint):
        first, _, col = src.loc(node)
        if any(d.kind == kind and (d.loc.file, d.loc.line, d.loc.col) == (src.file, first, col)
               for d in self.diagnostics):
            return  # the same construct seen again in another unrolled iteration
        self.diagnostics.append(Diagnostic(kind, Location(src.file, first, col), message, explanation, hint))

    def origin(self, frame: _Frame, node) -> Origin:
        first, last, col = frame.src.loc(node)
        return Origin(frame.src.file, first, last, col, frame.label)

    # -- statements ----------------------------------------------------------
    def block(self, stmts, frame: _Frame) -> tuple[list, bool]:
        """Lower a statement list; returns (lowered, terminates)."""
        out: list = []
        for stmt in stmts:
            terminated = self.statement(stmt, frame, out)
            if terminated:
                return out, True
        return out, False

    def statement(self, stmt, frame: _Frame, out: list) -> bool:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if self.small(small, frame, out, stmt):
                    return True
            return False
        handler = getattr(self, f"visit_{type(stmt).__name__}", None)
        if handler is None:
            self._error("unsupported-statement", frame.src, stmt, f"`{type(stmt).__name__.lower()}` statement in forward",
                        "dycl compiles straight-line tensor code, if/else and static loops",
                        "move this code out of forward")
            return False
        return handler(stmt, frame, out)

    def visit_If(self, node: cst.If, frame: _Frame, out: list) -> bool:
        hoisted: list = []
        test = self.expression(node.test, frame, hoisted, node)
        out.extend(hoisted)
        taken = self._truth(test, frame)
        orelse_stmts = self._orelse(node.orelse)
        if taken is not None:
            self.static_decisions += 1
            chosen = node.body.body if taken else orelse_stmts
            lowered, terminated = self.block(chosen, frame)
            out.extend(lowered)
            return terminated
        scope = frame.scope
        before = dict(scope.env)
        body, t_body = self.block(node.body.body, frame)
        env_body = scope.env
        scope.env = dict(before)
        orelse, t_else = self.block(orelse_stmts, frame)
        env_else = scope.env
        flows = [(e, sink) for e, sink, t in ((env_body, body, t_body), (env_else, orelse, t_else)) if not t]
        scope.env = self.merge(flows, frame, node) if flows else dict(before)
        out.append(IfNode(test, body, orelse, self.origin(frame, node.test)))
        return not flows

    def _truth(self, test, frame: _Frame):
        """True/False for a test decided at conversion time, None otherwise."""
        try:
            value = value_of(test, frame.scope)
        except Exception:
            return None
        if isinstance(value, Static):
            return bool(value.value)
        if isinstance(value, ModRef):
            return bool(value.obj) if hasattr(type(value.obj), "__len__") else True
        return None

    @staticmethod
    def _orelse(orelse):
        if orelse is None:
            return []
        if isinstance(orelse, cst.If):
            return [orelse]
        return list(orelse.body.body)

    def merge(self, flows, frame: _Frame, node) -> dict:
        """Join the static environments of control paths that meet again.

        A name static on every path with the same value stays static; otherwise
        its static value is written out as an assignment at the end of each path
        that had one, so that the name holds a run-time value after the join.
        """
        if len(flows) == 1:
            return flows[0][0]
        keys = set().union(*(env.keys() for env, _ in flows))
        merged = {}
        for key in sorted(keys):
            values = [env.get(key) for env, _ in flows]
            if all(v is not None and v == values[0] for v in values):
                merged[key] = values[0]
                continue
            for (env, sink), value in zip(flows, values):
                if value is None:
                    continue
                rep = representation(value)
                if rep is None or isinstance(value, ModRef):
                    frame.scope.poisoned.add(key)
                    break
                name = frame.scope.local(key)
                frame.scope.rename.setdefault(key, name)
                sink.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(name))], rep), self.origin(frame, node)))
        return merged

    def visit_For(self, node: cst.For, frame: _Frame, out: list) -> bool:
        scope = frame.scope
        hoisted: list = []
        iterable = self.expression(node.iter, frame, hoisted, node)
        out.extend(hoisted)
        try:
            items = iteration_items(iterable, scope)
        except Unknown:
            items = None
        is_range = isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) \
            and iterable.func.value == "range" and "range" not in scope.rename
        if items is None and not is_range:
            self._error("dynamic-loop", frame.src, node.iter, "loop over a value known only at run time",
                        "a loop's items must be fixed by the model (a ModuleList, a ModuleDict) or be a range "
                        "of integers; iterating over a tensor is not supported",
                        "loop over `range(x.shape[0])` and index the tensor")
            return False
        if is_range and (items is None or _has_break(node.body)):
            if self._host_for(node, iterable, frame, out, fallback=items is not None):
                return False
        if node.orelse is not None:
            self._error("for-else", frame.src, node.orelse, "`for ... else` in forward",
                        "the else clause of a loop is not supported", "use a flag variable instead")
        saved_exits = {k: frame.exits[k] for k in ("break", "continue")}
        iterations = []
        exits = []
        for item in items:
            frame.exits["break"], frame.exits["continue"] = [], []
            self.bind(node.target, item, frame, node)
            frame.loops.append("unrolled")
            try:
                body, terminated = self.block(node.body.body, frame)
            finally:
                frame.loops.pop()
            iterations.append(body)
            conts = frame.exits["continue"]
            flows = ([(scope.env, body)] if not terminated else []) + conts
            if flows:
                scope.env = self.merge(flows, frame, node)
            exits.extend(frame.exits["break"])
            if terminated and not conts:
                break
        frame.exits.update(saved_exits)
        fall_through: list = []
        if exits:
            scope.env = self.merge([(scope.env, fall_through)] + exits, frame, node)
        lowered = self._join_iterations(iterations, fall_through, frame, node)
        out.extend(lowered)
        return _terminates(lowered)

    def _host_for(self, node: cst.For, iterable, frame: _Frame, out: list, fallback: bool) -> bool:
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
        saved = (len(self.diagnostics), dict(scope.env), set(scope.poisoned), dict(scope.rename))
        tentative: list = []
        variant = set(_assigned_names(node.body)) | {node.target.value}
        self._enter_loop(variant, frame, tentative, node)
        body = self._loop_body(node.body.body, frame)
        self._leave_loop(frame)
        if fallback and len(self.diagnostics) > saved[0]:
            del self.diagnostics[saved[0]:]
            scope.env, scope.poisoned, scope.rename = saved[1], saved[2], saved[3]
            return False
        out.extend(tentative)
        target = cst.Name(scope.local(node.target.value))
        out.append(LoopNode("for", body, self.origin(frame, node.iter), target=target, iter=iterable))
        return True

    def _join_iterations(self, iterations: list[list], fall_through: list, frame: _Frame, node) -> list:
        """Unrolled iterations in sequence; `continue` skips the rest of its iteration.

        A data-dependent `break` sets a host flag that guards the later
        iterations, so code grows linearly with the trip count.
        """
        last = len(iterations) - 1
        if not any(isinstance(s, IfNode) and _has_jump(s, {"break"}) for body in iterations for s in body):
            lowered = []
            for k, body in enumerate(iterations):
                tail = fall_through if k == last else []
                lowered.extend(_splice(body, {"continue": tail, "break": [], "": tail}))
            return lowered if iterations else fall_through
        origin = self.origin(frame, node)
        flag = self.names.fresh(f"broke_L{origin.first}")
        frame.scope.rename[flag] = flag

        def set_flag(value: bool) -> Stmt:
            return Stmt(cst.Assign([cst.AssignTarget(cst.Name(flag))], cst.Name(str(value))), origin)

        lowered = [set_flag(False)]
        for k, body in enumerate(iterations):
            tail = fall_through if k == last else []
            spliced = _splice(body, {"continue": tail, "break": [set_flag(True)], "": tail})
            if k == 0:
                lowered.extend(spliced)
            else:
                test = cst.UnaryOperation(cst.Not(), cst.Name(flag))
                lowered.append(IfNode(test, spliced, [], origin, kind="guard"))
        return lowered

    def bind(self, target, value, frame: _Frame, node) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            frame.scope.env[name] = value
            frame.scope.poisoned.discard(name)
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

    def visit_While(self, node: cst.While, frame: _Frame, out: list) -> bool:
        """A `while` stays a host loop; its body is lowered once."""
        if node.orelse is not None:
            self._error("loop-else", frame.src, node.orelse, "`while ... else` in forward",
                        "the else clause of a loop is not supported", "use a flag variable instead")
        variant = set(_assigned_names(node.body))
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
        out.append(LoopNode("while", body, self.origin(frame, node.test), test=test))
        return False

    def _enter_loop(self, variant: set[str], frame: _Frame, out: list, node) -> None:
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

    def _leave_loop(self, frame: _Frame) -> None:
        for name in frame.variants.pop():
            frame.scope.env.pop(name, None)

    def _loop_body(self, stmts, frame: _Frame) -> list:
        frame.loops.append("host")
        saved = dict(frame.exits)
        frame.exits = {"break": [], "continue": [], "return": frame.exits["return"]}
        try:
            body, _ = self.block(stmts, frame)
        finally:
            frame.loops.pop()
            frame.exits = saved
        return body

    def _calls_to_inline(self, expr, frame: _Frame) -> bool:
        found = []

        class _Calls(cst.CSTVisitor):
            def visit_Call(self, call):
                found.append(call)

        expr.visit(_Calls())
        return any(self._inline_target(c, frame) is not None for c in found)

    def visit_With(self, node: cst.With, frame, out) -> bool:
        for item in node.items:
            try:
                ctx = value_of(item.item.func if isinstance(item.item, cst.Call) else item.item, frame.scope)
            except Unknown:
                ctx = None
            name = getattr(getattr(ctx, "value", None), "__name__", "")
            if name not in ("no_grad", "inference_mode", "autocast") or item.asname is not None:
                self._error("with-block", frame.src, node, "`with` block in forward",
                            "only `torch.no_grad()` / `torch.inference_mode()` contexts can be dropped safely",
                            "move the context manager outside the model")
                return False
        lowered, terminated = self.block(node.body.body, frame)
        out.extend(lowered)
        return terminated

    def visit_Try(self, node, frame, out) -> bool:
        self._error("try-block", frame.src, node, "`try` around tensor code",
                    "exceptions raised inside compiled regions cannot be caught by the host",
                    "remove the try/except or handle the error outside the model")
        return False

    def _nested_def(self, node, frame, out) -> bool:
        self._error("nested-def", frame.src, node, "definition inside forward",
                    "functions and classes defined inside forward cannot be compiled",
                    "define it as a method of the model class; dycl inlines methods")
        return False

    visit_FunctionDef = visit_ClassDef = _nested_def

    # -- small statements ------------------------------------------------------
    def small(self, node, frame: _Frame, out: list, line) -> bool:
        scope = frame.scope
        origin = self.origin(frame, line)
        if isinstance(node, cst.Pass):
            return False
        if isinstance(node, (cst.Break, cst.Continue)) and frame.loops and frame.loops[-1] == "host":
            out.append(Stmt(node, origin))
            return True
        if isinstance(node, (cst.Break, cst.Continue)):
            kind = "break" if isinstance(node, cst.Break) else "continue"
            jump = Jump(kind, origin)
            frame.exits[kind].append((dict(scope.env), jump.before))
            out.append(jump)
            return True
        if isinstance(node, cst.Return):
            hoisted: list = []
            value = self.expression(node.value, frame, hoisted, line) if node.value else None
            out.extend(hoisted)
            if frame.result is None:
                out.append(Stmt(node.with_changes(value=value), origin))
                return True
            jump = Jump("return", origin)
            if frame.result:
                jump.before.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(frame.result))], value or cst.Name("None")), origin))
            frame.exits["return"].append((dict(scope.env), jump.before))
            out.append(jump)
            return True
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            self._error("global-state", frame.src, node, f"`{type(node).__name__.lower()}` in forward",
                        "a compiled package cannot read or write Python globals at run time",
                        "pass the value as an input or store it on the model as a constant")
            return False
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            self._error("import-in-forward", frame.src, node, "import inside forward",
                        "imports run at conversion time only", "move the import to the top of the module")
            return False
        if isinstance(node, cst.Del):
            return False
        if isinstance(node, cst.Expr):
            if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
                return False
            if isinstance(node.value, (cst.Yield, cst.Await)):
                self._error("generator", frame.src, node, "`yield` in forward",
                            "forward must return its result once", "collect the values in a list and return it")
                return False
            inlined = self._try_inline(node.value, frame, out, line, result=None)
            if inlined is not None:
                return False
            hoisted = []
            value = self.expression(node.value, frame, hoisted, line)
            out.extend(hoisted)
            out.append(Stmt(node.with_changes(value=value), origin))
            return False
        if isinstance(node, cst.Assign):
            for t in node.targets:
                if self._writes_self(t.target, frame):
                    self._error("module-state", frame.src, t.target, "forward assigns to an attribute of the model",
                                "the compiled package has no mutable model state",
                                "keep the value in a local variable and return it")
                    return False
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                target = node.targets[0].target.value
                if self._try_inline(node.value, frame, out, line, result=self._local(target, frame)) is not None:
                    self._set_dynamic(target, frame)
                    return False
            hoisted = []
            value = self.expression(node.value, frame, hoisted, line)
            out.extend(hoisted)
            static = self._static(value, frame)
            names = [n for t in node.targets for n in _target_names(t.target)]
            if static is not None and all(isinstance(t.target, (cst.Name, cst.Tuple, cst.List)) for t in node.targets) \
                    and not any(frame.variant(n) for n in names):
                for t in node.targets:
                    self.bind(t.target, static if isinstance(t.target, cst.Name) else _as_tuple(static), frame, line)
                return False
            targets = [t.with_changes(target=fold(t.target, scope) if not isinstance(t.target, cst.Name) else
                                      cst.Name(self._local(t.target.value, frame))) for t in node.targets]
            targets = [t.with_changes(target=self._rename_targets(t.target, frame)) for t in targets]
            for n in names:
                self._set_dynamic(n, frame)
            out.append(Stmt(node.with_changes(targets=targets, value=value), origin))
            return False
        if isinstance(node, cst.AnnAssign):
            if node.value is None:
                return False
            return self.small(cst.Assign([cst.AssignTarget(node.target)], node.value), frame, out, line)
        if isinstance(node, cst.AugAssign):
            hoisted = []
            value = self.expression(node.value, frame, hoisted, line)
            out.extend(hoisted)
            target = node.target
            if isinstance(target, cst.Name) and target.value in scope.env and not frame.variant(target.value):
                old = scope.env[target.value]
                static = self._static(value, frame)
                if static is not None and isinstance(old, Static):
                    op = cst.BinaryOperation(to_node(old.value) if is_literal(old.value) else target,
                                             _binop_of(node.operator), value)
                    new = self._static(op, frame)
                    if new is not None:
                        scope.env[target.value] = new
                        return False
                rep = representation(old)
                if rep is not None and not isinstance(old, ModRef):
                    out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(self._local(target.value, frame)))], rep), origin))
            if isinstance(target, cst.Name):
                self._set_dynamic(target.value, frame)
                target = cst.Name(self._local(target.value, frame))
            else:
                target = fold(target, scope)
            out.append(Stmt(node.with_changes(target=target, value=value), origin))
            return False
        if isinstance(node, cst.Assert):
            return False
        if isinstance(node, cst.Raise):
            self._error("raise", frame.src, node, "`raise` reached in forward",
                        "a data-dependent raise cannot be compiled", "validate inputs before calling the model")
            return False
        self._error("unsupported-statement", frame.src, node, f"`{type(node).__name__}` statement",
                    "this statement kind is not supported in forward", "rewrite it as assignments")
        return False

    # -- helpers ---------------------------------------------------------------
    def _local(self, name: str, frame: _Frame) -> str:
        return frame.scope.local(name)

    def _set_dynamic(self, name: str, frame: _Frame) -> None:
        frame.scope.env.pop(name, None)
        frame.scope.poisoned.discard(name)
        frame.scope.rename.setdefault(name, name)

    def _rename_targets(self, target, frame):
        if isinstance(target, cst.Name):
            return cst.Name(self._local(target.value, frame))
        if isinstance(target, (cst.Tuple, cst.List)):
            return target.with_changes(elements=[el.with_changes(value=self._rename_targets(el.value, frame))
                                                 for el in target.elements])
        if isinstance(target, cst.StarredElement):
            return target.with_changes(value=self._rename_targets(target.value, frame))
        return target

    def _writes_self(self, target, frame) -> bool:
        node = target
        while isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
            if isinstance(node, cst.Name) and node.value == "self" and isinstance(target, cst.Attribute):
                return True
        if isinstance(target, (cst.Tuple, cst.List)):
            return any(self._writes_self(el.value, frame) for el in target.elements)
        return False

    def _static(self, expr, frame):
        try:
            value = value_of(expr, frame.scope)
        except Unknown:
            return None
        except Exception:
            return None
        if isinstance(value, Static) and isinstance(value.value, (list, dict, set)):
            return None  # mutable: `tokens = []` collects values at run time
        if isinstance(value, Static) and not is_literal(value.value):
            return value if isinstance(value.value, range) else None
        return value if isinstance(value, (Static, ModRef)) else None

    def expression(self, expr, frame: _Frame, out: list, line) -> cst.BaseExpression:
        """Fold `expr`; inline calls to model methods inside it into `out` first."""
        expr = self._inline_nested(expr, frame, out, line)
        self._check_module_indexing(expr, frame)
        return fold(expr, frame.scope)

    def _check_module_indexing(self, expr, frame: _Frame) -> None:
        """`self.experts[k]` with a run-time `k` cannot be compiled: report it."""
        found = []

        class _Subscripts(cst.CSTVisitor):
            def visit_Subscript(self, node):
                found.append(node)

        expr.visit(_Subscripts())
        for node in found:
            try:
                base = value_of(node.value, frame.scope)
            except Exception:
                continue
            if not isinstance(base, ModRef) or not isinstance(base.obj, (nn.ModuleList, nn.ModuleDict, nn.Sequential)):
                continue
            try:
                value_of(node, frame.scope)
            except Unknown:
                self._error("dynamic-module", frame.src, node, "module chosen by a run-time value",
                            "each compiled region calls fixed modules; the index is only known at run time",
                            "select the module with if/elif on the value (`if k == 0: y = self.experts[0](x)`)")
            except Exception:
                continue

    def _inline_nested(self, expr, frame, out, line):
        calls: list[cst.Call] = []

        class _Calls(cst.CSTVisitor):
            def visit_Call(self, node):
                calls.append(node)

            def visit_Lambda(self, node):
                return False

            def visit_ListComp(self, node):
                return False

            visit_GeneratorExp = visit_DictComp = visit_SetComp = visit_ListComp

        expr.visit(_Calls())
        replacements = {}
        for call in reversed(calls):  # innermost first
            target = self._inline_target(call, frame)
            if target is None:
                continue
            func = target[0]
            result = self.names.fresh(f"{getattr(func, '__name__', 'call')}_out".lstrip("_"))
            frame.scope.rename[result] = result
            self._inline(call, target, frame, out, line, result)
            replacements[call] = cst.Name(result)
        if not replacements:
            return expr

        class _Replace(cst.CSTTransformer):
            def on_leave(self, original, updated):
                return replacements.get(original, updated)

        return expr.visit(_Replace())

    def _inline_target(self, call: cst.Call, frame: _Frame):
        """(function, owner ModRef or None, defining class) when `call` should be inlined."""
        scope = frame.scope
        if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Call) \
                and isinstance(call.func.value.func, cst.Name) and call.func.value.func.value == "super":
            if scope.self_ref is None or scope.cls is None:
                return None
            mro = type(scope.self_ref.obj).__mro__
            start = mro.index(scope.cls) + 1
            name = call.func.attr.value
            for klass in mro[start:]:
                if name in klass.__dict__:
                    func = klass.__dict__[name]
                    if _user_code(func):
                        return func, scope.self_ref, klass
                    return None
            return None
        try:
            fv = value_of(call.func, scope)
        except Unknown:
            return None
        except Exception:
            return None
        if isinstance(fv, Method) and _user_code(fv.func) and fv.func.__name__ != "forward":
            klass = next(k for k in type(fv.owner.obj).__mro__ if fv.func.__name__ in k.__dict__)
            return fv.func, fv.owner, klass
        if isinstance(fv, Method) and fv.func.__name__ == "forward" and _user_code(fv.func) and _has_branches(fv.func):
            klass = next(k for k in type(fv.owner.obj).__mro__ if "forward" in k.__dict__)
            return fv.func, fv.owner, klass
        if isinstance(fv, ModRef) and isinstance(fv.obj, nn.Module) and _user_code(type(fv.obj)) \
                and not fv.obj._forward_hooks and not fv.obj._forward_pre_hooks:
            forward = type(fv.obj).forward
            if _user_code(forward) and _has_branches(forward):
                klass = next(k for k in type(fv.obj).__mro__ if "forward" in k.__dict__)
                return forward, fv, klass
            return None
        if isinstance(fv, Static) and inspect.isfunction(fv.value) and _user_code(fv.value) and _has_branches(fv.value):
            return fv.value, None, None
        return None

    def _try_inline(self, expr, frame, out, line, result):
        if not isinstance(expr, cst.Call):
            return None
        target = self._inline_target(expr, frame)
        if target is None:
            return None
        self._inline(expr, target, frame, out, line, result)
        return True

    def _inline(self, call: cst.Call, target, frame: _Frame, out: list, line, result: str | None) -> None:
        func, owner, klass = target
        src = function_source(func)
        if src is None:
            self._error("no-source", frame.src, call, f"cannot read the source of `{func.__qualname__}`",
                        "dycl inlines functions whose control flow depends on tensors and needs their source",
                        "define the function in a .py file")
            return
        if self._depth >= _MAX_INLINE_DEPTH:
            self._error("recursion", frame.src, call, f"`{func.__qualname__}` is inlined too deeply",
                        "recursive helpers cannot be unrolled", "rewrite the recursion as a loop over a fixed range")
            return
        params = list(inspect.signature(func).parameters.values())
        if owner is not None:
            params = params[1:]
        label = func.__qualname__
        rename = self._rename_map(func, src)
        scope = Scope({}, func.__globals__, dict(rename), owner, klass)
        for key, value in func.__globals__.items():
            self.globals.setdefault(key, value)
        if owner is not None:
            scope.env["self"] = owner
        callee = _Frame(src, scope, label, result if result is not None else "")
        origin = self.origin(frame, line)
        # Bind arguments: static ones as constants, dynamic ones as assignments.
        args = [a for a in call.args]
        if any(a.star for a in args):
            self._error("star-args", frame.src, call, "call with *args/**kwargs to an inlined function",
                        "arguments must be matched to parameters at conversion time", "pass arguments explicitly")
            return
        positional = [a.value for a in args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in args if a.keyword is not None}
        for i, p in enumerate(params):
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                self._error("star-args", frame.src, call, f"`{label}` takes *args/**kwargs",
                            "inlined functions need a fixed parameter list", "list the parameters explicitly")
                return
            if i < len(positional):
                arg = positional[i]
            elif p.name in keywords:
                arg = keywords[p.name]
            elif p.default is not p.empty:
                scope.env[p.name] = Static(p.default)
                continue
            else:
                self._error("bad-call", frame.src, call, f"missing argument `{p.name}` for `{label}`",
                            "the call does not match the signature", "pass every parameter")
                return
            hoisted: list = []
            value = self.expression(arg, frame, hoisted, line)
            out.extend(hoisted)
            static = self._static(value, frame)
            if static is not None:
                scope.env[p.name] = static
            elif isinstance(value, cst.Name) and p.name not in _assigned_names(src.node.body):
                scope.rename[p.name] = value.value
            else:
                out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(scope.rename[p.name]))], value), origin))
        self._depth += 1
        try:
            body, _ = self.block(src.node.body.body, callee)
        finally:
            self._depth -= 1
        if _jump_in_loop(body):
            self._error("return-in-loop", frame.src, call, f"`{label}` returns from inside a data-dependent loop",
                        "an inlined function's return must not leave a host loop",
                        "set a result variable and `break` instead")
            return
        out.extend(_splice_returns(body))

    def _rename_map(self, func, src: FunctionSource) -> dict[str, str]:
        """Fresh host names for an inlined function's locals (same for every call)."""
        if func in self._renames:
            return self._renames[func]
        local = [p.name.value for p in src.node.params.params] + list(_assigned_names(src.node.body))
        mapping = {}
        for name in local:
            if name == "self" or name in mapping:
                continue
            mapping[name] = self.names.fresh(name)
        self._renames[func] = mapping
        return mapping


def _assigned_names(body) -> dict[str, None]:
    """Names a block assigns (targets of =, op=, annotated =, for), in source order."""
    names: dict[str, None] = {}

    class _V(cst.CSTVisitor):
        def visit_AssignTarget(self, node):
            names.update(dict.fromkeys(_target_names(node.target)))

        def visit_AugAssign(self, node):
            names.update(dict.fromkeys(_target_names(node.target)))

        def visit_AnnAssign(self, node):
            names.update(dict.fromkeys(_target_names(node.target)))

        def visit_For(self, node):
            names.update(dict.fromkeys(_target_names(node.target)))

        def visit_FunctionDef(self, node):
            return False

    body.visit(_V())
    return names


def _has_break(body) -> bool:
    found = []

    class _V(cst.CSTVisitor):
        def visit_Break(self, node):
            found.append(node)

        def visit_For(self, node):
            return False

        def visit_While(self, node):
            return False

    body.visit(_V())
    return bool(found)


def _jump_in_loop(stmts: list) -> bool:
    for s in stmts:
        if isinstance(s, LoopNode) and (any(isinstance(x, Jump) for x in s.body) or _jump_in_loop(s.body)
                                        or any(isinstance(x, IfNode) and _has_jump(x, {"return"}) for x in s.body)):
            return True
        if isinstance(s, IfNode) and (_jump_in_loop(s.body) or _jump_in_loop(s.orelse)):
            return True
    return False


def _as_tuple(value):
    if isinstance(value, Static) and isinstance(value.value, (tuple, list)):
        return tuple(Static(v) for v in value.value)
    return value


def _binop_of(op: cst.BaseAugOp):
    name = type(op).__name__.replace("Assign", "")
    return getattr(cst, name)()


def _has_jump(node, kinds) -> bool:
    if isinstance(node, Jump):
        return node.kind in kinds
    if isinstance(node, IfNode):
        return any(_has_jump(s, kinds) for s in node.body + node.orelse)
    return False


def _terminates(stmts: list) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, Jump):
        return True
    if isinstance(last, Stmt):
        return isinstance(last.node, (cst.Return, cst.Break, cst.Continue))
    if isinstance(last, IfNode):
        return _terminates(last.body) and _terminates(last.orelse)
    return False


def _splice(stmts: list, tails: dict[str, list]) -> list:
    """Resolve jumps: what follows a jump moves into the arm that does not take it."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, Jump) and s.kind in tails:
            return out + s.before + tails[s.kind]
        if isinstance(s, IfNode) and _has_jump(s, tails):
            rest = stmts[i + 1:]
            out.append(IfNode(s.test, _splice(s.body + rest, tails), _splice(s.orelse + rest, tails), s.origin,
                              s.kind))
            return out
        out.append(s)
    return out + tails.get("", [])


def _splice_returns(body: list) -> list:
    return _splice(body, {"return": []})
