"""Classify expressions: what the host can compute, what needs a region.

The host holds arrays, Python scalars and containers. It may read shapes,
call `item()`/`int()`/`float()`/`bool()` on arrays, do scalar arithmetic,
compare, and build or index tuples, lists and dicts. Any other tensor math is
region code; `hoist` moves it out of a host expression into region
temporaries. What region code becomes inside a region is region_form.py's.
"""
from __future__ import annotations

import libcst as cst

from .kinds import ValueKind

__all__ = ["Kinds", "analyze", "list_join", "hoist", "to_host", "method_of", "builtin_of", "host_python_list",
           "SHAPE_ATTRS", "SHAPE_METHODS",
           "SYNC_METHODS", "SYNC_BUILTINS", "TENSOR", "SCALAR", "CONTAINER"]

SHAPE_ATTRS = {"shape", "ndim"}
# torch dtypes the host spells as numpy's: `x.dtype != torch.float32` is decided like a shape.
_DTYPES = {"float32": "float32", "float": "float32", "float64": "float64", "double": "float64", "float16": "float16",
           "half": "float16", "int64": "int64", "long": "int64", "int32": "int32", "int": "int32", "int16": "int16",
           "int8": "int8", "uint8": "uint8", "bool": "bool_"}
SHAPE_METHODS = {"size", "dim", "numel", "ndimension", "nelement"}
SYNC_METHODS = {"item", "tolist"}
SYNC_BUILTINS = {"int", "float", "bool"}
_HOST_BUILTINS = {"len", "range", "min", "max", "abs", "round", "int", "float", "bool", "tuple", "list", "str", "sum",
                  "sorted"}
_CONTAINER_METHODS = {"append", "extend", "insert", "pop", "keys", "values", "items", "get", "index", "count"}

TENSOR, SCALAR, CONTAINER = ValueKind.TENSOR, ValueKind.SCALAR, ValueKind.CONTAINER


class Kinds:
    """What each variable holds at run time: a tensor, a scalar or a container."""

    def __init__(self, initial: dict[str, ValueKind], seen: set[str] | None = None, lists: set[str] | None = None):
        self.kinds = dict(initial)
        self.value_derived: set[str] = set()
        self.seen = seen if seen is not None else set(initial)  # every name ever set, shared by copies
        # names some binding sets to a list of Python values (`sizes = t.tolist()`), shared by copies:
        # region code indexing a tensor with one goes through `dycl_index` (list_index.py)
        self.lists = lists if lists is not None else set()
        # a tuple the host built from a display (`out = order, sizes`): (kind, value_derived) per element,
        # for the names that unpack it (`order, sizes = out`)
        self.elements: dict[str, tuple] = {}
        # a list a display built (`picks = []`): the kinds of the items it was built with and grown by
        # (`picks.append(int(s))`) on the paths here, SCALAR for Python values (list_index.list_items)
        self.items: dict[str, frozenset] = {}

    def get(self, name: str) -> ValueKind | None:
        return self.kinds.get(name)

    def set(self, name: str, kind: ValueKind, value_derived: bool = False, elements: tuple | None = None) -> None:
        self.kinds[name] = kind
        self.seen.add(name)
        if value_derived:
            self.value_derived.add(name)
        else:
            self.value_derived.discard(name)
        if elements is None:
            self.elements.pop(name, None)
        else:
            self.elements[name] = elements
        self.items.pop(name, None)

    def copy(self) -> "Kinds":
        new = Kinds(self.kinds, self.seen, self.lists)
        new.value_derived = set(self.value_derived)
        new.elements = dict(self.elements)
        new.items = dict(self.items)
        return new

    def join(self, other: "Kinds") -> None:
        # items followed on both sides, or on the side that binds the name alone
        self.items = {n: self.items.get(n, frozenset()) | other.items.get(n, frozenset())
                      for n in self.items.keys() | other.items.keys()
                      if (n in self.items or n not in self.kinds) and (n in other.items or n not in other.kinds)}
        self.elements = {n: e for n, e in self.elements.items() if other.elements.get(n) == e}
        for name, kind in other.kinds.items():
            mine = self.kinds.get(name)
            if mine is None or mine == kind:
                self.kinds[name] = kind
            elif TENSOR in (mine, kind):
                self.kinds[name] = TENSOR
            else:
                self.kinds[name] = CONTAINER if CONTAINER in (mine, kind) else SCALAR
        self.value_derived |= other.value_derived


def host_python_list(node: cst.BaseExpression, kinds: Kinds) -> bool:
    """A list the host builds (`picks = []`, appends in the host) that holds Python values only."""
    return isinstance(node, cst.Name) and kinds.get(node.value) == CONTAINER \
        and kinds.items.get(node.value, frozenset({TENSOR})) <= {SCALAR}


class Info:
    """vtype: tensor / scalar / container; host: computable in the host as is;
    needs_hoist: host-computable once some sub-expressions go to a region;
    value: depends on tensor values (not only on shapes)."""

    __slots__ = ("vtype", "host", "needs_hoist", "value")

    def __init__(self, vtype: str, host: bool, needs_hoist: bool = False, value: bool = False):
        self.vtype, self.host, self.needs_hoist, self.value = vtype, host, needs_hoist, value


def _constant_index(node, kinds: "Kinds") -> bool:
    """`policy[0, i]` with literal ints on a tensor variable: numpy indexes it in the host."""
    if not isinstance(node, cst.Subscript) or not isinstance(node.value, cst.Name):
        return False
    if kinds.get(node.value.value) != TENSOR:
        return False
    for el in node.slice:
        value = el.slice.value if isinstance(el.slice, cst.Index) else None
        if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
            value = value.expression
        if not isinstance(value, cst.Integer):
            return False
    return True


_JOINS = {"stack": "stack", "cat": "concatenate", "concat": "concatenate"}


def list_join(node: cst.Call, kinds: "Kinds") -> bool:
    """`torch.stack(tokens, dim=1)` / `torch.cat(...)` of a host list: numpy joins it in the host."""
    func = node.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "torch"
            and func.attr.value in _JOINS and node.args):
        return False
    first = node.args[0]
    if first.keyword is not None or not isinstance(first.value, cst.Name) or kinds.get(first.value.value) != CONTAINER:
        return False
    for arg in node.args[1:]:
        if arg.keyword is not None and arg.keyword.value != "dim":
            return False
        value = arg.value.expression if isinstance(arg.value, cst.UnaryOperation) else arg.value
        if not isinstance(value, cst.Integer):
            return False
    return True


def method_of(node: cst.Call):
    """(receiver, method name) of a method call `a.m(...)`; (None, None) for any other call."""
    if isinstance(node.func, cst.Attribute):
        return node.func.value, node.func.attr.value
    return None, None


_CONTAINER_TYPES = {"list", "tuple", "dict"}


def _container_types(node: cst.Call, kinds: Kinds) -> bool:
    """`isinstance(x, list)`, `isinstance(x, (list, tuple))`: tests for Python containers only."""
    if len(node.args) != 2 or any(a.star or a.keyword for a in node.args):
        return False
    types = node.args[1].value
    names = [el.value for el in types.elements] if isinstance(types, cst.Tuple) else [types]
    return all(isinstance(n, cst.Name) and n.value in _CONTAINER_TYPES and kinds.get(n.value) is None for n in names)


def builtin_of(node: cst.Call, kinds: Kinds):
    """The name of the function a call of a bare name calls, unless the name is a variable here."""
    if isinstance(node.func, cst.Name) and kinds.get(node.func.value) is None:
        return node.func.value
    return None


def analyze(node: cst.BaseExpression, kinds: Kinds) -> Info:
    """How `node` can be computed."""
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.Imaginary)):
        return Info(SCALAR, True)
    if isinstance(node, cst.FormattedString):  # a message: the host formats it, tensors computed in a region
        infos = [analyze(p.expression, kinds) for p in node.parts if isinstance(p, cst.FormattedStringExpression)]
        return Info(SCALAR, True, needs_hoist=any(not i.host or i.needs_hoist for i in infos),
                    value=any(i.value or i.vtype == TENSOR for i in infos))
    if isinstance(node, cst.Name):
        kind = kinds.get(node.value)
        if kind is None:
            return Info(SCALAR, True) if node.value in ("True", "False", "None") else Info(TENSOR, False)
        return Info(kind, True, value=node.value in kinds.value_derived)
    if isinstance(node, cst.Attribute):
        if node.attr.value in SHAPE_ATTRS:
            base = analyze(node.value, kinds)
            if base.vtype == TENSOR:
                return Info(SCALAR, True, needs_hoist=not base.host)
        return Info(TENSOR, False)
    if isinstance(node, cst.Call):
        if list_join(node, kinds):
            return Info(TENSOR, True, value=True)
        base, method = method_of(node)
        if base is not None:
            binfo = analyze(base, kinds)
            if method in SYNC_METHODS and not node.args and _constant_index(base, kinds):
                return Info(SCALAR, True, value=True)
            if binfo.vtype == TENSOR and method in SHAPE_METHODS:
                return Info(SCALAR, True, needs_hoist=not binfo.host or not _args_host(node, kinds), value=False)
            if binfo.vtype == TENSOR and method in SYNC_METHODS and not node.args:
                return Info(SCALAR, True, needs_hoist=not binfo.host, value=True)
            if isinstance(base, (cst.SimpleString, cst.ConcatenatedString)) and method == "format":
                infos = [analyze(a.value, kinds) for a in node.args]
                return Info(SCALAR, True, needs_hoist=any(not i.host or i.needs_hoist for i in infos),
                            value=any(i.value or i.vtype == TENSOR for i in infos))
            if binfo.vtype == SCALAR and method in ("count", "index"):  # `sizes.count(0)` of `sizes = t.tolist()`
                return Info(SCALAR, True,
                            needs_hoist=not binfo.host or binfo.needs_hoist or not _args_host(node, kinds),
                            value=binfo.value or any(analyze(a.value, kinds).value for a in node.args))
            if binfo.vtype == CONTAINER and method in _CONTAINER_METHODS:
                return Info(TENSOR if method in ("pop", "get") else SCALAR, True,
                            needs_hoist=not _args_host(node, kinds), value=binfo.value)
            return Info(TENSOR, False)
        name = builtin_of(node, kinds)
        if name == "isinstance" and _container_types(node, kinds):
            # the host holds a tensor as an array, which is no list, tuple or dict either: a type test
            # decided like a shape (exploration folds it when it never changes)
            info = analyze(node.args[0].value, kinds)
            return Info(SCALAR, True, needs_hoist=not info.host or info.needs_hoist, value=False)
        if name in _HOST_BUILTINS and all(not a.star for a in node.args):
            infos = [analyze(a.value, kinds) for a in node.args]
            if name in SYNC_BUILTINS and len(infos) == 1 and _constant_index(node.args[0].value, kinds):
                return Info(SCALAR, True, value=True)
            if name in SYNC_BUILTINS and len(infos) == 1 and infos[0].vtype == TENSOR:
                return Info(SCALAR, True, needs_hoist=not infos[0].host, value=True)
            if name == "len" and len(infos) == 1:  # a list's length is as data-dependent as its appends
                return Info(SCALAR, True, needs_hoist=not infos[0].host,
                            value=infos[0].vtype == CONTAINER and infos[0].value)
            if name == "sum" and any(i.vtype != SCALAR and not host_python_list(a.value, kinds)
                                     for i, a in zip(infos, node.args)):  # of a list of tensors: tensor math
                return Info(TENSOR, False)
            if all(i.vtype != TENSOR for i in infos):
                return Info(SCALAR, True, needs_hoist=any(i.needs_hoist for i in infos),
                            value=any(i.value for i in infos))
        return Info(TENSOR, False)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return _display([el.value for el in node.elements], kinds, any(isinstance(e, cst.StarredElement) for e in node.elements))
    if isinstance(node, cst.Dict):
        values = []
        for el in node.elements:
            if isinstance(el, cst.StarredDictElement):
                return Info(TENSOR, False)
            values.extend([el.key, el.value])
        return _display(values, kinds, False)
    if isinstance(node, cst.Subscript):
        base = analyze(node.value, kinds)
        indices = [analyze(_slice_expr(s), kinds) for s in node.slice for _ in [0] if _slice_expr(s) is not None]
        index_host = all(i.vtype != TENSOR for i in indices)
        if base.vtype in (CONTAINER, SCALAR) and index_host:
            vtype = TENSOR if base.vtype == CONTAINER else SCALAR
            return Info(vtype, True, needs_hoist=not base.host or base.needs_hoist or any(i.needs_hoist for i in indices),
                        value=base.value or any(i.value for i in indices))
        return Info(TENSOR, False)
    if isinstance(node, cst.BooleanOperation) or (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not)):
        infos = [analyze(p, kinds) for p in _operands(node)]
        return Info(SCALAR, True, needs_hoist=any(not i.host or i.needs_hoist for i in infos),
                    value=any(i.value or i.vtype == TENSOR for i in infos))
    if isinstance(node, cst.IfExp):
        test = analyze(node.test, kinds)
        if test.vtype != TENSOR:  # the host picks the branch; each branch is hoisted on its own
            branches = [analyze(node.body, kinds), analyze(node.orelse, kinds)]
            vtype = TENSOR if any(b.vtype == TENSOR for b in branches) else branches[0].vtype
            return Info(vtype, True, needs_hoist=test.needs_hoist or any(not b.host or b.needs_hoist for b in branches),
                        value=test.value or any(b.value for b in branches))
    if isinstance(node, cst.Comparison) and all(isinstance(c.operator, (cst.Equal, cst.NotEqual)) for c in node.comparisons):
        sides = [node.left] + [c.comparator for c in node.comparisons]
        if all(_torch_dtype(p) or isinstance(p, cst.Attribute) and p.attr.value == "dtype" for p in sides):
            bases = [analyze(p.value, kinds) for p in sides if not _torch_dtype(p)]
            if all(b.vtype == TENSOR for b in bases):  # `x.dtype != torch.float32`: decided like a shape
                return Info(SCALAR, True, needs_hoist=any(not b.host for b in bases))
    if isinstance(node, cst.Comparison) and all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in node.comparisons) \
            and all(isinstance(p, cst.Name) for p in [node.left] + [c.comparator for c in node.comparisons]):
        return Info(SCALAR, True)  # `h is None`: identity, whatever h holds
    parts = _operands(node)
    if parts is not None:
        infos = [analyze(p, kinds) for p in parts]
        # `1 in picks`, `sizes == [2, 2]`: comparing host values gives a host bool
        if all(i.vtype == SCALAR for i in infos) or isinstance(node, cst.Comparison) \
                and all(i.vtype != TENSOR and i.host for i in infos):
            return Info(SCALAR, True, needs_hoist=any(i.needs_hoist for i in infos), value=any(i.value for i in infos))
        return Info(TENSOR, False)
    return Info(TENSOR, False)


def _display(values, kinds: Kinds, starred: bool) -> Info:
    infos = [analyze(v, kinds) for v in values]
    # An empty display is a container that will collect values (`tokens = []`).
    vtype = CONTAINER if not infos or any(i.vtype in (TENSOR, CONTAINER) for i in infos) else SCALAR
    return Info(vtype, True, needs_hoist=starred or any(not i.host or i.needs_hoist for i in infos),
                value=any(i.value for i in infos))


def _args_host(node: cst.Call, kinds: Kinds) -> bool:
    return all(analyze(a.value, kinds).host and not analyze(a.value, kinds).needs_hoist for a in node.args)


def _slice_expr(s: cst.SubscriptElement):
    if isinstance(s.slice, cst.Index):
        return s.slice.value
    return None if all(p is None for p in (s.slice.lower, s.slice.upper, s.slice.step)) else cst.Tuple(
        [cst.Element(p) for p in (s.slice.lower, s.slice.upper, s.slice.step) if p is not None])


def _operands(node):
    if isinstance(node, cst.BinaryOperation):
        return [node.left, node.right]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression]
    if isinstance(node, cst.BooleanOperation):
        return [node.left, node.right]
    if isinstance(node, cst.Comparison):
        return [node.left] + [c.comparator for c in node.comparisons]
    if isinstance(node, cst.IfExp):
        return [node.test, node.body, node.orelse]
    return None


def hoist(node: cst.BaseExpression, kinds: Kinds, emit) -> cst.BaseExpression:
    """`node` as a host expression; `emit(expr) -> Name` computes a part in a region."""
    info = analyze(node, kinds)
    if not info.host:
        return emit(node)
    if not info.needs_hoist:
        return node

    def sub(n):
        return hoist(n, kinds, emit)

    if isinstance(node, cst.Attribute):
        return node.with_changes(value=sub(node.value))
    if isinstance(node, cst.Call):
        base, _ = method_of(node)
        if base is not None:
            node = node.with_changes(func=node.func.with_changes(value=sub(base)))
        return node.with_changes(args=[a.with_changes(value=sub(a.value)) for a in node.args])
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return node.with_changes(elements=[e.with_changes(value=sub(e.value)) for e in node.elements])
    if isinstance(node, cst.Dict):
        return node.with_changes(elements=[e.with_changes(key=sub(e.key), value=sub(e.value)) for e in node.elements])
    if isinstance(node, cst.Subscript):
        return node.with_changes(value=sub(node.value), slice=[
            s.with_changes(slice=s.slice.with_changes(value=sub(s.slice.value))) if isinstance(s.slice, cst.Index) else s
            for s in node.slice])
    if isinstance(node, cst.BinaryOperation):
        return node.with_changes(left=sub(node.left), right=sub(node.right))
    if isinstance(node, cst.BooleanOperation):
        return node.with_changes(left=sub(node.left), right=sub(node.right))
    if isinstance(node, cst.UnaryOperation):
        return node.with_changes(expression=sub(node.expression))
    if isinstance(node, cst.Comparison):
        def side(p):  # `x.dtype` of a region value: compute x, read its dtype in the host
            return p.with_changes(value=sub(p.value)) if isinstance(p, cst.Attribute) and p.attr.value == "dtype" \
                else sub(p)
        return node.with_changes(left=side(node.left), comparisons=[
            c.with_changes(comparator=side(c.comparator)) for c in node.comparisons])
    if isinstance(node, cst.IfExp):
        return node.with_changes(test=sub(node.test), body=sub(node.body), orelse=sub(node.orelse))
    if isinstance(node, cst.FormattedString):
        return node.with_changes(parts=[p.with_changes(expression=sub(p.expression))
                                        if isinstance(p, cst.FormattedStringExpression) else p for p in node.parts])
    return emit(node)


def _torch_dtype(node) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "torch" \
        and node.attr.value in _DTYPES


class _HostForm(cst.CSTTransformer):
    """torch shape methods and dtypes as their numpy spelling: `x.size(0)` → `x.shape[0]`,
    `torch.float32` → `np.float32`."""

    def __init__(self, kinds: Kinds):
        super().__init__()
        self.kinds = kinds

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        if _torch_dtype(original):
            return cst.Attribute(cst.Name("np"), cst.Name(_DTYPES[original.attr.value]))
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if list_join(original, self.kinds):
            tight = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                    whitespace_after=cst.SimpleWhitespace(""))
            args = [updated.args[0]] + [a.with_changes(keyword=cst.Name("axis"), equal=tight) for a in updated.args[1:]]
            return cst.Call(cst.Attribute(cst.Name("np"), cst.Name(_JOINS[original.func.attr.value])), args)
        base, method = method_of(original)
        if base is None or method not in SHAPE_METHODS or analyze(base, self.kinds).vtype != TENSOR:
            return updated
        obj = updated.func.value
        if method == "size":
            shape = cst.Attribute(obj, cst.Name("shape"))
            if not updated.args:
                return shape
            return cst.Subscript(shape, [cst.SubscriptElement(cst.Index(updated.args[0].value))])
        if method in ("dim", "ndimension"):
            return cst.Attribute(obj, cst.Name("ndim"))
        return cst.Attribute(obj, cst.Name("size"))


def to_host(node: cst.CSTNode, kinds: Kinds) -> cst.CSTNode:
    """`node` in the host's numpy spelling."""
    return node.visit(_HostForm(kinds))
