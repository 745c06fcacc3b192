"""Region code in the region's own terms: what a Python value of a tensor means inside a traced graph.

In a region a Python conversion of a tensor stays a tensor (`int(t)` → `t.to(torch.int64)`,
`t.item()` → `t.reshape(())`), `len(x)` of a tensor reads its shape, and a tensor's index that may
be a list of Python values goes through `dycl_index` (list_index.py).
"""
from __future__ import annotations

import libcst as cst

from .cfg import code
from .classify import SYNC_BUILTINS, TENSOR, Kinds, analyze, builtin_of, method_of
from .list_index import as_index, as_tensor, holds_list, list_items, mixed_list, python_values, tensor_of_tensors
from .roll import dynamic_roll
from .walk import find

__all__ = ["to_region"]


class _RegionForm(cst.CSTTransformer):
    """Tensor-valued `item()`/`int()`/`float()`/`bool()` stay tensors inside regions; `len(x)` of a
    tensor reads its shape; a tensor's index that may be a list of Python values, and any list in a
    tuple index, goes through `dycl_index` (list_index.py), `torch.tensor` of a list of Python values
    through `dycl_tensor`; `refuse(make, node, detail)` hears of code no region computes as the original
    does (a whole index read from lists given Python values and tensors, `torch.tensor` of tensors),
    `make(origin, code(node), detail)` being its diagnostic."""

    def __init__(self, kinds: Kinds, refuse):
        super().__init__()
        self.kinds, self.refuse = kinds, refuse

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript):
        if analyze(original.value, self.kinds).vtype != TENSOR:
            return updated
        whole = len(original.slice) == 1
        elements = []
        for old, new in zip(original.slice, updated.slice):
            if isinstance(old.slice, cst.Index) and (self._in_tuple(old.slice.value) if not whole
                                                     else self._python_list(old.slice.value)):
                new = new.with_changes(slice=new.slice.with_changes(value=as_index(new.slice.value)))
            elements.append(new)
        return updated.with_changes(slice=elements)

    def _in_tuple(self, index: cst.BaseExpression) -> bool:
        """Whether `index`, one of a tuple index (`x[:, picks]`), may be a list: torch makes a tensor of any
        list there, of tensors too, and tracing would freeze it; `dycl_index` stacks its items instead."""
        kinds = self.kinds
        return holds_list(index, kinds.lists | kinds.items.keys()) \
            and (list_items(index, kinds) is not None or python_values(index, kinds))

    def _python_list(self, index: cst.BaseExpression) -> bool:
        """Whether `index` may be a list of Python values (refused where it may hold tensors too)."""
        kinds = self.kinds
        if holds_list(index, kinds.lists | kinds.items.keys()) and list_items(index, kinds) is not None:
            mixed = [n.value for n in find(index, cst.Name) if len(kinds.items.get(n.value, ())) > 1]
            if mixed:
                self.refuse(mixed_list, index, mixed)
        return python_values(index, kinds)

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        rolled = dynamic_roll(updated)
        if rolled is not None:
            return rolled
        if _torch_tensor(original):
            data = original.args[0].value
            if python_values(data, self.kinds):
                return as_tensor(updated)  # the items stacked, not frozen into the graph
            if holds_list(data, self.kinds.lists | self.kinds.items.keys()) \
                    and TENSOR in (list_items(data, self.kinds) or ()):
                self.refuse(tensor_of_tensors, original, code(data))
        base, method = method_of(original)
        if base is not None and method == "item" and not original.args:
            if analyze(base, self.kinds).vtype == TENSOR:
                return _call(updated.func.value, "reshape", [cst.Arg(cst.Tuple([]))])
        name = builtin_of(original, self.kinds)
        if name in SYNC_BUILTINS and len(original.args) == 1 and analyze(original.args[0].value, self.kinds).vtype == TENSOR:
            arg = updated.args[0].value
            if name == "bool":
                return _call(arg, "bool", [])
            dtype = "int64" if name == "int" else "float64"
            return _call(arg, "to", [cst.Arg(cst.Attribute(cst.Name("torch"), cst.Name(dtype)))])
        if name == "len" and len(original.args) == 1 and not original.args[0].star \
                and analyze(original.args[0].value, self.kinds).vtype == TENSOR:
            # `len(x)` of a tensor is its first dim: as `x.shape[0]` tracing keeps it a shape, not a constant
            shape = cst.Attribute(_primary(updated.args[0].value), cst.Name("shape"))
            return cst.Subscript(shape, [cst.SubscriptElement(cst.Index(cst.Integer("0")))])
        return updated



def _torch_tensor(call: cst.Call) -> bool:
    """`torch.tensor(data, ...)` / `torch.as_tensor(data, ...)` with `data` positional."""
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "torch" \
        and func.attr.value in ("tensor", "as_tensor") and bool(call.args) and call.args[0].keyword is None \
        and not call.args[0].star and all(a.keyword is not None for a in call.args[1:])


def _call(base, method: str, args: list) -> cst.Call:
    return cst.Call(cst.Attribute(_primary(base), cst.Name(method)), args)


# expressions an attribute reads as they are written: `h[0].to(...)`; any other needs parentheses
# (`(h[0] > 0).to(...)`, not `h[0] > 0.to(...)`), a number too (`0.to` is no valid literal)
_PRIMARIES = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Dict, cst.Set, cst.ListComp,
              cst.SetComp, cst.DictComp, cst.SimpleString, cst.FormattedString)


def _primary(node: cst.BaseExpression) -> cst.BaseExpression:
    """`node`, in parentheses unless an attribute of it reads as written."""
    if isinstance(node, _PRIMARIES) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def to_region(node: cst.CSTNode, kinds: Kinds, refuse) -> cst.CSTNode:
    """`node` rewritten for a region: Python-scalar conversions of tensors become tensor ops; `refuse(make,
    node, detail)` hears of code no region computes as the original does (see _RegionForm)."""
    return node.visit(_RegionForm(kinds, refuse))
