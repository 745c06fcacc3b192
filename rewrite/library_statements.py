"""Statement forms library code uses around its tensor code, lowered when converting.

- `try`/`finally` without handlers: the body, then the cleanup (an exception ends the package's call
  either way); `try`/`except` whose body runs entirely when converting: the body, or the first handler
  that catches an import failing now (transformers' `is_jit_tracing`, `is_jax_jitting`);
- `if (n := k - x.shape[-1]) > 0:`: the assignment first, so the test is a host decision;
- `batch, dtype, device = x.shape[0], x.dtype, x.device`: one assignment per name;
- a read of a name that held different functions or objects on paths that met: `[static-merge]`.
"""
from __future__ import annotations

import libcst as cst

from .cfg import Jump, Stmt
from .jumps import Frame
from .staticeval import value_of
from .walk import find, replaced

__all__ = ["LibraryStatements", "constant_result"]


class LibraryStatements:
    """Mixin of PartialEvaluator."""

    def _hoist_named(self, node: cst.If, frame: Frame, out: list) -> cst.If:
        """`if (n := k - x.shape[-1]) > 0:` as `n = k - x.shape[-1]` then `if n > 0:`, when the assignment
        expression always runs and runs first (the leftmost operand of the test, or of its leftmost `and`/
        `or`; never inside a conditional expression): the test is then decided on a host value."""
        named = _leading_named(node.test)
        if named is None or not isinstance(named.target, cst.Name):
            return node
        assign = cst.Assign([cst.AssignTarget(named.target)], named.value)
        frame.src.alias(assign, named)
        self.small(assign, frame, out, node)
        test = replaced(node.test, {named: named.target})
        new = node.with_changes(test=test)
        frame.src.alias(new, node)
        frame.src.alias(test, node.test)
        return new

    def visit_Try(self, node, frame, out) -> bool:
        """`try: ... finally: ...` without handlers runs its body, then its cleanup, on every path that
        returns normally (an exception ends the package's call either way). A jump out of the body would
        have to run the cleanup first: reported, as is a `try` with `except` handlers."""
        if not node.handlers and node.orelse is None and node.finalbody is not None \
                and not _leaves_try(node.body):
            lowered, terminated = self.block(node.body.body, frame)
            out.extend(lowered)
            if terminated:
                return True
            lowered, terminated = self.block(node.finalbody.body.body, frame)
            out.extend(lowered)
            return terminated
        if node.handlers and node.orelse is None and node.finalbody is None:
            handled = self._try_except(node, frame, out)
            if handled is not None:
                return handled
        self._error("try-block", frame.src, node, "`try` around tensor code",
                    "exceptions raised inside compiled regions cannot be caught by the host",
                    "remove the try/except or handle the error outside the model")
        return False

    def _try_except(self, node: cst.Try, frame: Frame, out: list) -> bool | None:
        """`try`/`except` whose body runs entirely when converting (`try: import torch; return
        torch.jit.is_tracing()`) and so cannot raise at run time: the body, or, when an import in it fails
        now, the first handler that catches the ImportError. None when the body leaves code for run time."""
        errors = len(self.diagnostics)
        self._catching.append(None)
        try:
            lowered, terminated = self.block(node.body.body, frame)
        finally:
            caught = self._catching.pop()
        if len(self.diagnostics) != errors or not _conversion_only(lowered):
            return None
        if caught is None:
            out.extend(lowered)
            return terminated
        for handler in node.handlers:
            if handler.name is not None:
                continue  # `except ImportError as e:` would bind the exception object
            try:
                kinds = value_of(handler.type, frame.scope).value if handler.type is not None else BaseException
            except Exception:
                return None
            if isinstance(caught, kinds if isinstance(kinds, (type, tuple)) else ()):
                out.extend(lowered)
                lowered, terminated = self.block(handler.body.body, frame)
                out.extend(lowered)
                return terminated
        return None

    def _split_parallel(self, node: cst.Assign, frame: Frame, out: list, line) -> bool:
        """`batch, dtype, device = x.shape[0], x.dtype, x.device` as one assignment per name (so that a dtype
        is read where it is used, and static parts fold), when no element reads a name an earlier one
        assigns: Python evaluates the whole right side first. True when split."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, (cst.Tuple, cst.List)) \
                or not isinstance(node.value, (cst.Tuple, cst.List)):
            return False
        targets, values = node.targets[0].target.elements, node.value.elements
        if len(targets) != len(values) or any(isinstance(e, cst.StarredElement) for e in (*targets, *values)) \
                or not all(isinstance(t.value, cst.Name) for t in targets):
            return False
        names = [t.value.value for t in targets]
        if len(set(names)) != len(names):
            return False
        for k, value in enumerate(values):
            if {n.value for n in find(value.value, cst.Name)} & set(names[:k]):
                return False
        for target, value in zip(targets, values):
            single = cst.Assign([cst.AssignTarget(target.value)], value.value)
            frame.src.alias(single, node)
            self.small(single, frame, out, line)
        return True

    def _check_poisoned(self, expr, frame: Frame) -> None:
        """A read of a name that held different functions, modules or objects on paths that met (merge):
        no run-time value stands for it, so the code reading it cannot be compiled."""
        conflicts = frame.scope.conflicts & frame.scope.poisoned  # not rebound since
        if not conflicts:
            return
        skip = {id(a.attr) for a in find(expr, cst.Attribute)} | {id(a.keyword) for a in find(expr, cst.Arg) if a.keyword}
        for name in find(expr, cst.Name):
            if id(name) not in skip and name.value in conflicts:
                self._error("static-merge", frame.src, name, f"`{name.value}` holds a different function, module or "
                            "object on each path of a run-time decision before this",
                            "such values exist only when converting, so which one this code uses would have to "
                            "be decided at run time",
                            "make the decision static (pass the arguments that fix it), or give each path its own call")


def _leading_named(test: cst.BaseExpression):
    """The assignment expression evaluated first in `test` (`(n := e) > 0`, `not (n := e)`), or None."""
    node = test
    while True:
        if isinstance(node, cst.NamedExpr):
            return node
        if isinstance(node, cst.Comparison):
            node = node.left
        elif isinstance(node, cst.UnaryOperation):
            node = node.expression
        elif isinstance(node, cst.BooleanOperation):
            node = node.left
        else:
            return None


def _conversion_only(lowered: list) -> bool:
    """Whether lowered code does nothing at run time but jump and set constants (an inlined function's
    `return False`)."""
    for node in lowered:
        stmts = node.before if isinstance(node, Jump) else [node] if isinstance(node, Stmt) else None
        if stmts is None or not all(isinstance(s, Stmt) and isinstance(s.node, cst.Assign)
                                    and constant_result(s.node.value) for s in stmts):
            return False
    return True


def _leaves_try(body) -> bool:
    """Whether a `try` body jumps out of itself: a `return`, or a `break`/`continue` of a loop around it."""
    if find(body, cst.Return, stop=(cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        return True
    return bool(find(body, (cst.Break, cst.Continue), stop=(cst.For, cst.While, cst.FunctionDef, cst.ClassDef)))


def constant_result(value: cst.BaseExpression) -> bool:
    """A statement that folded to its value (`logger.warning_once(...)` run when converting): no effect."""
    return isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(value, cst.Name) and value.value in ("None", "True", "False"))
