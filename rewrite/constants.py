"""Tensors of literal data folded at conversion time (`torch.tensor(0)` counters, `torch.tensor(1)` flags).

A TensorConst behaves like a Python constant in the partial evaluator. Python
semantics make two cases delicate, and both are kept exact here: `n += 1` on
a tensor updates it in place (dtype rules and errors included), so it is
applied to a copy, and refused when another name holds the same tensor; and a
statement that updates one in place any other way (`t.add_(1)`, `t[0] = 2`,
`out=t`) makes it a run-time tensor from there on.
"""
from __future__ import annotations

import operator

import libcst as cst

from .cfg import Stmt
from .jumps import Frame
from .staticeval import representation
from .values import Static, TensorConst, constant_tensor
from .walk import find

__all__ = ["ConstantTensors"]


class ConstantTensors:
    """Mixin of PartialEvaluator."""

    def _update_constant(self, old: TensorConst, node: cst.AugAssign, value, frame: Frame) -> TensorConst | None:
        """`n += 1` on a TensorConst: the in-place update torch makes, applied to a copy (so its dtype
        rules and errors hold). None leaves the update to run time."""
        if old.shared:
            self._shared_constant(node.target, frame)
            return None
        if not isinstance(value, Static):
            return None
        tensor = old.value.clone()
        try:
            tensor = _INPLACE[type(node.operator)](tensor, value.value)
        except Exception:
            return None
        const = constant_tensor(tensor)
        return const.hold() if const is not None else None

    def _release_constants(self, node, frame: Frame, out: list, origin) -> None:
        """Names bound to a TensorConst that `node` updates in place (`t.add_(1)`, `t[0] = 2`,
        `out=t`) hold run-time tensors from here on: their value is written out first."""
        scope = frame.scope
        for name in _updated_in_place(node):
            value = scope.env.get(name)
            if not isinstance(value, TensorConst):
                continue
            if value.shared:
                self._shared_constant(node, frame)
                continue
            out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(scope.local(name)))], representation(value)), origin))
            self._set_dynamic(name, frame)

    def _shared_constant(self, node, frame: Frame) -> None:
        self._error("shared-constant", frame.src, node, "in-place update of a constant tensor that another name holds",
                    "dycl folds tensors of literal data (`torch.tensor(0)`) at conversion time; updating one in "
                    "place would change every name bound to it",
                    "copy it before updating (`n = n + 1`, or `m = n.clone()`)")


_INPLACE = {cst.AddAssign: operator.iadd, cst.SubtractAssign: operator.isub, cst.MultiplyAssign: operator.imul,
            cst.DivideAssign: operator.itruediv, cst.FloorDivideAssign: operator.ifloordiv,
            cst.ModuloAssign: operator.imod, cst.PowerAssign: operator.ipow, cst.BitAndAssign: operator.iand,
            cst.BitOrAssign: operator.ior, cst.BitXorAssign: operator.ixor, cst.LeftShiftAssign: operator.ilshift,
            cst.RightShiftAssign: operator.irshift, cst.MatrixMultiplyAssign: operator.imatmul}


def _base_name(node) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _updated_in_place(node) -> list[str]:
    """Names `node` may update in place: the base of a subscript or attribute it assigns, of a method
    `x.add_(...)` it calls, and `out=` arguments."""
    targets: list = []
    if isinstance(node, cst.Assign):
        targets += [t.target for t in node.targets if isinstance(t.target, (cst.Subscript, cst.Attribute))]
    elif isinstance(node, cst.AugAssign) and isinstance(node.target, (cst.Subscript, cst.Attribute)):
        targets.append(node.target)
    for call in find(node, cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and not func.attr.value.startswith("_"):
            targets.append(func.value)
        targets += [a.value for a in call.args if a.keyword is not None and a.keyword.value == "out"]
    return [n for n in map(_base_name, targets) if n is not None]
