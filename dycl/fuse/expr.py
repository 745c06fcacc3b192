"""Host expressions as ONNX nodes: names, constants, `.item()`, `x.shape[i]`, arithmetic, comparisons,
tests (`and`/`or`/`not`) and `np.stack` of a list a loop built, over an environment of names to values."""
from __future__ import annotations

import libcst as cst
import numpy as np
from onnx import TensorProto, helper

from rewrite.cfg import code

from .graph import Appended, Env, Graph, Tup, Unfusable, Val, read

__all__ = ["Expr", "ARITH"]

_COMPARE = {cst.LessThan: "Less", cst.GreaterThan: "Greater", cst.LessThanEqual: "LessOrEqual",
            cst.GreaterThanEqual: "GreaterOrEqual", cst.Equal: "Equal", cst.NotEqual: "Equal"}
ARITH = {cst.Add: "Add", cst.Subtract: "Sub", cst.Multiply: "Mul", cst.AddAssign: "Add",
          cst.SubtractAssign: "Sub", cst.MultiplyAssign: "Mul"}


class Expr:
    """Host expressions as ONNX nodes, over an environment of names to values."""

    def __init__(self, graph: Graph, env: Env):
        self.g, self.env = graph, env

    def __call__(self, node: cst.BaseExpression) -> Val:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise Unfusable(f"`{code(node)}` has no ONNX form here")
        return method(node)

    def test(self, node: cst.BaseExpression, cond: bool = False) -> Val:
        """An expression in a test position (`if`, `while`): its truth value.

        With `cond` (an If's condition) it may be a one-element bool of any shape, not a Python bool.
        """
        if isinstance(node, cst.BooleanOperation):
            op = "And" if isinstance(node.operator, cst.And) else "Or"
            return Val(self.g.op(op, [self.test(node.left, cond).name, self.test(node.right, cond).name]), "bool")
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return Val(self.g.op("Not", [self.test(node.expression, cond).name]), "bool")
        if isinstance(node, cst.Comparison):
            direct = self._compare_item(node)
            if direct is not None:  # a loop's test is a Python bool: 0-d
                return direct if cond else self.g.scalar(Val(direct.name, "array", TensorProto.BOOL))
        return self.g.truth(self(node))

    def _compare_item(self, node: cst.Comparison) -> Val | None:
        """`a.item() OP c` in a test, for a number literal `c`: compared on `a` as it is, in its own type (no
        Reshape, no Cast to a Python number), giving a one-element bool of `a`'s shape, which an If takes as
        its condition. `c` is exact in `a`'s type, or, for a float `a` and an ordering, the value of that type
        next to `c` on the side that gives every value of the type the same answer (`a < 0.99` on float32
        is `a < float32 just above 0.99`)."""
        if len(node.comparisons) != 1 or type(node.comparisons[0].operator) not in _COMPARE:
            return None
        left, target = node.left, node.comparisons[0]
        if not (isinstance(left, cst.Call) and isinstance(left.func, cst.Attribute)
                and left.func.attr.value == "item" and not left.args):
            return None
        literal = _number(target.comparator)
        if literal is None:
            return None
        array = self(left.func.value)
        dtype = _NP_OF_ELEM.get(getattr(array, "elem", None)) if isinstance(array, Val) else None
        if array.kind != "array" or dtype is None or (isinstance(literal, float) and dtype.kind != "f"):
            return None
        exact = _bound(literal, dtype, type(target.operator))
        if exact is None:
            return None
        const = self.g.names.fresh("const")
        self.g.initializers.append(helper.make_tensor(const, array.elem, [], [exact.item()]))
        out = self.g.op(_COMPARE[type(target.operator)], [array.name, const])
        if isinstance(target.operator, cst.NotEqual):
            out = self.g.op("Not", [out])
        return Val(out, "bool")

    def _Tuple(self, node: cst.Tuple) -> Tup:
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            raise Unfusable(f"`{code(node)}` unpacks into a tuple")
        return Tup([self(e.value) for e in node.elements])

    def _List(self, node: cst.List) -> Tup:
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            raise Unfusable(f"`{code(node)}` unpacks into a list")
        return Tup([self(e.value) for e in node.elements], is_list=True)

    def _Name(self, node: cst.Name) -> Val:
        if node.value in ("True", "False"):
            return self.g.const(node.value == "True", "bool")
        return read(self.env, node.value)

    def _Subscript(self, node: cst.Subscript) -> Val:
        """`x.shape[i]` (a Python int) or `x[i, j]` with constant indices (an array)."""
        indices = [self._constant(element.slice.value) if isinstance(element.slice, cst.Index) else None
                   for element in node.slice]
        if None in indices:
            raise Unfusable(f"`{code(node)}`: only constant integer indices are expressed in ONNX")
        value = node.value
        if isinstance(value, cst.Attribute) and value.attr.value == "shape" and len(indices) == 1:
            array = self(value.value)
            if array.kind == "array":
                position = self.g.const(indices[0], "int")
                return Val(self.g.op("Gather", [self.g.op("Shape", [array.name]), position.name], axis=0), "int")
        array = self(value)
        if isinstance(array, Tup) and len(indices) == 1 and -len(array.items) <= indices[0] < len(array.items):
            return array.items[indices[0]]
        if array.kind != "array":
            raise Unfusable(f"`{code(node)}` indexes a Python value")
        out = array.name
        for index in indices:  # each scalar index drops the leading axis
            out = self.g.op("Gather", [out, self.g.const(index, "int").name], axis=0)
        return Val(out, "array", array.elem)

    def _constant(self, node: cst.BaseExpression) -> int | None:
        """An index known here: an integer, `len(lst)` of a list whose length the graph knows
        (unrolled appends), and `+`, `-`, `*` of those (`base[len(base) - 1 - 0]`); None otherwise."""
        if isinstance(node, cst.Integer):
            return int(node.evaluated_value)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            value = self._constant(node.expression)
            return None if value is None else -value
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply)):
            left, right = self._constant(node.left), self._constant(node.right)
            if left is None or right is None:
                return None
            return left + right if isinstance(node.operator, cst.Add) else \
                left - right if isinstance(node.operator, cst.Subtract) else left * right
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" \
                and len(node.args) == 1 and isinstance(node.args[0].value, cst.Name):
            try:
                value = read(self.env, node.args[0].value.value)
            except (Unfusable, KeyError):
                return None
            return len(value.items) if isinstance(value, Tup) else None
        return None

    def _Integer(self, node: cst.Integer) -> Val:
        return self.g.const(int(node.evaluated_value), "int")

    def _Float(self, node: cst.Float) -> Val:
        return self.g.const(float(node.evaluated_value), "float")

    def _Call(self, node: cst.Call) -> Val:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args:
            value = self(func.value)
            if value.kind != "array":
                raise Unfusable(f"`{code(node)}`: .item() of a Python scalar")
            return self.g.scalar(value)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "np" \
                and func.attr.value == "stack":
            return self._stack(node)
        if isinstance(func, cst.Name) and func.value in ("int", "float", "bool") and len(node.args) == 1:
            value = self.g.scalar(self(node.args[0].value))
            if func.value == "bool":
                return self.g.truth(value)
            if func.value == "int" and value.kind == "float":
                raise Unfusable(f"`{code(node)}`: int() of a float truncates; not expressed in ONNX")
            return self.g.cast(value, func.value)
        raise Unfusable(f"`{code(node)}` has no ONNX form here")

    def _stack(self, node: cst.Call) -> Val:
        """`np.stack(lst, axis=k)` of a list one loop of this graph built: the loop's stacked items (which the
        host would otherwise split into a list to stack again), their axis 0 moved to k."""
        args = node.args
        if not 1 <= len(args) <= 2 or args[0].keyword is not None or not isinstance(args[0].value, cst.Name) \
                or len(args) == 2 and args[1].keyword is not None and args[1].keyword.value != "axis":
            raise Unfusable(f"`{code(node)}`: only np.stack(list, axis) is expressed in ONNX")
        axis = self._constant(args[1].value) if len(args) == 2 else 0
        value = self.env[args[0].value.value]
        if not isinstance(value, Appended) or value.stacked is None or axis is None:
            raise Unfusable(f"`{code(node)}` stacks a list that one loop here does not build whole")
        if axis == 0:
            return value.stacked
        if value.item_rank is None or not -value.item_rank - 1 <= axis <= value.item_rank:
            raise Unfusable(f"`{code(node)}`: the rank of the items is not known here")
        axis %= value.item_rank + 1
        perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, value.item_rank + 1))
        return Val(self.g.op("Transpose", [value.stacked.name], perm=perm), "array", value.stacked.elem)

    def _numbers(self, left: Val, right: Val, what: str) -> tuple[Val, Val, str]:
        if left.kind in ("array", "tuple") or right.kind in ("array", "tuple"):
            raise Unfusable(f"`{what}` mixes an array into Python arithmetic")
        kind = "float" if "float" in (left.kind, right.kind) else "int"
        return self.g.cast(left, kind), self.g.cast(right, kind), kind

    def _Comparison(self, node: cst.Comparison) -> Val:
        if len(node.comparisons) != 1 or type(node.comparisons[0].operator) not in _COMPARE:
            raise Unfusable(f"`{code(node)}`: only single comparisons are expressed in ONNX")
        target = node.comparisons[0]
        left, right, _ = self._numbers(self(node.left), self(target.comparator), code(node))
        out = self.g.op(_COMPARE[type(target.operator)], [left.name, right.name])
        if isinstance(target.operator, cst.NotEqual):
            out = self.g.op("Not", [out])
        return Val(out, "bool")

    def _BinaryOperation(self, node: cst.BinaryOperation) -> Val:
        left, right, kind = self._numbers(self(node.left), self(node.right), code(node))
        if isinstance(node.operator, cst.FloorDivide):
            return self.floordiv(left, right, kind)
        if isinstance(node.operator, cst.Modulo) and kind == "int":
            return Val(self.g.op("Mod", [left.name, right.name], fmod=0), kind)  # Python's sign rule
        if type(node.operator) not in ARITH:
            raise Unfusable(f"`{code(node)}`: only +, -, *, // and int % are expressed in ONNX")
        return Val(self.g.op(ARITH[type(node.operator)], [left.name, right.name]), kind)

    def floordiv(self, left: Val, right: Val, kind: str) -> Val:
        """Python's `//`, which floors (ONNX Div truncates integers toward zero)."""
        if kind == "float":
            return Val(self.g.op("Floor", [self.g.op("Div", [left.name, right.name])]), kind)
        rest = self.g.op("Mod", [left.name, right.name], fmod=0)
        return Val(self.g.op("Div", [self.g.op("Sub", [left.name, rest]), right.name]), kind)

    def _UnaryOperation(self, node: cst.UnaryOperation) -> Val:
        if isinstance(node.operator, cst.Not):
            return self.test(node)
        if isinstance(node.operator, cst.Minus):
            value = self(node.expression)
            if value.kind == "array":
                raise Unfusable(f"`{code(node)}` negates an array in the host")
            return Val(self.g.op("Neg", [self.g.cast(value, "float" if value.kind == "float" else "int").name]),
                       "float" if value.kind == "float" else "int")
        raise Unfusable(f"`{code(node)}` has no ONNX form here")

    def _BooleanOperation(self, node) -> Val:
        raise Unfusable(f"`{code(node)}`: `and`/`or` outside a test yields an operand, not a bool")


_NP_OF_ELEM = {TensorProto.FLOAT: np.dtype("float32"), TensorProto.DOUBLE: np.dtype("float64"),
               TensorProto.INT64: np.dtype("int64"), TensorProto.INT32: np.dtype("int32")}


def _bound(literal: int | float, dtype: np.dtype, operator: type) -> np.ndarray | None:
    """The value of `dtype` that `a OP literal` may compare `a` with, for every `a` of that type; None if none."""
    try:
        with np.errstate(over="ignore"):
            near = np.array(literal, dtype=dtype)
    except OverflowError:
        return None
    if near.item() == literal:
        return near
    if dtype.kind != "f" or operator in (cst.Equal, cst.NotEqual):
        return None
    up = operator in (cst.LessThan, cst.GreaterThanEqual)  # a < c is a < (the first value above c)
    if (near.item() > literal) != up:
        near = np.nextafter(near, np.array(np.inf if up else -np.inf, dtype=dtype))
    return np.array(near, dtype=dtype)


def _number(node: cst.BaseExpression) -> int | float | None:
    """The value of an int or float literal, negated or not; None for anything else."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        value = _number(node.expression)
        return None if value is None else -value
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value
    return None
