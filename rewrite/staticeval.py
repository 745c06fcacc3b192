"""Evaluate expressions whose value is fixed at conversion time, and fold them.

`self.use_se`, `len(self.blocks)`, `'group{}_ds{}'.format(g, i) in self.ds`,
`isinstance(blk, Bottleneck)` are computed against the live model; module
look-ups become source paths (`self.blocks[3]`) so that region code can use
them; everything else is left for run time.
"""
from __future__ import annotations

import builtins
import inspect
import itertools
import types

import libcst as cst
import torch
from torch import nn

from .syntax import MUTATORS, bound_names, target_names
from .values import (BINOPS, CMPOPS, SAFE_CALLS, Alias, Holds, Instance, IsTensor, ModRef, NotNone, Pack, SizedList, Static, StaticList, TensorConst,
                     Unknown, constant_tensor, is_literal, static_python_value, to_node)

__all__ = ["Method", "Scope", "value_of", "fold", "iteration_items", "NOT_FOLDABLE", "NOT_STATIC", "OBJECTS", "owned"]

# What Python raises when an operation meets values it does not fit, so that the expression does not fold:
# `x < "a"` or an unhashable key (TypeError), `bool(t)` of a tensor of several values (RuntimeError),
# `int("a")` or a bad unpacking (ValueError), `d[k]` of a missing key (LookupError), `1 / 0`
# (ArithmeticError). Anything else from dycl's own code is a bug, and surfaces.
NOT_FOLDABLE = (TypeError, ValueError, LookupError, ArithmeticError, RuntimeError)
# What `value_of` raises for an expression that is not fixed at conversion time.
NOT_STATIC = (Unknown,) + NOT_FOLDABLE

# The key in a Scope's shared `state` under which rewrite/objects.py registers the objects forward
# created: {id(obj): the depth it was created at}. Their attributes forward set are `state[(id(obj), name)]`.
OBJECTS = "objects created in forward"


def owned(scope: "Scope", obj) -> bool:
    """Whether `obj` is (part of) an object forward created, whose attributes the conversion tracks."""
    return id(obj) in scope.state.get(OBJECTS, ())


def _instance(value, scope: "Scope"):
    """`value` as an Instance when it holds an object forward created."""
    return Instance(value.value) if type(value) is Static and owned(scope, value.value) else value


class Method:
    """A method bound to an object reached from `self` (so it can be inlined)."""

    __slots__ = ("func", "owner", "cls")

    def __init__(self, func, owner: ModRef, cls: type):
        self.func, self.owner, self.cls = func, owner, cls

    def __repr__(self) -> str:
        return f"Method({self.func.__qualname__} of {self.owner!r})"


class Scope:
    """What a name means inside one (possibly inlined) function."""

    __slots__ = ("env", "globals", "rename", "self_ref", "cls", "poisoned", "state", "conflicts")

    def __init__(self, env: dict, globals_: dict, rename: dict, self_ref: ModRef | None, cls: type | None,
                 state: dict | None = None):
        self.env, self.globals, self.rename = env, globals_, rename
        self.state = state if state is not None else {}  # model attributes forward set, shared by all scopes
        self.self_ref, self.cls = self_ref, cls
        self.poisoned: set[str] = set()
        self.conflicts: set[str] = set()  # poisoned because paths that met held different objects (merge)

    def local(self, name: str) -> str:
        return self.rename.get(name, name)


_SAFE_METHOD_OWNERS = (str, tuple, range, dict, frozenset, int, float, list)
_MUTATING = MUTATORS | {"sort", "reverse"}  # a list method that changes it never runs at conversion time


def _resolve_name(name: str, scope: Scope):
    if name in scope.env:
        if isinstance(scope.env[name], NotNone):  # a run-time value (see _none_test)
            raise Unknown(name)
        return scope.env[name]
    if name in scope.rename or name in scope.poisoned:
        raise Unknown(name)
    if name in scope.globals:
        value = scope.globals[name]
        if isinstance(value, torch.Tensor):
            raise Unknown(name)
        return Static(value)
    if hasattr(builtins, name):
        return Static(getattr(builtins, name))
    raise Unknown(name)


def _attribute(base, name: str, scope: Scope):
    if isinstance(base, ModRef) and (id(base.obj), name) in scope.state:
        return scope.state[(id(base.obj), name)]
    if isinstance(base, ModRef):
        try:
            obj = getattr(base.obj, name)
        except AttributeError:
            raise Unknown(name) from None
        if isinstance(obj, (nn.Module, torch.Tensor)):  # a parameter or buffer: its dtype and shape fold
            return base.child(name)
        if isinstance(obj, types.MethodType) and obj.__self__ is base.obj:
            return Method(obj.__func__, base, type(base.obj))
        if static_python_value(obj):
            return Static(obj)
        raise Unknown(name)
    if isinstance(base, Instance) and (id(base.value), name) in scope.state:
        return scope.state[(id(base.value), name)]
    if isinstance(base, Static):
        try:
            obj = getattr(base.value, name)
        except AttributeError:
            raise Unknown(name) from None
        if isinstance(obj, torch.Tensor):
            raise Unknown(name)
        return _instance(Static(obj), scope)
    raise Unknown(name)


def _index(node: cst.Subscript, scope: Scope):
    if len(node.slice) != 1:
        raise Unknown("multi-index")
    sl = node.slice[0].slice
    if isinstance(sl, cst.Index):
        return _as_index(_plain(value_of(sl.value, scope)))
    if isinstance(sl, cst.Slice):
        parts = [None if p is None else _plain(value_of(p, scope)) for p in (sl.lower, sl.upper, sl.step)]
        return slice(*parts)
    raise Unknown("index")


def _as_index(key):
    """A 0-d integer tensor indexes like the int it holds (`self.blocks[torch.tensor(2)]`)."""
    if isinstance(key, torch.Tensor) and key.dim() == 0 and key.dtype != torch.bool and not key.is_floating_point():
        return int(key)
    return key


def _computed(result, *operands):
    """The value of an operation on conversion-time values. A tensor computed from constants only is a
    TensorConst (or Unknown when it is too large to fold); one computed from the model's parameters or
    buffers stays a plain Static, which no name is bound to."""
    if isinstance(result, torch.Tensor) and not any(isinstance(v, ModRef) for v in operands):
        const = constant_tensor(result)
        if const is None:
            raise Unknown("tensor")
        return const
    return Static(result)


_TENSOR_OPTIONS = {"dtype", "device", "requires_grad"}


def _tensor_literal(node: cst.Call, scope: "Scope") -> TensorConst:
    """`torch.tensor(data, dtype=...)` of data fixed at conversion time."""
    args, kwargs = [], {}
    for arg in node.args:
        if arg.star or arg.keyword is not None and arg.keyword.value not in _TENSOR_OPTIONS:
            raise Unknown("tensor options")
        value = _plain(value_of(arg.value, scope))
        if not _static_arg(value):
            raise Unknown("tensor of run-time data")
        if arg.keyword is None:
            args.append(value)
        else:
            kwargs[arg.keyword.value] = value
    if len(args) != 1 or kwargs.get("requires_grad"):
        raise Unknown("tensor call")
    try:
        result = torch.tensor(*args, **kwargs)
    except NOT_FOLDABLE:
        raise Unknown("tensor call failed") from None
    const = constant_tensor(result)
    if const is None:
        raise Unknown("tensor")
    return const


def _plain(value):
    """The Python object behind a static value, a module reference or a method bound to one."""
    if isinstance(value, Static):
        return value.value
    if isinstance(value, ModRef):
        return value.obj
    if isinstance(value, Method):
        return types.MethodType(value.func, value.owner.obj)
    if isinstance(value, StaticList):
        return [_plain_item(v) for v in value.items]
    raise Unknown("method")


def _plain_item(value):
    return tuple(_plain(v) for v in value) if isinstance(value, tuple) else _plain(value)


_PACK_METHODS = {"get", "pop"}


def _pack_call(pack: Pack, method: str, node: cst.Call, scope: "Scope"):
    """`kwargs.get("k", default)` / `kwargs.pop("k", default)` on matched arguments (the value; a `pop`
    statement also removes the key, in rewrite/mutables.py)."""
    if method not in _PACK_METHODS or not node.args or any(a.keyword is not None or a.star for a in node.args):
        raise Unknown("pack method")
    key = _plain(value_of(node.args[0].value, scope))
    if key in pack.keywords:
        return pack.keywords[key]
    if len(node.args) > 1:
        return value_of(node.args[1].value, scope)
    if method == "get":
        return Static(None)
    raise Unknown("missing key")


_CASTS = {"to": None, "float": torch.float32, "double": torch.float64, "half": torch.float16,
          "bfloat16": torch.bfloat16, "cpu": None}


def _module_cast(base: ModRef, node: cst.Call, scope: "Scope") -> ModRef:
    """`self.classifier.to(torch.float32)` when it changes nothing: the module itself."""
    method = node.func.attr.value
    args = [_plain(value_of(a.value, scope)) for a in node.args if not a.star]
    dtype = _CASTS[method]
    for arg in args:
        if isinstance(arg, torch.dtype):
            dtype = arg
        elif not (isinstance(arg, (str, torch.device)) and torch.device(arg).type == "cpu"):
            raise Unknown("cast")
    tensors = list(base.obj.parameters()) + list(base.obj.buffers())
    if any(t.device.type != "cpu" for t in tensors):
        raise Unknown("cast")
    if dtype is not None and any(t.is_floating_point() and t.dtype != dtype for t in tensors):
        raise Unknown("cast changes dtypes")
    return base


def _library_function(fn) -> bool:
    """A Python function or bound method outside torch and the standard library's C code."""
    if isinstance(fn, types.MethodType):
        if isinstance(fn.__self__, (torch.Tensor, nn.Module)):
            return False
        fn = fn.__func__
    if hasattr(fn, "cache_info") and hasattr(fn, "__wrapped__"):  # functools.lru_cache: `is_x_available()`
        fn = fn.__wrapped__
    if not isinstance(fn, types.FunctionType) or inspect.isgeneratorfunction(fn):
        return False
    top = (getattr(fn, "__module__", "") or "").split(".")[0]
    return top not in ("torch", "builtins", "numpy")


def _static_arg(value) -> bool:
    return not isinstance(value, (torch.Tensor, nn.Module)) and not (
        isinstance(value, (tuple, list)) and not all(_static_arg(v) for v in value))


def _call(node: cst.Call, scope: Scope):
    func = value_of(node.func, scope)
    if isinstance(func, Static) and func.value is torch.tensor:
        return _tensor_literal(node, scope)
    if isinstance(func, Static) and isinstance(func.value, types.BuiltinFunctionType | types.MethodType) \
            and getattr(func.value, "__self__", None) is not None \
            and isinstance(func.value.__self__, _SAFE_METHOD_OWNERS) \
            and func.value.__name__ not in _MUTATING:
        fn = func.value
    elif isinstance(func, Static) and _hashable_in(func.value, SAFE_CALLS):
        fn = func.value
    elif isinstance(func, Static) and isinstance(func.value, type) and issubclass(func.value, (str, int, float, bool, tuple)):
        fn = func.value
    elif isinstance(func, Static) and _library_function(func.value):
        fn = func.value  # a lookup on configuration: `interface.get_interface(self.config.impl, default)`
    else:
        raise Unknown("call")
    if isinstance(fn, types.MethodType) and owned(scope, fn.__self__):
        raise Unknown("a method of an object forward created")  # inlined: it may read run-time attributes
    if fn in (builtins.getattr, builtins.hasattr) and 2 <= len(node.args) <= 3 and not any(a.star or a.keyword for a in node.args):
        try:
            receiver = value_of(node.args[0].value, scope)
        except Unknown:
            receiver = None
        if isinstance(receiver, Instance):
            return _instance_getattr(fn, receiver, node, scope)
    if fn in (builtins.isinstance, builtins.hasattr) and len(node.args) == 2 and not any(a.star or a.keyword for a in node.args) \
            and isinstance(node.args[0].value, cst.Name) and isinstance(scope.env.get(node.args[0].value.value), IsTensor):
        other = _plain(value_of(node.args[1].value, scope))  # of a plain tensor, known when converting
        if fn is builtins.isinstance:
            return Static(isinstance(other, (type, tuple)) and issubclass(torch.Tensor, other))
        if isinstance(other, str) and not hasattr(torch.Tensor, other):
            return Static(False)  # no instance attributes on tensors torch computed
        raise Unknown("hasattr")
    if fn is builtins.len and len(node.args) == 1 and not node.args[0].star:
        pack = value_of(node.args[0].value, scope)
        if isinstance(pack, Pack):  # `len(input_tensors)` of a `*input_tensors` parameter
            return Static(len(pack.items) + len(pack.keywords))
        if isinstance(pack, (StaticList, SizedList)):
            return Static(len(pack.items) if isinstance(pack, StaticList) else pack.length)
    args, kwargs = [], {}
    for arg in node.args:
        if arg.star == "*":
            args.extend(_plain(value_of(arg.value, scope)))
            continue
        if arg.star == "**":
            kwargs.update(_plain(value_of(arg.value, scope)))
            continue
        value = value_of(arg.value, scope)
        if isinstance(value, Instance) and not _hashable_in(fn, SAFE_CALLS):
            raise Unknown("an object forward created, passed to a function")  # inlined, not run now
        if fn is builtins.getattr and isinstance(value, ModRef) and not args:
            args.append(value)
            continue
        if arg.keyword is not None:
            kwargs[arg.keyword.value] = _plain(value)
        else:
            args.append(_plain(value))
    if fn not in SAFE_CALLS and not all(_static_arg(a) for a in list(args) + list(kwargs.values())):
        raise Unknown("call on run-time values")
    if fn is builtins.getattr and isinstance(args[0], ModRef):
        if len(args) == 2 or hasattr(args[0].obj, args[1]):
            return _attribute(args[0], args[1], scope)
        return Static(args[2])
    try:
        result = fn(*args, **kwargs)
    except Exception:  # library code run at conversion time: whatever it raises, this call is not folded
        raise Unknown("call failed") from None
    if isinstance(result, (torch.Tensor, nn.Module)):
        raise Unknown("tensor")
    return Static(result)


def _instance_getattr(fn, receiver: Instance, node: cst.Call, scope: Scope):
    """`getattr(obj, name[, default])` / `hasattr(obj, name)` on an object forward created: an attribute
    forward set is read from the conversion's state."""
    name = _plain(value_of(node.args[1].value, scope))
    if not isinstance(name, str):
        raise Unknown("attribute name")
    present = (id(receiver.value), name) in scope.state or hasattr(receiver.value, name)
    if fn is builtins.hasattr:
        return Static(present)
    if not present and len(node.args) == 3:
        return value_of(node.args[2].value, scope)
    return _attribute(receiver, name, scope)


def _hashable_in(value, table) -> bool:
    try:
        return value in table
    except TypeError:
        return False


def value_of(node: cst.BaseExpression, scope: Scope):
    """The conversion-time value of `node`: Static, ModRef or Method; raises Unknown."""
    if isinstance(node, cst.Name):
        return _resolve_name(node.value, scope)
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return Static(node.evaluated_value)
    if isinstance(node, cst.ConcatenatedString):  # parts may be f-strings (libcst evaluates those to None)
        return Static(_plain(value_of(node.left, scope)) + _plain(value_of(node.right, scope)))
    if isinstance(node, cst.Attribute):
        if isinstance(node.value, cst.Name) and isinstance(scope.env.get(node.value.value), Holds) \
                and node.attr.value in scope.env[node.value.value].fields:
            return scope.env[node.value.value].fields[node.attr.value]  # `outputs.cache` (rewrite/objects.py)
        return _attribute(value_of(node.value, scope), node.attr.value, scope)
    if isinstance(node, cst.Subscript):
        base = value_of(node.value, scope)
        key = _index(node, scope)
        if isinstance(base, Pack):
            try:
                return base.items[key] if isinstance(key, int) else base.keywords[key]
            except (IndexError, KeyError, TypeError):
                raise Unknown("pack index") from None
        if isinstance(base, ModRef):
            if isinstance(key, (int, str)):
                return base.item(key)
            if isinstance(key, slice):
                return ModRef(base.obj[key], node.with_changes(value=base.path, slice=[
                    cst.SubscriptElement(cst.Slice(*[None if v is None else to_node(v)
                                                     for v in (key.start, key.stop, key.step)]))]))
            raise Unknown("index")
        try:
            item = _plain(base)[key]
        except NOT_FOLDABLE:
            raise Unknown("index") from None
        return _instance(_computed(item, base), scope)
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Name) and node.func.value == "super":
            receiver = scope.env.get("self")
            if scope.self_ref is None and scope.cls is not None and isinstance(receiver, Static) and not node.args:
                return Static(super(scope.cls, receiver.value))  # in a method of a library object (inline.py)
            if scope.self_ref is None or scope.cls is None:
                raise Unknown("super")
            return Static(("super", scope.cls))
        if isinstance(node.func, cst.Attribute):
            base = None
            try:
                base = value_of(node.func.value, scope)
            except Unknown:
                pass
            if isinstance(base, Static) and isinstance(base.value, tuple) and base.value[:1] == ("super",):
                raise Unknown("super call")
            if isinstance(base, Pack):
                return _pack_call(base, node.func.attr.value, node, scope)
            if isinstance(base, ModRef) and isinstance(base.obj, nn.Module) and node.func.attr.value in _CASTS:
                return _module_cast(base, node, scope)
        return _call(node, scope)
    if isinstance(node, cst.BinaryOperation):
        operands = value_of(node.left, scope), value_of(node.right, scope)
        left, right = _plain(operands[0]), _plain(operands[1])
        try:
            result = BINOPS[type(node.operator)](left, right)
        except NOT_FOLDABLE:
            raise Unknown("binop") from None
        return _computed(result, *operands)
    if isinstance(node, cst.UnaryOperation):
        operand = value = value_of(node.expression, scope)
        op = type(node.operator)
        if isinstance(value, SizedList) and op is cst.Not:
            return Static(value.length == 0)
        value = _plain(value)
        if op is cst.Not:
            return Static(not value)
        try:
            result = -value if op is cst.Minus else +value if op is cst.Plus else ~value
        except NOT_FOLDABLE:
            raise Unknown("unary") from None
        return _computed(result, operand)
    if isinstance(node, cst.Comparison):
        if len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, (cst.Is, cst.IsNot)):
            none = _none_test(node.left, node.comparisons[0].comparator, scope)
            if none is not None:
                return Static(none == isinstance(node.comparisons[0].operator, cst.Is))
        first = value_of(node.left, scope)
        if isinstance(first, TensorConst) or any(_holds_constant_tensor(t.comparator, scope) for t in node.comparisons):
            return _tensor_comparison(node, first, scope)
        left = _plain(first)
        for target in node.comparisons:
            right = value_of(target.comparator, scope)
            if isinstance(right, Pack) and isinstance(target.operator, (cst.In, cst.NotIn)):
                right = set(right.keywords)
            else:
                right = right.obj if isinstance(right, ModRef) else _plain(right)
            if not CMPOPS[type(target.operator)](left, right):
                return Static(False)
            left = right
        return Static(True)
    if isinstance(node, cst.BooleanOperation):
        first = value_of(node.left, scope)
        left = _plain(first)
        if bool(left) != isinstance(node.operator, cst.And):
            return _computed(left, first)
        second = value_of(node.right, scope)
        return _computed(_plain(second), second)
    if isinstance(node, (cst.Tuple, cst.List)):
        items = []
        for el in node.elements:
            if isinstance(el, cst.StarredElement):
                raise Unknown("star")
            items.append(_plain(value_of(el.value, scope)))
        return Static(tuple(items) if isinstance(node, cst.Tuple) else items)
    if isinstance(node, cst.Dict):
        pairs = {}
        for el in node.elements:
            if not isinstance(el, cst.DictElement):
                raise Unknown("star")
            pairs[_plain(value_of(el.key, scope))] = _plain(value_of(el.value, scope))
        return Static(pairs)
    if isinstance(node, cst.IfExp):
        test = _plain(value_of(node.test, scope))
        return value_of(node.body if test else node.orelse, scope)
    if isinstance(node, cst.DictComp):
        try:
            return _filtered_pack(node, scope)
        except Unknown:
            return Static(dict(_comprehension(node, scope)))
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        items = _comprehension(node, scope)
        return Static(set(items) if isinstance(node, cst.SetComp) else items)
    if isinstance(node, cst.FormattedString):
        parts = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(part.value)
            else:
                if part.format_spec or part.conversion:
                    raise Unknown("format spec")
                parts.append(str(_plain(value_of(part.expression, scope))))
        return Static("".join(parts))
    raise Unknown(type(node).__name__)


_MAX_COMPREHENSION = 4096


def _comprehension(node, scope: Scope) -> list:
    """The elements (for a dict, (key, value) pairs) of a comprehension over iterables fixed at conversion
    time, its filters decided per element: `{k: [] for k, v in flags.items() if v}` on static flags.
    A generator expression is read as the list it yields (`any(...)`, `tuple(...)` consume it whole)."""
    found: list = []

    def run(comp: cst.CompFor, inner: Scope) -> None:
        if comp.asynchronous is not None:
            raise Unknown("async comprehension")
        iterable = value_of(comp.iter, inner)
        if isinstance(iterable, Pack) and not iterable.keywords and isinstance(comp.target, cst.Name):
            for value in iterable.items:  # `callable(f) for f in fns` over a `*fns` parameter
                nested = _comprehension_scope(inner, {comp.target.value: value}, [comp.target.value])
                if all(_plain(value_of(cond.test, nested)) for cond in comp.ifs):
                    if comp.inner_for_in is not None:
                        run(comp.inner_for_in, nested)
                    else:
                        found.append(_element(nested))
            return
        if isinstance(iterable, StaticList):
            iterable = Static(_plain(iterable))
        if not isinstance(iterable, Static) or isinstance(iterable.value, torch.Tensor):
            raise Unknown("comprehension over a run-time value")
        try:
            if isinstance(iterable.value, (zip, enumerate, reversed)) and isinstance(comp.iter, cst.Call):
                # built afresh by this very evaluation (`zip(cache.is_sliding, cache.is_linear)`): read it whole
                items = list(itertools.islice(iterable.value, _MAX_COMPREHENSION + 1))
                items = items if len(items) <= _MAX_COMPREHENSION else None
            else:
                items = list(iterable.value) if len(iterable.value) <= _MAX_COMPREHENSION else None
        except TypeError:
            raise Unknown("comprehension") from None
        if items is None:
            raise Unknown("long comprehension")
        names = target_names(comp.target)
        for item in items:
            bound: dict = {}
            _bind_target(comp.target, item, bound)
            nested = _comprehension_scope(inner, bound, names)
            if not all(_plain(value_of(cond.test, nested)) for cond in comp.ifs):
                continue
            if comp.inner_for_in is not None:
                run(comp.inner_for_in, nested)
            else:
                found.append(_element(nested))
            if len(found) > _MAX_COMPREHENSION:
                raise Unknown("long comprehension")

    def _element(nested: Scope):
        if isinstance(node, cst.DictComp):
            return _plain(value_of(node.key, nested)), _plain(value_of(node.value, nested))
        return _plain(value_of(node.elt, nested))

    run(node.for_in, scope)
    return found


def _comprehension_scope(inner: Scope, bound: dict, names) -> Scope:
    nested = Scope({**inner.env, **bound}, inner.globals, {n: m for n, m in inner.rename.items() if n not in names},
                   inner.self_ref, inner.cls, inner.state)
    nested.poisoned = inner.poisoned - set(names)
    return nested


def _bind_target(target: cst.BaseExpression, item, env: dict) -> None:
    """Bind a comprehension's target (`k`, `k, v`, `(i, (a, b))`) to one element, as Python unpacks it."""
    if isinstance(target, cst.Name):
        env[target.value] = Static(item)
        return
    if not isinstance(target, (cst.Tuple, cst.List)) or any(isinstance(el, cst.StarredElement) for el in target.elements):
        raise Unknown("comprehension target")
    try:
        parts = list(item)
    except TypeError:
        raise Unknown("comprehension target") from None
    if len(parts) != len(target.elements):
        raise Unknown("comprehension target")
    for el, part in zip(target.elements, parts):
        _bind_target(el.value, part, env)


def _filtered_pack(node: cst.DictComp, scope: Scope) -> Pack:
    """`{k: v for k, v in kwargs.items() if k in allowed}` over matched keyword arguments: a Pack of the
    ones the filter keeps, decided per key at conversion time."""
    comp = node.for_in
    target = comp.target
    if comp.inner_for_in is not None or not isinstance(target, cst.Tuple) or len(target.elements) != 2 \
            or not all(isinstance(el.value, cst.Name) for el in target.elements):
        raise Unknown("comprehension")
    key_name, value_name = (el.value.value for el in target.elements)
    it = comp.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value == "items"
            and not it.args):
        raise Unknown("comprehension")
    pack = value_of(it.func.value, scope)
    if not isinstance(pack, Pack) or pack.items:
        raise Unknown("comprehension")
    if not (isinstance(node.key, cst.Name) and node.key.value == key_name
            and isinstance(node.value, cst.Name) and node.value.value == value_name):
        raise Unknown("comprehension")
    kept = {}
    for key, value in pack.keywords.items():
        inner = Scope({**scope.env, key_name: Static(key), value_name: value}, scope.globals,
                      {n: m for n, m in scope.rename.items() if n not in (key_name, value_name)},
                      scope.self_ref, scope.cls, scope.state)
        inner.poisoned = scope.poisoned - {key_name, value_name}
        if all(_plain(value_of(cond.test, inner)) for cond in comp.ifs):
            kept[key] = value
    return Pack((), kept)


def _holds_constant_tensor(node, scope: Scope) -> bool:
    try:
        return isinstance(value_of(node, scope), TensorConst)
    except NOT_STATIC:
        return False


def _tensor_comparison(node: cst.Comparison, left, scope: Scope) -> TensorConst:
    """`n_block > 2` on a TensorConst: the bool tensor torch computes (a chain is left to run time)."""
    if len(node.comparisons) != 1:
        raise Unknown("chained tensor comparison")
    target = node.comparisons[0]
    right = value_of(target.comparator, scope)
    if isinstance(right, (ModRef, Pack)) or isinstance(left, (ModRef, Pack)):
        raise Unknown("comparison with a module value")
    try:
        result = CMPOPS[type(target.operator)](_plain(left), _plain(right))
    except NOT_FOLDABLE:
        raise Unknown("comparison") from None
    return _computed(result, left, right)


def _none_test(left: cst.BaseExpression, right: cst.BaseExpression, scope: Scope) -> bool | None:
    """`self.cls_token is None`: whether a model attribute holding a tensor (or None) is None."""
    if isinstance(left, cst.Name) and left.value == "None":
        left, right = right, left
    if not (isinstance(right, cst.Name) and right.value == "None"):
        return None
    if isinstance(left, cst.Name) and isinstance(scope.env.get(left.value), NotNone):
        return False
    if not isinstance(left, cst.Attribute):
        return None
    try:
        base = value_of(left.value, scope)
    except NOT_STATIC:
        return None
    if isinstance(base, Instance) and (id(base.value), left.attr.value) in scope.state:
        held = scope.state[(id(base.value), left.attr.value)]  # a run-time value forward stored on it
        return False if isinstance(held, Alias) and held.not_none else None
    if not isinstance(base, ModRef) or not hasattr(base.obj, left.attr.value):
        return None
    return getattr(base.obj, left.attr.value) is None


def representation(value) -> cst.BaseExpression | None:
    """Source for a folded value, or None when it has none (functions, classes)."""
    if isinstance(value, ModRef):
        return value.path
    if isinstance(value, Alias):
        return cst.Name(value.name) if value.attr is None else cst.Attribute(cst.Name(value.name), cst.Name(value.attr))
    if isinstance(value, TensorConst) or isinstance(value, Static) and is_literal(value.value):
        return to_node(value.value)
    if isinstance(value, StaticList) and all(isinstance(v, Static) and is_literal(v.value) for v in value.items):
        return to_node([v.value for v in value.items])
    return None


class _Folder(cst.CSTTransformer):
    """Replace every sub-expression known at conversion time by its value."""

    def __init__(self, scope: Scope):
        super().__init__()
        self.scope = scope
        self.replace: dict[cst.CSTNode, cst.CSTNode] = {}
        self.skip: set[int] = set()
        self.shadow: list[set[str]] = []

    def _shadowed(self, name: str) -> bool:
        return any(name in s for s in self.shadow)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip:
            return False
        if isinstance(node, cst.Attribute):
            self.skip.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            self.skip.add(id(node.keyword))
        elif isinstance(node, cst.Index):
            index = self._integer_index(node.value)
            if index is not None:
                self.replace[node] = node.with_changes(value=to_node(index))
                return False
        elif isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp, cst.Lambda)):
            self.shadow.append(bound_names(node))
            return True
        if isinstance(node, cst.BaseExpression) and not isinstance(node, cst.Lambda):
            if isinstance(node, cst.Name) and self._shadowed(node.value):
                return False
            folded = self._fold_partially(node)
            if folded is not None:
                self.replace[node] = folded
                return False
        return True

    def _integer_index(self, node: cst.BaseExpression) -> int | None:
        """`inp[ii]` with `ii` a 0-d integer TensorConst: index with the int (`inp[2]`), as torch would."""
        try:
            value = value_of(node, self.scope)
        except NOT_STATIC:
            return None
        if isinstance(value, TensorConst):
            index = _as_index(value.value)
            return index if isinstance(index, int) else None
        return None

    def _fold_partially(self, node: cst.BaseExpression):
        try:
            return representation(value_of(node, self.scope))
        except Unknown:
            pass
        except NOT_FOLDABLE:
            return None
        # `static and dynamic`, `x if static else y`: keep only the part that matters.
        if isinstance(node, cst.BooleanOperation):
            try:
                left = _plain(value_of(node.left, self.scope))
            except Unknown:
                return None
            is_and = isinstance(node.operator, cst.And)
            if bool(left) != is_and:
                return to_node(left) if is_literal(left) else None
            return fold(node.right, self.scope)
        if isinstance(node, cst.IfExp):
            try:
                test = _plain(value_of(node.test, self.scope))
            except Unknown:
                return None
            return fold(node.body if test else node.orelse, self.scope)
        return None

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        if isinstance(original, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp, cst.Lambda)):
            self.shadow.pop()
        if isinstance(original, cst.Call) and isinstance(updated, cst.Call) and any(a.star for a in original.args):
            updated = updated.with_changes(args=_expand_stars(original.args, updated.args, self.scope))
        if original in self.replace:
            return self.replace.pop(original)
        if _zero_arg_super(original) and self.scope.self_ref is not None and self.scope.cls is not None:
            return _explicit_super(self.scope)
        if isinstance(updated, cst.Name) and id(original) not in self.skip and not self._shadowed(updated.value):
            if updated.value == "self" and self.scope.self_ref is not None:
                return self.scope.self_ref.path
            new = self.scope.local(updated.value)
            if new != updated.value:
                return updated.with_changes(value=new)
        return updated


def _zero_arg_super(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super" \
        and not node.args


def _explicit_super(scope: Scope) -> cst.Call:
    """`super()` of an inlined method, written out for code outside its class: `super(type(self.router).__mro__[1],
    self.router)`. Zero-argument `super()` reads the defining class from the method's own cell, which a region
    function does not have (a library module's `super().forward(x)` that is not inlined, such as nn.Linear's)."""
    path = scope.self_ref.path
    index = type(scope.self_ref.obj).__mro__.index(scope.cls)
    klass = cst.Subscript(cst.Attribute(cst.Call(cst.Name("type"), [cst.Arg(path)]), cst.Name("__mro__")),
                          [cst.SubscriptElement(cst.Index(cst.Integer(str(index))))])
    return cst.Call(cst.Name("super"), [cst.Arg(klass), cst.Arg(path)])


def _expand_stars(original: list, updated: list, scope: Scope) -> list:
    """`f(*args, **kwargs)` with the arguments matched at conversion time written out."""
    out = []
    for before, after in zip(original, updated):
        try:
            value = value_of(before.value, scope) if before.star else None
        except NOT_STATIC:
            value = None
        if isinstance(value, Static) and isinstance(value.value, (tuple, list, dict)):
            value = Pack(*((tuple(Static(v) for v in value.value), None) if before.star == "*" else
                           ((), {k: Static(v) for k, v in value.value.items()})))
        if not isinstance(value, Pack):
            out.append(after)
            continue
        values = list(value.items) if before.star == "*" else list(value.keywords.values())
        nodes = [representation(v) for v in values]
        if any(n is None for n in nodes):
            out.append(after)
            continue
        if before.star == "*":
            out.extend(cst.Arg(n) for n in nodes)
        else:
            out.extend(cst.Arg(n, keyword=cst.Name(k)) for k, n in zip(value.keywords, nodes))
    return out


def fold(node: cst.BaseExpression, scope: Scope) -> cst.BaseExpression:
    """`node` with every conversion-time sub-expression folded and locals renamed."""
    return node.visit(_Folder(scope))


def iteration_items(node: cst.BaseExpression, scope: Scope) -> list:
    """The items a static `for` loop iterates over, or raise Unknown."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("enumerate", "zip", "reversed") \
            and node.func.value not in scope.rename and node.func.value not in scope.env:
        name = node.func.value
        positional = [a for a in node.args if a.keyword is None]
        if name == "enumerate":
            start = 0
            if len(positional) > 1:
                start = _plain(value_of(positional[1].value, scope))
            for a in node.args:
                if a.keyword is not None and a.keyword.value == "start":
                    start = _plain(value_of(a.value, scope))
            items = iteration_items(positional[0].value, scope)
            return [(Static(start + i), v) for i, v in enumerate(items)]
        if name == "zip":
            return [tuple(t) for t in zip(*(iteration_items(a.value, scope) for a in positional))]
        return list(reversed(iteration_items(positional[0].value, scope)))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args:
        owner = value_of(node.func.value, scope)
        method = node.func.attr.value
        if isinstance(owner, ModRef) and isinstance(owner.obj, nn.ModuleDict):
            keys = list(owner.obj.keys())
            if method == "items":
                return [(Static(k), owner.item(k)) for k in keys]
            if method == "values":
                return [owner.item(k) for k in keys]
            if method == "keys":
                return [Static(k) for k in keys]
        if isinstance(owner, ModRef) and method == "children":
            return [owner.child(n) for n, _ in owner.obj.named_children()]
        if isinstance(owner, ModRef) and method == "named_children":
            return [(Static(n), owner.child(n)) for n, _ in owner.obj.named_children()]
    value = value_of(node, scope)
    if isinstance(value, StaticList):
        return list(value.items)
    if isinstance(value, Pack) and not value.keywords:  # `for mask in mask_functions` over `*mask_functions`
        return list(value.items)
    if isinstance(value, ModRef):
        obj = value.obj
        if isinstance(obj, nn.ModuleDict):
            return [Static(k) for k in obj.keys()]
        if isinstance(obj, (nn.ModuleList, nn.Sequential)):
            return [value.item(i) for i in range(len(obj))]
        raise Unknown("module iteration")
    if isinstance(value, Static):
        try:
            return [Static(v) for v in value.value]
        except TypeError:
            raise Unknown("not iterable") from None
    raise Unknown("iteration")
