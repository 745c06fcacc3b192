"""Constructs that would need Python at run time inside a region, or state the package cannot keep.

A region is traced once into a graph: a Python `if` on a tensor inside a
comprehension or a lambda, an attribute picked by a run-time name, or a NumPy
array would be frozen at export (or fail there with the tracer's text). A
package works on copies of its inputs and has no mutable model state, so an
in-place update of an input or a buffer cannot be reproduced. Each is
reported where it is written, before anything runs.
"""
from __future__ import annotations

import builtins

import libcst as cst

from .jumps import Frame
from .staticeval import value_of
from .values import ModRef, SizedList
from .walk import find

__all__ = ["ExpressionChecks"]

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def _reads(expr: cst.CSTNode) -> list[cst.Name]:
    """The names `expr` reads (not attribute names, not keywords, not names a lambda binds)."""
    visitor = _Reads()
    expr.visit(visitor)
    return visitor.found


class _Reads(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.found: list[cst.Name] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.found.append(node)


# Tensor methods whose result shares its input's storage.
_VIEWS = {"view", "view_as", "reshape", "flatten", "squeeze", "unsqueeze", "transpose", "permute", "t", "expand",
          "expand_as", "narrow", "select", "detach", "unflatten", "movedim", "as_strided", "unfold", "diagonal"}


def _viewed(value) -> cst.Name | None:
    """The variable `value` is a view of (`x`, `x[0]`, `x.view(2, -1)`, `x.T`), if any."""
    while True:
        if isinstance(value, cst.Name):
            return value
        if isinstance(value, cst.Subscript) or isinstance(value, cst.Attribute) and value.attr.value in ("T", "mT", "data"):
            value = value.value
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _VIEWS:
            value = value.func.value
        else:
            return None


def _base(target) -> cst.BaseExpression:
    while isinstance(target, (cst.Attribute, cst.Subscript)):
        target = target.value
    return target


class ExpressionChecks:
    """Mixed into the partial evaluator: `_check_expression` and `_check_mutation` report with `_error`."""

    tensor_inputs: dict[str, str]  # names holding (a view of) a tensor parameter -> that parameter

    def _static_name(self, name: str, frame: Frame, bound: set[str]) -> bool:
        if name in bound:
            return True
        try:
            return not isinstance(value_of(cst.Name(name), frame.scope), SizedList)
        except Exception:
            return False

    def _check_expression(self, expr, frame: Frame) -> None:
        for comp in find(expr, _COMPREHENSIONS):
            self._check_comprehension(comp, frame)
        for lam in find(expr, (cst.Lambda,)):
            params = {p.name.value for p in lam.params.params}
            for cond in find(lam.body, (cst.IfExp,)):
                if not all(self._static_name(n.value, frame, set()) for n in _reads(cond.test)) \
                        or params & {n.value for n in _reads(cond.test)}:
                    self._error("lambda-branch", frame.src, cond.test, "lambda that branches on a run-time value",
                                "a lambda's body is traced into one graph, which keeps only the branch taken "
                                "at export",
                                "write the branch as an `if` statement in forward (or in a method)")
        for call in find(expr, (cst.Call,)):
            self._check_call(call, frame)

    def _check_comprehension(self, comp, frame: Frame) -> None:
        try:
            value_of(comp, frame.scope)  # decided at conversion time: `{k: v for k, v in kwargs.items() if ...}`
            return
        except Exception:
            pass
        bound: set[str] = set()
        for_in = comp.for_in
        while for_in is not None:
            try:
                static = not isinstance(value_of(for_in.iter, frame.scope), SizedList)  # a run-time list
            except Exception:
                static = False
            names = {n.value for n in find(for_in.target, (cst.Name,))}
            if static:
                bound |= names
            for cond in for_in.ifs:
                if not all(self._static_name(n.value, frame, bound) for n in _reads(cond.test)):
                    self._error("comprehension-branch", frame.src, cond.test,
                                "comprehension filtered by a run-time value",
                                "the filter runs in Python while the region is traced, so the graph would keep "
                                "the elements chosen at export",
                                "write the loop out with an `if` statement, or mask with torch.where")
            for_in = for_in.inner_for_in

    def _check_call(self, call: cst.Call, frame: Frame) -> None:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "numpy" and not call.args:
            self._error("numpy-in-forward", frame.src, call, "tensor converted to a NumPy array in forward",
                        "compiled regions compute tensors only; a NumPy array would be a constant of the graph",
                        "keep the computation in torch (`torch.*` ops on the tensor)")
            return
        if isinstance(func, cst.Name) and func.value == "getattr" and len(call.args) >= 2:
            try:
                fn = value_of(func, frame.scope)
                owner = value_of(call.args[0].value, frame.scope)
            except Exception:
                return
            if getattr(fn, "value", None) is not builtins.getattr or not isinstance(owner, ModRef):
                return
            try:
                value_of(call.args[1].value, frame.scope)
            except Exception:
                self._error("dynamic-attribute", frame.src, call.args[1].value,
                            "attribute of the model chosen by a run-time name",
                            "each compiled region calls fixed modules; this name is only known at run time",
                            "choose with if/else (`y = self.a(x) if c else self.b(x)`)")

    def _check_mutation(self, node, frame: Frame) -> None:
        """In-place updates of forward's inputs or of the model's buffers; rebinding an input ends its watch."""
        if frame.label != "forward" or frame.result is not None:
            return
        targets: list = []
        if isinstance(node, cst.Assign):
            viewed = _viewed(node.value)
            source = self.tensor_inputs.get(viewed.value) if viewed is not None else None
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    if source is None:
                        self.tensor_inputs.pop(t.target.value, None)
                    else:  # `h = x`, `h = x[0]`, `h = x.view(...)`: h shares x's storage
                        self.tensor_inputs[t.target.value] = source
                elif isinstance(t.target, cst.Subscript):  # `self.x = ...`: see PartialEvaluator._writes_self
                    targets.append(t.target)
        elif isinstance(node, cst.AugAssign):
            targets.append(node.target)
        elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call) \
                and isinstance(node.value.func, cst.Attribute):
            method = node.value.func.attr.value
            if method.endswith("_") and not method.startswith("_"):
                targets.append(node.value.func.value)
        for target in targets:
            base = _base(target)
            if not isinstance(base, cst.Name):
                continue
            if base.value in self.tensor_inputs:
                source = self.tensor_inputs[base.value]
                through = "" if source == base.value else f" (through `{base.value}`, which shares its storage)"
                self._error("input-mutation", frame.src, target, f"forward changes its input `{source}` in place{through}",
                            "the package works on a copy of each input, so the caller would not see the change",
                            f"compute into a new tensor (`{base.value} = {base.value} + ...`) instead")
            elif base.value == "self" and target is not base:
                self._error("module-state", frame.src, target, "forward updates the model's state in place",
                            "the compiled package has no mutable model state",
                            "keep the value in a local variable and return it")

