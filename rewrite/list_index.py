"""A list of Python values as a tensor index, in region code: the region indexes with the tensor
torch makes of the list.

`x[idx.tolist()]` selects the rows the list names: torch turns a list of Python ints (or bools) into
an index tensor. A region takes a host list item by item, as 0-d tensors (rewrite/tolist.py), and
torch reads a list that holds tensors otherwise: as a tuple, one index per dimension (`x[[t0, t2]]`
is `x[t0, t2]`); and inside a tuple index (`x[:, sizes]`) tracing freezes the list into the graph.
Shapes are tensors under tracing too, so `x[[0, n - 1]]` of `n = x.shape[0]` is the same problem.

So where region code indexes a tensor with a value that may be such a list (`holds_list`: a name
bound to one, a display of Python values, list arithmetic, `list(...)`), the index goes through
`dycl_index`, which stacks the list's items into the 1-D tensor the original indexes with (int64 for
an empty list, as torch makes it; a list of bools stays a mask) and returns any other value as it is.
A host list's length is fixed per region (one graph input per item), as everywhere: a list whose
length changes between runs is the `[varying-list]` diagnostic, and a package refuses a list of
another length than it was converted for (runtime/spec.py).

A list of lists (`.tolist()` of a 2-D tensor) is refused when the region runs: as a whole index,
torch reads it as a tuple of index lists below 32 rows and as one 2-D index from 32 rows on, and
warns that the first reading is deprecated.
"""
from __future__ import annotations

import libcst as cst
import torch

__all__ = ["INDEX_HELPER", "IMPORT_LINE", "dycl_index", "holds_list", "as_index"]

INDEX_HELPER = "dycl_index"
IMPORT_LINE = f"from rewrite.list_index import {INDEX_HELPER}"

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


def _item(item):
    """One item as a 0-d tensor, without a value the trace would freeze (a Python value is a constant)."""
    if isinstance(item, torch.Tensor):
        return item
    if isinstance(item, bool):  # the tracer has no constant bool tensors
        return (torch.ones if item else torch.zeros)((), dtype=torch.bool)
    return torch.scalar_tensor(item, dtype=torch.int64 if isinstance(item, int) else torch.get_default_dtype())


def holds_list(node: cst.BaseExpression, lists: set[str]) -> bool:
    """Whether `node` may be a list (`lists`: names that may hold one): `t.tolist()`, `list(...)`, a
    display with an item other than a literal number, `a + b` or `a * n` of one, a slice or row of
    one, either arm of a conditional expression."""
    if isinstance(node, cst.Name):
        return node.value in lists
    if isinstance(node, cst.List):
        return any(not _literal(el.value) for el in node.elements)
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute):
            return func.attr.value == "tolist" and not node.args
        return isinstance(func, cst.Name) and func.value == "list"
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Multiply)):
        return holds_list(node.left, lists) or holds_list(node.right, lists) \
            or isinstance(node.left, cst.List) or isinstance(node.right, cst.List)
    if isinstance(node, cst.Subscript):
        return holds_list(node.value, lists)
    if isinstance(node, cst.IfExp):
        return holds_list(node.body, lists) or holds_list(node.orelse, lists)
    return False


def _literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer) or isinstance(node, cst.Name) and node.value in ("True", "False")


def as_index(node: cst.BaseExpression) -> cst.Call:
    """`dycl_index(node)`."""
    return cst.Call(cst.Name(INDEX_HELPER), [cst.Arg(node)])
