"""Roll unrolled static loops back up: `for k in range(n):` over tables of regions.

The front end unrolls a static loop (`for b in range(18): ... self.blocks[b](x)`)
into one region per iteration, so the host repeats the same statements n
times with other region names and other names for the values it passes on
(`cond_L332_1`, `cond_L332_2`, ...). Where n ≥ 3 consecutive stretches of
host statements are the same code up to those names, they become one loop:
each region that differs per iteration is looked up in a module-level table
of region names, and each name that differs per iteration gets one name.

A stretch is rolled only where the renaming provably keeps every value flow:
- the stretches are alpha-equivalent (one consistent renaming maps the first
  stretch onto each other one);
- a name read in a stretch before it is written there is either the same in
  every stretch, or the value the stretch before wrote (carried: it takes the
  name the first stretch reads, which holds the value before the loop), and
  every read of it precedes the stretch's writes of its successor;
- outside the stretches, the names that vary appear only as the first
  stretch's carried inputs before the loop, and as the last stretch's outputs
  after it (renamed to the loop's names).
Anything else stays unrolled. Only the function's top-level statements are
rolled; the instrumented host exploration runs is never rolled.
"""
from __future__ import annotations

import re

import libcst as cst

__all__ = ["reroll", "Rename"]

_MIN_TIMES = 3
_MAX_PERIOD = 24


class _Occurrences(cst.CSTVisitor):
    """Names in textual order with their role ("r" read, "w" write), and region attributes `regions.X`."""

    def __init__(self):
        self.names: list[tuple[str, str]] = []
        self.regions: list[str] = []
        self.integers: list[int] = []

    def visit_Integer(self, node: cst.Integer) -> None:
        self.integers.append(node.evaluated_value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name) and node.value.value == "regions":
            self.regions.append(node.attr.value)
            return False
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Assign(self, node: cst.Assign) -> bool:
        node.value.visit(self)
        for target in node.targets:
            self._target(target.target)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        node.value.visit(self)
        node.target.visit(self)  # read, then written
        self._target(node.target)
        return False

    def visit_For(self, node: cst.For) -> bool:
        node.iter.visit(self)
        self._target(node.target)
        node.body.visit(self)
        if node.orelse:
            node.orelse.visit(self)
        return False

    def _target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.names.append((target.value, "w"))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value)
        else:  # x[i] = ..., x.a = ...: reads x
            target.visit(self)

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append((node.value, "r"))


def _occurrences(stmts: list[cst.CSTNode]) -> _Occurrences:
    found = _Occurrences()
    for stmt in stmts:
        stmt.visit(found)
    return found


def _flow(stmts, defined: frozenset) -> tuple[set[str], set[str], set[str]]:
    """(names read before written on some path, names written on every path, names written on some path)."""
    rbw, definite, maybe = set(), set(defined), set()
    for stmt in stmts:
        if isinstance(stmt, cst.If):
            rbw |= {n for n, role in _occurrences([stmt.test]).names if n not in definite}
            body = _flow(stmt.body.body, frozenset(definite))
            other = _flow(_orelse(stmt), frozenset(definite))
            rbw |= body[0] | other[0]
            maybe |= body[2] | other[2]
            definite |= body[1] & other[1]
        elif isinstance(stmt, (cst.For, cst.While)):  # the body may run never, or read what it wrote before
            occ = _occurrences([stmt]).names
            written = {n for n, role in occ if role == "w"}
            rbw |= {n for n, role in occ if role == "r" and (n not in definite or n in written)}
            maybe |= written
        else:
            for name, role in _occurrences([stmt]).names:
                if role == "r" and name not in definite:
                    rbw.add(name)
                elif role == "w":
                    definite.add(name)
                    maybe.add(name)
    return rbw, definite - set(defined), maybe


def _orelse(stmt: cst.If) -> list:
    if stmt.orelse is None:
        return []
    if isinstance(stmt.orelse, cst.If):
        return [stmt.orelse]
    return list(stmt.orelse.body.body)


class _Skeleton(cst.CSTTransformer):
    """The statement with every name, region and integer blanked and its comments dropped: equal skeletons
    are candidates for the same loop body."""

    def leave_Integer(self, original, updated):
        return updated.with_changes(value="0")

    def leave_Name(self, original, updated):
        return updated.with_changes(value="_")

    def leave_Attribute(self, original, updated):
        if isinstance(original.value, cst.Name) and original.value.value == "regions":
            return updated.with_changes(value=cst.Name("regions"), attr=cst.Name("_R"))
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)

    def leave_EmptyLine(self, original, updated):
        return cst.RemoveFromParent()

    def leave_TrailingWhitespace(self, original, updated):
        return cst.TrailingWhitespace()


def _skeleton(stmt: cst.BaseStatement) -> str:
    return cst.Module([stmt.visit(_Skeleton())]).code


class Rename(cst.CSTTransformer):
    def __init__(self, names: dict[str, str], regions: dict[str, cst.BaseExpression],
                 integers: dict[int, cst.BaseExpression] | None = None):
        self.names, self.regions = names, regions
        self.integers = integers or {}  # by position among the integers
        self.seen = 0

    def leave_Integer(self, original, updated):
        self.seen += 1
        return self.integers.get(self.seen - 1, updated)

    def leave_Name(self, original, updated):
        return updated.with_changes(value=self.names.get(original.value, original.value))

    def leave_Attribute(self, original, updated):
        if isinstance(original.value, cst.Name) and original.value.value == "regions":
            return self.regions.get(original.attr.value, original)
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)


class _Roll:
    """One candidate: `times` stretches of `period` statements from `start`."""

    def __init__(self, stmts: list, start: int, period: int, times: int, taken: set[str]):
        self.stmts, self.start, self.period, self.times = stmts, start, period, times
        self.taken = taken
        self.bodies = [stmts[start + k * period: start + (k + 1) * period] for k in range(times)]

    @property
    def end(self) -> int:
        return self.start + self.period * self.times

    def plan(self) -> tuple[dict[str, str], list[dict[str, str]], dict[int, list[str]]] | None:
        """(canonical name per first-stretch name, per stretch its names' map, region tables by slot),
        or None where rolling would change what the code computes."""
        occ = [_occurrences(body) for body in self.bodies]
        first = [n for n, _ in occ[0].names]
        maps = []
        for o in occ:
            names = [n for n, _ in o.names]
            if len(names) != len(first) or len(o.regions) != len(occ[0].regions) or \
                    len(o.integers) != len(occ[0].integers):
                return None
            forward, backward = {}, {}
            for a, b in zip(first, names):
                if forward.setdefault(a, b) != b or backward.setdefault(b, a) != a:
                    return None
            maps.append(forward)
        varying = {c for c in maps[0] if any(m[c] != c for m in maps)}
        rbw, _, written = _flow(self.bodies[0], frozenset())
        canonical = {c: c for c in varying}
        carried = {}
        for c in varying & rbw:
            if c in written:
                return None
            sources = [w for w in varying & written
                       if all(maps[k][c] == maps[k - 1][w] for k in range(1, self.times))]
            if len(sources) != 1 or sources[0] in carried.values():
                return None
            carried[c] = sources[0]
            canonical[sources[0]] = c
        if not self._reads_precede_writes(occ[0].names, carried):
            return None
        by_stretch = [(k, c, m[c]) for k, m in enumerate(maps) for c in varying]
        owners = {}
        for k, c, name in by_stretch:  # one value per name, except a carried value read in the next stretch
            key = (k - 1, carried[c]) if c in carried and k > 0 else (k, c)
            if owners.setdefault(name, key) != key:
                return None
        if not self._outside_ok({name for _, _, name in by_stretch}, carried, maps, varying & written):
            return None
        progressions = {}
        for j in range(len(occ[0].integers)):  # an index that steps by the same amount each iteration
            column = [o.integers[j] for o in occ]
            step = column[1] - column[0]
            if any(b - a != step for a, b in zip(column, column[1:])):
                return None
            if step:
                progressions[j] = (column[0], step)
        tables = {}
        for j in range(len(occ[0].regions)):
            column = [o.regions[j] for o in occ]
            if len(set(column)) > 1:
                if len(set(column)) != len(column):
                    return None
                tables[j] = column
        return canonical, maps, tables, progressions

    @staticmethod
    def _reads_precede_writes(names: list[tuple[str, str]], carried: dict[str, str]) -> bool:
        for c, w in carried.items():
            reads = [i for i, (n, role) in enumerate(names) if n == c]
            writes = [i for i, (n, role) in enumerate(names) if n == w and role == "w"]
            if writes and reads and max(reads) > min(writes):
                return False
        return True

    def _outside_ok(self, varying_names: set[str], carried: dict, maps: list, written: set[str]) -> bool:
        before = {n for n, _ in _occurrences(self.stmts[:self.start]).names}
        after = {n for n, _ in _occurrences(self.stmts[self.end:]).names}
        initial = set(carried)
        finals = {maps[-1][d] for d in written}
        return not (before & varying_names) - initial and not (after & varying_names) - finals

    def rolled(self, index: str, canonical, maps, tables, progressions) -> tuple[list, list, dict[str, str]]:
        """(the loop statement, the table statements, the renaming for the statements after the loop)."""
        table_names, patterns = {}, {}
        used = set(self.taken)
        for j, column in tables.items():
            pattern = _name_pattern(column, index)
            if pattern is not None:
                patterns[j] = pattern
                continue
            base = _table_name(column)
            name, n = base, 1
            while name in used:
                n += 1
                name = f"{base}_{n}"
            used.add(name)
            table_names[j] = name
        occ = _occurrences(self.bodies[0])
        region_exprs = {}
        for j, name in table_names.items():
            lookup = cst.Subscript(cst.Name(name), [cst.SubscriptElement(cst.Index(cst.Name(index)))])
            region_exprs[occ.regions[j]] = cst.Call(cst.Name("getattr"), [cst.Arg(cst.Name("regions")),
                                                                            cst.Arg(lookup)])
        for j, pattern in patterns.items():
            region_exprs[occ.regions[j]] = cst.parse_expression(f"getattr(regions, {pattern})")
        body = []
        integers = {j: _progression(index, *p) for j, p in progressions.items()}
        for i, stmt in enumerate(self.bodies[0]):  # integers are numbered per statement
            before = _count(self.bodies[0][:i])
            body.append(stmt.visit(Rename(canonical, region_exprs, {j - before: e for j, e in integers.items()})))
        comment = "# a loop the conversion unrolled, rolled up again"
        if table_names:
            comment += f": regions from {', '.join(table_names.values())}"
        header = cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(comment))
        loop = cst.For(cst.Name(index), cst.Call(cst.Name("range"), [cst.Arg(cst.Integer(str(self.times)))]),
                       cst.IndentedBlock(body, header=header))
        tables_src = [cst.parse_statement(_table(name, tables[j])) for j, name in table_names.items()]
        after = {maps[-1][c]: canonical[c] for c in canonical}
        return [loop], tables_src, after


def _name_pattern(names: list[str], index: str) -> str | None:
    """An f-string that spells `names[k]` from the loop index, where only integers in them vary, evenly
    (`groups_0_{k}_L36`); None otherwise."""
    tokens = [re.findall(r"\d+|\D+", name) for name in names]
    if len({len(t) for t in tokens}) != 1:
        return None
    parts = []
    for column in zip(*tokens):
        if len(set(column)) == 1:
            parts.append(column[0].replace("{", "{{").replace("}", "}}"))
            continue
        if not all(c.isdigit() and (c == "0" or not c.startswith("0")) for c in column):
            return None
        values = [int(c) for c in column]
        step = values[1] - values[0]
        if any(b - a != step for a, b in zip(values, values[1:])) or step == 0:
            return None
        parts.append("{" + cst.Module([]).code_for_node(_progression(index, values[0], step)) + "}")
    return 'f"' + "".join(parts) + '"'


def _table_name(names: list[str]) -> str:
    """`GROUPS_0_L36` for `groups_0_0_L36`, `groups_0_1_L36`, ...: the parts every name shares, upper case."""
    split = [name.split("_") for name in names]
    if len({len(s) for s in split}) == 1:
        shared = [parts[0] for parts in zip(*split) if len(set(parts)) == 1]
        if shared and not shared[0][:1].isdigit():
            return "_".join(shared).upper()
    return names[0].upper()


def _count(stmts: list) -> int:
    return len(_occurrences(stmts).integers)


def _progression(index: str, first: int, step: int) -> cst.BaseExpression:
    term = cst.Name(index) if step == 1 else cst.BinaryOperation(cst.Integer(str(step)), cst.Multiply(),
                                                                 cst.Name(index))
    if first == 0:
        return term
    return cst.BinaryOperation(term, cst.Add(), cst.Integer(str(first))) if first > 0 else \
        cst.BinaryOperation(term, cst.Subtract(), cst.Integer(str(-first)))


def _table(name: str, regions: list[str], width: int = 120) -> str:
    one_line = f"{name} = ({', '.join(repr(r) for r in regions)})\n"
    if len(one_line) <= width + 1:
        return one_line
    lines, line = [], "   "
    for r in regions:
        item = f" {r!r},"
        if len(line) + len(item) > width:
            lines.append(line)
            line = "   "
        line += item
    return "\n".join([f"{name} = (", *lines, line, ")"]) + "\n"


def _candidates(stmts: list, start: int, keys: list[str]):
    for period in range(1, min(_MAX_PERIOD, (len(stmts) - start) // _MIN_TIMES) + 1):
        times = 1
        while (start + (times + 1) * period <= len(stmts)
               and keys[start + times * period: start + (times + 1) * period] == keys[start: start + period]):
            times += 1
        for n in range(times, _MIN_TIMES - 1, -1):
            yield period, n


def reroll(stmts: list[cst.BaseStatement]) -> tuple[list[cst.BaseStatement], list[cst.BaseStatement]]:
    """(`stmts` with their unrolled loops rolled up, the tables of region names those loops index)."""
    taken = {n for n, _ in _occurrences(stmts).names}
    index = next(name for name in ("k", "step", "iteration") + tuple(f"k{i}" for i in range(1, 99))
                 if name not in taken)
    keys = [_skeleton(s) for s in stmts]
    out, tables, start = [], [], 0
    while start < len(stmts):
        best = None
        for period, times in _candidates(stmts, start, keys):
            if best is not None and period * times <= best[0].period * best[0].times:
                continue
            roll = _Roll(stmts, start, period, times, taken | {index})
            plan = roll.plan()
            if plan is not None:
                best = (roll, plan)
        if best is None:
            out.append(stmts[start])
            start += 1
            continue
        roll, plan = best
        loop, table_src, after = roll.rolled(index, *plan)
        taken |= {t.body[0].targets[0].target.value for t in table_src}
        out.extend(loop)
        tables.extend(table_src)
        rename = Rename(after, {})
        stmts = stmts[:roll.end] + [s.visit(rename) for s in stmts[roll.end:]]
        start = roll.end
    return out, tables
