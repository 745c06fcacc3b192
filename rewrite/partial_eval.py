"""Partially evaluate `forward` against the live model.

Static `if`s are decided, static loops unrolled with their loop variables as
constants, the model's own helper methods (and submodules whose `forward`
branches) inlined. What is left is a tree of branch-free statements and the
`if`s and loops that really depend on run-time values.
"""
from __future__ import annotations

import builtins
import inspect
import sys

import libcst as cst
import torch
from torch import nn

from .cfg import IfNode, Jump, Origin, Stmt, code
from .checks import ExpressionChecks
from .closures import Closure, NestedFunctions
from .library_statements import LibraryStatements, constant_result as _constant_result
from .constants import ConstantTensors
from .diagnostics import Abandoned, Diagnostic, Location
from .dispatch import ModuleDispatch
from .higher_order import HigherOrderOps
from .inline import Inlining
from .lists import ListBuilding
from .mutables import MutableStatics, mutated_safely
from .objects import ForwardObjects
from .jumps import Frame, as_tuple, binop_of
from .kinds import JumpKind, LoopMode
from .imports import imported_names
from .nonnull import is_tensor, never_none, never_none_items
from .loops import LoopLowering
from .state import AttributeWrites
from .names import Namespace
from .returns import ReturnFact
from .source import FunctionSource, function_source
from .staticeval import NOT_FOLDABLE, NOT_STATIC, Method, Scope, fold, representation, value_of
from .syntax import MUTATORS_RETURNING_NONE, target_names
from .values import IS_TENSOR, NOT_NONE, Alias, Holds, Instance, NotNone, ModRef, Pack, SizedList, Static, StaticList, TensorConst, Unknown, is_literal, to_node
from .walk import find

__all__ = ["PartialEvaluator"]


class PartialEvaluator(LoopLowering, ExpressionChecks, Inlining, ModuleDispatch, HigherOrderOps, AttributeWrites,
                       ListBuilding, ConstantTensors, MutableStatics, NestedFunctions, LibraryStatements, ForwardObjects):
    """Lowers `forward` to `Stmt`/`IfNode` trees; collects diagnostics."""

    def __init__(self, model: nn.Module, names: Namespace):
        self.model = model
        self.names = names
        self.diagnostics: list[Diagnostic] = []
        self.defaults: dict[str, str] = {}  # forward parameters the example leaves out, fixed at their defaults
        self.tensor_inputs: dict[str, str] = {}  # forward's tensor parameters and their views (see ExpressionChecks)
        self.static_decisions = 0
        self._renames: dict[object, dict[str, str]] = {}
        self.globals: dict = {}
        self._catching: list = []  # per `try` being lowered: the ImportError its body raised when converting
        self._depth = 0
        self.arms = 0  # how many arms of run-time `if`s the statement being lowered is inside
        self.state: dict = {}  # (id(module), attribute) -> what forward set it to (rewrite/state.py)
        self._owned_containers: dict[int, tuple] = {}  # dicts/sets built when converting (rewrite/mutables.py)
        self._owned_keep: list = []
        self._object_variables: dict = {}  # (id(object), attribute) -> the variable holding it (objects.py)
        self.guarded = 0  # unrolled iterations after a data-dependent `break` being lowered (they run under a flag)
        self.host_depth = 0  # host loops around the statement being lowered
        self.tentative = 0  # host loops being tried that unroll instead on a diagnostic (loops.py)
        self.held_objects: dict = {}  # objects forward created that the last expression's result holds
        self.length_checks: dict[str, Diagnostic] = {}  # host checks' messages -> their diagnostic (zips.py)

    # -- entry -------------------------------------------------------------
    def lower_forward(self, given: int | None = None) -> tuple[list[str], list, Origin]:
        """forward's lowered body and the parameters the package takes: the first `given` ones,
        when the rest have plain constant defaults (`thresh=0.5`, `mask=None`), which are folded."""
        cls = type(self.model)
        func = cls.forward
        src = function_source(func)
        if src is None:
            raise RuntimeError(f"cannot read the source of {cls.__qualname__}.forward")
        self_ref = ModRef(self.model, cst.Name("self"))
        params = [p.name.value for p in src.node.params.params][1:]
        defaults = _constant_defaults(func, params[given:]) if given is not None and given < len(params) else {}
        if len(defaults) == len(params) - (given or 0):
            params = params[:given]
        else:
            defaults = {}
        self.defaults = {name: repr(value.value) for name, value in defaults.items()}
        for kind in (src.node.params.star_arg, src.node.params.star_kwarg):
            if isinstance(kind, cst.Param):
                self._error("varargs", src, kind, "forward takes *args/**kwargs",
                            "the converted package needs a fixed positional signature",
                            "list forward's inputs as named parameters")
        defining = next(k for k in cls.__mro__ if "forward" in k.__dict__)
        inputs = {p: IS_TENSOR for p in params if p in self.tensor_inputs}  # tensor inputs are never None
        scope = Scope({"self": self_ref, **inputs, **defaults}, func.__globals__, {p: p for p in params}, self_ref,
                      defining, self.state)
        frame = Frame(src, scope, "forward", None)
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
        if self.tentative:
            raise Abandoned(kind)

    def origin(self, frame: Frame, node, text: bool = False) -> Origin:
        """Where `node` is; with `text`, also how it is written there."""
        first, last, col = frame.src.loc(node)
        return Origin(frame.src.file, first, last, col, frame.label, code(node) if text else "")

    # -- statements ----------------------------------------------------------
    def block(self, stmts, frame: Frame) -> tuple[list, bool]:
        """Lower a statement list; returns (lowered, terminates)."""
        out: list = []
        for stmt in stmts:
            terminated = self.statement(stmt, frame, out)
            if terminated:
                return out, True
        return out, False

    def statement(self, stmt, frame: Frame, out: list) -> bool:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                lowered = self.higher_order(small, frame, out, stmt)
                if lowered is None:
                    lowered = self.small(small, frame, out, stmt)
                if lowered:
                    return True
            return False
        handler = getattr(self, f"visit_{type(stmt).__name__}", None)
        if handler is None:
            self._error("unsupported-statement", frame.src, stmt, f"`{type(stmt).__name__.lower()}` statement in forward",
                        "dycl compiles straight-line tensor code, if/else and static loops",
                        "move this code out of forward")
            return False
        return handler(stmt, frame, out)

    def visit_If(self, node: cst.If, frame: Frame, out: list) -> bool:
        node = self._hoist_named(node, frame, out)
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
        self.arms += 1  # inside the arms of a run-time `if` (rewrite/lists.py)
        try:
            body, t_body = self.block(node.body.body, frame)
            env_body = scope.env
            scope.env = dict(before)
            orelse, t_else = self.block(orelse_stmts, frame)
        finally:
            self.arms -= 1
        env_else = scope.env
        flows = [(e, sink) for e, sink, t in ((env_body, body, t_body), (env_else, orelse, t_else)) if not t]
        scope.env = self.merge(flows, frame, node) if flows else dict(before)
        out.append(IfNode(test, body, orelse, self.origin(frame, node.test, text=True)))
        return not flows

    def _truth(self, test, frame: Frame):
        """True/False for a test decided at conversion time, None otherwise."""
        try:
            value = value_of(test, frame.scope)
        except NOT_STATIC:
            return None
        if isinstance(value, Static):
            try:
                return bool(value.value)
            except NOT_FOLDABLE:  # a tensor of several values: as ambiguous at run time, where it raises
                return None
        if isinstance(value, (StaticList, SizedList)):  # `if to_cat:` on a list of known length
            return bool(value.items if isinstance(value, StaticList) else value.length)
        if isinstance(value, ModRef) and isinstance(value.obj, torch.Tensor):
            return None
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

    def merge(self, flows, frame: Frame, node) -> dict:
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
            if all(isinstance(v, NotNone) for v in values):  # a tensor on one path, never None on the other
                merged[key] = NOT_NONE
                continue
            for (env, sink), value in zip(flows, values):
                if value is None or isinstance(value, NotNone):  # a run-time value there: nothing to write
                    continue
                rep = representation(value)
                if rep is None and isinstance(value, StaticList):
                    self._error("static-list", frame.src, node, f"`{key}` holds different model objects on the paths "
                                "that meet here", "a list of modules or functions is known only when converting, "
                                "so it must be the same whichever arm a run-time decision takes",
                                "append the same items on every path, or keep run-time values in a list of their own")
                if rep is None or isinstance(value, ModRef):
                    frame.scope.poisoned.add(key)
                    if not isinstance(value, (SizedList, Pack, Alias)):  # run-time data, not a model object
                        frame.scope.conflicts.add(key)
                    break
                name = frame.scope.local(key)
                frame.scope.rename.setdefault(key, name)
                sink.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(name))], rep), self.origin(frame, node)))
        return merged

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

    def _nested_def(self, node, frame, out) -> bool:
        self._error("nested-def", frame.src, node, "definition inside forward",
                    "functions and classes defined inside forward cannot be compiled",
                    "define it as a method of the model class; dycl inlines methods")
        return False

    visit_ClassDef = _nested_def

    # -- small statements ------------------------------------------------------
    def small(self, node, frame: Frame, out: list, line) -> bool:
        scope = frame.scope
        origin = self.origin(frame, line)
        if isinstance(node, cst.Pass):
            return False
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.Expr)):
            self._release_constants(node, frame, out, origin)
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr, cst.Return)):
            dispatched = self._dispatch_module(node, frame, out, line)
            if dispatched is not None:
                return dispatched
            self._check_mutation(node, frame)
        if isinstance(node, (cst.Break, cst.Continue)) and frame.loops and frame.loops[-1] == LoopMode.HOST:
            out.append(Stmt(node, origin))
            return True
        if isinstance(node, (cst.Break, cst.Continue)):
            kind = JumpKind.BREAK if isinstance(node, cst.Break) else JumpKind.CONTINUE
            jump = Jump(kind, origin)
            frame.exits[kind].append((dict(scope.env), jump.before))
            out.append(jump)
            return True
        if isinstance(node, cst.Return):
            hoisted: list = []
            value = self.expression(node.value, frame, hoisted, line) if node.value else None
            held = self.held_objects if node.value else {}
            out.extend(hoisted)
            if frame.result is None:
                out.append(Stmt(node.with_changes(value=value), origin))
                return True
            jump = Jump(JumpKind.RETURN, origin)
            if frame.result:
                stmt = Stmt(cst.Assign([cst.AssignTarget(cst.Name(frame.result))], value or cst.Name("None")), origin)
                jump.before.append(stmt)
                frame.returns.append(self._return_fact(node.value, value, frame, stmt, held))
            frame.exits[JumpKind.RETURN].append((dict(scope.env), jump.before))
            out.append(jump)
            return True
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            self._error("global-state", frame.src, node, f"`{type(node).__name__.lower()}` in forward",
                        "a compiled package cannot read or write Python globals at run time",
                        "pass the value as an input or store it on the model as a constant")
            return False
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            return self._import(node, frame)
        if isinstance(node, cst.Del):
            return False
        if isinstance(node, cst.Expr):
            if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
                return False
            if isinstance(node.value, (cst.Yield, cst.Await)):
                self._error("generator", frame.src, node, "`yield` in forward",
                            "forward must return its result once", "collect the values in a list and return it")
                return False
            check = self._assert_call(node.value, frame)
            if check is not None:
                return self._assert(check, frame, out, line)
            if self._list_append(node, frame, out, line) or self._mutate_owned(node, frame, out, line) \
                    or self._mutate_pack(node, frame, out, line):
                return False
            inlined = self._try_inline(node.value, frame, out, line, result=None)
            if inlined is not None:
                return False
            hoisted = []
            value = self.expression(node.value, frame, hoisted, line)
            out.extend(hoisted)
            if not _mutates_a_constant(value) and not _constant_result(value):
                out.append(Stmt(node.with_changes(value=value), origin))
            return False
        if isinstance(node, cst.Assign):
            if self._split_parallel(node, frame, out, line):
                return False
            if self._object_write(node, frame, out, line) or self._bind_object(node, frame) \
                    or self._attribute_write(node, frame, out, line) or self._list_assignment(node, frame, out, line) \
                    or self._dtype_local(node, frame, out, line) or self._mutate_owned(node, frame, out, line) \
                    or self._mutate_pack(node, frame, out, line) \
                    or self._bind_mutable(node, frame):
                return False
            for t in node.targets:
                if self._writes_self(t.target, frame):
                    self._error("module-state", frame.src, t.target, "forward assigns to an attribute of the model",
                                "the compiled package has no mutable model state",
                                "keep the value in a local variable and return it")
                    return False
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                target = node.targets[0].target.value
                if isinstance(node.value, cst.DictComp) and not frame.variant(target):
                    kept = self._static(node.value, frame)  # a filter of matched `**kwargs`: a Pack
                    if isinstance(kept, Pack):
                        self.bind(node.targets[0].target, kept, frame, line)
                        return False
                returned = self._try_inline(node.value, frame, out, line, result=self._local(target, frame))
                if returned is not None:
                    if _container(returned.value) and not frame.variant(target) \
                            and mutated_safely(frame.src.node, target):
                        returned.drop()  # a dict or set the helper built from the configuration (mutables.py)
                        self._own(target, returned.value.value, frame)
                    elif returned.value is not None and not _container(returned.value) and not frame.variant(target):
                        returned.drop()
                        self.bind(node.targets[0].target, returned.value, frame, line)
                    else:
                        self._set_dynamic(target, frame)
                        if returned.known and len(returned.known) == 1 and returned.known[0] is not None:
                            frame.scope.env[target] = returned.known[0]  # `m = helper(x)` returning a tensor
                    return False
            if self._inline_unpacked(node, frame, out, line):
                return False
            # The source expression first: `b = a` binds the very TensorConst `a` holds (so an update of `a`
            # in place is seen to change `b`), and a folded module path is relative to the model, which an
            # inlined submodule's scope (`self` is the submodule) cannot resolve.
            names = [n for t in node.targets for n in target_names(t.target)]
            bindable = all(isinstance(t.target, (cst.Name, cst.Tuple, cst.List)) for t in node.targets) \
                and not any(frame.variant(n) for n in names)
            static = self._static(node.value, frame) if bindable else None
            if static is None:
                hoisted = []
                value = self.expression(node.value, frame, hoisted, line)
                out.extend(hoisted)
                static = self._static(value, frame)
            if static is not None and bindable:
                for t in node.targets:
                    self.bind(t.target, static if isinstance(t.target, cst.Name) else as_tuple(static), frame, line)
                return False
            targets = [t.with_changes(target=self._store_target(t.target, frame)) for t in node.targets]
            tensor = is_tensor(node.value, frame.scope)  # read before the targets are rebound
            held = self.held_objects or _holds(node.value, frame)
            for n in names:
                self._set_dynamic(n, frame)
            for t in node.targets:
                self._mark_not_none(t.target, value, frame, tensor)
                if held and isinstance(t.target, cst.Name) and not frame.variant(t.target.value):
                    frame.scope.env[t.target.value] = Holds(held)  # `outputs.cache` reads the object
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
                if static is not None and isinstance(old, TensorConst):
                    new = self._update_constant(old, node, static, frame)
                    if new is not None:
                        scope.env[target.value] = new
                        return False
                elif static is not None and isinstance(old, Static):
                    op = cst.BinaryOperation(to_node(old.value) if is_literal(old.value) else target,
                                             binop_of(node.operator), value)
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
            return self._assert(node, frame, out, line)
        if isinstance(node, cst.Raise):
            return self._raise(node, frame, out, line)
        self._error("unsupported-statement", frame.src, node, f"`{type(node).__name__}` statement",
                    "this statement kind is not supported in forward", "rewrite it as assignments")
        return False

    def _import(self, node, frame: Frame) -> bool:
        """An import inside forward runs once, when converting: the names it binds are static. One that
        fails inside a `try` ends its body (True); see _try_except."""
        try:
            bindings = imported_names(node, frame.scope.globals)
        except ImportError as exc:
            if self._catching:
                self._catching[-1] = exc
                return True
            self._error("import-in-forward", frame.src, node, "import inside forward that fails when converting",
                        f"imports run at conversion time only, and this one raised: {exc}",
                        "install the module, or move the import to the top of the module")
            return False
        for name, value in bindings.items():
            frame.scope.env[name] = Static(value)
            frame.scope.poisoned.discard(name)
        return False

    def _return_fact(self, written, value, frame: Frame, stmt: Stmt, held: dict) -> ReturnFact:
        """What conversion knows of a returned value: as written (a model path resolves in the callee's
        scope) or folded (an inlined helper's constant result)."""
        if written is None:
            return ReturnFact(stmt, Static(None), None)

        def known(a, b):
            return self._static(a, frame) or self._static(b, frame) or self._container(a, frame)

        def fact(node):  # a run-time name known never to be None, or to be a tensor
            held = frame.scope.env.get(node.value) if isinstance(node, cst.Name) else None
            return held if isinstance(held, NotNone) else None

        elements = None
        # an inlined call's result; a result object holding objects forward created (rewrite/objects.py)
        facts = [fact(written) or (fact(value) if isinstance(written, cst.Call) else None) or (Holds(held) if held else None)]
        if isinstance(written, cst.Tuple) and isinstance(value, cst.Tuple) and len(written.elements) == len(value.elements) \
                and not any(isinstance(el, cst.StarredElement) for el in (*written.elements, *value.elements)):
            elements = [known(a.value, b.value) for a, b in zip(written.elements, value.elements)]
            facts = [fact(el.value) for el in written.elements]
        return ReturnFact(stmt, known(written, value), elements, facts)

    # -- checks ------------------------------------------------------------------
    def _assert(self, node: cst.Assert, frame: Frame, out: list, line) -> bool:
        """`assert c, msg` is `if not c: raise AssertionError(msg)`: folded when static, else a host check."""
        hoisted: list = []
        test = self.expression(node.test, frame, hoisted, line)
        out.extend(hoisted)
        holds = self._truth(test, frame)
        if holds is not None:
            self.static_decisions += 1
            if not holds:
                self._error("assert-fails", frame.src, node, "`assert` that always fails",
                            "the condition is false for this model's configuration, so forward always raises",
                            "fix the model's configuration or remove the assert")
            return False
        failing: list = []
        args = []
        if node.msg is not None:
            args.append(cst.Arg(self.expression(node.msg, frame, failing, line)))
        origin = self.origin(frame, line)
        failing.append(Stmt(cst.Raise(cst.Call(cst.Name("AssertionError"), args)), origin))
        if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.NamedExpr)):
            test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        out.append(IfNode(cst.UnaryOperation(cst.Not(), test), failing, [], self.origin(frame, node.test)))
        return False

    def _assert_call(self, call, frame: Frame) -> cst.Assert | None:
        """`torch._assert(cond, msg)` (timm's `_assert`) as the `assert cond, msg` it stands for."""
        if not isinstance(call, cst.Call) or not 1 <= len(call.args) <= 2 or any(a.keyword or a.star for a in call.args):
            return None
        try:
            func = value_of(call.func, frame.scope)
        except NOT_STATIC:
            return None
        if not (isinstance(func, Static) and func.value is torch._assert):
            return None
        check = cst.Assert(call.args[0].value, call.args[1].value if len(call.args) == 2 else None)
        frame.src.alias(check, call)
        return check

    def _raise(self, node: cst.Raise, frame: Frame, out: list, line) -> bool:
        """`raise ValueError(...)` of a builtin exception stays a host statement (it ends its arm)."""
        exc = node.exc
        func = exc.func if isinstance(exc, cst.Call) else exc
        try:
            cls = value_of(func, frame.scope) if func is not None else None
        except NOT_STATIC:
            cls = None
        cls = getattr(cls, "value", None)
        if not (isinstance(cls, type) and issubclass(cls, BaseException) and getattr(builtins, cls.__name__, None) is cls):
            self._error("raise", frame.src, node, "`raise` of an exception the package cannot rebuild",
                        "the package raises exceptions from its host code, which knows Python's builtin "
                        "exception classes only",
                        "raise a builtin exception (`ValueError(...)`, `RuntimeError(...)`) instead")
            return True
        hoisted: list = []
        args = [a.with_changes(value=self.expression(a.value, frame, hoisted, line))
                for a in (exc.args if isinstance(exc, cst.Call) else [])]
        out.extend(hoisted)
        out.append(Stmt(cst.Raise(cst.Call(cst.Name(cls.__name__), args)), self.origin(frame, line)))
        return True

    # -- helpers ---------------------------------------------------------------
    def _local(self, name: str, frame: Frame) -> str:
        return frame.scope.local(name)

    def _set_dynamic(self, name: str, frame: Frame) -> None:
        frame.scope.env.pop(name, None)
        frame.scope.poisoned.discard(name)
        frame.scope.conflicts.discard(name)
        frame.scope.rename.setdefault(name, name)

    def _mark_not_none(self, target, value, frame: Frame, tensor: bool = False) -> None:
        """`a, b = x[:, :1], x[:, 1:]`, `b = w.float()`, `c, d = x.chunk(2)`: never None (rewrite/nonnull.py);
        `m = m.to(torch.bool)` of a tensor (`tensor`, read on the expression as written): a tensor."""
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
                and len(target.elements) == len(value.elements):
            for t, v in zip(target.elements, value.elements):
                self._mark_not_none(t.value, v.value, frame)
        elif isinstance(target, (cst.Tuple, cst.List)) and never_none_items(value, frame.scope):
            for t in target.elements:
                if isinstance(t.value, cst.Name) and not frame.variant(t.value.value):
                    frame.scope.env[t.value.value] = NOT_NONE
        elif isinstance(target, cst.Name) and (tensor or never_none(value, frame.scope)) \
                and not frame.variant(target.value):
            frame.scope.env[target.value] = IS_TENSOR if tensor else NOT_NONE

    def _store_target(self, target, frame):
        """An assignment target as the region writes it: names renamed (never folded to the value they
        held), subscripts and attributes folded."""
        if isinstance(target, (cst.Tuple, cst.List)):
            return target.with_changes(elements=[el.with_changes(value=self._store_target(el.value, frame))
                                                 for el in target.elements])
        if isinstance(target, cst.StarredElement):
            return target.with_changes(value=self._store_target(target.value, frame))
        if isinstance(target, cst.Name):
            return cst.Name(self._local(target.value, frame))
        return fold(target, frame.scope)

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
        except NOT_STATIC:
            return None
        return self._constant(value)

    @staticmethod
    def _constant(value):
        """`value` when a name may be bound to it at conversion time, else None."""
        if isinstance(value, (Pack, Method, TensorConst, Instance)):  # `forward_fn = self.feed_forward_chunk` is inlined where called
            return value
        if isinstance(value, Static) and _mutable(value.value):
            return None  # mutable: `tokens = []` (or `res, feats = [], []`) collects values at run time
        if isinstance(value, Static) and not is_literal(value.value):
            # ranges, and functions or classes picked by configuration (`fn = interface.get(name, default)`)
            keep = isinstance(value.value, (range, type, Closure)) or inspect.isroutine(value.value) \
                or _opaque(value.value) or _configuration(value.value)
            return value if keep else None
        return value if isinstance(value, (Static, ModRef)) else None

    def expression(self, expr, frame: Frame, out: list, line) -> cst.BaseExpression:
        """Fold `expr`; inline calls to model methods inside it into `out` first."""
        self._check_expression(expr, frame)
        self._check_poisoned(expr, frame)
        expr = self._inline_nested(expr, frame, out, line)
        self._check_module_indexing(expr, frame)
        expr, self.held_objects = self._object_arguments(expr, frame)
        folded = fold(expr, frame.scope)
        self._check_object_uses(folded, expr, frame, line)
        return folded

    def _check_module_indexing(self, expr, frame: Frame) -> None:
        """`self.experts[k]` with a run-time `k` cannot be compiled: report it."""
        for node in find(expr, cst.Subscript):
            try:
                base = value_of(node.value, frame.scope)
            except NOT_STATIC:
                continue
            if not isinstance(base, ModRef) or not isinstance(base.obj, (nn.ModuleList, nn.ModuleDict, nn.Sequential)):
                continue
            try:
                value_of(node, frame.scope)
            except Unknown:
                self._error("dynamic-module", frame.src, node, "module chosen by a run-time value",
                            "each compiled region calls fixed modules; the index is only known at run time",
                            "select the module with if/elif on the value (`if k == 0: y = self.experts[0](x)`)")
            except NOT_FOLDABLE:
                continue


def _holds(value, frame: Frame) -> dict:
    """The objects forward created that a copied name's run-time object holds (`output = outputs_1`)."""
    held = frame.scope.env.get(value.value) if isinstance(value, cst.Name) else None
    return held.fields if isinstance(held, Holds) else {}


def _opaque(value) -> bool:
    """An immutable object of the standard library that a conversion-time call returned and a later one
    takes back (`token = var.set(x)` ... `var.reset(token)`): bound as it is; it has no source form, so
    run-time code that reads it is refused."""
    module = (getattr(type(value), "__module__", "") or "").split(".")[0]
    return module in sys.stdlib_module_names and module != "builtins" and not hasattr(value, "__dict__") \
        and not isinstance(value, (list, dict, set, bytearray))


def _configuration(value) -> bool:
    """A library's configuration object (`config=self.config` passed on to `create_causal_mask`): bound as
    it is, so that what the callee reads of it folds. It has no source form: run-time code that reads the
    object itself is refused."""
    return hasattr(value, "to_dict") and hasattr(type(value), "__dict__") and not callable(value) \
        and not isinstance(value, (torch.Tensor, nn.Module, list, dict, set))


def _container(value) -> bool:
    return isinstance(value, Static) and isinstance(value.value, (dict, set))


def _mutable(value) -> bool:
    return isinstance(value, (list, dict, set)) or isinstance(value, tuple) and any(map(_mutable, value))


_CONSTANTS = (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.SimpleString, cst.Integer, cst.Float, cst.Name)


def _mutates_a_constant(value: cst.BaseExpression) -> bool:
    """`[].append(action)`: a statement that mutates a value folded to a constant, with plain arguments.

    Bookkeeping on model attributes (`self.saved_actions.append(action)` in
    SkipNet's gate policy) folds to this; the package has no model state to
    mutate, and the statement has no other effect.
    """
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in MUTATORS_RETURNING_NONE and isinstance(value.func.value, (cst.List, cst.Dict, cst.Set))):
        return False
    return all(isinstance(a.value, _CONSTANTS) and a.star == "" for a in value.args)


_CONSTANT_DEFAULTS = (type(None), bool, int, float, str)


def _constant_defaults(func, names: list[str]) -> dict[str, Static]:
    """The defaults of `names` that are plain constants (a tuple of them too), as static values."""
    signature = inspect.signature(func)
    found = {}
    for name in names:
        default = signature.parameters[name].default
        items = default if isinstance(default, tuple) else (default,)
        if default is not inspect.Parameter.empty and all(type(v) in _CONSTANT_DEFAULTS for v in items):
            found[name] = Static(default)
    return found
