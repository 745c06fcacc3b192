"""Attribute writes in forward that cache a value: `self.input_dtype = x.dtype`,
`self.classifier = self.classifier.to(self.dtype)`.

A write whose value is fixed at conversion time and equal to what the model
already holds changes nothing and is accepted. A dtype, device or shape of a
run-time tensor is fixed by the package's signature: it is kept in a local
variable, and later reads of the attribute in this call read that variable.
Anything else would be model state carried from one call to the next, which a
compiled package does not have: reported.
"""
from __future__ import annotations

import libcst as cst
import torch

from .cfg import Stmt
from .jumps import Frame
from .staticeval import value_of
from .values import Alias, ModRef, Static, Unknown

__all__ = ["AttributeWrites", "attribute_owner"]

_SIGNATURE_ATTRS = {"dtype", "device", "shape", "ndim"}
_SIGNATURE_METHODS = {"size", "dim"}


def _fixed_by_signature(node: cst.BaseExpression) -> bool:
    """`x.dtype`, `x.device`, `x.shape`, `x.size(1)`, `x.dim()`: fixed for one input signature."""
    if isinstance(node, cst.Attribute):
        return node.attr.value in _SIGNATURE_ATTRS
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
        and node.func.attr.value in _SIGNATURE_METHODS


def _same(old, new) -> bool:
    if isinstance(new, ModRef):
        return new.obj is old
    if isinstance(new, Static):
        if isinstance(old, torch.Tensor) or isinstance(new.value, torch.Tensor):
            return False
        try:
            return type(old) is type(new.value) and bool(old == new.value)
        except Exception:
            return old is new.value
    return False


def attribute_owner(target, frame: Frame):
    """What `target` (`owner.attr`) sets an attribute of, as the conversion knows it; None for other targets
    or an owner it cannot tell."""
    if not isinstance(target, cst.Attribute):
        return None
    try:
        return value_of(target.value, frame.scope)
    except Exception:
        return None


class AttributeWrites:
    """Mixin of PartialEvaluator: `owner.attr = value` where owner is the model or one of its modules."""

    def _model_attribute(self, target, frame: Frame):
        """The ModRef that `target` (`self.x`, `self.block.y`) sets an attribute of, or None."""
        owner = attribute_owner(target, frame)
        return owner if isinstance(owner, ModRef) else None

    def _attribute_write(self, node: cst.Assign, frame: Frame, out: list, line) -> bool:
        """Lower `owner.attr = value`; False when no target is a model attribute."""
        targets = [t.target for t in node.targets]
        owners = [self._model_attribute(t, frame) for t in targets]
        if not any(owners):
            return False
        if len(targets) != 1:
            self._state_error(targets[0], frame, "an attribute of the model is set in a chained assignment")
            return True
        target, owner = targets[0], owners[0]
        name = target.attr.value
        key = (id(owner.obj), name)
        try:
            value = value_of(node.value, frame.scope)
        except Unknown:
            value = None
        except Exception:
            value = None
        if isinstance(value, (Static, ModRef)):
            current = frame.scope.state.get(key)
            old = current.obj if isinstance(current, ModRef) else current.value if isinstance(current, Static) \
                else getattr(owner.obj, name, _MISSING)
            if old is not _MISSING and _same(old, value):
                return True  # `self.classifier = self.classifier.to(torch.float32)` on a float32 model
            self._state_error(target, frame, "forward changes the model's configuration")
            return True
        if _fixed_by_signature(node.value):
            hoisted: list = []
            folded = self.expression(node.value, frame, hoisted, line)
            out.extend(hoisted)
            frame.scope.state[key] = self._probe(folded, name.lstrip("_") or "attr", frame, out, line)
            return True
        self._state_error(target, frame, "forward stores a run-time value on the model")
        return True

    def _probe(self, folded, name: str, frame: Frame, out: list, line) -> Alias:
        """A fresh local that holds `folded`; for a dtype or device, an empty slice of the tensor
        carries it from region to region, and reads say `probe.dtype`."""
        local = self.names.fresh(name)
        frame.scope.rename[local] = local
        attr = None
        if isinstance(folded, cst.Attribute) and folded.attr.value in ("dtype", "device"):
            attr = folded.attr.value
            folded = cst.Subscript(cst.Call(cst.Attribute(folded.value, cst.Name("flatten"))),
                                   [cst.SubscriptElement(cst.Slice(None, cst.Integer("0")))])
        out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(local))], folded), self.origin(frame, line)))
        return Alias(local, attr)

    def _dtype_local(self, node: cst.Assign, frame: Frame, out: list, line) -> bool:
        """`input_dtype = x.dtype` of a run-time tensor: a compiled region cannot pass a dtype on, so the
        name reads as `probe.dtype` of an empty slice of `x` wherever it is used; True when handled."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name) \
                or not isinstance(node.value, cst.Attribute) or node.value.attr.value not in ("dtype", "device"):
            return False
        name = node.targets[0].target.value
        if frame.variant(name):
            return False
        try:
            value_of(node.value, frame.scope)
            return False  # a parameter's dtype: folded as a constant
        except Unknown:
            pass
        except Exception:
            return False
        hoisted: list = []
        folded = self.expression(node.value, frame, hoisted, line)
        out.extend(hoisted)
        if not isinstance(folded, cst.Attribute):
            return False
        self._set_dynamic(name, frame)
        frame.scope.env[name] = self._probe(folded, f"{name}_probe", frame, out, line)
        return True

    def _state_error(self, target, frame: Frame, message: str) -> None:
        self._error("module-state", frame.src, target, message,
                    "the compiled package has no mutable model state; only a value fixed at conversion time, "
                    "or the dtype, device or shape of an input, can be cached on the model",
                    "keep the value in a local variable and return it")


_MISSING = object()
