"""Run a stretch of host code as one onnxruntime region: decisions as ONNX `If`, loops as `Loop`.

Every region call costs a backend call (about 10 µs in onnxruntime) and every
host loop a Python iteration, while a gated block or a decoder step often
costs less than that. onnxruntime runs control flow inside a graph, so where
a run of host nodes is region calls plus host code ONNX can express (scalar
counters, `.item()` comparisons, `.shape[i]`, `lst.append(v)` in a loop,
`if c: break` at a loop's end), the regions' graphs are inlined into one graph
with `If` and `Loop` nodes and the host calls it once. Python scalars travel
as 0-d tensors with Python's own precision (int64, float64, bool), so every
comparison decides as the host would. Backends without control flow (TVM)
keep the host's decisions, which is what they need.
"""
from __future__ import annotations

import libcst as cst
import onnx
from onnx import TensorProto, helper

from rewrite.build import reads_writes
from rewrite.cfg import FusedBlock, HostStmt, If, Loop, Program, RegionCall, code

__all__ = ["Unfusable", "Fusion", "fuse_program"]


class Unfusable(Exception):
    """Why host code stays in the host; `at` is the top-level node of the run it failed in."""

    at = None


_SCALAR_ELEM = {"int": TensorProto.INT64, "float": TensorProto.DOUBLE, "bool": TensorProto.BOOL}
_KIND_OF_DTYPE = {"bool": "bool", "float16": "float", "float32": "float", "float64": "float"}
_DTYPE_OF_KIND = {"int": "int64", "float": "float64", "bool": "bool"}
_NP_ELEM = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
            "int64": TensorProto.INT64, "int32": TensorProto.INT32, "bool": TensorProto.BOOL,
            "uint8": TensorProto.UINT8, "int8": TensorProto.INT8}
_COMPARE = {cst.LessThan: "Less", cst.GreaterThan: "Greater", cst.LessThanEqual: "LessOrEqual",
            cst.GreaterThanEqual: "GreaterOrEqual", cst.Equal: "Equal", cst.NotEqual: "Equal"}
_ARITH = {cst.Add: "Add", cst.Subtract: "Sub", cst.Multiply: "Mul", cst.AddAssign: "Add",
          cst.SubtractAssign: "Sub", cst.MultiplyAssign: "Mul"}


def _scalar_kind(dtype: str) -> str:
    return _KIND_OF_DTYPE.get(dtype, "int")


class Val:
    """A value in the graph: an array (`elem` its element type) or a Python scalar as a 0-d tensor."""

    __slots__ = ("name", "kind", "elem")

    def __init__(self, name: str, kind: str, elem: int | None = None):
        self.name, self.kind = name, kind
        self.elem = _SCALAR_ELEM[kind] if kind != "array" else elem

    def same_type(self, other: "Val") -> bool:
        return self.kind == other.kind and self.elem == other.elem


class _Graph:
    """Nodes and initializers of one graph under construction; names are unique across the model."""

    def __init__(self, names: "_Names"):
        self.nodes: list = []
        self.initializers: list = []
        self.names = names

    def op(self, op_type: str, inputs: list[str], **attrs) -> str:
        out = self.names.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def const(self, value, kind: str) -> Val:
        name = self.names.fresh("const")
        self.initializers.append(helper.make_tensor(name, _SCALAR_ELEM[kind], [], [value]))
        return Val(name, kind)

    def cast(self, val: Val, kind: str) -> Val:
        if val.kind == kind:
            return val
        return Val(self.op("Cast", [val.name], to=_SCALAR_ELEM[kind]), kind)

    def scalar(self, val: Val) -> Val:
        """`.item()`: a one-element array as the Python scalar it would become."""
        if val.kind != "array":
            return val
        shape = self.names.fresh("shape")
        self.initializers.append(helper.make_tensor(shape, TensorProto.INT64, [0], []))
        flat = Val(self.op("Reshape", [val.name, shape]), "array", val.elem)
        kind = "bool" if val.elem == TensorProto.BOOL else (
            "float" if val.elem in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16) else "int")
        return Val(self.op("Cast", [flat.name], to=_SCALAR_ELEM[kind]), kind)

    def truth(self, val: Val) -> Val:
        """Python's `bool(value)`."""
        val = self.scalar(val)
        if val.kind == "bool":
            return val
        return self.cast(val, "bool")  # Cast to bool is `!= 0`, like Python


class _Names:
    def __init__(self):
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"


class _Expr:
    """Host expressions as ONNX nodes, over an environment of names to values."""

    def __init__(self, graph: _Graph, env: "_Env"):
        self.g, self.env = graph, env

    def __call__(self, node: cst.BaseExpression) -> Val:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise Unfusable(f"`{code(node)}` has no ONNX form here")
        return method(node)

    def test(self, node: cst.BaseExpression) -> Val:
        """An expression in a test position (`if`, `while`): its truth value."""
        if isinstance(node, cst.BooleanOperation):
            op = "And" if isinstance(node.operator, cst.And) else "Or"
            return Val(self.g.op(op, [self.test(node.left).name, self.test(node.right).name]), "bool")
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return Val(self.g.op("Not", [self.test(node.expression).name]), "bool")
        return self.g.truth(self(node))

    def _Name(self, node: cst.Name) -> Val:
        if node.value in ("True", "False"):
            return self.g.const(node.value == "True", "bool")
        return self.env[node.value]

    def _Subscript(self, node: cst.Subscript) -> Val:
        """`x.shape[i]` (a Python int) or `x[i, j]` with constant indices (an array)."""
        indices = []
        for element in node.slice:
            index = element.slice.value if isinstance(element.slice, cst.Index) else None
            try:
                indices.append(int(code(index)) if index is not None else None)
            except ValueError:
                indices.append(None)
        if None in indices:
            raise Unfusable(f"`{code(node)}`: only constant integer indices are expressed in ONNX")
        value = node.value
        if isinstance(value, cst.Attribute) and value.attr.value == "shape" and len(indices) == 1:
            array = self(value.value)
            if array.kind == "array":
                position = self.g.const(indices[0], "int")
                return Val(self.g.op("Gather", [self.g.op("Shape", [array.name]), position.name], axis=0), "int")
        array = self(value)
        if array.kind != "array":
            raise Unfusable(f"`{code(node)}` indexes a Python value")
        out = array.name
        for index in indices:  # each scalar index drops the leading axis
            out = self.g.op("Gather", [out, self.g.const(index, "int").name], axis=0)
        return Val(out, "array", array.elem)

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
        if isinstance(func, cst.Name) and func.value in ("int", "float", "bool") and len(node.args) == 1:
            value = self.g.scalar(self(node.args[0].value))
            if func.value == "bool":
                return self.g.truth(value)
            if func.value == "int" and value.kind == "float":
                raise Unfusable(f"`{code(node)}`: int() of a float truncates; not expressed in ONNX")
            return self.g.cast(value, func.value)
        raise Unfusable(f"`{code(node)}` has no ONNX form here")

    def _numbers(self, left: Val, right: Val, what: str) -> tuple[Val, Val, str]:
        if left.kind == "array" or right.kind == "array":
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
        if type(node.operator) not in _ARITH:
            raise Unfusable(f"`{code(node)}`: only +, -, *, // and int % are expressed in ONNX")
        return Val(self.g.op(_ARITH[type(node.operator)], [left.name, right.name]), kind)

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



class _Env(dict):
    """Names bound in one graph scope; a name not bound here is looked up in the enclosing scope."""

    def __init__(self, parent: "_Env | None" = None, source=None):
        super().__init__()
        self.parent, self.source = parent, source

    def __missing__(self, name: str) -> Val:
        return self.parent[name] if self.parent is not None else self.source(name)

    def bound(self, name: str) -> bool:
        return dict.__contains__(self, name)


class _Context:
    """What building one block needs: the regions, their graphs, the host's types, and the block's inputs."""

    def __init__(self, program: Program, run: list, metas: dict, models: dict, signature: list[dict]):
        self.program, self.metas, self.models = program, metas, models
        self.out_elems = {r: [o.type.tensor_type.elem_type for o in models[r].graph.output] if r in models else []
                          for r in metas}
        self.types = _Types(program, run[0], signature, metas, self.out_elems)
        self.names = _Names()
        self.inputs: dict[str, Val] = {}
        self.scans: dict[str, Val] = {}
        self.returns: list[tuple[bool, list]] = []  # (a tuple?, expressions) of each return translated

    def input(self, name: str) -> Val:
        """A name the block reads from the host: one graph input per name."""
        if name not in self.inputs:
            kind = self.types.get(name)
            if kind is None:
                raise Unfusable(f"`{name}` is not set before this code with a type known at conversion")
            self.inputs[name] = Val(self.names.fresh(name), *kind)
        return self.inputs[name]


class _Block:
    """Host nodes as ONNX nodes of graph `g`, reading and binding names in `env`.

    `scans` collects `lst.append(v)` values when `g` is a loop body; `top` marks the block's own graph.
    With `returning`, the nodes end in `return`: `ret` becomes the returned values, and
    `if c: ...; return a` followed by more code reads as `if c: ... else: <the rest>`.
    """

    def __init__(self, ctx: _Context, g: _Graph, env: _Env, scans: dict | None = None, top: bool = False,
                 returning: bool = False):
        self.ctx, self.g, self.env, self.scans, self.top = ctx, g, env, scans, top
        self.returning = returning
        self.ret: list[Val] | None = None

    def run(self, nodes: list) -> None:
        for k, node in enumerate(nodes):
            if self.ret is not None:
                raise Unfusable("code after a return")
            if self.returning and isinstance(node, If) and not node.orelse and _returns(node.body):
                self._If(node, orelse=nodes[k + 1:])
                return
            getattr(self, f"_{type(node).__name__}")(node)

    def _RegionCall(self, node: RegionCall) -> None:
        name = node.region.name
        _inline(self.g, node.region, self.ctx.metas[name], self.ctx.models.get(name), self.env)

    def _HostStmt(self, node: HostStmt) -> None:
        stmt, expr = node.node, _Expr(self.g, self.env)
        if node.dead or _empty_list(stmt):
            return  # an empty list is made by the host before the call (see hoisted)
        if _append(stmt):
            lst = stmt.value.func.value.value
            if self.scans is None or lst in self.scans:
                raise Unfusable(f"`{code(stmt)}` is not once per iteration of a loop body")
            self.scans[lst] = expr(stmt.value.args[0].value)
            if self.scans[lst].kind != "array":
                raise Unfusable(f"`{code(stmt)}` appends a Python scalar")
        elif isinstance(stmt, cst.AugAssign):
            if type(stmt.operator) not in _ARITH:
                raise Unfusable(f"`{code(stmt)}`: only +=, -= and *= are expressed in ONNX")
            left, right, kind = expr._numbers(expr(stmt.target), expr(stmt.value), code(stmt))
            self.env[_name_target(stmt.target)] = Val(self.g.op(_ARITH[type(stmt.operator)], [left.name, right.name]),
                                                      kind)
        elif isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
            self.env[_name_target(stmt.targets[0].target)] = expr(stmt.value)
        elif isinstance(stmt, cst.Return) and self.returning and stmt.value is not None:
            items = stmt.value.elements if isinstance(stmt.value, cst.Tuple) else None
            values = [e.value for e in items] if items is not None else [stmt.value]
            self.ret = [expr(v) for v in values]
            self.ctx.returns.append((items is not None, values))
        elif isinstance(stmt, cst.Return):
            raise Unfusable(f"`{code(stmt)}` leaves the function from code whose rest stays in the host")
        else:
            raise Unfusable(f"host statement `{code(stmt)}` has no ONNX form")

    def _If(self, node: If, orelse: list | None = None) -> None:
        test = _Expr(self.g, self.env).test(node.test)
        arms = []
        for body in (node.body, node.orelse if orelse is None else orelse):
            graph, env = _Graph(self.ctx.names), _Env(self.env)
            block = _Block(self.ctx, graph, env, returning=self.returning)
            block.run(body)
            arms.append((graph, env, block.ret))
        if (arms[0][2] is None) != (arms[1][2] is None):
            raise Unfusable(f"decision {node.decision} returns on one arm only")
        merged = []
        if arms[0][2] is not None:  # both arms return: the If's outputs are the returned values
            if len(arms[0][2]) != len(arms[1][2]):
                raise Unfusable(f"the arms of decision {node.decision} return different numbers of values")
            merged = [(None, [arms[0][2][k], arms[1][2][k]]) for k in range(len(arms[0][2]))]
        for name in dict.fromkeys(list(arms[0][1]) + list(arms[1][1])) if arms[0][2] is None else ():
            vals = []
            for graph, env, _ in arms:
                try:
                    vals.append(env[name])
                except Unfusable:
                    vals.append(None)  # unset on this path: the host never reads it there
            known = [v for v in vals if v is not None]
            if len(known) == 2 and not vals[0].same_type(vals[1]):
                raise Unfusable(f"`{name}` has a different type on each arm of decision {node.decision}")
            vals = [v if v is not None else _placeholder(arms[k][0], known[0]) for k, v in enumerate(vals)]
            merged.append((name, vals))
        for _, vals in merged:
            if not vals[0].same_type(vals[1]):
                raise Unfusable(f"decision {node.decision}'s arms return different types")
        branches = []
        for k, (graph, _, _) in enumerate(arms):
            outs = [graph.op("Identity", [vals[k].name]) for _, vals in merged]
            branches.append(helper.make_graph(
                graph.nodes, self.ctx.names.fresh(f"{node.decision}_{'then' if k == 0 else 'else'}"), [],
                [helper.make_tensor_value_info(o, vals[k].elem, None) for o, (_, vals) in zip(outs, merged)],
                initializer=graph.initializers))
        if not merged:
            return
        outs = [self.ctx.names.fresh(name or "returned") for name, _ in merged]
        self.g.nodes.append(helper.make_node("If", [test.name], outs, name=self.ctx.names.fresh(node.decision),
                                             then_branch=branches[0], else_branch=branches[1]))
        results = [Val(out, vals[0].kind, vals[0].elem) for out, (_, vals) in zip(outs, merged)]
        if arms[0][2] is not None:
            self.ret = results
        for val, (name, _) in zip(results, merged):
            if name is not None:
                self.env[name] = val

    def _Loop(self, node: Loop) -> None:
        steps, breaks = _split_breaks(node.body)
        expr = _Expr(self.g, self.env)
        target = None
        if node.kind == "for":
            start_expr, stop_expr = _range_args(node)
            target = node.target.value
            start = expr(start_expr) if start_expr is not None else self.g.const(0, "int")
            stop = expr(stop_expr)
            if "int" not in (start.kind, stop.kind) or {start.kind, stop.kind} - {"int"}:
                raise Unfusable(f"`{code(node.iter)}` does not range over Python ints")
            trips = self.g.op("Max", [self.g.op("Sub", [stop.name, start.name]), self.g.const(0, "int").name])
            cond0 = self.g.const(True, "bool")
        else:
            trips, cond0 = "", expr.test(node.test)
        outside = _names_outside(self.ctx.program, {id(node)})
        if target is not None and target in outside:
            raise Unfusable(f"the loop variable `{target}` is used after the loop")
        carried: list[tuple[str, Val]] = []
        for name in _written(steps):
            if name == target:
                continue
            try:
                carried.append((name, self.env[name]))
            except Unfusable:
                if name in outside:
                    raise Unfusable(f"`{name}` is first set inside loop {node.decision} and used after it") from None

        graph, env, scans = _Graph(self.ctx.names), _Env(self.env), {}
        iter_num, cond_in = self.ctx.names.fresh("iter"), self.ctx.names.fresh("cond")
        inputs = [helper.make_tensor_value_info(iter_num, TensorProto.INT64, []),
                  helper.make_tensor_value_info(cond_in, TensorProto.BOOL, [])]
        for name, val in carried:
            env[name] = Val(self.ctx.names.fresh(name), val.kind, val.elem)
            inputs.append(helper.make_tensor_value_info(env[name].name, val.elem, None))
        if target is not None:
            env[target] = Val(graph.op("Add", [iter_num, start.name]), "int")
        _Block(self.ctx, graph, env, scans).run(steps)
        body_expr = _Expr(graph, env)
        keep_going = [graph.op("Not", [body_expr.test(b.test).name]) for b in breaks]
        if node.kind == "while":
            keep_going.append(body_expr.test(node.test).name)
        cond_out = keep_going[0] if keep_going else cond_in
        for more in keep_going[1:]:
            cond_out = graph.op("And", [cond_out, more])
        results = [(cond_out, TensorProto.BOOL)]
        for name, val in carried:
            if not env[name].same_type(val):
                raise Unfusable(f"`{name}` changes type in loop {node.decision}")
            results.append((env[name].name, val.elem))
        results += [(v.name, v.elem) for v in scans.values()]
        outs = [graph.op("Identity", [name]) for name, _ in results]
        body = helper.make_graph(graph.nodes, self.ctx.names.fresh(f"{node.decision}_body"), inputs,
                                 [helper.make_tensor_value_info(o, t, None) for o, (_, t) in zip(outs, results)],
                                 initializer=graph.initializers)
        finals = [self.ctx.names.fresh(name) for name, _ in carried]
        stacked = [self.ctx.names.fresh(f"{lst}_items") for lst in scans]
        self.g.nodes.append(helper.make_node("Loop", [trips, cond0.name] + [v.name for _, v in carried],
                                             finals + stacked, name=self.ctx.names.fresh(node.decision), body=body))
        for final, (name, val) in zip(finals, carried):
            self.env[name] = Val(final, val.kind, val.elem)
        if scans and not self.top:
            raise Unfusable(f"loop {node.decision} appends to a host list from inside a decision or loop")
        for out, (lst, val) in zip(stacked, scans.items()):
            if lst in self.ctx.scans:
                raise Unfusable(f"two loops append to `{lst}`")
            self.ctx.scans[lst] = Val(out, "array", val.elem)


def _placeholder(g: _Graph, like: Val) -> Val:
    """A value for a name one arm leaves unset (Python would raise if it were read on that path)."""
    if like.kind != "array":
        return g.const(False if like.kind == "bool" else 0, like.kind)
    name = g.names.fresh("unset")
    g.initializers.append(helper.make_tensor(name, like.elem, [0], []))
    return Val(name, "array", like.elem)


def _returns(nodes: list) -> bool:
    """Does every path through `nodes` end in a return?"""
    if not nodes:
        return False
    last = nodes[-1]
    if isinstance(last, HostStmt):
        return isinstance(last.node, cst.Return)
    if isinstance(last, If):
        return _returns(last.body) and _returns(last.orelse)
    return False


def _split_breaks(body: list) -> tuple[list, list]:
    """A loop body as (steps, trailing `if c: break` nodes)."""
    body = [n for n in body if not (isinstance(n, HostStmt) and n.dead)]
    tail = len(body)
    while tail and _is_break_if(body[tail - 1]):
        tail -= 1
    return body[:tail], body[tail:]


def _written(nodes: list) -> list[str]:
    """Names a list of host nodes may assign, in order."""
    out: dict[str, None] = {}
    for node in nodes:
        if isinstance(node, RegionCall):
            out.update(dict.fromkeys(node.region.outputs))
        elif isinstance(node, HostStmt) and not _append(node.node) and not node.dead:
            out.update(dict.fromkeys(reads_writes(node.node)[1]))
        elif isinstance(node, If):
            out.update(dict.fromkeys(_written(node.body) + _written(node.orelse)))
        elif isinstance(node, Loop):
            out.update(dict.fromkeys(_written(node.body)))
    return list(out)


# -- which runs ----------------------------------------------------------------


def _candidate(node, metas: dict, in_loop: bool = False, top: bool = False, returning: bool = False) -> bool:
    """Could `node` run inside a graph? (Building it decides for sure.)"""
    if isinstance(node, RegionCall):
        meta = metas[node.region.name]
        return meta["backend"] == "onnxruntime" and _flat(meta)
    if isinstance(node, HostStmt):
        stmt = node.node
        if isinstance(stmt, cst.Return):
            return returning
        return node.dead or isinstance(stmt, (cst.Assign, cst.AugAssign)) and not (_empty_list(stmt) and not top) \
            or (in_loop and _append(stmt))
    if isinstance(node, If):
        return all(_candidate(n, metas, returning=returning) for n in node.body + node.orelse)
    if isinstance(node, Loop):
        steps, _ = _split_breaks(node.body)
        return all(_candidate(n, metas, in_loop=True) for n in steps)
    return False


def _worth_it(run: list) -> bool:
    calls = sum(1 for n in run if isinstance(n, RegionCall))
    return calls >= 2 or any(isinstance(n, (If, Loop)) for n in run)


def _runs(nodes: list, metas: dict) -> list[tuple[list, int, int]]:
    """Maximal runs of candidate nodes worth a region, as (list, start, end), innermost lists searched too.

    In a list that ends in `return`, returns and early-exit decisions are candidates as well.
    """
    found = []
    returning = _returns(nodes)
    k = 0
    while k < len(nodes):
        if _candidate(nodes[k], metas, top=True, returning=returning):
            end = k
            while end < len(nodes) and _candidate(nodes[end], metas, top=True, returning=returning):
                end += 1
            if _worth_it(nodes[k:end]):
                found.append((nodes, k, end))
            k = end
            continue
        node = nodes[k]
        if isinstance(node, If):
            found += _runs(node.body, metas) + _runs(node.orelse, metas)
        elif isinstance(node, Loop):
            found += _runs(node.body, metas)
        k += 1
    return found


def _is_break_if(node) -> bool:
    return isinstance(node, If) and not node.orelse and len(node.body) == 1 \
        and isinstance(node.body[0], HostStmt) and isinstance(node.body[0].node, cst.Break)


def _names_outside(program: Program, skip: set[int]) -> set[str]:
    """Every name read anywhere in the program outside the nodes in `skip` (a superset of the live ones)."""
    names: set[str] = set()

    def expr(e):
        if e is not None:
            names.update(reads_writes(cst.Expr(e))[0])

    def walk(nodes):
        for node in nodes:
            if id(node) in skip:
                continue
            if isinstance(node, RegionCall):
                names.update(node.region.inputs)
            elif isinstance(node, HostStmt):
                names.update(reads_writes(node.node)[0])
            elif isinstance(node, If):
                expr(node.test)
                walk(node.body)
                walk(node.orelse)
            elif isinstance(node, Loop):
                expr(node.test)
                expr(node.iter)
                walk(node.body)
            elif isinstance(node, FusedBlock):
                names.update(node.args)

    walk(program.body)
    return names


class _Stop(Exception):
    pass


class _Types:
    """What the host holds under each name before a node: arrays (with element type) or Python scalars."""

    def __init__(self, program: Program, before, signature: list[dict], metas: dict[str, dict],
                 out_elems: dict[str, list[int]]):
        self.kinds: dict[str, tuple[str, int | None] | None] = {}
        self.metas, self.out_elems, self.before = metas, out_elems, before
        for param in signature:
            if param["kind"] == "array":
                self._set(param["name"], ("array", _NP_ELEM.get(param["dtype"])))
        try:
            self._walk(program.body)
        except _Stop:
            pass

    def _set(self, name: str, kind) -> None:
        if name in self.kinds and self.kinds[name] != kind:
            self.kinds[name] = None  # conflicting: unknown
        else:
            self.kinds[name] = kind

    def _walk(self, nodes):
        for node in nodes:
            if node is self.before:
                raise _Stop
            if isinstance(node, RegionCall):
                meta = self.metas[node.region.name]
                for out, kind in zip(node.region.outputs, region_output_kinds(meta, self.out_elems[meta["name"]])):
                    self._set(out, kind)
            elif isinstance(node, HostStmt) and isinstance(node.node, cst.Assign) and len(node.node.targets) == 1 \
                    and isinstance(node.node.targets[0].target, cst.Name):
                self._set(node.node.targets[0].target.value, self._kind(node.node.value))
            elif isinstance(node, If):
                self._walk(node.body)
                self._walk(node.orelse)
            elif isinstance(node, Loop):
                if node.kind == "for" and isinstance(node.target, cst.Name):
                    self._set(node.target.value, ("int", None))
                self._walk(node.body)

    def _kind(self, expr: cst.BaseExpression):
        """The kind of a host expression over names of known kinds (by building it into a scratch graph)."""
        env = _Env(source=self._known)
        try:
            val = _Expr(_Graph(_Names()), env)(expr)
        except Unfusable:
            return None
        return val.kind, val.elem if val.kind == "array" else None

    def _known(self, name: str) -> Val:
        kind = self.kinds.get(name)
        if kind is None:
            raise Unfusable(name)
        return Val(name, *kind)

    def get(self, name: str):
        return self.kinds.get(name)


def region_output_kinds(meta: dict, graph_elems: list[int]) -> list[tuple[str, int | None]]:
    """(kind, element type) of each output of a flat region."""
    kinds = []
    for out, leaf in zip(meta["outputs"], meta["output_leaves"]):
        spec = out["spec"]
        if spec["t"] == "scalar":
            kinds.append((_scalar_kind(spec["dtype"]), None))
        elif leaf["source"] == "graph":
            kinds.append(("array", graph_elems[leaf["index"]]))
        else:
            kinds.append(("array", _NP_ELEM.get(meta["input_leaves"][leaf["index"]]["dtype"])))
    return kinds


def _flat(meta: dict) -> bool:
    return all(i["spec"]["t"] in ("array", "scalar") for i in meta["inputs"]) and \
        all(o["spec"]["t"] in ("array", "scalar") for o in meta["outputs"])


def _range_args(loop: Loop) -> tuple[cst.BaseExpression | None, cst.BaseExpression]:
    it = loop.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"
            and 1 <= len(it.args) <= 2 and all(a.keyword is None and a.star == "" for a in it.args)):
        raise Unfusable(f"`for ... in {code(it)}`: only range(stop) and range(start, stop) loops are fused")
    if not isinstance(loop.target, cst.Name):
        raise Unfusable("the loop target is not a plain name")
    return (it.args[0].value, it.args[1].value) if len(it.args) == 2 else (None, it.args[0].value)


# -- building --------------------------------------------------------------------


def _build(program: Program, run: list, name: str, signature: list[dict], metas: dict[str, dict],
           models: dict[str, onnx.ModelProto]) -> tuple[onnx.ModelProto, dict, FusedBlock]:
    """The ONNX model running `run`, its region metadata, and the host's call."""
    called = _called(run)
    opsets = {(o.domain or "", o.version) for r in called if r in models for o in models[r].opset_import}
    if len(opsets) > 1:
        raise Unfusable("its regions use different ONNX opsets or custom domains")
    ctx = _Context(program, run, metas, models, signature)
    graph, env = _Graph(ctx.names), _Env(source=ctx.input)
    block = _Block(ctx, graph, env, top=True, returning=_returns(run))
    for k, node in enumerate(run):
        try:
            if block.returning and isinstance(node, If) and not node.orelse and _returns(node.body):
                block.run(run[k:])  # an early exit: the rest of the run is its else arm
                break
            block.run([node])
        except Unfusable as exc:
            exc.at = node
            raise
    returns = None
    if block.ret is not None:
        returns = _returned_names(ctx.returns)
        live, vals = returns, block.ret
    else:
        outside = _names_outside(program, {id(n) for n in run})
        live = [n for n in env if env.bound(n) and n in outside]
        vals = [env[n] for n in live]
    outs = [graph.op("Identity", [v.name]) for v in vals]
    outs += [graph.op("Identity", [v.name]) for v in ctx.scans.values()]
    vals = vals + list(ctx.scans.values())
    inputs = list(ctx.inputs.items())
    onnx_graph = helper.make_graph(graph.nodes, name, [helper.make_tensor_value_info(v.name, v.elem, None)
                                                       for _, v in inputs],
                                   [helper.make_tensor_value_info(o, v.elem, None) for o, v in zip(outs, vals)],
                                   initializer=graph.initializers)
    opset = max([v for _, v in opsets] or [17])
    ir = max([models[r].ir_version for r in called if r in models] or [8])
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="dycl",
                              ir_version=ir)
    out_names = live + [f"{lst}_items" for lst in ctx.scans]
    origin = _span(run)
    meta = {
        "name": name,
        "origin": f"{origin.func} {origin.lines}",
        "artifact": None,
        "backend": "onnxruntime",
        "inputs": [{"name": n, "spec": _spec(v)} for n, v in inputs],
        "outputs": [{"name": n, "spec": _spec(v)} for n, v in zip(out_names, vals)],
        "input_leaves": [{"dtype": _dtype(v), "shape": None} for _, v in inputs],
        "graph_inputs": list(range(len(inputs))),
        "output_leaves": [{"source": "graph", "index": k} for k in range(len(vals))],
        "source_lines": [origin.first, origin.last],
        "fuses": called,
    }
    hoisted = [n for n in run if isinstance(n, HostStmt) and _empty_list(n.node)]
    block = FusedBlock(name, [n for n, _ in inputs], out_names, [(lst, f"{lst}_items") for lst in ctx.scans],
                       hoisted, run, origin)
    if returns is not None:
        block.returns = ctx.returns[0][0]
    return model, meta, block


def _returned_names(returns: list[tuple[bool, list]]) -> list[str]:
    """Names for returned values: the variable every return gives in that position, else `returned_k`."""
    shapes = {(is_tuple, len(values)) for is_tuple, values in returns}
    if len(shapes) != 1:
        raise Unfusable("the returns give values of different shapes")
    names = []
    for k in range(len(returns[0][1])):
        given = {code(values[k]) for _, values in returns}
        name = given.pop() if len(given) == 1 and isinstance(returns[0][1][k], cst.Name) else f"returned_{k}"
        names.append(name if name not in names else f"returned_{k}")
    return names


def _origins(nodes: list) -> list:
    out = []
    for n in nodes:
        out.append(n.region.origin if isinstance(n, RegionCall) else n.origin)
        if isinstance(n, If):
            out += _origins(n.body) + _origins(n.orelse)
        elif isinstance(n, Loop):
            out += _origins(n.body)
    return out


def _span(run: list):
    """Source lines of `run`, nested nodes included (inlined code from other functions does not count)."""
    origins = _origins(run)
    origin = origins[0]
    for other in origins[1:]:
        origin = origin.span(other)
    return origin


def _called(nodes: list) -> list[str]:
    out: dict[str, None] = {}
    for node in nodes:
        if isinstance(node, RegionCall):
            out[node.region.name] = None
        elif isinstance(node, If):
            out.update(dict.fromkeys(_called(node.body) + _called(node.orelse)))
        elif isinstance(node, Loop):
            out.update(dict.fromkeys(_called(node.body)))
    return list(out)


class Fusion:
    """One run of host nodes built as a graph: `apply` puts its FusedBlock in the host tree, `undo` takes it out."""

    def __init__(self, nodes: list, run: list, model: onnx.ModelProto, meta: dict, block: FusedBlock):
        self.nodes, self.run, self.model, self.meta, self.block = nodes, run, model, meta, block

    def apply(self) -> None:
        start = next(k for k, n in enumerate(self.nodes) if n is self.run[0])
        self.nodes[start:start + len(self.run)] = [self.block]

    def undo(self) -> None:
        start = next(k for k, n in enumerate(self.nodes) if n is self.block)
        self.nodes[start:start + 1] = self.run


def fuse_program(program: Program, signature: list[dict], metas: dict[str, dict],
                 models: dict[str, onnx.ModelProto]) -> tuple[list[Fusion], list[str]]:
    """Every run worth a graph, built against the unchanged program; and why the others were not built."""
    fusions, reasons = [], []
    work = _runs(program.body, metas)
    while work:
        nodes, start, end = work.pop(0)
        run = nodes[start:end]
        origin = _span(run)
        try:
            model, meta, block = _build(program, run, f"block_L{origin.first}", signature, metas, models)
        except Unfusable as exc:  # keep the node it failed on in the host; try the code around and inside it
            k = start + next(i for i, n in enumerate(run) if n is exc.at)
            where = exc.at.region.origin if isinstance(exc.at, RegionCall) else exc.at.origin
            reasons.append(f"{where.func} {where.lines}: {exc.args[0]}")
            work += [(nodes, a, b) for a, b in ((start, k), (k + 1, end)) if _worth_it(nodes[a:b])]
            if isinstance(exc.at, If):
                work += _runs(exc.at.body, metas) + _runs(exc.at.orelse, metas)
            elif isinstance(exc.at, Loop):
                work += _runs(exc.at.body, metas)
            continue
        fusions.append(Fusion(nodes, run, model, meta, block))
    return fusions, reasons


def _empty_list(stmt) -> bool:
    return isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name) \
        and isinstance(stmt.value, cst.List) and not stmt.value.elements


def _append(stmt) -> bool:
    return isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) \
        and isinstance(stmt.value.func, cst.Attribute) and stmt.value.func.attr.value == "append" \
        and isinstance(stmt.value.func.value, cst.Name) and len(stmt.value.args) == 1


def _name_target(target) -> str:
    if not isinstance(target, cst.Name):
        raise Unfusable(f"assignment to `{code(target)}` has no ONNX form")
    return target.value


def _spec(val: Val) -> dict:
    return {"t": "array"} if val.kind == "array" else {"t": "scalar", "dtype": _DTYPE_OF_KIND[val.kind]}


def _dtype(val: Val) -> str:
    if val.kind != "array":
        return _DTYPE_OF_KIND[val.kind]
    return {v: k for k, v in _NP_ELEM.items()}.get(val.elem, "float32")


def _inline(g: _Graph, region, meta: dict, model: onnx.ModelProto | None, env: _Env) -> None:
    """Copy a region's graph into `g`, reading its inputs from `env` and binding its outputs there."""
    args = []
    for var, inp in zip(region.inputs, meta["inputs"]):
        val = env[var]
        if inp["spec"]["t"] == "scalar":
            val = g.scalar(val)
            want = _NP_ELEM.get(inp["spec"]["dtype"])
            if val.elem != want:
                val = Val(g.op("Cast", [val.name], to=want), "array", want)
        elif val.kind != "array":
            raise Unfusable(f"region {region.name} takes `{var}` as an array, the host holds a Python scalar")
        args.append(val)
    graph_outs: list[Val] = []
    if model is not None:
        prefix = g.names.fresh(region.name)
        rename = {}
        for inp in model.graph.input:
            rename[inp.name] = args[int(inp.name[1:])].name

        def mapped(n: str) -> str:
            if not n:
                return n
            if n not in rename:
                rename[n] = f"{prefix}/{n}"
            return rename[n]

        for init in model.graph.initializer:
            copy = onnx.TensorProto()
            copy.CopyFrom(init)
            copy.name = mapped(init.name)
            g.initializers.append(copy)
        for node in model.graph.node:
            if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
                raise Unfusable(f"region {region.name} has control flow of its own")
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            copy.name = f"{prefix}/{node.name}"
            copy.input[:] = [mapped(n) for n in node.input]
            copy.output[:] = [mapped(n) for n in node.output]
            g.nodes.append(copy)
        graph_outs = [Val(mapped(o.name), "array", o.type.tensor_type.elem_type) for o in model.graph.output]
    for out, leaf in zip(meta["outputs"], meta["output_leaves"]):
        val = graph_outs[leaf["index"]] if leaf["source"] == "graph" else args[leaf["index"]]
        if out["spec"]["t"] == "scalar":
            val = g.scalar(val)
            val = g.cast(val, _scalar_kind(out["spec"]["dtype"]))
        env[out["name"]] = val
