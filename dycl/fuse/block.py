"""Host statements, decisions and loops as ONNX nodes (`If`, `Loop`), with region graphs inlined."""
from __future__ import annotations

import libcst as cst
import onnx
from onnx import TensorProto, helper

from rewrite.build import reads_writes
from rewrite.cfg import HostStmt, If, Loop, Program, RegionCall, code

from .graph import ARITH, NP_ELEM, Env, Expr, Graph, Names, Unfusable, Val, scalar_kind
from .runs import Types, _append, _empty_list, _returns, names_outside, split_breaks


class Context:
    """What building one block needs: the regions, their graphs, the host's types, and the block's inputs."""

    def __init__(self, program: Program, run: list, metas: dict, models: dict, signature: list[dict]):
        self.program, self.metas, self.models = program, metas, models
        self.out_elems = {r: [o.type.tensor_type.elem_type for o in models[r].graph.output] if r in models else []
                          for r in metas}
        self.types = Types(program, run[0], signature, metas, self.out_elems)
        self.names = Names()
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


class Block:
    """Host nodes as ONNX nodes of graph `g`, reading and binding names in `env`.

    `scans` collects `lst.append(v)` values when `g` is a loop body; `top` marks the block's own graph.
    With `returning`, the nodes end in `return`: `ret` becomes the returned values, and
    `if c: ...; return a` followed by more code reads as `if c: ... else: <the rest>`.
    """

    def __init__(self, ctx: Context, g: Graph, env: Env, scans: dict | None = None, top: bool = False,
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
        stmt, expr = node.node, Expr(self.g, self.env)
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
            if type(stmt.operator) not in ARITH:
                raise Unfusable(f"`{code(stmt)}`: only +=, -= and *= are expressed in ONNX")
            left, right, kind = expr._numbers(expr(stmt.target), expr(stmt.value), code(stmt))
            self.env[_name_target(stmt.target)] = Val(self.g.op(ARITH[type(stmt.operator)], [left.name, right.name]),
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
        test = Expr(self.g, self.env).test(node.test)
        arms = []
        for body in (node.body, node.orelse if orelse is None else orelse):
            graph, env = Graph(self.ctx.names), Env(self.env)
            block = Block(self.ctx, graph, env, returning=self.returning)
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
        steps, breaks = split_breaks(node.body)
        expr = Expr(self.g, self.env)
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
        outside = names_outside(self.ctx.program, {id(node)})
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

        graph, env, scans = Graph(self.ctx.names), Env(self.env), {}
        iter_num, cond_in = self.ctx.names.fresh("iter"), self.ctx.names.fresh("cond")
        inputs = [helper.make_tensor_value_info(iter_num, TensorProto.INT64, []),
                  helper.make_tensor_value_info(cond_in, TensorProto.BOOL, [])]
        for name, val in carried:
            env[name] = Val(self.ctx.names.fresh(name), val.kind, val.elem)
            inputs.append(helper.make_tensor_value_info(env[name].name, val.elem, None))
        if target is not None:
            env[target] = Val(graph.op("Add", [iter_num, start.name]), "int")
        Block(self.ctx, graph, env, scans).run(steps)
        body_expr = Expr(graph, env)
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


def _placeholder(g: Graph, like: Val) -> Val:
    """A value for a name one arm leaves unset (Python would raise if it were read on that path)."""
    if like.kind != "array":
        return g.const(False if like.kind == "bool" else 0, like.kind)
    name = g.names.fresh("unset")
    g.initializers.append(helper.make_tensor(name, like.elem, [0], []))
    return Val(name, "array", like.elem)


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


def _name_target(target) -> str:
    if not isinstance(target, cst.Name):
        raise Unfusable(f"assignment to `{code(target)}` has no ONNX form")
    return target.value


def _range_args(loop: Loop) -> tuple[cst.BaseExpression | None, cst.BaseExpression]:
    it = loop.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"
            and 1 <= len(it.args) <= 2 and all(a.keyword is None and a.star == "" for a in it.args)):
        raise Unfusable(f"`for ... in {code(it)}`: only range(stop) and range(start, stop) loops are fused")
    if not isinstance(loop.target, cst.Name):
        raise Unfusable("the loop target is not a plain name")
    return (it.args[0].value, it.args[1].value) if len(it.args) == 2 else (None, it.args[0].value)


def _inline(g: Graph, region, meta: dict, model: onnx.ModelProto | None, env: Env) -> None:
    """Copy a region's graph into `g`, reading its inputs from `env` and binding its outputs there."""
    args = []
    for var, inp in zip(region.inputs, meta["inputs"]):
        val = env[var]
        if inp["spec"]["t"] == "scalar":
            val = g.scalar(val)
            want = NP_ELEM.get(inp["spec"]["dtype"])
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
            val = g.cast(val, scalar_kind(out["spec"]["dtype"]))
        env[out["name"]] = val
