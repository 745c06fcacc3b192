"""`torch.cond` and `torch._higher_order_ops.while_loop` in forward, read as `if` and `while`.

    y = torch.cond(pred, self.grow, self.shrink, (x, h))
becomes
    cond_arg_0 = x
    cond_arg_1 = h
    if bool(pred):
        y = self.grow(cond_arg_0, cond_arg_1)
    else:
        y = self.shrink(cond_arg_0, cond_arg_1)
and
    i, x = while_loop(self.more, self.step, (i0, x0))
becomes
    carry_0 = i0
    carry_1 = x0
    go = bool(self.more(carry_0, carry_1))
    while go:
        carry_0, carry_1 = self.step(carry_0, carry_1)
        go = bool(self.more(carry_0, carry_1))
    i, x = (carry_0, carry_1)

which the partial evaluator then lowers like any `if` and `while` (branch
functions with branches of their own are inlined). A branch function may be
a method, a module, a module-level function or a lambda (whose body is used
with its parameters replaced). The operands must be written as a tuple or list.
"""
from __future__ import annotations

import libcst as cst
import torch

from .build import substitute
from .staticeval import value_of
from .values import Static
from .walk import find

__all__ = ["HigherOrderOps"]


def _higher_order_kind(func) -> str | None:
    if func is torch.cond:
        return "cond"
    from torch._higher_order_ops import while_loop

    return "while_loop" if func is while_loop else None


def _args(call: cst.Call, names: list[str]) -> dict[str, cst.BaseExpression] | None:
    """The call's arguments by parameter name; None when they do not fit `names`."""
    bound: dict[str, cst.BaseExpression] = {}
    for k, arg in enumerate(call.args):
        if arg.star:
            return None
        name = arg.keyword.value if arg.keyword is not None else (names[k] if k < len(names) else None)
        if name not in names or name in bound:
            return None
        bound[name] = arg.value
    return bound


def _apply(fn: cst.BaseExpression, operands: list[str]) -> cst.BaseExpression | None:
    """`fn(*operands)` as an expression; a lambda's body with its parameters bound."""
    if isinstance(fn, cst.Lambda):
        params = fn.params
        if params.star_arg is not cst.MaybeSentinel.DEFAULT and params.star_arg is not None \
                or params.kwonly_params or params.star_kwarg or params.posonly_params \
                or len(params.params) != len(operands):
            return None
        return substitute(fn.body, {p.name.value: cst.Name(o) for p, o in zip(params.params, operands)})
    return cst.Call(fn, [cst.Arg(cst.Name(o)) for o in operands])


def _line(small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([small])


class HigherOrderOps:
    """Mixin of PartialEvaluator: statements whose value is `torch.cond(...)` or `while_loop(...)`."""

    def higher_order(self, small, frame, out: list, line) -> bool | None:
        """Lower `small` if it calls a higher-order op; returns whether it terminates, None if it does not."""
        value = getattr(small, "value", None)
        if not isinstance(small, (cst.Assign, cst.Return, cst.Expr)) or not isinstance(value, cst.Call):
            return None
        if isinstance(small, cst.Assign) and len(small.targets) != 1:
            return None
        try:
            func = value_of(value.func, frame.scope)
        except Exception:
            return None
        kind = _higher_order_kind(func.value) if isinstance(func, Static) else None
        if kind is None:
            return None
        if kind == "cond":
            args = _args(value, ["pred", "true_fn", "false_fn", "operands"])
            fns = ("true_fn", "false_fn")
            operands = None if args is None else args.get("operands", cst.Tuple([]))
        else:
            args = _args(value, ["cond_fn", "body_fn", "carried_inputs"])
            fns = ("cond_fn", "body_fn")
            operands = None if args is None else args.get("carried_inputs")
        if args is None or any(f not in args for f in fns) or (kind == "cond" and "pred" not in args) \
                or not isinstance(operands, (cst.Tuple, cst.List)) \
                or any(isinstance(el, cst.StarredElement) for el in operands.elements):
            what = "torch.cond(pred, true_fn, false_fn, operands)" if kind == "cond" else \
                "while_loop(cond_fn, body_fn, carried_inputs)"
            self._error("higher-order-op", frame.src, value, f"`{kind}` called in a form dycl cannot read",
                        f"dycl reads `{what}` with its operands written as a tuple",
                        "pass the branch functions and a tuple literal of operands, e.g. `(x, h)`")
            return False
        stmts = self._cond(small, args, operands, frame) if kind == "cond" else \
            self._while_loop(small, args, operands, frame)
        if stmts is None:
            self._error("higher-order-op", frame.src, value, f"a lambda given to `{kind}` does not take its operands",
                        "a branch function is called with the operands as positional arguments",
                        "give the lambda one plain parameter per operand")
            return False
        for node in find(cst.Module(stmts), cst.CSTNode):  # origin: the statement they came from
            frame.src.alias(node, line)
        lowered, terminated = self.block(stmts, frame)
        out.extend(lowered)
        return terminated

    def _bind(self, operands, frame, hint: str) -> tuple[list[str], list]:
        """Fresh names holding the operands, and the statements that assign them."""
        names = [self.names.fresh(f"{hint}_{k}") for k in range(len(operands.elements))]
        stmts = [_line(cst.Assign([cst.AssignTarget(cst.Name(n))], el.value)) for n, el in zip(names, operands.elements)]
        return names, stmts

    def _result(self, small, value: cst.BaseExpression) -> cst.BaseSmallStatement:
        """`small` with its higher-order call replaced by `value`."""
        return small.with_changes(value=value)

    def _cond(self, small, args, operands, frame):
        names, stmts = self._bind(operands, frame, "cond_arg")
        arms = []
        for fn in ("true_fn", "false_fn"):
            applied = _apply(args[fn], names)
            if applied is None:
                return None
            arms.append(cst.IndentedBlock([_line(self._result(small, applied))]))
        test = cst.Call(cst.Name("bool"), [cst.Arg(args["pred"])])
        stmts.append(cst.If(test, arms[0], orelse=cst.Else(arms[1])))
        return stmts

    def _while_loop(self, small, args, operands, frame):
        names, stmts = self._bind(operands, frame, "carry")
        test = _apply(args["cond_fn"], names)
        step = _apply(args["body_fn"], names)
        if test is None or step is None:
            return None
        carried = cst.Tuple([cst.Element(cst.Name(n)) for n in names])
        # The test is computed before the loop and at the end of each iteration, so that cond_fn
        # can be inlined like any method (a `while` test itself cannot hold inlined code).
        go = self.names.fresh("go")
        test = _line(cst.Assign([cst.AssignTarget(cst.Name(go))], cst.Call(cst.Name("bool"), [cst.Arg(test)])))
        body = cst.IndentedBlock([_line(cst.Assign([cst.AssignTarget(carried.with_changes(lpar=[], rpar=[]))], step)),
                                  test])
        stmts += [test, cst.While(cst.Name(go), body), _line(self._result(small, carried))]
        return stmts
