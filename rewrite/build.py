"""Build the host tree: group tensor statements into regions, keep decisions in the host.

Then liveness over the tree gives each region its inputs (upward-exposed
reads) and outputs (writes still live afterwards); nothing else crosses the
boundary.
"""
from __future__ import annotations

import libcst as cst

from .cfg import HostStmt, If, IfNode, Loop, LoopNode, Origin, Region, RegionCall, Stmt, code
from .diagnostics import Diagnostic
from .classify import CONTAINER, SCALAR, TENSOR, Kinds, analyze, hoist, list_join, to_host
from .region_form import to_region
from .kinds import DecisionClass, LoopKind, StmtKind, TestKind
from .host_lists import HostLists, host_lists, skip_decision_ids
from .names import Namespace
from .region_names import region_hint
from .list_index import built_items, holds_list
from .tolist import LiftToList, has_call, has_tolist
from .walk import find
from .syntax import MUTATORS, lowered_writes, reads_writes, target_names

__all__ = ["Builder", "substitute"]

class Builder:
    def __init__(self, kinds: Kinds, names: Namespace, fixed: dict[str, bool] | None = None,
                 host_shapes: set[str] | None = None):
        self.fixed = fixed or {}
        # `_, _, h, w = x.size()` reads shapes in the region being built (see `_region_shape_read`),
        # except into these names, which a region would have to return as Python numbers.
        self.host_shapes = host_shapes or set()
        self.region_shapes: set[str] = set()
        self.kinds = kinds
        self.names = names
        self.region_names = Namespace()
        self.decision_names = Namespace()
        self.regions: list[Region] = []
        self.decisions: list[If] = []
        self.loops: list[Loop] = []
        self._reevaluate: list[list[Stmt]] = []  # per enclosing while: its test's region part
        self._dynamic_depth = 0  # > 0 inside a loop body or an arm of a value decision
        self._value_arms = 0  # > 0 inside an arm of a value decision
        self._loop_depth = 0  # > 0 inside a host loop's body
        self._host_lists = HostLists(set(), set())  # lists the host needs as lists (host_lists.py)
        self._known: dict[str, cst.BaseExpression] = {}  # `if k == 2:` arm: k is 2 in region code
        # `batch = x.shape[0]` in the host: a region that uses `batch` recomputes it from `x`
        # (a shape the compiler can see) instead of receiving it as a 0-d tensor.
        self._shape_defs: dict[str, Stmt] = {}
        self.diagnostics: list[Diagnostic] = []  # region code no region can compute as the original does
        self.written: dict[str, str] = {}  # a name the host binds to a value lifted out of a statement -> its source

    # -- tree walk ---------------------------------------------------------
    def build(self, lowered: list, kinds: Kinds) -> list:
        """The host tree of the lowered function body."""
        self._host_lists = host_lists(lowered, self.fixed)
        return self.block(lowered, kinds)

    def block(self, lowered: list, kinds: Kinds) -> list:
        out: list = []
        pending: list[Stmt] = []

        def flush():
            if pending:
                region = self._region(list(pending))
                out.append(RegionCall(region))
                pending.clear()

        self._nodes(lowered, kinds, pending, out, flush)
        flush()
        return out

    def _nodes(self, lowered: list, kinds: Kinds, pending: list, out: list, flush) -> None:
        for node in lowered:
            if isinstance(node, IfNode):
                self._if(node, kinds, pending, out, flush)
            elif isinstance(node, LoopNode):
                self._loop(node, kinds, pending, out, flush)
            else:
                self._stmt(node, kinds, pending, out, flush)

    def _emitter(self, kinds: Kinds, pending: list, origin: Origin, hint: str):
        def emit(expr: cst.BaseExpression) -> cst.Name:
            name = self.names.fresh(f"{hint}_L{origin.first}")
            pending.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(name))], self._region_code(expr, kinds, origin)),
                                origin))
            kinds.set(name, TENSOR)
            return cst.Name(name)
        return emit

    def _if(self, node: IfNode, kinds: Kinds, pending, out, flush) -> None:
        decision = self.decision_names.fresh(f"L{node.origin.first}")
        if decision in self.fixed:  # a shape decision exploration found constant: its arm is straight-line code
            self._fixed_arm(node, self.fixed[decision], kinds, pending, out, flush)
            return
        emitted = []
        emit = self._emitter(kinds, pending, node.origin, "cond")

        def tracking(expr):
            name = emit(expr)
            emitted.append(name)
            return name

        test = self._lists_to_host(self._joins_to_host(node.test, kinds, out, node.origin), kinds, pending, out,
                                   flush, node.origin)
        test = hoist(test, kinds, tracking)
        info = analyze(test, kinds)
        # `if t:` of a tensor reads its value, like `bool(t)`: never a shape decision, which may be folded
        value = bool(emitted) or info.value or info.vtype == TENSOR
        flush()
        test = to_host(test, kinds)
        taken = _literal_test(test, out)
        if taken is not None:  # `if early_exit:` just after `(early_exit, m) = (False, m)` in this block
            out.extend(self.block(node.body if taken else node.orelse, kinds))
            return
        body_kinds, else_kinds = kinds.copy(), kinds.copy()
        # What an arm of a shape decision assigns (`early_exit = True` when `len(m.shape) == 4`) follows from
        # shapes too: only the arms of a value decision make values derived from run-time data.
        arms_depth = 1 if value or node.kind == TestKind.GUARD else 0
        self._dynamic_depth += arms_depth
        self._value_arms += arms_depth
        known = dict(self._known)
        facts = _equality_facts(test, kinds)
        defs = dict(self._shape_defs)
        try:
            self._known.update(facts)
            body = self.block(node.body, body_kinds)
            after_body = self._shape_defs
            self._known, self._shape_defs = dict(known), dict(defs)
            orelse = self.block(node.orelse, else_kinds)
        finally:
            self._dynamic_depth -= arms_depth
            self._value_arms -= arms_depth
            self._known = known
        # Still valid after the if: valid before and untouched by either arm.
        self._shape_defs = {n: d for n, d in defs.items()
                            if after_body.get(n) is d and self._shape_defs.get(n) is d}
        body_kinds.join(else_kinds)
        kinds.kinds, kinds.value_derived = body_kinds.kinds, body_kinds.value_derived
        kinds.elements, kinds.items = body_kinds.elements, body_kinds.items
        dclass = DecisionClass.EXECUTION if node.kind == TestKind.GUARD else DecisionClass.VALUE if value \
            else DecisionClass.SHAPE
        result = If(test, body, orelse, node.origin, decision, dclass)
        result.facts = facts
        self.decisions.append(result)
        out.append(result)

    def _fixed_arm(self, node: IfNode, taken: bool, kinds: Kinds, pending, out, flush) -> None:
        """The arm a folded decision takes, in the code around it: the region being built goes on
        through it, as through a folded `if self.flag:`. The other arm's decisions still take their
        names, in the order the unfolded build gave them, so later decisions keep theirs (`fixed` is
        keyed by them)."""
        if not taken:
            skip_decision_ids(node.body, self.decision_names)
        self._nodes(node.body if taken else node.orelse, kinds, pending, out, flush)
        if taken:
            skip_decision_ids(node.orelse, self.decision_names)

    def _snapshot(self):
        return ([ns.checkpoint() for ns in (self.names, self.region_names, self.decision_names)],
                len(self.regions), len(self.decisions), len(self.loops))

    def _restore(self, snap) -> None:
        taken, n_regions, n_decisions, n_loops = snap
        for ns, t in zip((self.names, self.region_names, self.decision_names), taken):
            ns.rollback(t)
        del self.regions[n_regions:], self.decisions[n_decisions:], self.loops[n_loops:]

    def _loop(self, node: LoopNode, kinds: Kinds, pending: list, out: list, flush) -> None:
        # A body that writes what a shape was read from changes it for the next iteration.
        written = lowered_writes([node])
        self._shape_defs = {n: d for n, d in self._shape_defs.items()
                            if n not in written and not written & set(reads_writes(d.node)[0])}
        before = dict(self._shape_defs)
        self._loop_kinds(node, kinds, pending, out, flush)
        self._shape_defs = before

    def _loop_kinds(self, node: LoopNode, kinds: Kinds, pending: list, out: list, flush) -> None:
        """A host loop. A while test's tensor part is computed before the loop and again
        at the end of each iteration (and before `continue`), merged into the body's last region."""
        # What a variable holds can change on the second iteration: find the fixpoint on a dry run.
        for _ in range(3):
            snap = self._snapshot()
            dry = kinds.copy()
            if node.kind == LoopKind.FOR:
                dry.set(node.target.value, SCALAR)
            self._loop_once(node, dry, [], [], lambda: None)
            self._restore(snap)
            before = dict(kinds.kinds), dict(kinds.items)
            kinds.join(dry)
            if (kinds.kinds, kinds.items) == before:
                break
        self._loop_once(node, kinds, pending, out, flush)

    def _loop_once(self, node: LoopNode, kinds: Kinds, pending: list, out: list, flush) -> None:
        decision = self.decision_names.fresh(f"L{node.origin.first}")
        reevaluate: list[Stmt] = []
        if node.kind == LoopKind.FOR:
            iterable = to_host(hoist(node.iter, kinds, self._emitter(kinds, pending, node.origin, "iter")), kinds)
            flush()
            kinds.set(node.target.value, SCALAR)
            if holds_list(node.iter, kinds.lists):  # a row of a list of lists is a list
                kinds.lists.add(node.target.value)
            test = None
        else:
            def emit(expr):
                name = self._emitter(kinds, pending, node.origin, "cond")(expr)
                reevaluate.append(Stmt(cst.Assign([cst.AssignTarget(name)], expr), node.origin))
                return name

            test = to_host(hoist(node.test, kinds, emit), kinds)
            flush()
            iterable = None
        self._reevaluate.append(reevaluate)
        self._dynamic_depth += 1
        self._loop_depth += 1
        body_kinds = kinds.copy()
        try:
            body = self.block(list(node.body) + reevaluate, body_kinds)
        finally:
            self._reevaluate.pop()
            self._dynamic_depth -= 1
            self._loop_depth -= 1
        # After the loop a name holds what it held before it (no iteration) or what the body left in it: a
        # score the body reads with `.item()` is value-derived after the loop too, never a shape to fold.
        kinds.join(body_kinds)
        loop = Loop(node.kind, body, node.origin, decision, test=test, target=node.target, iter=iterable)
        self.loops.append(loop)
        out.append(loop)

    def _stmt(self, stmt: Stmt, kinds: Kinds, pending: list, out: list, flush) -> None:
        built = built_items(stmt.node, kinds)  # a list it binds or grows, read before the statement runs
        self._stmt_node(stmt, kinds, pending, out, flush)
        if built is not None and built[1] is not None:
            kinds.items[built[0]] = built[1]

    def _stmt_node(self, stmt: Stmt, kinds: Kinds, pending: list, out: list, flush) -> None:
        node = stmt.node
        if isinstance(node, (cst.Break, cst.Continue)):
            if isinstance(node, cst.Continue) and self._reevaluate:
                for again in self._reevaluate[-1]:
                    self._stmt(again, kinds, pending, out, flush)
            flush()
            out.append(HostStmt(node, stmt.origin))
            return
        node = self._joins_to_host(node, kinds, out, stmt.origin)
        node = self._lists_to_host(node, kinds, pending, out, flush, stmt.origin)
        emit = self._emitter(kinds, pending, stmt.origin, "tmp")

        def host(new_node):
            flush()
            out.append(HostStmt(to_host(new_node, kinds), stmt.origin))
            self._forget(new_node)

        def region():
            self._rematerialize(node, pending, kinds)
            pending.append(Stmt(substitute(self._region_code(node, kinds, stmt.origin), self._known), stmt.origin))
            self._forget(node)

        if isinstance(node, cst.Raise):  # a builtin exception (partial_eval checked): its arguments in the host
            args = [a.with_changes(value=hoist(a.value, kinds, emit)) for a in node.exc.args]
            host(node.with_changes(exc=node.exc.with_changes(args=args)))
            return
        if isinstance(node, cst.Return):
            value = hoist(node.value, kinds, self._emitter(kinds, pending, stmt.origin, "out")) if node.value else None
            host(node.with_changes(value=value))
            return
        if isinstance(node, cst.Assign):
            info = analyze(node.value, kinds)
            targets = [t.target for t in node.targets]
            tensor_copy = isinstance(node.value, cst.Name) and info.vtype == TENSOR
            if not info.host or tensor_copy or any(self._is_tensor_target(t, kinds) for t in targets) \
                    or _tensor_tuple(node, kinds):
                region()
                for t in targets:
                    for name in target_names(t):
                        kinds.set(name, TENSOR)
                return
            if self._region_list(stmt, node, kinds):
                region()
                kinds.set(targets[0].value, TENSOR)
                return
            if self._region_shape_read(node, kinds):
                region()
                for name in target_names(targets[0]):
                    kinds.set(name, SCALAR)
                    self.region_shapes.add(name)
                    self._shape_defs[name] = stmt  # later regions read the shape again
                return
            value = hoist(node.value, kinds, emit)
            host(node.with_changes(value=value))
            # A scalar set inside a loop or an arm of a value decision depends on how execution went; a
            # constant set in a loop (`early_exit = True` in an arm of a shape decision) only on shapes.
            derived = info.value or self._value_arms > 0 or self._dynamic_depth > 0 and not _constants(node.value)
            if not derived and not info.needs_hoist and info.vtype == SCALAR and len(targets) == 1:
                target = targets[0]  # `n = x.shape[0]`, and `b, n, d = x.shape` too
                plain = isinstance(target, cst.Name) or isinstance(target, (cst.Tuple, cst.List)) \
                    and all(isinstance(el.value, cst.Name) for el in target.elements)
                for name in target_names(target) if plain else ():
                    self._shape_defs[name] = stmt
            for t in targets:
                if isinstance(t, cst.Name):
                    kinds.set(t.value, info.vtype, derived, _elements(node.value, kinds, derived))
                    if holds_list(node.value, kinds.lists):
                        kinds.lists.add(t.value)
                elif _unpacks(t, node.value, kinds):  # `order, sizes = out` of `out = order_1, sizes_1`
                    for el, (kind, part_derived) in zip(t.elements, kinds.elements[node.value.value]):
                        kinds.set(el.value.value, kind, part_derived)
                elif _parallel(t, node.value):  # `(done, mask) = (True, m)`: each name as its element is
                    for el, part in zip(t.elements, node.value.elements):
                        part_info = analyze(part.value, kinds)
                        kinds.set(el.value.value, part_info.vtype, part_info.value or self._value_arms > 0
                                  or self._dynamic_depth > 0 and not _constants(part.value))
                else:
                    for name in target_names(t):
                        kinds.set(name, TENSOR if info.vtype == CONTAINER else SCALAR, derived)
            return
        if isinstance(node, cst.AugAssign):
            info = analyze(node.value, kinds)
            target_kind = analyze(node.target, kinds).vtype
            if target_kind == TENSOR or not info.host:
                region()
                for name in target_names(node.target):
                    kinds.set(name, TENSOR)
                return
            host(node.with_changes(value=hoist(node.value, kinds, emit)))
            if isinstance(node.target, cst.Name) and (info.value or self._dynamic_depth > 0):
                kinds.set(node.target.value, target_kind, True)
            return
        if isinstance(node, cst.Expr):
            info = analyze(node.value, kinds)
            if info.host:
                host(node.with_changes(value=hoist(node.value, kinds, emit)))
                changed = _changed_container(node.value, kinds)
                if changed is not None and self._dynamic_depth > 0:  # `feats.append(h)` under a run-time if
                    kinds.set(changed, CONTAINER, True)
            else:
                region()
            return
        region()

    def _region_list(self, stmt: Stmt, node: cst.Assign, kinds: Kinds) -> bool:
        """`res = [x[0], conv(x[0])]`, `out = []`: a list or tuple of tensors that the host does not
        need (host_lists.py), built in the region; its appends, indexing and joins go there too."""
        if self._loop_depth or len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name) \
                or stmt in self._host_lists:
            return False
        return _tensor_display(node.value, kinds)

    def _region_shape_read(self, node: cst.Assign, kinds: Kinds) -> bool:
        """`_, _, h, w = x.size()` of a tensor the region being built computes: read in the region, not
        by ending it for the host to read. Where the host or a later region needs the numbers, a later
        region reads the shape again (`_shape_defs`), or the build is redone with them in `host_shapes`."""
        if self._loop_depth or len(node.targets) != 1:
            return False
        target = node.targets[0].target
        plain = isinstance(target, cst.Name) or isinstance(target, (cst.Tuple, cst.List)) \
            and all(isinstance(el.value, cst.Name) for el in target.elements)
        if not plain or set(target_names(target)) & self.host_shapes:
            return False
        value = node.value
        if isinstance(value, cst.Subscript):
            value = value.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size" \
                and all(isinstance(a.value, cst.Integer) for a in value.args):
            base = value.func.value
        elif isinstance(value, cst.Attribute) and value.attr.value == "shape":
            base = value.value
        else:
            return False
        return isinstance(base, cst.Name) and kinds.get(base.value) == TENSOR \
            and all(isinstance(s.slice, cst.Index) and isinstance(s.slice.value, cst.Integer)
                    for s in getattr(node.value, "slice", ()))

    def _joins_to_host(self, node, kinds: Kinds, out: list, origin: Origin):
        """`torch.stack(tokens).sum(0)`: the host joins the list (`np.stack`), the region gets one array.

        A host list (whose length may differ between calls) cannot be a region input. The join reads
        only the list, which host statements already built, so it goes before the pending region code.
        """
        value = getattr(node, "value", None)
        if isinstance(node, cst.BaseExpression):  # a test
            value = None
        elif value is None or not isinstance(node, (cst.Assign, cst.AugAssign, cst.Expr, cst.Return)):
            return node
        # The length of a host list, in code that goes to a region: the host counts, the region gets an int.
        # (A list the region reads anyway goes in whole, and its length with it.)
        lift_lengths = not analyze(node if value is None else value, kinds).host
        read_whole = _names_outside_len(node) if lift_lengths else set()
        return node.visit(_Joins(value, self.names, kinds, out, origin, lift_lengths, read_whole))

    def _lists_to_host(self, node, kinds: Kinds, pending: list, out: list, flush, origin: Origin):
        """`torch.split(x, counts.tolist())`: the region so far computes `counts`, the host makes the list
        and the rest of the statement reads it by name (rewrite/tolist.py)."""
        whole = node if isinstance(node, cst.BaseExpression) else getattr(node, "value", None)
        in_region = whole is not None and not analyze(whole, kinds).host and has_call(whole)
        if not in_region and not has_tolist(node):
            return node
        whole = None if isinstance(node, cst.BaseExpression) else whole

        def lift(call: cst.Call) -> cst.Name:
            value = hoist(call, kinds, self._emitter(kinds, pending, origin, "tensor"))
            flush()
            name = self.names.fresh(f"list_L{origin.first}")
            self.written[name] = code(call)
            out.append(HostStmt(to_host(cst.Assign([cst.AssignTarget(cst.Name(name))], value), kinds), origin))
            kinds.set(name, SCALAR, True)
            kinds.lists.add(name)
            return cst.Name(name)

        def lift_host(call: cst.Call) -> cst.Name:  # reads host values only: before the pending region,
            if {n.value for n in find(call, cst.Name)} & self.region_shapes:  # unless it computes one of them
                flush()
            name = self.names.fresh(f"host_L{origin.first}")
            self.written[name] = code(call)
            out.append(HostStmt(to_host(cst.Assign([cst.AssignTarget(cst.Name(name))], call), kinds), origin))
            kinds.set(name, SCALAR, True)
            if holds_list(call, kinds.lists):  # `list(sizes)`
                kinds.lists.add(name)
            return cst.Name(name)

        return node.visit(LiftToList(kinds, whole, lift, lift_host if in_region else None))

    def _region_code(self, node, kinds: Kinds, origin: Origin):
        """`node` as region code (region_form.py); what it cannot translate is a diagnostic."""
        def refuse(make, part: cst.CSTNode, detail) -> None:
            found = make(origin, code(part), detail)
            if not any((d.kind, repr(d.loc)) == (found.kind, repr(found.loc)) for d in self.diagnostics):
                self.diagnostics.append(found)  # once, however often the build passes by (unrolled, dry runs)
        return to_region(node, kinds, refuse)

    def _forget(self, node) -> None:
        """Names assigned again: no longer known to equal a tested value, nor to hold the shape
        a definition read."""
        written = set(reads_writes(node)[1])
        for name in written:
            self._known.pop(name, None)
        if written and self._shape_defs:
            self._shape_defs = {n: d for n, d in self._shape_defs.items()
                                if n not in written and not written & set(reads_writes(d.node)[0])}

    def _rematerialize(self, node, pending: list, kinds: Kinds) -> None:
        """Put the shape definitions `node` reads at the start of the region being built."""
        candidates = [n for n in reads_writes(node)[0] if n in self._shape_defs]
        if not candidates:  # the common case: not a pass over the whole pending region per statement
            return
        present = {n for s in pending for n in reads_writes(s.node)[1]}
        needed = [n for n in candidates if n not in present]
        for name in needed:
            definition = self._shape_defs[name]
            self._rematerialize(definition.node, pending, kinds)
            if name not in {n for s in pending for n in reads_writes(s.node)[1]}:
                pending.insert(0, Stmt(self._region_code(definition.node, kinds, definition.origin), definition.origin,
                                       kind=StmtKind.REMAT))

    @staticmethod
    def _is_tensor_target(target, kinds: Kinds) -> bool:
        base = target
        while isinstance(base, (cst.Subscript, cst.Attribute)):
            base = base.value
        return base is not target and isinstance(base, cst.Name) and kinds.get(base.value) == TENSOR

    def new_region(self, stmts: list[Stmt]) -> Region:
        return self._region(stmts)

    def _region(self, stmts: list[Stmt]) -> Region:
        origin = stmts[0].origin
        for s in stmts[1:]:
            origin = origin.span(s.origin)
        region = Region(self.region_names.fresh(f"{region_hint(stmts)}_L{stmts[0].origin.first}"), stmts, [], [], origin)
        self.regions.append(region)
        return region


def _tensor_display(value, kinds: Kinds) -> bool:
    """`[x[0], conv(x[0])]`, `[x, (a, b)]`, `[]`: a list or tuple display of tensors, nested ones too."""
    return isinstance(value, (cst.List, cst.Tuple)) \
        and not any(isinstance(el, cst.StarredElement) for el in value.elements) \
        and all(_tensor_display(el.value, kinds) or analyze(el.value, kinds).vtype == TENSOR for el in value.elements)


class _Joins(cst.CSTTransformer):
    """Builder._joins_to_host's rewrite. (Visitor classes live at module level: libcst checks each visitor
    against its ABCs, which scans every subclass once per new class, and a class per call adds up.)"""

    def __init__(self, value, names, kinds: Kinds, out: list, origin: Origin, lift_lengths: bool, read_whole: set):
        super().__init__()
        self.value, self.names, self.kinds, self.out, self.origin = value, names, kinds, out, origin
        self.lift_lengths, self.read_whole = lift_lengths, read_whole

    def on_visit(self, n: cst.CSTNode) -> bool:  # not out of code that runs only sometimes
        return not isinstance(n, (cst.IfExp, cst.BooleanOperation, cst.Lambda, cst.ListComp, cst.SetComp,
                                  cst.DictComp, cst.GeneratorExp))

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        kinds, origin = self.kinds, self.origin
        if original is self.value:
            return updated
        if list_join(original, kinds):
            name, kind, derived = self.names.fresh(f"joined_L{origin.first}"), TENSOR, False
        elif self.lift_lengths and _container_length(original, kinds) \
                and original.args[0].value.value not in self.read_whole:  # `h.sum() > len(picks)`
            name, kind, derived = self.names.fresh(f"len_L{origin.first}"), SCALAR, analyze(original, kinds).value
        else:
            return updated
        self.out.append(HostStmt(to_host(cst.Assign([cst.AssignTarget(cst.Name(name))], original), kinds), origin))
        kinds.set(name, kind, derived)
        return cst.Name(name)


def _container_length(call: cst.Call, kinds: Kinds) -> bool:
    """`len(picks)` of a host list or tuple variable."""
    return isinstance(call.func, cst.Name) and call.func.value == "len" and kinds.get("len") is None \
        and len(call.args) == 1 and isinstance(call.args[0].value, cst.Name) \
        and kinds.get(call.args[0].value.value) == CONTAINER


def _names_outside_len(node) -> set[str]:
    """The names `node` reads other than as the argument of `len(name)`."""
    reads = _ReadsOutsideLen()
    node.visit(reads)
    return reads.found


class _ReadsOutsideLen(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.found: set[str] = set()

    def visit_Call(self, call: cst.Call) -> bool:
        bare = isinstance(call.func, cst.Name) and call.func.value == "len" and len(call.args) == 1 \
            and isinstance(call.args[0].value, cst.Name)
        return not bare

    def visit_Name(self, name: cst.Name) -> None:
        self.found.add(name.value)


def _changed_container(expr, kinds: Kinds) -> str | None:
    """The container variable `expr` changes the length of (`feats.append(h)`), if any."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in MUTATORS \
            and isinstance(expr.func.value, cst.Name) and kinds.get(expr.func.value.value) == CONTAINER:
        return expr.func.value.value
    return None


def _equality_facts(test, kinds: Kinds) -> dict[str, cst.BaseExpression]:
    """`k == 2` (k a host int): inside the arm, region code may use the literal."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(test.comparisons[0].operator, cst.Equal):
        left, right = test.left, test.comparisons[0].comparator
        if isinstance(right, cst.Name) and isinstance(left, cst.Integer):
            left, right = right, left
        if isinstance(left, cst.Name) and isinstance(right, cst.Integer) and kinds.get(left.value) == SCALAR:
            return {left.value: right}
    return {}


class _Substitute(cst.CSTTransformer):
    def __init__(self, known: dict[str, cst.BaseExpression]):
        super().__init__()
        self.known = known
        self.skip: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        return False

    def leave_Name(self, original: cst.Name, updated: cst.Name):
        if id(original) in self.skip:
            return updated
        return self.known.get(original.value, updated)


def substitute(node, known: dict[str, cst.BaseExpression]):
    return node.visit(_Substitute(known)) if known else node


def _tensor_tuple(node: cst.Assign, kinds: Kinds) -> bool:
    """`h, logits = self.act(y), self.head(y)`: names assigned tensor math element by element, region code
    (the host would receive the elements and build a tuple only to unpack it)."""
    if len(node.targets) != 1 or not isinstance(node.value, cst.Tuple):
        return False
    target, values = node.targets[0].target, node.value.elements
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(values) \
            or not all(isinstance(el.value, cst.Name) for el in target.elements):
        return False
    infos = [analyze(el.value, kinds) for el in values if not isinstance(el, cst.StarredElement)]
    return len(infos) == len(values) and all(i.vtype == TENSOR for i in infos) and not all(i.host for i in infos)




def _elements(value, kinds: Kinds, derived: bool) -> tuple | None:
    """(kind, value-derived) of each element of a tuple display (`order, counts, sizes`), else None."""
    if not isinstance(value, cst.Tuple) or any(isinstance(el, cst.StarredElement) for el in value.elements):
        return None
    infos = [analyze(el.value, kinds) for el in value.elements]
    return tuple((i.vtype, i.value or derived) for i in infos)


def _unpacks(target, value, kinds: Kinds) -> bool:
    """`a, b = out` of a tuple whose element kinds are known, into as many plain names."""
    elements = kinds.elements.get(value.value) if isinstance(value, cst.Name) else None
    return elements is not None and isinstance(target, (cst.Tuple, cst.List)) \
        and len(target.elements) == len(elements) \
        and all(isinstance(el, cst.Element) and isinstance(el.value, cst.Name) for el in target.elements)


def _parallel(target, value) -> bool:
    """`(a, b) = (x, y)`: names on the left, as many plain elements on the right."""
    return isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
        and len(target.elements) == len(value.elements) \
        and all(isinstance(el, cst.Element) and isinstance(el.value, cst.Name) for el in target.elements) \
        and not any(isinstance(el, cst.StarredElement) for el in value.elements)


def _constants(value) -> bool:
    """A literal, or a tuple of them: its value is fixed whatever ran before."""
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(isinstance(el, cst.Element) and _constants(el.value) for el in value.elements)
    return isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or \
        isinstance(value, cst.Name) and value.value in ("True", "False", "None")


_MISSING = object()


def _literal_test(test, out: list):
    """True/False when `test` (`flag` or `not flag`) reads a literal the current block assigned last, with
    nothing after it that may assign the name again (a decision a folded one left behind); else None."""
    negate = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    name = test.expression if negate else test
    if not isinstance(name, cst.Name):
        return None
    value = _last_literal(name.value, out)
    if value is _MISSING:
        return None
    return (not value) if negate else bool(value)


def _last_literal(name: str, out: list):
    for node in reversed(out):
        if isinstance(node, HostStmt) and isinstance(node.node, cst.Assign):
            for t in node.node.targets:
                target = t.target
                if isinstance(target, cst.Name) and target.value == name:
                    return _literal_of(node.node.value)
                if _parallel(target, node.node.value):
                    for el, part in zip(target.elements, node.node.value.elements):
                        if el.value.value == name:
                            return _literal_of(part.value)
                if name in target_names(target):
                    return _MISSING
            continue
        if isinstance(node, HostStmt) and isinstance(node.node, cst.Expr):
            continue
        if isinstance(node, RegionCall):
            if any(name in target_names(t.target) for s in node.region.stmts if isinstance(s.node, cst.Assign)
                   for t in s.node.targets) or any(isinstance(s.node, (cst.AugAssign, cst.AnnAssign))
                                                   for s in node.region.stmts):
                return _MISSING
            continue
        return _MISSING  # an if or loop (which may assign it), anything else: not followed
    return _MISSING


def _literal_of(value):
    if not _constants(value) or isinstance(value, (cst.Tuple, cst.List)):
        return _MISSING
    if isinstance(value, cst.Name):
        return {"True": True, "False": False, "None": None}[value.value]
    return value.evaluated_value
