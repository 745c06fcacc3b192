"""Shape tests that pin a dim to one size: the regions behind them run at that size only.

A region reached at one size of a dynamic dim is refused (`[one-size-code]`) because which of its
input dims follow that size cannot be told. Under `if x.shape[2] == 4:` (or `4 == new_size[0] and
4 == new_size[1]`, with `new_size` read from `x.shape`) the host's own test guards the region: on
that arm `x` dim 2 *is* 4, on every run, so a static 4 there is right and needs no other size. This
is told apart from a threshold (`if x.shape[2] > 3:`), under which the region sees many sizes.

Soundness rests on three things, each checked here:
- the pin is the host's test on the way to the region: every call of the region is inside the arm
  (the host tree is structured, so enclosing arms are on every path to it);
- a pinned dim is a dim of the very value the region takes: resolved through host statements to
  `x.shape[a]` (`B, H, W, C = x.shape`, `new_size = (H, W)`, `x.size(2)`, `len(x)`), with `x` not
  written between the shape read and the call;
- every other dim of the region's inputs was seen at several sizes of the symbols the region saw
  at one size only, and stayed put: exploration observes those inputs at the pinning test itself,
  on every run that reaches it (`Exploration.at_decisions`). A dim that varies there and is not
  pinned leaves the region refused. An input made on the arm itself, by an earlier region there
  (the arm splits at a value decision), is explained where that region's inputs all are and its
  output shapes follow from its input shapes (`shape_deps`): it is made at one size too.
"""
from __future__ import annotations

import libcst as cst

from hostgen.fused import FusedBlock
from rewrite.syntax import reads_writes
from rewrite.cfg import HostStmt, If, Loop, RegionCall, host_nodes

from .runtime.spec import count_leaves

__all__ = ["Pin", "RegionPins", "region_pins", "observed_names", "unexplained_dims", "test_pins"]


class Pin:
    """`name` dim `axis` is `size` wherever the arm `decision` runs (`name` at its `version`)."""

    __slots__ = ("decision", "name", "version", "axis", "size")

    def __init__(self, decision: str, name: str, version: int, axis: int, size: int):
        self.decision, self.name, self.version, self.axis, self.size = decision, name, version, axis, size

    def __repr__(self) -> str:
        return f"Pin({self.decision}: {self.name}.shape[{self.axis}] == {self.size})"


class RegionPins:
    """What holds at every call of one region: the pins, and where each input can be observed.

    `observed[name]`: the pinning decisions at whose test `name` already holds the value the region
    takes (it is not written between the test and the call). `made_by[name]`: the region, on a
    pinned arm, whose output `name` is at the call (at every call site).
    """

    __slots__ = ("pins", "observed", "made_by")

    def __init__(self, pins: list[Pin], observed: dict[str, list[str]], made_by: dict[str, str] | None = None):
        self.pins, self.observed, self.made_by = pins, observed, made_by or {}

    def __repr__(self) -> str:
        return f"RegionPins({self.pins}, observed at {self.observed}, made by {self.made_by})"


# -- symbolic shape values -----------------------------------------------------
# ("shape", name, version): `name.shape`; ("dim", name, version, axis); ("tuple", [values]); None: unknown.


def _resolve(node, env: dict, versions: dict):
    if isinstance(node, cst.Name):
        return env.get(node.value)
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.attr.value == "shape":
        return ("shape", node.value.value, versions.get(node.value.value, 0))
    if isinstance(node, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            return None
        return ("tuple", [_resolve(e.value, env, versions) for e in node.elements])
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        index = _integer(node.slice[0].slice.value)
        base = _resolve(node.value, env, versions)
        if index is None or base is None:
            return None
        if base[0] == "shape":
            return ("dim", base[1], base[2], index)
        if base[0] == "tuple" and -len(base[1]) <= index < len(base[1]):
            return base[1][index]
        return None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name) \
            and node.func.attr.value == "size" and len(node.args) <= 1 and all(a.keyword is None for a in node.args):
        name = node.func.value.value
        if not node.args:
            return ("shape", name, versions.get(name, 0))
        axis = _integer(node.args[0].value)
        return None if axis is None else ("dim", name, versions.get(name, 0), axis)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" \
            and len(node.args) == 1 and isinstance(node.args[0].value, cst.Name):
        name = node.args[0].value.value
        return ("dim", name, versions.get(name, 0), 0)
    return None


def _integer(node) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, cst.Integer):
        return -int(node.expression.evaluated_value)
    return None


def _bind(target, value, env: dict) -> None:
    """Bind an assignment target to a symbolic value (after the target's names got new versions)."""
    if isinstance(target, cst.Name):
        if value is None:
            env.pop(target.value, None)
        else:
            env[target.value] = value
    elif isinstance(target, (cst.Tuple, cst.List)):
        elements = target.elements
        starred = any(isinstance(e, cst.StarredElement) for e in elements)
        for k, element in enumerate(elements):
            item = None
            if value is not None and not starred:
                if value[0] == "shape":
                    item = ("dim", value[1], value[2], k)
                elif value[0] == "tuple" and len(value[1]) == len(elements):
                    item = value[1][k]
            inner = element.value.value if isinstance(element, cst.StarredElement) else element.value
            _bind(inner, item, env)


def test_pins(test, env: dict, versions: dict) -> tuple[bool, list[tuple]]:
    """The arm on which `test` pins dims, and the pins: [(name, version, axis, size)].

    The body of `a == 4 and b` (or `4 == a`): a is 4; the `else` of `a != 4 or b`: a is 4.
    """
    body = _conjunct_pins(test, env, versions, equal=True)
    if body:
        return True, body
    return False, _conjunct_pins(test, env, versions, equal=False)


def _conjunct_pins(test, env, versions, equal: bool) -> list[tuple]:
    """Pins that hold where `test` is `equal` (True: its body; False: its else)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _conjunct_pins(test.expression, env, versions, not equal)
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And) == equal:  # both sides hold: `a and b` true, `a or b` false
            return _conjunct_pins(test.left, env, versions, equal) + _conjunct_pins(test.right, env, versions, equal)
        return []
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator = test.comparisons[0].operator
        if not isinstance(operator, cst.Equal if equal else cst.NotEqual):
            return []
        left, right = test.left, test.comparisons[0].comparator
        for dim, literal in ((left, right), (right, left)):
            size, value = _integer(literal), _resolve(dim, env, versions)
            if size is not None and value is not None and value[0] == "dim":
                return [(value[1], value[2], value[3], size)]
    return []


# -- the walk over the host tree -------------------------------------------------


def _writes(nodes) -> set[str]:
    """Every name the nodes (and the arms and bodies below them) write."""
    written: set[str] = set()
    for node in host_nodes(nodes):
        if isinstance(node, HostStmt):
            written.update(reads_writes(node.node)[1])
        elif isinstance(node, RegionCall):
            written.update(node.region.outputs)
        elif isinstance(node, Loop) and node.target is not None:
            written.update(n.value for n in _names(node.target))
        elif isinstance(node, FusedBlock):
            written.update(node.outputs)
            written.update(lst for lst, _ in node.extends)
    return written


def _names(node) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    node.visit(_Collect())
    return found


class _Walk:
    def __init__(self):
        self.versions: dict[str, int] = {}
        self.calls: dict[str, list[RegionPins]] = {}  # region -> one per call site
        self.made: dict[tuple[str, int], str] = {}  # (name, version) -> the region on a pinned arm whose output it is

    def bump(self, names, env: dict) -> None:
        for name in names:
            self.versions[name] = self.versions.get(name, 0) + 1
        stale = set(names)
        for key in [k for k, v in env.items() if k in stale or _mentions(v, stale)]:
            del env[key]

    def block(self, nodes: list, env: dict, arms: list) -> None:
        """`arms`: the pinning arms around `nodes`, innermost last: (decision, pins, versions at the test)."""
        for node in nodes:
            if isinstance(node, HostStmt):
                stmt = node.node
                if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
                    value = _resolve(stmt.value, env, self.versions)
                    self.bump(reads_writes(stmt)[1], env)
                    _bind(stmt.targets[0].target, value, env)
                else:
                    self.bump(reads_writes(stmt)[1], env)
            elif isinstance(node, RegionCall):
                self.call(node.region, arms)
                self.bump(node.region.outputs, env)
                if arms:
                    self.made.update({(o, self.versions[o]): node.region.name for o in node.region.outputs})
            elif isinstance(node, If):
                arm, pins = test_pins(node.test, env, self.versions)
                inner = arms + [(node.decision, pins, dict(self.versions))] if pins else arms
                self.block(node.body, dict(env), inner if arm else arms)
                self.block(node.orelse, dict(env), arms if arm else inner)
                self.bump(_writes(node.body) | _writes(node.orelse), env)
            elif isinstance(node, Loop):
                # a later iteration sees what the body writes: stale from the start
                self.bump(_writes(node.body) | _writes([node]), env)
                self.block(node.body, dict(env), arms)
                self.bump(_writes(node.body), env)
            else:
                self.bump(_writes([node]), env)

    def call(self, region, arms: list) -> None:
        if not arms:
            self.calls.setdefault(region.name, []).append(None)
            return
        pins, observed = [], {}
        for decision, arm_pins, at_test in arms:
            for name, version, axis, size in arm_pins:
                if self.versions.get(name, 0) == version:
                    pins.append(Pin(decision, name, version, axis, size))
            for name in region.inputs:
                if self.versions.get(name, 0) == at_test.get(name, 0):
                    observed.setdefault(name, []).append(decision)
        made_by = {n: self.made[(n, self.versions.get(n, 0))] for n in region.inputs
                   if (n, self.versions.get(n, 0)) in self.made}
        self.calls.setdefault(region.name, []).append(RegionPins(pins, observed, made_by))


def _mentions(value, names: set[str]) -> bool:
    if value is None:
        return False
    if value[0] in ("shape", "dim"):
        return value[1] in names
    return any(_mentions(v, names) for v in value[1])


def region_pins(program) -> dict[str, RegionPins]:
    """What holds at every call of each region under a pinning test (the others are left out); a region
    may have no pin of its own left where the arm wrote the value a test read."""
    walk = _Walk()
    walk.block(program.body, {}, [])
    found = {}
    for name, (first, *others) in walk.calls.items():
        if first is None or None in others:
            continue  # a call under no pinning test
        pins = [p for p in first.pins if all(_key(p) in {_key(q) for q in site.pins} for site in others)]
        observed = {n: [d for d in ds if all(d in site.observed.get(n, ()) for site in others)]
                    for n, ds in first.observed.items()}
        made_by = {n: q for n, q in first.made_by.items() if all(site.made_by.get(n) == q for site in others)}
        found[name] = RegionPins(pins, {n: ds for n, ds in observed.items() if ds}, made_by)
    return found


def _key(pin: Pin) -> tuple:
    return pin.decision, pin.name, pin.version, pin.axis, pin.size


def observed_names(pins: dict[str, RegionPins]) -> dict[str, list[str]]:
    """Per pinning decision, the names exploration observes at its test."""
    names: dict[str, set[str]] = {}
    for rp in pins.values():
        for name, decisions in rp.observed.items():
            for decision in decisions:
                names.setdefault(decision, set()).add(name)
    return {d: sorted(ns) for d, ns in sorted(names.items())}


# -- judging a region seen at one size -------------------------------------------


def unexplained_dims(region, record, rp: RegionPins, seen_at, fixed: dict[str, int],
                     made_at_one_size=lambda name: False) -> list[str]:
    """The input dims of a region seen at one size (`fixed`: symbol -> that size) that neither a pin
    nor the observations at a pinning test explain, as "`x` dim 1"; empty when the region may keep
    its static dims.

    `seen_at(decision)`: [(symbol sizes, {name: (spec, leaf shapes)})], one per distinct observation
    at that test (`Exploration.seen_at`). A dim not pinned is explained where every observation of
    its input, over at least two sizes of each symbol in `fixed`, had it at the region's size, or
    where `made_at_one_size(region)` holds of the region on the arm that made the input.
    """
    dims = record.dims()
    pinned = {(p.name, p.axis): p.size for p in rp.pins}
    missing, leaf = [], 0
    for name, spec in zip(region.inputs, record.in_specs):
        count = count_leaves(spec)
        seen = [(sizes, values[name]) for d in rp.observed.get(name, ()) for sizes, values in seen_at(d)
                if name in values]
        covered = bool(seen) and all(len({sizes.get(s) for sizes, _ in seen} - {None}) > 1 for s in fixed)
        made = name in rp.made_by and made_at_one_size(rp.made_by[name])
        for k in range(count):
            rank = len(dims[leaf + k])
            for axis, size in enumerate(dims[leaf + k]):
                if size is None or made:
                    continue  # varied (symbolic already), or made at one size on the arm
                if spec["t"] == "array" and size in (pinned.get((name, axis)), pinned.get((name, axis - rank))):
                    continue
                if covered and all(s == spec and len(shapes[k]) == rank and shapes[k][axis] == size
                                   for _, (s, shapes) in seen):
                    continue
                missing.append(f"`{name}`{f' (leaf {k})' if count > 1 else ''} dim {axis}")
        leaf += count
    return missing
