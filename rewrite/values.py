"""Values known at conversion time, and turning them back into source."""
from __future__ import annotations

import builtins
import math
import operator

import libcst as cst
import torch
from torch import nn

__all__ = ["Static", "Instance", "Holds", "TensorConst", "ModRef", "Alias", "Pack", "NotNone", "NOT_NONE", "IsTensor", "IS_TENSOR", "StaticList", "SizedList", "Unknown",
           "to_node", "is_literal", "constant_tensor", "SAFE_CALLS", "BINOPS", "CMPOPS"]


class Unknown(Exception):
    """An expression whose value is only known at run time."""


class Static:
    """A Python value fixed at conversion time (a constant, a class, a function)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other) -> bool:
        return isinstance(other, Static) and type(self.value) is type(other.value) and _same(self.value, other.value)

    def __repr__(self) -> str:
        return f"Static({self.value!r})"


class Instance(Static):
    """A library object created in forward (`cache = DynamicCache(config=self.config)`), built when
    converting (rewrite/objects.py). Its attributes that hold configuration are read from the object;
    the ones forward sets to run-time values are variables, looked up in the conversion's state."""

    __slots__ = ()

    def __eq__(self, other) -> bool:
        return isinstance(other, Instance) and self.value is other.value

    def __repr__(self) -> str:
        return f"Instance({type(self.value).__name__})"


class TensorConst(Static):
    """A small tensor of literal data fixed at conversion time: `torch.tensor(1)`, a counter
    `n = torch.tensor(0)` after `n += 1`, a comparison of them. It folds like a Python constant
    (`if is_output:`, `self.blocks[idx]`) and is written back as `torch.tensor(data, dtype=...)`.

    `bound` and `shared` follow aliasing: a second name bound to the same tensor would see an
    in-place update of the first, so such an update is refused rather than folded.
    """

    __slots__ = ("bound", "shared")

    def __init__(self, value):
        super().__init__(value)
        self.bound = self.shared = False

    def hold(self) -> "TensorConst":
        """Record that a name is bound to this tensor; a second one makes it shared."""
        self.shared = self.shared or self.bound
        self.bound = True
        return self

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorConst) and self.value.dtype == other.value.dtype \
            and self.value.shape == other.value.shape and bool(torch.equal(self.value, other.value))

    def __repr__(self) -> str:
        return f"TensorConst({self.value!r})"


# Larger literal tensors stay region code: their literal would bloat every region that reads them.
_MAX_CONSTANT_NUMEL = 64


def constant_tensor(value) -> "TensorConst | None":
    """`value` as a TensorConst when it is a small CPU tensor of finite literal data, else None."""
    if not isinstance(value, torch.Tensor) or isinstance(value, nn.Parameter) or value.requires_grad:
        return None
    if value.device.type != "cpu" or value.layout != torch.strided or value.numel() > _MAX_CONSTANT_NUMEL:
        return None
    if value.dtype.is_complex or value.is_quantized:
        return None
    if value.is_floating_point() and not bool(torch.isfinite(value).all()):
        return None
    return TensorConst(value)


class ModRef:
    """An object reached from `self` at conversion time: a module, or `self` itself.

    `path` is the source expression that reaches it (`self.blocks[3]`), so code
    that uses it can be written back into a region.
    """

    __slots__ = ("obj", "path")

    def __init__(self, obj, path: cst.BaseExpression):
        self.obj, self.path = obj, path

    def __eq__(self, other) -> bool:
        return isinstance(other, ModRef) and self.obj is other.obj

    def __repr__(self) -> str:
        return f"ModRef({cst.Module([]).code_for_node(self.path)})"

    def child(self, name: str) -> "ModRef":
        obj = getattr(self.obj, name)
        if name.isidentifier():
            return ModRef(obj, cst.Attribute(self.path, cst.Name(name)))
        return ModRef(obj, cst.Call(cst.Name("getattr"), [cst.Arg(self.path), cst.Arg(cst.SimpleString(repr(name)))]))

    def item(self, key) -> "ModRef":
        return ModRef(self.obj[key], cst.Subscript(self.path, [cst.SubscriptElement(cst.Index(to_node(key)))]))


class Alias:
    """A run-time value known to be held by the variable `name` (an element of a Pack), or by its
    attribute `attr` (`probe.dtype`)."""

    __slots__ = ("name", "attr", "not_none", "tensor")

    def __init__(self, name: str, attr: str | None = None, not_none: bool = False, tensor: bool = False):
        self.name, self.attr, self.not_none = name, attr, not_none or tensor  # not_none: see rewrite/nonnull.py
        self.tensor = tensor  # a plain torch.Tensor (values.IsTensor)

    def fact(self):
        """What the variable is known to hold: IS_TENSOR, NOT_NONE or None."""
        return IS_TENSOR if self.tensor else NOT_NONE if self.not_none else None

    def __eq__(self, other) -> bool:
        return isinstance(other, Alias) and (self.name, self.attr) == (other.name, other.attr)

    def __repr__(self) -> str:
        return f"Alias({self.name})"


class NotNone:
    """A run-time value that cannot be None (it was assigned a slice or arithmetic of tensors): only
    `name is None` folds."""

    __slots__ = ()

    def __eq__(self, other) -> bool:
        return isinstance(other, NotNone)

    def __repr__(self) -> str:
        return "NotNone"


NOT_NONE = NotNone()


class Holds(NotNone):
    """A run-time object built with objects forward created among its arguments (`BaseModelOutputWithPast(
    last_hidden_state=h, cache=cache)`): the package passes None for them, and `name.cache` reads the
    object itself when converting (rewrite/objects.py)."""

    __slots__ = ("fields",)

    def __init__(self, fields: dict):
        self.fields = dict(fields)

    def __eq__(self, other) -> bool:
        return isinstance(other, Holds) and self.fields == other.fields

    def __repr__(self) -> str:
        return f"Holds({sorted(self.fields)})"


class IsTensor(NotNone):
    """A run-time value that is a plain `torch.Tensor` (a torch factory's or a tensor method's result, a
    tensor input): `isinstance(name, T)` and `hasattr(name, attr)` of class attributes fold as well."""

    __slots__ = ()

    def __eq__(self, other) -> bool:
        return isinstance(other, IsTensor)

    def __repr__(self) -> str:
        return "IsTensor"


IS_TENSOR = IsTensor()


class StaticList:
    """A list built at conversion time from known values (`hooks.append((module, None))`); `items`
    holds Static, ModRef or Method values, or tuples of them (rewrite/lists.py)."""

    __slots__ = ("items", "depth")

    def __init__(self, items: tuple, depth: tuple = (0, 0)):
        self.items = tuple(items)
        self.depth = depth  # (run-time `if` arms, host loops) it was created in; not part of its value

    def __eq__(self, other) -> bool:
        return isinstance(other, StaticList) and self.items == other.items

    def __repr__(self) -> str:
        return f"StaticList({list(self.items)!r})"


class SizedList:
    """A run-time list whose length is known at conversion time (rewrite/lists.py)."""

    __slots__ = ("length",)

    def __init__(self, length: int):
        self.length = length

    def __eq__(self, other) -> bool:
        return isinstance(other, SizedList) and self.length == other.length

    def __repr__(self) -> str:
        return f"SizedList({self.length})"


class Pack:
    """The arguments a `*args` or `**kwargs` parameter received, matched at conversion time.

    `items` (positional) and `keywords` hold Static, ModRef or Alias values, so
    `f(*args, **kwargs)` passes them on and `kwargs.get("k")` folds.
    """

    __slots__ = ("items", "keywords")

    def __init__(self, items: tuple = (), keywords: dict | None = None):
        self.items, self.keywords = tuple(items), dict(keywords or {})

    def __eq__(self, other) -> bool:
        return isinstance(other, Pack) and self.items == other.items and self.keywords == other.keywords

    def __repr__(self) -> str:
        return f"Pack({list(self.items)!r}, {self.keywords!r})"


def _same(a, b) -> bool:
    try:
        return bool(a == b) if not isinstance(a, float) or not math.isnan(a) else isinstance(b, float) and math.isnan(b)
    except Exception:
        return a is b


_LITERAL_TYPES = (bool, int, float, str, type(None))


def is_literal(value) -> bool:
    """Whether `value` can be written back as a Python literal."""
    if isinstance(value, _LITERAL_TYPES):
        return not (isinstance(value, float) and not math.isfinite(value))
    if isinstance(value, (tuple, list)):
        return all(is_literal(v) for v in value)
    if isinstance(value, (torch.dtype,)):
        return True
    return False


_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def to_node(value) -> cst.BaseExpression:
    """A libcst expression for a literal value (a TensorConst's tensor as `torch.tensor(data, dtype=...)`)."""
    if isinstance(value, torch.Tensor):
        return cst.Call(cst.Attribute(cst.Name("torch"), cst.Name("tensor")),
                        [cst.Arg(to_node(value.tolist())),
                         cst.Arg(to_node(value.dtype), keyword=cst.Name("dtype"), equal=_EQUAL)])
    if isinstance(value, bool) or value is None:
        return cst.Name(repr(value))
    if isinstance(value, int):
        node = cst.Integer(str(abs(value)))
        return cst.UnaryOperation(cst.Minus(), node) if value < 0 else node
    if isinstance(value, float):
        node = cst.Float(repr(abs(value)))
        return cst.UnaryOperation(cst.Minus(), node) if math.copysign(1.0, value) < 0 else node
    if isinstance(value, str):
        return cst.SimpleString(repr(value))
    if isinstance(value, torch.dtype):
        return cst.Attribute(cst.Name("torch"), cst.Name(str(value).split(".")[-1]))
    if isinstance(value, tuple):
        elems = [cst.Element(to_node(v)) for v in value]
        if len(elems) == 1:
            elems = [cst.Element(elems[0].value, comma=cst.Comma())]
        return cst.Tuple(elems)
    if isinstance(value, list):
        return cst.List([cst.Element(to_node(v)) for v in value])
    raise TypeError(f"no literal for {value!r}")


# Functions that are evaluated at conversion time when all their arguments are static.
SAFE_CALLS = {
    builtins.len, builtins.range, builtins.isinstance, builtins.issubclass, builtins.hasattr,
    builtins.getattr, builtins.int, builtins.float, builtins.bool, builtins.str, builtins.min,
    builtins.max, builtins.abs, builtins.round, builtins.tuple, builtins.list, builtins.enumerate,
    builtins.zip, builtins.reversed, builtins.sorted, builtins.sum, builtins.any, builtins.all,
    builtins.divmod, builtins.type, builtins.callable, math.sqrt, math.floor, math.ceil, math.log, math.exp, math.prod,
    # False while converting, as when the model runs eagerly: the branch for eager execution is kept.
    torch.jit.is_tracing, torch.jit.is_scripting, torch.compiler.is_compiling, torch.compiler.is_exporting,
    # (and must be: inside a region's export these say True, and the graph would take the other branch)
    torch.onnx.is_in_onnx_export, torch._dynamo.is_compiling, torch.fx._symbolic_trace.is_fx_tracing,
}

BINOPS = {
    cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul,
    cst.Divide: operator.truediv, cst.FloorDivide: operator.floordiv, cst.Modulo: operator.mod,
    cst.Power: operator.pow, cst.LeftShift: operator.lshift, cst.RightShift: operator.rshift,
    cst.BitAnd: operator.and_, cst.BitOr: operator.or_, cst.BitXor: operator.xor,
}

CMPOPS = {
    cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge,
    cst.Is: operator.is_, cst.IsNot: operator.is_not,
    cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b,
}


def static_python_value(obj) -> bool:
    """Whether an attribute value is configuration (folded) rather than tensor state."""
    if isinstance(obj, (torch.Tensor, nn.Module)):
        return False
    if isinstance(obj, (tuple, list)):
        return all(static_python_value(v) for v in obj)
    return True
