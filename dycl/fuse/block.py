"""Host statements, decisions and loops as ONNX nodes (`If`, `Loop`), with region graphs inlined."""
from __future__ import annotations

from collections import ChainMap

import libcst as cst
from onnx import TensorProto, helper

from rewrite.syntax import reads_writes
from rewrite.cfg import HostStmt, If, Loop, Program, RegionCall, code, host_nodes
from rewrite.kinds import LoopKind

from ..runtime.signature import Param, RegionSignature
from .expr import ARITH, Expr
from .graph import Appended, Env, Graph, Names, Tup, Unfusable, Val, from_type
from .inline import inline_region
from .runs import Types, _append, _empty_list, _returns, early_exit, mid_break, names_outside, split_breaks

__all__ = ["Context", "Block", "graph_outputs"]


class Context:
    """What building one block needs: the regions, their graphs, the host's types, and the block's inputs."""

    def __init__(self, program: Program, run: list, regions: dict[str, RegionSignature], models: dict,
                 params: list[Param]):
        self.program, self.regions, self.models = program, regions, models
        self.out_elems = {r: [o.type.tensor_type.elem_type for o in models[r].graph.output] if r in models else []
                          for r in regions}
        self.types = Types(program, run[0], params, regions, self.out_elems)
        self.names = Names()
        self.inputs: dict[str, Val] = {}
        self.scans: dict[str, Val] = {}
        self.returns: list[tuple[bool, list]] = []  # (a tuple?, expressions) of each return translated
        self.shapes: dict[str, list | None] = {}  # value -> the dims the regions it feeds agree on (see inline_region)

    def input(self, name: str) -> Val:
        """A name the block reads from the host: one graph input per name."""
        if name not in self.inputs:
            kind = self.types.get(name)
            if kind is None:
                raise Unfusable(f"`{name}` is not set before this code with a type known at conversion")
            self.inputs[name] = from_type(kind, lambda: self.names.fresh(name))
        return self.inputs[name]


# keys of an If's outputs that are not the program's names (a variable may be called `done`)
_DONE, _RETURNED = object(), object()

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
        self.ret: list[Val] | None = None  # returned on every path
        self.partial: tuple[Val, list[Val]] | None = None  # (done, values): returned on some paths

    def run(self, nodes: list) -> None:
        for k, node in enumerate(nodes):
            if self.ret is not None:
                raise Unfusable("code after a return")
            if self.returning and early_exit(node):
                self._If(node, rest=nodes[k + 1:])
                return
            getattr(self, f"_{type(node).__name__}")(node)
            if self.partial is not None and k + 1 < len(nodes):
                self.finish(nodes[k + 1:])
                return

    def finish(self, rest: list) -> None:
        """After code that may have returned: `if done: <its values> else: <the rest, which returns>`."""
        done, values = self.partial
        self.partial = None
        graph = Graph(self.ctx.names)
        block = Block(self.ctx, graph, Env(self.env), returning=True)
        block.run(rest)
        if block.ret is None:
            raise Unfusable("some paths run off the end of the function")
        self.ret = self._emit_if(done.name, [Graph(self.ctx.names), graph], _pairs([values, block.ret], "exit"),
                                 "returned")

    def _emit_if(self, test: str, graphs: list[Graph], values: list[list], stem: str) -> list:
        """An If node choosing values[i][0] (then) or values[i][1] (else) for each output.

        Each If output costs a copy on every call, so a value both arms leave as it was (one name
        from outside) is read directly, and names bound to the same pair of values share an output
        (BlockDrop's `x` and `shortcut` after `x = shortcut`).
        """
        pairs = [[x, y] for a, b in values for x, y in zip(a.leaves(), b.leaves())]
        copied = ChainMap(self.g.copies, *(g.copies for g in graphs))  # not rebuilt per If: linear in the block

        def origin(val: Val) -> Val:
            while val.name in copied:
                val = Val(copied[val.name], val.kind, val.elem)
            return val

        pairs = [[origin(x), origin(y)] for x, y in pairs]
        chosen = list({(x.name, y.name): [x, y] for x, y in pairs if x.name != y.name}.values())
        outs = [self.ctx.names.fresh(stem) for _ in chosen]
        if chosen:
            branches = []
            for k, graph in enumerate(graphs):
                results = graph_outputs(graph, [vals[k].name for vals in chosen])
                branches.append(helper.make_graph(
                    graph.nodes, self.ctx.names.fresh(f"{stem}_{'then' if k == 0 else 'else'}"), [],
                    [helper.make_tensor_value_info(o, vals[k].elem, None) for o, vals in zip(results, chosen)],
                    initializer=graph.initializers))
            self.g.add(helper.make_node("If", [test], outs, name=self.ctx.names.fresh(stem),
                                                 then_branch=branches[0], else_branch=branches[1]))
        made = {(x.name, y.name): Val(o, x.kind, x.elem) for o, (x, y) in zip(outs, chosen)}
        leaves = iter([x if x.name == y.name else made[x.name, y.name] for x, y in pairs])
        return [a.rebuild(leaves) for a, _ in values]

    def _RegionCall(self, node: RegionCall) -> None:
        name = node.region.name
        inline_region(self.g, node.region, self.ctx.regions[name], self.ctx.models.get(name), self.env,
                      self.ctx.shapes)

    def _HostStmt(self, node: HostStmt) -> None:
        stmt, expr = node.node, Expr(self.g, self.env)
        if node.dead:
            return
        if _empty_list(stmt):  # the host makes it before the call (see hoisted); appends here build it up
            self.env[_name_target(stmt.targets[0].target)] = Tup([], is_list=True)
            return
        if _append(stmt):
            lst, value = stmt.value.func.value.value, expr(stmt.value.args[0].value)
            if self.scans is None:  # outside a loop: the list grows by one known item
                if lst in self.ctx.scans:
                    raise Unfusable(f"`{code(stmt)}` appends after a loop appended to `{lst}`")
                current = self.env[lst]
                if not isinstance(current, Tup) or not current.is_list:
                    raise Unfusable(f"`{code(stmt)}` appends to `{lst}`, which is not a list built here")
                self.env[lst] = Tup(current.items + [value], is_list=True)
                return
            if lst in self.scans:
                raise Unfusable(f"`{code(stmt)}` is not once per iteration of a loop body")
            if value.kind != "array":
                raise Unfusable(f"`{code(stmt)}` appends a Python value to a list in a loop")
            self.scans[lst] = value
        elif isinstance(stmt, cst.AugAssign):
            if type(stmt.operator) not in ARITH:
                raise Unfusable(f"`{code(stmt)}`: only +=, -= and *= are expressed in ONNX")
            left, right, kind = expr._numbers(expr(stmt.target), expr(stmt.value), code(stmt))
            self.env[_name_target(stmt.target)] = Val(self.g.op(ARITH[type(stmt.operator)], [left.name, right.name]),
                                                      kind)
        elif isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Tuple):
            value, names = expr(stmt.value), [_name_target(e.value) for e in stmt.targets[0].target.elements]
            if not isinstance(value, Tup) or len(value.items) != len(names):
                raise Unfusable(f"`{code(stmt)}` does not unpack a tuple of {len(names)}")
            for name, item in zip(names, value.items):
                self.env[name] = item
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

    def _If(self, node: If, rest: list | None = None) -> None:
        """An ONNX If; with `rest` (an early exit), the code after it joins the arm that does not return.

        An arm may return on some of its paths only: the If then also yields a `done` flag and
        the returned values, and the code after it runs under `if not done` (see finish).
        """
        test = Expr(self.g, self.env).test(node.test, cond=True)
        bodies = [node.body, node.orelse]
        if rest is not None:
            k = 1 if _returns(node.body) else 0
            bodies[k] = bodies[k] + rest
        graphs, envs, blocks = [], [], []
        for body in bodies:
            graphs.append(Graph(self.ctx.names))
            envs.append(Env(self.env))
            blocks.append(Block(self.ctx, graphs[-1], envs[-1], returning=self.returning))
            blocks[-1].run(body)
        full = [b.ret is not None for b in blocks]
        returned = [b.ret if b.ret is not None else b.partial[1] if b.partial else None for b in blocks]
        pairs, names = [], []
        if any(r is not None for r in returned) and not all(full):  # returns on some paths only
            done = [graphs[k].const(True, "bool") if full[k] else blocks[k].partial[0] if blocks[k].partial
                    else graphs[k].const(False, "bool") for k in range(2)]
            pairs.append(done)
            names.append(_DONE)
        if any(r is not None for r in returned):
            known = next(r for r in returned if r is not None)
            values = [r if r is not None else [_placeholder(graphs[k], v) for v in known]
                      for k, r in enumerate(returned)]
            pairs += _pairs(values, f"decision {node.decision}")
            names += [_RETURNED] * len(known)
        if not all(full):  # some path goes on: the names it sets
            for name in dict.fromkeys(list(envs[0]) + list(envs[1])):
                vals = []
                for env in envs:
                    try:
                        vals.append(env[name])
                    except Unfusable:
                        vals.append(None)  # unset on this path: the host never reads it there
                known_val = next(v for v in vals if v is not None)
                vals = [v if v is not None else _placeholder(graphs[k], known_val) for k, v in enumerate(vals)]
                if not vals[0].same_type(vals[1]):
                    raise Unfusable(f"`{name}` has a different type on each arm of decision {node.decision}")
                pairs.append(vals)
                names.append(name)
        if not pairs:
            return
        results = self._emit_if(test.name, graphs, pairs, node.decision)
        by_name = list(zip(names, results))
        if all(full):
            self.ret = [v for n, v in by_name if n is _RETURNED]
            return
        if _DONE in names:
            self.partial = (results[0], [v for n, v in by_name if n is _RETURNED])
        for name, val in by_name:
            if name is not _DONE and name is not _RETURNED:
                self.env[name] = val

    def _body(self, graph: Graph, env: Env, scans: dict, steps: list) -> list[Val]:
        """Build a loop body's steps into `graph`; the test of a break before the last of them, if any.

        `if c: break` followed by more work: the work runs as the else arm of an If on `c` (its then arm
        keeps every value as it is), and the loop goes on while not `c`.
        """
        cut = mid_break(steps)
        if cut is None:
            Block(self.ctx, graph, env, scans).run(steps)
            return []
        before, brk, after = cut
        if any(isinstance(n, HostStmt) and _append(n.node) for n in host_nodes(after)):
            raise Unfusable(f"the loop appends to a list after the break at decision {brk.decision}")
        block = Block(self.ctx, graph, env, scans)
        block.run(before)
        broke = Expr(graph, env).test(brk.test)
        flag = self.ctx.names.fresh("broke")  # a name no Python code can read: the test before `after` ran
        env[flag] = broke
        block.run([If(cst.Name(flag), [], after, brk.origin, brk.decision, brk.dclass)])
        return [broke]

    def _Loop(self, node: Loop) -> None:
        steps, breaks = split_breaks(node.body)
        expr = Expr(self.g, self.env)
        target = None
        if node.kind == LoopKind.FOR:
            start_expr, stop_expr = _range_args(node)
            target = node.target.value
            start = expr(start_expr) if start_expr is not None else self.g.const(0, "int")
            stop = expr(stop_expr)
            if "int" not in (start.kind, stop.kind) or {start.kind, stop.kind} - {"int"}:
                raise Unfusable(f"`{code(node.iter)}` does not range over Python ints")
            trips = self.g.op("Max", [self.g.op("Sub", [stop.name, start.name]), self.g.const(0, "int").name])
            cond0 = self.g.const(True, "bool")
            bounds = [self.g.known(start), self.g.known(stop)]
            runs = None not in bounds and bounds[1] - bounds[0] >= 1  # at least once
        else:
            trips, cond0 = "", expr.test(node.test)
            runs = self.g.known(cond0) is True
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
            env[name] = val.rebuild(iter([Val(self.ctx.names.fresh(name), v.kind, v.elem) for v in val.leaves()]))
            inputs += [helper.make_tensor_value_info(v.name, v.elem, None) for v in env[name].leaves()]
        if target is not None:
            env[target] = Val(graph.op("Add", [iter_num, start.name]), "int")
        broke = self._body(graph, env, scans, steps)
        body_expr = Expr(graph, env)
        keep_going = [graph.op("Not", [b.name]) for b in broke]
        keep_going += [graph.op("Not", [body_expr.test(b.test).name]) for b in breaks]
        if node.kind == LoopKind.WHILE:
            keep_going.append(body_expr.test(node.test).name)
        cond_out = keep_going[0] if keep_going else cond_in
        for more in keep_going[1:]:
            cond_out = graph.op("And", [cond_out, more])
        results = [(cond_out, TensorProto.BOOL)]
        for name, val in carried:
            if not env[name].same_type(val):
                raise Unfusable(f"`{name}` changes type in loop {node.decision}")
            results += [(v.name, v.elem) for v in env[name].leaves()]
        results += [(v.name, v.elem) for v in scans.values()]
        outs = graph_outputs(graph, [name for name, _ in results])
        body = helper.make_graph(graph.nodes, self.ctx.names.fresh(f"{node.decision}_body"), inputs,
                                 [helper.make_tensor_value_info(o, t, None) for o, (_, t) in zip(outs, results)],
                                 initializer=graph.initializers)
        finals = [Val(self.ctx.names.fresh(name), v.kind, v.elem) for name, val in carried for v in val.leaves()]
        stacked = [self.ctx.names.fresh(f"{lst}_items") for lst in scans]
        self.g.add(helper.make_node(
            "Loop", [trips, cond0.name] + [v.name for _, val in carried for v in val.leaves()],
            [v.name for v in finals] + stacked, name=self.ctx.names.fresh(node.decision), body=body))
        leaves = iter(finals)
        for name, val in carried:
            self.env[name] = val.rebuild(leaves)
        if scans and not self.top:
            raise Unfusable(f"loop {node.decision} appends to a host list from inside a decision or loop")
        for out, (lst, val) in zip(stacked, scans.items()):
            if lst in self.ctx.scans:
                raise Unfusable(f"two loops append to `{lst}`")
            self.ctx.scans[lst] = Val(out, "array", val.elem)
            try:
                before = self.env[lst]
            except Unfusable:
                before = None
            if isinstance(before, Tup) and before.is_list:
                dims = self.ctx.shapes.get(val.name)
                self.env[lst] = Appended(before, self.ctx.scans[lst] if runs else None,
                                         None if dims is None else len(dims))


def graph_outputs(graph: Graph, names: list[str]) -> list[str]:
    """A graph's (a branch's, a loop body's) outputs for `names`: a value a node of it computes is an output as it is.

    An Identity copies the whole tensor on every call (a feature map per skipped block), so one stays only
    where ONNX needs it: for a value from outside the branch or an initializer, and for a name already
    given as an output.
    """
    made = {out for node in graph.nodes for out in node.output}
    given: set[str] = set()
    results = []
    for name in names:
        if name in made and name not in given:
            given.add(name)
            results.append(name)
        else:
            results.append(graph.op("Identity", [name]))
    return results


def _pairs(values: list[list[Val]], where: str) -> list[list[Val]]:
    """Returned values of two paths, position by position; they must agree in number and type."""
    if len(values[0]) != len(values[1]):
        raise Unfusable(f"{where} returns different numbers of values on different paths")
    pairs = [[a, b] for a, b in zip(*values)]
    if not all(a.same_type(b) for a, b in pairs):
        raise Unfusable(f"{where} returns values of different types on different paths")
    return pairs


def _placeholder(g: Graph, like):
    """A value for a name one arm leaves unset (Python would raise if it were read on that path)."""
    if isinstance(like, Tup):
        return Tup([_placeholder(g, item) for item in like.items], like.is_list)
    if like.kind != "array":
        return g.const(False if like.kind == "bool" else 0, like.kind)
    name = g.names.fresh("unset")
    g.initializers.append(helper.make_tensor(name, like.elem, [0], []))
    return Val(name, "array", like.elem)


def _written(nodes: list) -> list[str]:
    """Names a list of host nodes may assign, in order."""
    out: dict[str, None] = {}
    for node in host_nodes(nodes):
        if isinstance(node, RegionCall):
            out.update(dict.fromkeys(node.region.outputs))
        elif isinstance(node, HostStmt) and not _append(node.node) and not node.dead:
            out.update(dict.fromkeys(reads_writes(node.node)[1]))
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
