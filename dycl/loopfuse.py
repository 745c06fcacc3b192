"""Compile a whole host loop into one onnxruntime region: an ONNX `Loop`.

A host loop pays a Python iteration and a backend call (about 10 µs in
onnxruntime) on every trip, and a decoder step is often cheaper than that.
When a loop's body is region calls plus host statements ONNX can express
(scalar counters, `lst.append(v)`, `.item()` comparisons, and `if c: break`
at its end), the body's region graphs are inlined into the body of one ONNX
`Loop` and the host calls it once. Python scalars travel as 0-d tensors with
Python's own precision (int64, float64, bool), so comparisons decide as the
host would.
"""
from __future__ import annotations

import libcst as cst
import onnx
from onnx import TensorProto, helper

from rewrite.build import reads_writes
from rewrite.cfg import FusedLoop, HostStmt, If, Loop, Program, RegionCall, code

__all__ = ["Unfusable", "fusable_loops", "build_fused_loop"]


class Unfusable(Exception):
    """Why a loop stays in the host."""


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

    def __init__(self, graph: _Graph, env: dict[str, Val]):
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
        if node.value not in self.env:
            raise Unfusable(f"`{node.value}` is not known inside the loop")
        return self.env[node.value]

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
        if type(node.operator) not in _ARITH:
            raise Unfusable(f"`{code(node)}`: only +, - and * are expressed in ONNX")
        left, right, kind = self._numbers(self(node.left), self(node.right), code(node))
        return Val(self.g.op(_ARITH[type(node.operator)], [left.name, right.name]), kind)

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


# -- which loops ---------------------------------------------------------------


def _is_break_if(node) -> bool:
    return isinstance(node, If) and not node.orelse and len(node.body) == 1 \
        and isinstance(node.body[0], HostStmt) and isinstance(node.body[0].node, cst.Break)


def fusable_loops(program: Program) -> list[Loop]:
    """Innermost host loops, outermost first; each may still turn out `Unfusable` when built."""
    found: list[Loop] = []

    def walk(nodes):
        for node in nodes:
            if isinstance(node, If):
                walk(node.body)
                walk(node.orelse)
            elif isinstance(node, Loop):
                if any(isinstance(n, Loop) for n in node.body):
                    walk(node.body)
                else:
                    found.append(node)

    walk(program.body)
    return found


def _names_outside(program: Program, loop: Loop) -> set[str]:
    """Every name read anywhere in the program outside `loop` (a superset of those live after it)."""
    names: set[str] = set()

    def expr(e):
        if e is not None:
            names.update(reads_writes(cst.Expr(e))[0])

    def walk(nodes):
        for node in nodes:
            if node is loop:
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

    walk(program.body)
    return names


# -- building --------------------------------------------------------------------


class _Types:
    """What the host holds under each name outside the loop: arrays (with dtype) or Python scalars."""

    def __init__(self, program: Program, loop: Loop, signature: list[dict], metas: dict[str, dict],
                 out_elems: dict[str, list[int]]):
        self.kinds: dict[str, tuple[str, int | None] | None] = {}
        for param in signature:
            if param["kind"] == "array":
                self._set(param["name"], ("array", _NP_ELEM.get(param["dtype"])))
        self._walk(program.body, loop, metas, out_elems)

    def _set(self, name: str, kind) -> None:
        if name in self.kinds and self.kinds[name] != kind:
            self.kinds[name] = None  # conflicting: unknown
        else:
            self.kinds[name] = kind

    def _walk(self, nodes, loop, metas, out_elems):
        for node in nodes:
            if node is loop:
                continue
            if isinstance(node, RegionCall):
                meta = metas[node.region.name]
                for out, kind in zip(node.region.outputs, region_output_kinds(meta, out_elems[meta["name"]])):
                    self._set(out, kind)
            elif isinstance(node, HostStmt) and isinstance(node.node, cst.Assign) and len(node.node.targets) == 1 \
                    and isinstance(node.node.targets[0].target, cst.Name):
                value = node.node.value
                name = node.node.targets[0].target.value
                if isinstance(value, cst.Integer):
                    self._set(name, ("int", None))
                elif isinstance(value, cst.Float):
                    self._set(name, ("float", None))
                elif isinstance(value, cst.Name) and value.value in ("True", "False"):
                    self._set(name, ("bool", None))
            elif isinstance(node, If):
                self._walk(node.body, loop, metas, out_elems)
                self._walk(node.orelse, loop, metas, out_elems)
            elif isinstance(node, Loop):
                if node.kind == "for" and isinstance(node.target, cst.Name):
                    self._set(node.target.value, ("int", None))
                self._walk(node.body, loop, metas, out_elems)

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


def build_fused_loop(program: Program, loop: Loop, name: str, signature: list[dict], metas: dict[str, dict],
                     models: dict[str, onnx.ModelProto]) -> tuple[onnx.ModelProto, dict, FusedLoop]:
    """The ONNX model running all of `loop`, its region metadata, and the host's view of the call.

    `metas` are the regions' manifest entries and `models` their exported graphs.
    """
    body = [n for n in loop.body if not (isinstance(n, HostStmt) and n.dead)]
    tail = len(body)
    while tail and _is_break_if(body[tail - 1]):
        tail -= 1
    steps, breaks = body[:tail], body[tail:]
    called = [n.region.name for n in steps if isinstance(n, RegionCall)]
    for region in called:
        meta = metas[region]
        if meta["backend"] != "onnxruntime" or not _flat(meta) or (meta["artifact"] and region not in models):
            raise Unfusable(f"region {region} is not a flat onnxruntime graph")
    opsets = {(o.domain or "", o.version) for r in called if r in models for o in models[r].opset_import}
    if len({d for d, _ in opsets}) > 1 or len(opsets) > 1:
        raise Unfusable("its regions use different ONNX opsets or custom domains")
    opset = max([v for _, v in opsets] or [17])
    out_elems = {r: [o.type.tensor_type.elem_type for o in models[r].graph.output] if r in models else []
                 for r in metas}
    types = _Types(program, loop, signature, metas, out_elems)
    outside = _names_outside(program, loop)

    # Names the body writes, and those it reads before writing them.
    writes: list[str] = []
    exposed: list[str] = []
    appends: dict[str, cst.BaseExpression] = {}
    target = None
    if loop.kind == "for":
        start_expr, stop_expr = _range_args(loop)
        target = loop.target.value
        if target in outside:
            raise Unfusable(f"the loop variable `{target}` is used after the loop")
    if loop.kind == "while":
        exposed.extend(reads_writes(cst.Expr(loop.test))[0])
    for node in steps:
        if isinstance(node, RegionCall):
            reads, written = node.region.inputs, node.region.outputs
        elif isinstance(node, HostStmt):
            stmt = node.node
            if _append(stmt):
                lst = stmt.value.func.value.value
                if lst in appends or lst in writes:
                    raise Unfusable(f"`{lst}` is appended to more than once per iteration")
                appends[lst] = stmt.value.args[0].value
                reads, written = reads_writes(cst.Expr(appends[lst]))[0], []
            elif isinstance(stmt, (cst.Assign, cst.AugAssign)):
                reads, written = reads_writes(stmt)
            else:
                raise Unfusable(f"host statement `{code(stmt)}` has no ONNX form")
        else:
            raise Unfusable(f"its body has a {'decision' if isinstance(node, If) else 'nested loop'} "
                            "that is not a break at its end")
        exposed.extend(r for r in reads if r not in writes and r != target)
        writes.extend(w for w in written if w not in writes)
    for node in breaks:
        exposed.extend(r for r in reads_writes(cst.Expr(node.test))[0] if r not in writes and r != target)
    if set(appends) & (set(exposed) | set(writes)):
        raise Unfusable("a list appended to in the loop is also read in it")
    exposed = [r for r in exposed if r not in ("True", "False", "None")]
    carried = [w for w in writes if w in exposed or w in outside]
    invariant = [r for r in dict.fromkeys(exposed) if r not in writes and r != target]
    for var in carried + invariant:
        if types.get(var) is None:
            raise Unfusable(f"`{var}` is not set before the loop with a known type")

    names = _Names()
    outer, inner = _Graph(names), _Graph(names)
    args: list[cst.BaseExpression] = []
    inputs: list[tuple[str, Val]] = []  # (argument text, value)

    def add_input(expr: cst.BaseExpression, kind, elem=None) -> Val:
        val = Val(f"in{len(inputs)}_{names.fresh('x')}", kind, elem)
        args.append(expr)
        inputs.append((code(expr), val))
        return val

    outer_env: dict[str, Val] = {}
    for var in dict.fromkeys(invariant + carried):
        kind, elem = types.get(var)
        outer_env[var] = add_input(cst.Name(var), kind, elem)
    if loop.kind == "for":
        start = add_input(start_expr, "int") if start_expr is not None else outer.const(0, "int")
        stop = add_input(stop_expr, "int")
        trips = outer.op("Max", [outer.op("Sub", [stop.name, start.name]), outer.const(0, "int").name])
        cond0 = outer.const(True, "bool")
    else:
        trips = ""
        cond0 = _Expr(outer, outer_env).test(loop.test)

    # The body: iteration number, condition, carried values in; condition, carried values, appends out.
    iter_num, cond_in = names.fresh("iter"), names.fresh("cond_in")
    env = dict(outer_env)
    body_inputs = [helper.make_tensor_value_info(iter_num, TensorProto.INT64, []),
                   helper.make_tensor_value_info(cond_in, TensorProto.BOOL, [])]
    for var in carried:
        val = Val(names.fresh(f"{var}_in"), outer_env[var].kind, outer_env[var].elem)
        env[var] = val
        body_inputs.append(helper.make_tensor_value_info(val.name, val.elem, None))
    if target is not None:
        env[target] = Val(inner.op("Add", [iter_num, start.name]), "int")
    expr = _Expr(inner, env)
    scans: dict[str, Val] = {}
    for node in steps:
        if isinstance(node, RegionCall):
            _inline(inner, node.region, metas[node.region.name], models.get(node.region.name), env, out_elems)
        elif _append(node.node):
            lst = node.node.value.func.value.value
            scans[lst] = expr(appends[lst])
            if scans[lst].kind != "array":
                raise Unfusable(f"`{code(node.node)}` appends a Python scalar")
        elif isinstance(node.node, cst.AugAssign):
            target_name = _name_target(node.node.target)
            if type(node.node.operator) not in _ARITH:
                raise Unfusable(f"`{code(node.node)}`: only +=, -= and *= are expressed in ONNX")
            left, right, kind = expr._numbers(expr(node.node.target), expr(node.node.value), code(node.node))
            env[target_name] = Val(inner.op(_ARITH[type(node.node.operator)], [left.name, right.name]), kind)
        else:
            if len(node.node.targets) != 1:
                raise Unfusable(f"`{code(node.node)}`: chained assignment")
            env[_name_target(node.node.targets[0].target)] = expr(node.node.value)
    keep_going = [inner.op("Not", [expr.test(b.test).name]) for b in breaks]
    if loop.kind == "while":
        keep_going.append(expr.test(loop.test).name)
    cond_out = keep_going[0] if keep_going else cond_in
    for more in keep_going[1:]:
        cond_out = inner.op("And", [cond_out, more])
    body_outputs = [inner.op("Identity", [cond_out])]
    for var in carried:
        val = env[var]
        if not val.same_type(outer_env[var]):
            raise Unfusable(f"`{var}` changes type in the loop")
        body_outputs.append(inner.op("Identity", [val.name]))
    scan_order = list(scans)
    body_outputs += [inner.op("Identity", [scans[lst].name]) for lst in scan_order]
    out_types = [TensorProto.BOOL] + [env[v].elem for v in carried] + [scans[s].elem for s in scan_order]
    body_graph = helper.make_graph(inner.nodes, f"{name}_body", body_inputs,
                                   [helper.make_tensor_value_info(o, t, None)
                                    for o, t in zip(body_outputs, out_types)],
                                   initializer=inner.initializers)

    finals = [names.fresh(f"{v}_out") for v in carried]
    stacked = [names.fresh(f"{s}_items") for s in scan_order]
    outer.nodes.append(helper.make_node("Loop", [trips, cond0.name] + [outer_env[v].name for v in carried],
                                        finals + stacked, name=name, body=body_graph))
    live = [k for k, v in enumerate(carried) if v in outside]
    graph_outputs = [finals[k] for k in live] + stacked
    graph_out_types = [outer_env[carried[k]].elem for k in live] + [scans[s].elem for s in scan_order]
    graph = helper.make_graph(outer.nodes, name,
                              [helper.make_tensor_value_info(v.name, v.elem, None) for _, v in inputs],
                              [helper.make_tensor_value_info(o, t, None) for o, t in zip(graph_outputs, graph_out_types)],
                              initializer=outer.initializers)
    first = next(iter(models.values()))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="dycl", ir_version=first.ir_version)

    out_names = [carried[k] for k in live] + [f"{s}_items" for s in scan_order]
    out_specs = [_spec(outer_env[carried[k]]) for k in live] + [{"t": "array"} for _ in scan_order]
    meta = {
        "name": name,
        "origin": f"{loop.origin.func} {loop.origin.lines}",
        "artifact": None,
        "backend": "onnxruntime",
        "inputs": [{"name": text, "spec": _spec(v)} for text, v in inputs],
        "outputs": [{"name": n, "spec": s} for n, s in zip(out_names, out_specs)],
        "input_leaves": [{"dtype": _dtype(v), "shape": None} for _, v in inputs],
        "graph_inputs": list(range(len(inputs))),
        "output_leaves": [{"source": "graph", "index": k} for k in range(len(graph_outputs))],
        "source_lines": [loop.origin.first, loop.origin.last],
        "fuses": called,
    }
    fused = FusedLoop(name, args, out_names, [(s, f"{s}_items") for s in scan_order], called)
    return model, meta, fused


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


def _inline(g: _Graph, region, meta: dict, model: onnx.ModelProto | None, env: dict[str, Val],
            out_elems: dict[str, list[int]]) -> None:
    """Copy a region's graph into `g`, reading its inputs from `env` and binding its outputs there."""
    args = []
    for var, inp in zip(region.inputs, meta["inputs"]):
        val = env[var] if var in env else None
        if val is None:
            raise Unfusable(f"`{var}` is not known inside the loop")
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
