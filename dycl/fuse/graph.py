"""Values and graphs under construction: what fusing host code builds ONNX nodes from (see expr, block)."""
from __future__ import annotations

from onnx import TensorProto, helper, numpy_helper

__all__ = ["Unfusable", "Val", "Tup", "Appended", "read", "from_type", "Graph", "Names", "Env", "scalar_kind",
           "DTYPE_OF_KIND", "NP_ELEM"]


class Unfusable(Exception):
    """Why host code stays in the host; `at` is the top-level node of the run it failed in."""

    at = None


_SCALAR_ELEM = {"int": TensorProto.INT64, "float": TensorProto.DOUBLE, "bool": TensorProto.BOOL}
_KIND_OF_DTYPE = {"bool": "bool", "float16": "float", "float32": "float", "float64": "float"}
DTYPE_OF_KIND = {"int": "int64", "float": "float64", "bool": "bool"}
NP_ELEM = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
            "int64": TensorProto.INT64, "int32": TensorProto.INT32, "bool": TensorProto.BOOL,
            "uint8": TensorProto.UINT8, "int8": TensorProto.INT8}


def scalar_kind(dtype: str) -> str:
    return _KIND_OF_DTYPE.get(dtype, "int")


class Val:
    """A value in the graph: an array (`elem` its element type) or a Python scalar as a 0-d tensor."""

    __slots__ = ("name", "kind", "elem")

    def __init__(self, name: str, kind: str, elem: int | None = None):
        self.name, self.kind = name, kind
        self.elem = _SCALAR_ELEM[kind] if kind != "array" else elem

    def same_type(self, other) -> bool:
        return isinstance(other, Val) and self.kind == other.kind and self.elem == other.elem

    def leaves(self) -> list["Val"]:
        return [self]

    def rebuild(self, leaves) -> "Val":
        return next(leaves)

    def type(self) -> tuple:
        return (self.kind, self.elem if self.kind == "array" else None)


class Tup:
    """A tuple or list the host passes around whole, such as an LSTM's (h, c): its items stay apart in the graph."""

    kind = "tuple"

    def __init__(self, items: list, is_list: bool = False):
        self.items, self.is_list = list(items), is_list

    def same_type(self, other) -> bool:
        return isinstance(other, Tup) and len(other.items) == len(self.items) \
            and all(a.same_type(b) for a, b in zip(self.items, other.items))

    def leaves(self) -> list[Val]:
        return [leaf for item in self.items for leaf in item.leaves()]

    def rebuild(self, leaves) -> "Tup":
        """The same structure over the next leaves of an iterator."""
        return Tup([item.rebuild(leaves) for item in self.items], self.is_list)

    def type(self) -> tuple:
        return ("list" if self.is_list else "tuple", tuple(item.type() for item in self.items))


class Appended(Tup):
    """A host list after a loop appended to it: holds the items from before the loop.

    The loop's items come back stacked and the host extends the list, so the graph
    cannot read the whole list after the loop, except as `np.stack(lst, axis)`: `stacked`
    (the loop's items on a new axis 0) where the list held no items before a loop that runs at
    least once (np.stack of an empty list raises), `item_rank` the rank of an item where known.
    """

    def __init__(self, before: Tup, stacked: "Val | None" = None, item_rank: int | None = None):
        super().__init__(before.items, is_list=True)
        self.stacked = None if before.items else stacked
        self.item_rank = item_rank


def read(env: "Env", name: str):
    value = env[name]
    if isinstance(value, Appended):
        raise Unfusable(f"`{name}` is read after a loop appended to it")
    return value


def from_type(kind: tuple, fresh) -> "Val | Tup":
    """A value of the structure `kind` (see .type()) whose leaves are named by `fresh()`."""
    if kind[0] in ("tuple", "list"):
        return Tup([from_type(k, fresh) for k in kind[1]], kind[0] == "list")
    return Val(fresh(), *kind)


class Graph:
    """Nodes and initializers of one graph under construction; names are unique across the model."""

    def __init__(self, names: "Names"):
        self.nodes: list = []
        self.initializers: list = []
        self.names = names
        self.copies: dict[str, str] = {}  # output -> input of each Identity node, kept as nodes are added

    def add(self, node) -> None:
        self.nodes.append(node)
        if node.op_type == "Identity":
            self.copies[node.output[0]] = node.input[0]

    def op(self, op_type: str, inputs: list[str], **attrs) -> str:
        out = self.names.fresh(op_type.lower())
        self.add(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def const(self, value, kind: str) -> Val:
        name = self.names.fresh("const")
        self.initializers.append(helper.make_tensor(name, _SCALAR_ELEM[kind], [], [value]))
        return Val(name, kind)

    def known(self, val: Val):
        """The Python value of a scalar constant made in this graph (see const); None for anything else."""
        init = next((i for i in self.initializers if i.name == val.name and not i.dims), None)
        return None if init is None else numpy_helper.to_array(init).item()

    def cast(self, val: Val, kind: str) -> Val:
        if val.kind == kind:
            return val
        return Val(self.op("Cast", [val.name], to=_SCALAR_ELEM[kind]), kind)

    def scalar(self, val: Val) -> Val:
        """`.item()`: a one-element array as the Python scalar it would become."""
        if isinstance(val, Tup):
            raise Unfusable("a tuple used as a number or a truth value")
        if val.kind != "array":
            return val
        shape = self.names.fresh("shape")
        self.initializers.append(helper.make_tensor(shape, TensorProto.INT64, [0], []))
        flat = Val(self.op("Reshape", [val.name, shape]), "array", val.elem)
        kind = "bool" if val.elem == TensorProto.BOOL else (
            "float" if val.elem in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16) else "int")
        if val.elem == _SCALAR_ELEM[kind]:
            return Val(flat.name, kind)
        return Val(self.op("Cast", [flat.name], to=_SCALAR_ELEM[kind]), kind)

    def truth(self, val: Val) -> Val:
        """Python's `bool(value)`."""
        val = self.scalar(val)
        if val.kind == "bool":
            return val
        return self.cast(val, "bool")  # Cast to bool is `!= 0`, like Python


class Names:
    def __init__(self):
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"


class Env(dict):
    """Names bound in one graph scope; a name not bound here is looked up in the enclosing scope."""

    def __init__(self, parent: "Env | None" = None, source=None):
        super().__init__()
        self.parent, self.source = parent, source

    def __missing__(self, name: str) -> Val:
        return self.parent[name] if self.parent is not None else self.source(name)

    def bound(self, name: str) -> bool:
        return dict.__contains__(self, name)
