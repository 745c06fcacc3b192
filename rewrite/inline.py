"""Inlining in the partial evaluator: the model's helper methods, `super()` calls, submodules
whose `forward` branches and module-level functions with branches become part of `forward`.

Parameters bound to static arguments are constants; locals get fresh names
(the same on every call); a `return` inside branches is spliced into
assignments of the call's result.
"""
from __future__ import annotations

import inspect
import sys
import types

import libcst as cst
import torch
from torch import nn

from .cfg import Stmt, code
from .classify import SYNC_METHODS
from .closures import Closure
from .nonnull import is_tensor, never_none
from .jumps import Frame, as_tuple, assigned_names, jump_in_loop, splice_returns
from .returns import Returned, returns_constant
from .source import FunctionSource, function_source, unwrap_transparent
from .staticeval import Method, Scope, owned, value_of
from .walk import find, replaced
from .values import Alias, Instance, IsTensor, ModRef, NotNone, Pack, Static, TensorConst, Unknown

__all__ = ["Inlining", "forward_of"]

_MAX_INLINE_DEPTH = 16


def _user_code(obj) -> bool:
    """Whether `obj` is model or library code to inline: not torch, numpy or Python's standard library
    (`inspect.signature(self.feed_forward_chunk)` is evaluated at conversion time, never inlined)."""
    top = (getattr(obj, "__module__", "") or "").split(".")[0]
    return top not in ("torch", "numpy") and top not in sys.stdlib_module_names


def _host_call(call: cst.Call) -> bool:
    """A call the host must make: a module picked from a container (`self.experts[k](x)`), or a tensor
    turned into Python values (`counts.tolist()`, `gate.item()`), which tracing would freeze."""
    if isinstance(call.func, cst.Subscript):
        return True
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in SYNC_METHODS and not call.args


def _has_branches(func, library_forms: bool = True) -> bool:
    """Whether `func` (or a function it wraps) has control flow the host may have to run: branches,
    loops, a host call (`_host_call`) and, with `library_forms`, `try` or a nested function (a closure
    it returns is inlined where called: rewrite/closures.py)."""
    forms = (cst.If, cst.While, cst.IfExp, cst.For) + ((cst.Try, cst.FunctionDef) if library_forms else ())
    while func is not None:
        src = function_source(func)
        if src is not None and (find(src.node.body, forms)
                                or any(_host_call(c) for c in find(src.node.body, cst.Call))):
            return True
        func = getattr(func, "__wrapped__", None)
    return False


def forward_of(module: nn.Module):
    """(function, defining class) that calling `module` runs: the instance's own `forward` first
    (`self.forward = self.only_forward` in `__init__`), else its class's. (None, None) for an
    instance `forward` that is not one of its own methods."""
    own = module.__dict__.get("forward")
    if own is not None:
        if isinstance(own, types.MethodType) and own.__self__ is module:
            return own.__func__, _defining_class(type(module), own.__func__)
        return None, None
    cls = type(module)
    return cls.forward, next(k for k in cls.__mro__ if "forward" in k.__dict__)


def _controls(module: nn.Module) -> bool:
    # A module whose forward only wraps its tensor code in `try` (SDN's classifier: `try: return
    # self.linear(...) except: print()`) or defines a helper runs as one call that tracing follows.
    forward, _ = forward_of(module)
    return forward is not None and _user_code(forward) and (_has_branches(forward, library_forms=False)
                                                            or _is_wrapper(forward))


def _needs_inlining(module: nn.Module) -> bool:
    """Whether calling `module` runs control flow: its forward's, or a submodule's it may call
    (a layer without branches around a mixture of experts that loops). Tracing would freeze it."""
    return any(_controls(m) for m in module.modules() if _user_code(type(m)))


def _global_name(func: cst.BaseExpression, scope, value) -> bool:
    """Whether region code can call `value` by the name `func` (a module-level name of its own); a function
    picked at conversion time into a local (`impl = table.get(...)`), or held by a decorator's closure
    (`func(*args, **kwargs)` in a wrapper), is inlined instead."""
    return isinstance(func, cst.Name) and func.value not in scope.env and func.value not in scope.rename \
        and scope.globals.get(func.value) is value and getattr(value, "__globals__", {}).get(func.value) is value


def _is_wrapper(func) -> bool:
    """A library's wrapper around forward: it may call any function (`impl = table.get(config.impl)`),
    so it is inlined to see which."""
    return hasattr(func, "__wrapped__") and unwrap_transparent(func) is func


def _defining_class(cls: type, func) -> type:
    """The class in `cls`'s MRO that holds `func` (under any name: `cls._apply_gate = _default_gate`)."""
    for klass in cls.__mro__:
        if any(v is func or inspect.unwrap(v) is func for v in vars(klass).values() if callable(v)):
            return klass
    return cls


def _probe_alias(expr: cst.BaseExpression, scope) -> Alias | None:
    """The Alias a name holds when it reads a run-time tensor's dtype or device (rewrite/state.py)."""
    try:
        value = value_of(expr, scope)
    except Exception:
        return None
    return value if isinstance(value, Alias) and value.attr is not None else None


def _short_circuited(expr: cst.BaseExpression, scope) -> set[int]:
    """ids of the nodes in `expr` that never run: the right of `and`/`or` after a left side known when
    converting that decides it, the arm of a conditional expression with a known test that is not taken."""
    dead: set[int] = set()

    def known(node):
        try:
            value = value_of(node, scope)
        except Exception:
            return None
        return (bool(value.value),) if isinstance(value, Static) and not isinstance(value.value, torch.Tensor) else None

    for node in find(expr, (cst.BooleanOperation, cst.IfExp)):
        if id(node) in dead:
            continue
        if isinstance(node, cst.BooleanOperation):
            left = known(node.left)
            skipped = [node.right] if left is not None and left[0] != isinstance(node.operator, cst.And) else []
        else:
            test = known(node.test)
            skipped = [] if test is None else [node.orelse if test[0] else node.body]
        for part in skipped:
            dead.update(id(n) for n in find(part, cst.CSTNode))
    return dead


def _free_names(node: cst.FunctionDef) -> set[str]:
    """Names a function reads that it does not bind: globals, builtins, closure variables."""
    local = {p.name.value for p in find(node.params, cst.Param)} | set(assigned_names(node.body))
    skip = {id(a.attr) for a in find(node, cst.Attribute)} | {id(a.keyword) for a in find(node, cst.Arg) if a.keyword}
    return {n.value for n in find(node, cst.Name) if id(n) not in skip and n.value not in local}


def _folds(call: cst.Call, scope) -> bool:
    """Whether `call` of a library object's method is evaluated when converting as it stands (every
    argument is a plain value then: `_active_collector.set(collected)`), rather than inlined. Decided
    without calling it: folding calls it, once, as the model would."""
    for arg in call.args:
        try:
            value = value_of(arg.value, scope)
        except Exception:
            return False
        if not isinstance(value, Static) or isinstance(value.value, (torch.Tensor, nn.Module)):
            return False
    return True


def _closure_globals(func) -> dict:
    """The names a function reads: its module's globals and, for a nested function, its closure."""
    cells = getattr(func, "__closure__", None)
    if not cells:
        return func.__globals__
    names = dict(func.__globals__)
    for name, cell in zip(func.__code__.co_freevars, cells):
        try:
            names[name] = cell.cell_contents
        except ValueError:  # not yet assigned
            continue
    return names


class Inlining:
    """Mixin of PartialEvaluator: calls that are inlined rather than traced."""

    def _inline_nested(self, expr, frame, out, line):
        calls = find(expr, cst.Call, stop=(cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp))
        dead = _short_circuited(expr, frame.scope)  # `False and f(x)`: f never runs, so it is not inlined
        calls = [c for c in calls if id(c) not in dead]
        replacements = {}
        for call in reversed(calls):  # innermost first
            target = self._inline_target(call, frame)
            if target is None:
                continue
            func = target[0]
            result = self.names.fresh(f"{getattr(func, '__name__', 'call')}_out".lstrip("_"))
            frame.scope.rename[result] = result
            returned = self._inline(call, target, frame, out, line, result)
            if returned is not None and returned.value is not None:
                returned.drop()
                frame.scope.env[result] = returned.value
            elif returned is not None and returned.known and len(returned.known) == 1 and returned.known[0] is not None:
                frame.scope.env[result] = returned.known[0]  # `return func(*args, **kwargs)` of a tensor
            replacements[call] = cst.Name(result)
        if not replacements:
            return expr

        return replaced(expr, replacements)

    def _inline_target(self, call: cst.Call, frame: Frame):
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
        if isinstance(fv, Static) and isinstance(fv.value, Closure):
            return fv.value, None, None
        if isinstance(fv, Method) and _user_code(fv.func) and fv.func.__name__ != "forward":
            klass = _defining_class(type(fv.owner.obj), fv.func)
            return fv.func, fv.owner, klass
        if isinstance(fv, Method) and fv.func.__name__ == "forward" and _user_code(fv.func) and _has_branches(fv.func):
            klass = next(k for k in type(fv.owner.obj).__mro__ if "forward" in k.__dict__)
            return fv.func, fv.owner, klass
        if isinstance(fv, ModRef) and isinstance(fv.obj, nn.Module) and _user_code(type(fv.obj)) \
                and not fv.obj._forward_hooks and not fv.obj._forward_pre_hooks:
            forward, klass = forward_of(fv.obj)
            if forward is not None and _user_code(forward) and (_needs_inlining(fv.obj) or returns_constant(forward)):
                return forward, fv, klass
            return None
        if isinstance(fv, Static) and isinstance(fv.value, types.MethodType) and _user_code(fv.value.__func__) \
                and not isinstance(fv.value.__self__, (nn.Module, torch.Tensor, type)) \
                and function_source(fv.value.__func__) is not None \
                and (owned(scope, fv.value.__self__) or not _folds(call, scope)):
            # a method of a library object (`_CAN_RECORD_REGISTRY.get(self)`): its `self` is that object;
            # one forward created (rewrite/objects.py) is never run when converting
            receiver = fv.value.__self__
            bound = Instance(receiver) if owned(scope, receiver) else Static(receiver)
            return fv.value.__func__, None, _defining_class(type(receiver), fv.value.__func__), bound
        if isinstance(fv, Static) and inspect.isfunction(fv.value) and _user_code(fv.value) \
                and (_has_branches(fv.value) or not _global_name(call.func, scope, fv.value)):
            return fv.value, None, None
        return None

    def _try_inline(self, expr, frame, out, line, result):
        if not isinstance(expr, cst.Call):
            return None
        target = self._inline_target(expr, frame)
        if target is None:
            return None
        return self._inline(expr, target, frame, out, line, result) or Returned([], False)

    def _inline_unpacked(self, node: cst.Assign, frame: Frame, out: list, line) -> bool:
        """`fwd, is_output, out = layer(fwd)` with the call inlined: elements that every return of the
        callee fixes are bound as constants, the others assigned from the call's result."""
        target = node.targets[0].target
        if len(node.targets) != 1 or not isinstance(node.value, cst.Call) or not isinstance(target, (cst.Tuple, cst.List)) \
                or not all(isinstance(el, cst.Element) and isinstance(el.value, cst.Name) for el in target.elements):
            return False
        names = [el.value.value for el in target.elements]
        callee = self._inline_target(node.value, frame)
        if callee is None or len(set(names)) != len(names):
            return False
        result = self.names.fresh(f"{getattr(callee[0], '__name__', 'call')}_out".lstrip("_"))
        frame.scope.rename[result] = result
        returned = self._inline(node.value, callee, frame, out, line, result)
        if returned is None:
            return True
        value = as_tuple(returned.value) if returned.value is not None else None
        if isinstance(value, tuple) and len(value) == len(names) and not any(map(frame.variant, names)):
            returned.drop()
            for name, item in zip(names, value):
                self.bind(cst.Name(name), item, frame, line)
            return True
        elements = returned.elements if returned.elements and len(returned.elements) == len(names) else []
        known = [k for k, e in enumerate(elements) if e is not None and not frame.variant(names[k])]
        dynamic = [k for k in range(len(names)) if k not in known]
        # Element-wise only where a return gives a constant (a flag keeps its kind); a tuple of run-time
        # values is assigned whole, inside the region around it.
        if not known and not (elements and returned.some_literal):
            assign = cst.Assign([cst.AssignTarget(target)], cst.Name(result))
            frame.src.alias(assign, node)
            self.small(assign, frame, out, line)
            if returned.known and len(returned.known) == len(names) and not any(map(frame.variant, names)):
                for name, fact in zip(names, returned.known):
                    if fact is not None:
                        frame.scope.env[name] = fact
            return True
        for k in known:
            self.bind(cst.Name(names[k]), elements[k], frame, line)
        if not dynamic:
            returned.drop()
            return True
        for k in dynamic:
            self._set_dynamic(names[k], frame)
            if returned.known and len(returned.known) == len(names) and returned.known[k] is not None:
                frame.scope.env[names[k]] = returned.known[k]  # every return gives a tensor there
        rest = [cst.Element(cst.Name(frame.scope.local(names[k]))) for k in dynamic]
        # Each return assigns the run-time elements to their targets in one statement (so `x, k = f(x)`
        # still reads the old `x`): no tuple crosses the host.
        returned.keep(dynamic, cst.Tuple(rest) if len(rest) > 1 else rest[0].value)
        return True

    def _inline(self, call: cst.Call, target, frame: Frame, out: list, line, result: str | None) -> Returned | None:
        func, owner, klass, *bound_self = target
        src = func.source() if isinstance(func, Closure) else function_source(func)
        if src is None:
            self._error("no-source", frame.src, call, f"cannot read the source of `{func.__qualname__}`",
                        "dycl inlines functions whose control flow depends on tensors and needs their source",
                        "define the function in a .py file")
            return
        if self._depth >= _MAX_INLINE_DEPTH:
            self._error("recursion", frame.src, call, f"`{func.__qualname__}` is inlined too deeply",
                        "recursive helpers cannot be unrolled", "rewrite the recursion as a loop over a fixed range")
            return
        params = list(func.parameters) if isinstance(func, Closure) else \
            list(inspect.signature(func, follow_wrapped=False).parameters.values())
        receiver = None
        if owner is not None and params and params[0].kind in (params[0].POSITIONAL_ONLY,
                                                                params[0].POSITIONAL_OR_KEYWORD):
            params = params[1:]
        elif owner is not None:  # a wrapper `wrapped(*args, **kwargs)` receives the module in args[0]
            receiver, owner = owner, None
        if bound_self:  # a library object's method: its first parameter is the object
            receiver = bound_self[0]
        label = func.__qualname__
        for name in _free_names(src.node):  # a global it reads (`is_tracing`) is never a fresh local's name
            self.names.reserve(name)
        rename = self._rename_map(func, src)
        if isinstance(func, Closure):
            scope = func.callee_scope(dict(rename), self.state)
        else:
            scope = Scope({}, _closure_globals(func), dict(rename), owner, klass, self.state)
        for key, value in func.__globals__.items():
            self.globals.setdefault(key, value)
        if owner is not None:
            scope.env["self"] = owner
        callee = Frame(src, scope, label, result if result is not None else "")
        origin = self.origin(frame, line)
        bound = self._bind_arguments(call, func, params, label, frame, out, line, receiver)
        if bound is None:
            return
        first = next(iter(bound.values()), None)
        if owner is None and "." in func.__qualname__ and first is not None and first[0] == "value" \
                and isinstance(first[1], ModRef) and isinstance(first[1].obj, nn.Module):
            # a method reached as a plain function (`forward_func(self, *args)` in a wrapper): its self
            scope.self_ref, scope.cls = first[1], _defining_class(type(first[1].obj), func)
        assigned = assigned_names(src.node.body)
        for name, (kind, arg) in bound.items():
            if kind == "value":
                if isinstance(arg, Alias) and arg.attr is None and arg.fact() is not None:
                    scope.env[name] = arg.fact()  # until the callee assigns the name
                if isinstance(arg, Alias) and arg.attr is None and name not in assigned:
                    scope.rename[name] = arg.name
                elif isinstance(arg, Alias) and arg.attr is None:
                    out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(scope.rename[name]))],
                                               cst.Name(arg.name)), origin))
                else:
                    scope.env[name] = arg
                continue
            static = self._static(arg, frame)  # before folding: a folded path is relative to the model
            if static is not None:
                scope.env[name] = static.hold() if isinstance(static, TensorConst) else static
                continue
            probe = _probe_alias(arg, frame.scope)
            if probe is not None:  # `dtype=dtype` of a run-time tensor's dtype: read where it is used
                scope.env[name] = probe
                continue
            hoisted: list = []
            value = self.expression(arg, frame, hoisted, line)
            out.extend(hoisted)
            static = self._static(value, frame)
            if static is not None:
                scope.env[name] = static
            elif isinstance(value, cst.Name) and name not in assigned:
                scope.rename[name] = value.value
                if isinstance(arg, cst.Name) and isinstance(frame.scope.env.get(arg.value), NotNone):
                    scope.env[name] = frame.scope.env[arg.value]  # `input_ids is not None` on a tensor input folds
            else:
                out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(scope.rename[name]))], value), origin))
                if isinstance(arg, cst.Name) and isinstance(frame.scope.env.get(arg.value), NotNone):
                    scope.env[name] = frame.scope.env[arg.value]  # until the callee assigns the name
        self._depth += 1
        try:
            body, returns = self.block(src.node.body.body, callee)
        finally:
            self._depth -= 1
        if jump_in_loop(body):
            self._error("return-in-loop", frame.src, call, f"`{label}` returns from inside a data-dependent loop",
                        "an inlined function's return must not leave a host loop",
                        "set a result variable and `break` instead")
            return None
        lowered = splice_returns(body)
        out.extend(lowered)
        return Returned(callee.returns, returns, out)

    def _bind_arguments(self, call: cst.Call, func, params: list, label: str, frame: Frame, out: list, line,
                        receiver=None):
        """Match a call's arguments to `params` at conversion time: {name: ("expr", node) | ("value", value)}.

        `*x` and `**x` spread a Pack (the arguments a `*args`/`**kwargs` received) or a static tuple or
        dict; a `*args`/`**kwargs` parameter receives a Pack of what is left over. None after an error.
        """
        positional: list = [("value", receiver)] if receiver is not None else []
        keywords: dict = {}
        for arg in call.args:
            if not arg.star:
                if arg.keyword is None:
                    positional.append(("expr", arg.value))
                else:
                    keywords[arg.keyword.value] = ("expr", arg.value)
                continue
            try:
                spread = value_of(arg.value, frame.scope)
            except Exception:
                spread = None
            if isinstance(spread, Static) and isinstance(spread.value, (tuple, list)) and arg.star == "*":
                spread = Pack(tuple(Static(v) for v in spread.value))
            elif isinstance(spread, Static) and isinstance(spread.value, dict) and arg.star == "**":
                spread = Pack((), {k: Static(v) for k, v in spread.value.items()})
            if not isinstance(spread, Pack) and arg.star == "*":
                spread = self._unpacked_spread(arg, call, params, positional, frame, out, line)
            if not isinstance(spread, Pack):
                self._error("star-args", frame.src, arg, f"`{arg.star}{code(arg.value)}` is not known at conversion time",
                            "arguments spread into an inlined function must be matched to its parameters "
                            "when converting", "pass the arguments explicitly")
                return None
            if arg.star == "*":
                positional.extend(("value", v) for v in spread.items)
            else:
                keywords.update({k: ("value", v) for k, v in spread.keywords.items()})
        bound: dict = {}
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                bound[p.name] = ("value", Pack(self._pack_values(positional, frame, out, line)))
                positional = []
            elif p.kind == p.VAR_KEYWORD:
                values = self._pack_values(list(keywords.values()), frame, out, line)
                bound[p.name] = ("value", Pack((), dict(zip(keywords, values))))
                keywords = {}
            elif positional and p.kind != p.KEYWORD_ONLY:
                bound[p.name] = positional.pop(0)
            elif p.name in keywords and p.kind != p.POSITIONAL_ONLY:
                bound[p.name] = keywords.pop(p.name)
            elif p.default is not p.empty:
                bound[p.name] = ("value", Static(p.default))
            else:
                self._error("bad-call", frame.src, call, f"missing argument `{p.name}` for `{label}`",
                            "the call does not match the signature", "pass every parameter")
                return None
        if positional or keywords:
            extra = ", ".join(keywords) or f"{len(positional)} positional"
            self._error("bad-call", frame.src, call, f"`{label}` does not take {extra}",
                        "the call does not match the signature", "pass only the parameters it takes")
            return None
        return bound

    def _unpacked_spread(self, arg: cst.Arg, call: cst.Call, params: list, positional: list, frame: Frame,
                         out: list, line) -> Pack | None:
        """`f(*g(x))` with a run-time sequence as the last positional argument of a function that takes a
        fixed number of positional parameters without defaults: unpacked into that many names (a length
        that differs raises, as the call itself would)."""
        later = call.args[list(call.args).index(arg) + 1:]
        if any(a.keyword is None and a.star != "**" for a in later):
            return None
        keywords = {a.keyword.value for a in call.args if a.keyword is not None}
        rest = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][len(positional):]
        if any(p.kind == p.VAR_POSITIONAL for p in params) or not rest \
                or any(p.default is not p.empty or p.name in keywords for p in rest):
            return None
        hoisted: list = []
        value = self.expression(arg.value, frame, hoisted, line)
        out.extend(hoisted)
        names = [self.names.fresh(p.name) for p in rest]
        for name in names:
            frame.scope.rename[name] = name
        target = cst.Tuple([cst.Element(cst.Name(n)) for n in names])
        out.append(Stmt(cst.Assign([cst.AssignTarget(target)], value), self.origin(frame, line)))
        return Pack(tuple(Alias(n) for n in names))

    def _pack_values(self, args: list, frame: Frame, out: list, line) -> list:
        """Values for a Pack: static ones as they are, run-time ones through a variable."""
        values = []
        for kind, arg in args:
            if kind == "value":
                values.append(arg)
                continue
            static = self._static(arg, frame)
            if static is not None:
                values.append(static)
                continue
            probe = _probe_alias(arg, frame.scope)
            if probe is not None:
                values.append(probe)
                continue
            hoisted: list = []
            value = self.expression(arg, frame, hoisted, line)
            out.extend(hoisted)
            static = self._static(value, frame)
            if static is not None:
                values.append(static)
                continue
            if isinstance(value, cst.Name):  # the caller's variable: the callee cannot rebind it
                fact = frame.scope.env.get(arg.value) if isinstance(arg, cst.Name) else None
                values.append(Alias(value.value, not_none=isinstance(fact, NotNone), tensor=isinstance(fact, IsTensor)))
                continue
            name = self.names.fresh("arg")
            frame.scope.rename[name] = name
            out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(name))], value), self.origin(frame, line)))
            values.append(Alias(name, not_none=never_none(value, frame.scope), tensor=is_tensor(arg, frame.scope)))
        return values

    def _rename_map(self, func, src: FunctionSource) -> dict[str, str]:
        """Fresh host names for an inlined function's locals (same for every call)."""
        if func in self._renames:
            return self._renames[func]
        local = [p.name.value for p in src.node.params.params] + list(assigned_names(src.node.body))
        mapping = {}
        for name in local:
            if name == "self" or name in mapping:
                continue
            mapping[name] = self.names.fresh(name)
        self._renames[func] = mapping
        return mapping
