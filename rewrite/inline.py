"""Inlining in the partial evaluator: the model's helper methods, `super()` calls, submodules
whose `forward` branches and module-level functions with branches become part of `forward`.

Parameters bound to static arguments are constants; locals get fresh names
(the same on every call); a `return` inside branches is spliced into
assignments of the call's result.
"""
from __future__ import annotations

import inspect

import libcst as cst
from torch import nn

from .cfg import Stmt
from .jumps import Frame, assigned_names, jump_in_loop, splice_returns
from .source import FunctionSource, function_source
from .staticeval import Method, Scope, value_of
from .walk import find
from .values import ModRef, Static, Unknown

__all__ = ["Inlining"]

_MAX_INLINE_DEPTH = 16


def _user_code(obj) -> bool:
    module = getattr(obj, "__module__", "") or ""
    return not module.split(".")[0] in ("torch", "builtins", "math", "numpy", "functools", "typing")


def _has_branches(func) -> bool:
    """Whether `func` has control flow the host may have to run: branches, loops, or a call of a
    module picked from a container (`self.experts[k](x)`)."""
    src = function_source(func)
    if src is None:
        return False
    if find(src.node.body, (cst.If, cst.While, cst.IfExp, cst.For)):
        return True
    return any(isinstance(c.func, cst.Subscript) for c in find(src.node.body, cst.Call))



class Inlining:
    """Mixin of PartialEvaluator: calls that are inlined rather than traced."""

    def _inline_nested(self, expr, frame, out, line):
        calls = find(expr, cst.Call, stop=(cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp))
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

    def _inline(self, call: cst.Call, target, frame: Frame, out: list, line, result: str | None) -> None:
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
        callee = Frame(src, scope, label, result if result is not None else "")
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
            elif isinstance(value, cst.Name) and p.name not in assigned_names(src.node.body):
                scope.rename[p.name] = value.value
            else:
                out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(scope.rename[p.name]))], value), origin))
        self._depth += 1
        try:
            body, _ = self.block(src.node.body.body, callee)
        finally:
            self._depth -= 1
        if jump_in_loop(body):
            self._error("return-in-loop", frame.src, call, f"`{label}` returns from inside a data-dependent loop",
                        "an inlined function's return must not leave a host loop",
                        "set a result variable and `break` instead")
            return
        out.extend(splice_returns(body))

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
