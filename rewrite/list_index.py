"""A list of Python values as a tensor index, in region code: the region indexes with the tensor
torch makes of the list.

`x[idx.tolist()]` selects the rows the list names: torch turns a list of Python ints (or bools) into
an index tensor. A region takes a host list item by item, as 0-d tensors (rewrite/tolist.py), and
torch reads a list that holds tensors otherwise: as a tuple, one index per dimension (`x[[t0, t2]]`
is `x[t0, t2]`); and inside a tuple index (`x[:, sizes]`) tracing freezes the list into the graph.
Shapes are tensors under tracing too, so `x[[0, n - 1]]` of `n = x.shape[0]` is the same problem.

A list built by appends (`picks = []`, then `picks.append(int(s))` in a loop or an arm) is such a
list when every item it was built with is a Python value (`list_items`, from `Kinds.items`). One
given Python values and tensors (`picks.append(i)` in one arm, `picks.append(t)` in the other) has
no reading a region can reproduce: torch reads it as one index per dimension when it holds a tensor
and as the positions to select otherwise, and in a region every item is a tensor. Indexing with one
is the `[mixed-list]` diagnostic (rewrite/region_form.py).

So where region code indexes a tensor with a value that may be such a list (`holds_list`: a name
bound to one, a display of Python values, list arithmetic, `list(...)`), the index goes through
`dycl_index`, which stacks the list's items into the 1-D tensor the original indexes with (int64 for
an empty list, as torch makes it; a list of bools stays a mask) and returns any other value as it is.
A host list's length is fixed per region (one graph input per item), as everywhere: a list whose
length changes between runs is the `[varying-list]` diagnostic, and a package refuses a list of
another length than it was converted for (runtime/spec.py).

`torch.tensor(sizes)` (or `torch.as_tensor`) of such a list would be a constant of the trace: it
goes through `dycl_tensor`, which stacks the items with the dtype torch gives Python values.

A list of lists (`.tolist()` of a 2-D tensor) is refused when the region runs: as a whole index,
torch reads it as a tuple of index lists below 32 rows and as one 2-D index from 32 rows on, and
warns that the first reading is deprecated.
"""
from __future__ import annotations

import libcst as cst
import torch

from .classify import SCALAR, TENSOR, Kinds, analyze, builtin_of, method_of
from .diagnostics import Diagnostic, locate

__all__ = ["HELPERS", "import_line", "dycl_index", "dycl_tensor", "holds_list", "list_items", "item_kind",
           "built_items", "python_values", "as_index", "as_tensor", "mixed_list",
           "tensor_of_tensors"]

INDEX_HELPER, TENSOR_HELPER = "dycl_index", "dycl_tensor"
HELPERS = (INDEX_HELPER, TENSOR_HELPER)  # what generated region code may call


def import_line(used) -> str:
    """The import of the helpers in `used` (a sorted, non-empty selection of HELPERS)."""
    return f"from rewrite.list_index import {', '.join(used)}"

def dycl_index(value):
    """`value`, a tensor index, with a list of Python ints or bools (whose items a region may hold as
    0-d tensors) as the 1-D tensor torch makes of it; any other value as it is."""
    if not isinstance(value, list):
        return value
    if any(isinstance(item, (list, tuple)) for item in value):
        raise IndexError("a tensor is indexed by a list of lists (`.tolist()` of a 2-D tensor?), which torch "
                         "reads as a tuple of index lists below 32 rows and as one 2-D index from 32 on; "
                         "dycl converts neither: index with the tensor itself (`x[idx]`, or `x[idx[0], idx[1]]`)")
    if not value:
        return torch.zeros(0, dtype=torch.int64)
    return torch.stack([_item(item) for item in value])


def dycl_tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """`torch.tensor(data)` of a list of Python values (nested lists too), whose items a region may hold as
    0-d tensors: the items stacked, with the dtype torch gives Python values (bool, int64, the default
    float dtype; promoted as torch promotes them) unless `dtype` says otherwise. (`requires_grad` and
    `pin_memory` do not change the values.)"""
    stacked = _stacked(data)
    if dtype is None:
        dtype = torch.bool if stacked.dtype == torch.bool else torch.get_default_dtype() \
            if stacked.is_floating_point() else torch.int64
    return stacked.to(dtype) if device is None else stacked.to(device=device, dtype=dtype)


def _stacked(data):
    if not isinstance(data, (list, tuple)):
        return _item(data)
    if not data:
        return torch.zeros(0)  # torch.tensor([]): the default float dtype
    return torch.stack([_stacked(item) for item in data])


def _item(item):
    """One item as a 0-d tensor, without a value the trace would freeze (a Python value is a constant)."""
    if isinstance(item, torch.Tensor):
        return item
    if isinstance(item, bool):  # the tracer has no constant bool tensors
        return (torch.ones if item else torch.zeros)((), dtype=torch.bool)
    return torch.scalar_tensor(item, dtype=torch.int64 if isinstance(item, int) else torch.get_default_dtype())


def holds_list(node: cst.BaseExpression, lists: set[str]) -> bool:
    """Whether `node` may be a list (`lists`: names that may hold one): `t.tolist()`, `list(...)`, a
    comprehension, a display with an item other than a literal number, `a + b` or `a * n` of one,
    `sorted(...)`, a slice or row of
    one, either arm of a conditional expression."""
    if isinstance(node, cst.Name):
        return node.value in lists
    if isinstance(node, cst.List):
        return any(not _literal(el.value) for el in node.elements)
    if isinstance(node, cst.ListComp):
        return True
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute):
            return func.attr.value == "tolist" and not node.args
        return isinstance(func, cst.Name) and func.value in ("list", "sorted")
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Multiply)):
        return holds_list(node.left, lists) or holds_list(node.right, lists) \
            or isinstance(node.left, cst.List) or isinstance(node.right, cst.List)
    if isinstance(node, cst.Subscript):
        return holds_list(node.value, lists)
    if isinstance(node, cst.IfExp):
        return holds_list(node.body, lists) or holds_list(node.orelse, lists)
    return False


def item_kind(node: cst.BaseExpression, kinds: Kinds):
    """SCALAR when `node`, an item put in a list, is a Python value (`int(s)`, `t.item()`, `i + 1`, an
    item of a list of Python values: `picks[0]`)."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        items = list_items(node.value, kinds)
        if items is not None and items <= {SCALAR}:
            return SCALAR
    return SCALAR if analyze(node, kinds).vtype == SCALAR else TENSOR


def list_items(node: cst.BaseExpression, kinds: Kinds) -> frozenset | None:
    """The kinds of the items the list `node` holds (`item_kind`'s), where they are known: a display or a
    comprehension, a list one built and appends grew (`Kinds.items`), a list of Python values (`t.tolist()`, a
    name bound to one), their sums, repeats and slices, `list(...)` and `sorted(...)` of one."""
    if isinstance(node, cst.ListComp):  # `[int(v > 0) for v in t]`
        return frozenset({item_kind(node.elt, kinds)})
    if isinstance(node, cst.List):
        found: set = set()
        for el in node.elements:
            inner = list_items(el.value, kinds) if isinstance(el, cst.StarredElement) \
                else frozenset({item_kind(el.value, kinds)})
            if inner is None:
                return None
            found |= inner
        return frozenset(found)
    if isinstance(node, cst.Name):
        if node.value in kinds.items:
            return kinds.items[node.value]
        if node.value in kinds.lists and kinds.get(node.value) == SCALAR:
            return frozenset({SCALAR})
        return None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Multiply)):
        left, right = list_items(node.left, kinds), list_items(node.right, kinds)
        if isinstance(node.operator, cst.Multiply):  # `[0] * n`
            return left if right is None else right if left is None else None
        return None if left is None or right is None else left | right
    if isinstance(node, cst.Subscript) and all(isinstance(s.slice, cst.Slice) for s in node.slice):
        return list_items(node.value, kinds)
    if isinstance(node, cst.IfExp):
        body, orelse = list_items(node.body, kinds), list_items(node.orelse, kinds)
        return None if body is None or orelse is None else body | orelse
    if isinstance(node, cst.Call):
        base, method = method_of(node)
        if method == "tolist" and not node.args and analyze(base, kinds).vtype == TENSOR:
            return frozenset({SCALAR})
        if builtin_of(node, kinds) in ("list", "sorted") and len(node.args) == 1 and not node.args[0].star:
            return list_items(node.args[0].value, kinds)
    return None


def built_items(node: cst.BaseSmallStatement, kinds: Kinds) -> tuple[str, frozenset | None] | None:
    """The list name a statement binds (`picks = []`) or grows (`picks.append(v)`, `.insert(i, v)`,
    `.extend(v)`, `picks += v`, `picks[k] = v`), and the kinds of its items afterwards (None where they
    are not known), read before the statement runs; None for any other statement."""
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        target = node.targets[0].target
        if isinstance(target, cst.Name):
            return target.value, list_items(node.value, kinds)
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and target.value.value in kinds.items:
            index = target.slice[0].slice
            added = list_items(node.value, kinds) if isinstance(index, cst.Slice) else {item_kind(node.value, kinds)}
            return _grown(target.value.value, added, kinds)
    if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign) \
            and isinstance(node.target, cst.Name) and node.target.value in kinds.items:
        return _grown(node.target.value, list_items(node.value, kinds), kinds)
    call = node.value if isinstance(node, cst.Expr) else None
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) \
            and call.func.value.value in kinds.items and not any(a.star or a.keyword for a in call.args):
        name, method, args = call.func.value.value, call.func.attr.value, [a.value for a in call.args]
        if (method, len(args)) in (("append", 1), ("insert", 2)):
            return _grown(name, {item_kind(args[-1], kinds)}, kinds)
        if method == "extend" and len(args) == 1:
            return _grown(name, list_items(args[0], kinds), kinds)
    return None


def _grown(name: str, added, kinds: Kinds) -> tuple[str, frozenset]:
    """`name`'s items and the `added` ones (not known: not Python values, as far as indexing goes)."""
    return name, kinds.items[name] | (frozenset({TENSOR}) if added is None else frozenset(added))


def python_values(node: cst.BaseExpression, kinds: Kinds) -> bool:
    """Whether `node` may be a list (`holds_list`) and holds Python values only where it is one."""
    if not holds_list(node, kinds.lists | kinds.items.keys()):
        return False
    items = list_items(node, kinds)
    return analyze(node, kinds).vtype == SCALAR or items is not None and items <= {SCALAR}


def _literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer) or isinstance(node, cst.Name) and node.value in ("True", "False")


def as_index(node: cst.BaseExpression) -> cst.Call:
    """`dycl_index(node)`."""
    return cst.Call(cst.Name(INDEX_HELPER), [cst.Arg(node)])


def as_tensor(call: cst.Call) -> cst.Call:
    """`torch.tensor(data, ...)` as `dycl_tensor(data, ...)`."""
    return call.with_changes(func=cst.Name(TENSOR_HELPER))


def mixed_list(origin, index: str, names: list[str]) -> Diagnostic:
    """Region code indexes a tensor with `index`, read from lists `names` given Python values and tensors."""
    name = names[0]
    return Diagnostic("mixed-list", locate(origin.file, origin.first, origin.last, origin.col, index),
                      f"a tensor indexed by `{index}`, a list given Python values and tensors",
                      "torch reads a list index that holds a tensor as one index per dimension (`x[[t, 1]]` is "
                      "`x[t, 1]`) and a list of Python numbers as the positions to select; "
                      f"`{name}` gets Python values in one place and tensors in another, and in a compiled region "
                      "every item is a tensor, so which reading the original makes cannot be told",
                      "append Python numbers only (`int(t)`, `t.item()`) to select positions, or index with a tuple "
                      f"(`x[tuple({name})]`) to take one index per dimension")


def tensor_of_tensors(origin, call: str, data: str) -> Diagnostic:
    """Region code calls `call`, `torch.tensor` of `data`, a list that holds tensors."""
    return Diagnostic("tensor-of-tensors", locate(origin.file, origin.first, origin.last, origin.col, call),
                      f"`{call}` of a list that holds tensors",
                      "tracing records the tensor `torch.tensor` makes as a constant of the graph, which would keep "
                      "the values of the example inputs; a list of Python values is stacked instead, but of tensors "
                      "`torch.tensor` keeps their dtypes by rules a stack does not follow",
                      f"stack the tensors (`torch.stack({data})` of 0-d tensors), or put Python numbers in the list "
                      "(`int(t)`, `t.item()`)")
