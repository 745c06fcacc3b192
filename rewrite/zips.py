"""`for` over `zip(...)` of model-fixed and run-time values: unrolled like a ModuleList loop.

Mixture-of-experts blocks in `transformers` dispatch tokens so:

    sizes = counts.tolist()
    chunks = torch.split(x, sizes)
    for chunk, expert in zip(chunks, self.experts):
        outs.append(expert(chunk))

zip stops at its shortest argument, so one argument the model fixes (a ModuleList or ModuleDict, a list
built when converting, a `range`) bounds the trip count. Such a loop is unrolled as
`for i, expert in enumerate(self.experts): chunk = chunks[i]` would be: a model-fixed item is a constant
in its iteration, a run-time one is read by index (`chunk = chunks[0]`) from the value that was
evaluated once, before the loop, as Python evaluates zip's arguments.

A run-time argument whose length the conversion does not know (a list `.tolist()` made, a tuple
`torch.split` returned) is checked by the host before the loop: with fewer items than the model-fixed
count Python would stop early, after a number of iterations the package was not built for, so the
package raises a ValueError that says so, never a silently shorter loop; with more, zip drops the rest,
as unrolling does. With `strict=True` any other length raises, as Python does. A run-time list of a
length the conversion counted (rewrite/lists.py) needs no check; model-fixed arguments of different
lengths with `strict=True` are a conversion error. `enumerate(zip(...))` numbers the items. A zip of
run-time values only has no fixed trip count and stays unsupported ([dynamic-loop]).
"""
from __future__ import annotations

import os

import libcst as cst

from .cfg import Stmt, code
from .diagnostics import Diagnostic, Location
from .jumps import Frame, assigned_names
from .nonnull import never_none
from .syntax import target_names
from .staticeval import iteration_items, value_of
from .values import ModRef, SizedList, Static, Unknown
from .walk import find

__all__ = ["RunTimeItem", "ZipLoops"]


class RunTimeItem:
    """The item of a run-time zip argument in one unrolled iteration; `expr` reads it (`chunks[0]`)."""

    __slots__ = ("expr",)

    def __init__(self, expr: cst.BaseExpression):
        self.expr = expr

    def __repr__(self) -> str:
        return f"RunTimeItem({code(self.expr)})"


def _builtin(node, name: str, scope) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == name \
        and name not in scope.rename and name not in scope.env


def _unwrap(node, scope):
    """(numbered, enumerate's start argument or None, the zip call) of `zip(...)` or
    `enumerate(zip(...), start)`, or None."""
    start, numbered = None, _builtin(node, "enumerate", scope)
    if numbered:
        positional = [a for a in node.args if a.keyword is None]
        keywords = [a for a in node.args if a.keyword is not None]
        if not positional or len(positional) > 2 or any(a.star for a in node.args) \
                or any(a.keyword.value != "start" for a in keywords) or len(positional) + len(keywords) > 2:
            return None
        start = (positional[1:] or keywords or [None])[0]
        node = positional[0].value
    if not _builtin(node, "zip", scope) or any(a.star for a in node.args) \
            or any(a.keyword is not None and a.keyword.value != "strict" for a in node.args):
        return None
    return numbered, start, node


class ZipLoops:
    """Mixin of LoopLowering: the items of a `for` over a zip whose trip count the model fixes."""

    def _zip_items(self, node: cst.For, iterable, frame: Frame, out: list) -> list | None:
        """The items of each unrolled iteration (a RunTimeItem for each run-time argument), after the
        run-time arguments are evaluated and checked in `out`; None when `node.iter` is no such zip."""
        scope = frame.scope
        source, written = _unwrap(node.iter, scope), _unwrap(iterable, scope)
        if source is None or written is None or len(source[2].args) != len(written[2].args):
            return None
        numbered, start_arg, call = source
        start = 0
        if start_arg is not None:
            try:
                start = value_of(start_arg.value, scope)
            except Exception:
                return None
            if not (isinstance(start, Static) and isinstance(start.value, int)):
                return None
            start = start.value
        strict = False
        operands = []  # (source argument, written argument, items or None)
        for arg, arg_written in zip(call.args, written[2].args):
            if arg.keyword is not None:
                try:
                    strict = value_of(arg.value, scope)
                except Exception:
                    return None
                if not isinstance(strict, Static):
                    return None
                strict = bool(strict.value)
                continue
            operands.append((arg.value, arg_written.value, self._fixed_items(arg.value, arg_written.value, scope)))
        if not operands or all(items is None for _, _, items in operands):
            return None  # nothing fixes the count: a dynamic loop
        if any(items is None and _model_object(a, scope) for a, _, items in operands):
            return None  # fixed by the model, yet nothing a loop can step: reported as a dynamic loop
        known = [len(items) if items is not None else _sized(a, scope) for a, _, items in operands]
        count = min(n for n in known if n is not None)
        if strict and len({n for n in known if n is not None}) > 1:
            self._error("zip-length", frame.src, node.iter, "`zip(..., strict=True)` of lengths that differ",
                        f"the arguments the model fixes have {' and '.join(str(n) for n in known if n is not None)} "
                        "items, so forward always raises ValueError here",
                        "zip arguments of the same length, or drop `strict=True` to stop at the shortest")
            return None
        refs = [self._evaluated_once(a, written, node, frame, out) if items is None else None
                for a, written, items in operands]  # in order, before any check, as Python evaluates them
        fixer = next(a for (a, _, _), n in zip(operands, known) if n == count)
        reads = []
        for position, ((arg, _, items), length, ref) in enumerate(zip(operands, known, refs), 1):
            if items is not None:
                reads.append(items)
                continue
            if length is None and (count or strict) and not _torch_computed(arg, frame):
                self._check_length(ref, arg, position, (count, fixer), strict, node, frame, out)
            reads.append([RunTimeItem(_index(ref, k)) for k in range(count)])
        items = [tuple(row) for row in zip(*(r[:count] for r in reads))]
        return [(Static(start + k), item) for k, item in enumerate(items)] if numbered else items

    def _fixed_items(self, arg, arg_written, scope) -> list | None:
        for expr in (arg, arg_written):
            try:
                return iteration_items(expr, scope)
            except Unknown:
                continue
        return None

    def _evaluated_once(self, arg, arg_written, node: cst.For, frame: Frame, out: list) -> cst.BaseExpression:
        """The argument as the iterations read it: its name, or a fresh one it is evaluated into here."""
        if isinstance(arg, cst.Name) and isinstance(arg_written, cst.Name) and arg.value not in assigned_names(node.body):
            return arg
        name = self.names.fresh(f"zip_{arg.value}" if isinstance(arg, cst.Name) else "zip_items")
        frame.scope.rename[name] = name
        out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(name))], arg_written), self.origin(frame, arg)))
        return cst.Name(name)

    def _check_length(self, ref, arg, position: int, fixed: tuple, strict: bool, node: cst.For, frame: Frame,
                      out: list) -> None:
        """`if len(ref) < count: raise ValueError(...)` (`!=` with strict) before the loop; `fixed`: the
        count and the argument that fixes it."""
        count, fixer = fixed
        where = f"{os.path.basename(frame.src.file)}:{frame.src.loc(node.iter)[0]}"
        if strict:
            message = f"zip() argument {position} (`{code(arg)}`) does not have {count} items, as " \
                      f"`{code(fixer)}` has (strict=True; {where})"
        else:
            message = f"zip() argument {position} (`{code(arg)}`) has fewer than {count} items, the length of " \
                      f"`{code(fixer)}`: Python would end the loop early, and this package was converted to run " \
                      f"it {count} times ({where})"
        line, _, col = frame.src.loc(arg)
        if strict:
            said = (f"`zip(..., strict=True)` of `{code(fixer)}` and `{code(arg)}`, which has another length on "
                    "some inputs", f"forward raises ValueError on such an input; `{code(fixer)}` has {count} items")
        else:
            said = (f"zip of `{code(fixer)}` and `{code(arg)}`, which is shorter than it on some inputs",
                    f"the loop is unrolled for the {count} items of `{code(fixer)}`, and zip stops at its shortest "
                    f"argument: where `{code(arg)}` has fewer items, Python ends the loop early, which the "
                    "package cannot (a tensor whose first dim varies gives such rows, and `.tolist()` of it such "
                    "a list)")
        self.length_checks[message] = Diagnostic(
            "varying-list", Location(frame.src.file, line, col), *said,
            f"give `{code(arg)}` {'exactly' if strict else 'at least'} as many items as `{code(fixer)}` on every "
            "input; the package refuses another length with a ValueError")
        test = cst.Comparison(cst.Call(cst.Name("len"), [cst.Arg(ref)]),
                              [cst.ComparisonTarget(cst.NotEqual() if strict else cst.LessThan(), cst.Integer(str(count)))])
        fail = cst.Raise(cst.Call(cst.Name("ValueError"), [cst.Arg(cst.SimpleString(repr(message)))]))
        check = cst.If(test, cst.IndentedBlock([cst.SimpleStatementLine([fail])]))
        for new in find(check, cst.CSTNode):
            frame.src.alias(new, arg)
        self.statement(check, frame, out)

    def _bind_item(self, target, item, frame: Frame, node) -> list:
        """Bind the loop target to one iteration's item: model-fixed parts as constants; returns the
        assignments that read the run-time parts (`chunk = chunks[0]`), to run first in the body."""
        if isinstance(item, RunTimeItem):
            assign = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(target)], item.expr)])
            for new in find(assign, cst.CSTNode):
                frame.src.alias(new, node.iter)
            return [assign]
        if not _has_run_time(item):
            self.bind(target, item, frame, node)
            return []
        if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == len(item) \
                and not any(isinstance(el, cst.StarredElement) for el in target.elements):
            return [a for el, part in zip(target.elements, item) for a in self._bind_item(el.value, part, frame, node)]
        self._error("loop-target", frame.src, target, "loop variable holding model and run-time values together",
                    "a zip of a module container and run-time values is unrolled, and its items are bound "
                    "one by one", "unpack the items in the loop target (`for chunk, expert in zip(...)`)")
        return []


def _has_run_time(item) -> bool:
    return isinstance(item, RunTimeItem) or isinstance(item, tuple) and any(_has_run_time(v) for v in item)


def _model_object(arg, scope) -> bool:
    try:
        return isinstance(value_of(arg, scope), (ModRef, Static))
    except Exception:
        return False


# torch functions and tensor methods that cut a tensor into a tuple of pieces (`str.split` aside, which
# a run-time value never is)
_PIECES = {"split", "chunk", "unbind", "tensor_split", "split_with_sizes", "hsplit", "vsplit", "dsplit"}


def _torch_computed(arg, frame: Frame) -> bool:
    """Whether tensor code cuts `arg` into pieces (`torch.split(h, sizes)`, or a name only such calls bind
    in the function): a region computes the tuple, and a compiled graph returns as many pieces on every
    call (`torch.split` by a host list takes the list item by item, which the package checks), so the
    host has nothing to check, and reading its length would take the tuple out of the region. When
    exploration traces a shorter tuple, the region's read of a missing piece fails. (A tensor is not
    such a value: its rows vary with a dynamic dim, and `len(t)` is a shape the host reads.)"""
    if not isinstance(arg, cst.Name):
        return _pieces(arg, frame.scope)
    bound = _Bindings(arg.value)
    frame.src.node.visit(bound)
    return bool(bound.values) and not bound.other and all(_pieces(v, frame.scope) for v in bound.values)


def _pieces(value, scope) -> bool:
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _PIECES):
        return False
    try:
        value_of(value.func.value, scope)
    except Exception:
        return True  # a method of a run-time value: a tensor's
    return never_none(value, scope)  # a torch function


class _Bindings(cst.CSTVisitor):
    """The values a function binds `name` to with `name = value` (`values`); `other`: whether it binds
    it any other way too (a parameter, a tuple target, `+=`, a loop variable)."""

    def __init__(self, name: str):
        super().__init__()
        self.name, self.values, self.other = name, [], False

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if isinstance(t.target, cst.Name) and t.target.value == self.name:
                self.values.append(node.value)
            elif self.name in target_names(t.target):
                self.other = True

    def visit_Param(self, node: cst.Param) -> None:
        self.other |= node.name.value == self.name

    def _target(self, target) -> None:
        self.other |= self.name in target_names(target)

    def visit_AugAssign(self, node) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node) -> None:
        self._target(node.target)

    def visit_For(self, node) -> None:
        self._target(node.target)

    def visit_NamedExpr(self, node) -> None:
        self._target(node.target)


def _sized(arg, scope) -> int | None:
    """The length of a run-time list the conversion counted (`outs = [a, b]`), else None."""
    try:
        value = value_of(arg, scope)
    except Exception:
        return None
    return value.length if isinstance(value, SizedList) else None


def _index(ref: cst.BaseExpression, k: int) -> cst.Subscript:
    return cst.Subscript(ref, [cst.SubscriptElement(cst.Index(cst.Integer(str(k))))])

