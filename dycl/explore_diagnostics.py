"""Diagnostics from exploration: what running the rewritten program found that no package can hold.

A region output that came out a Python value (`python-value`), a list input whose length changed
between runs or a zip argument shorter than the loop was unrolled for (`varying-list`), regions no run reached (`unreached-code`) and regions that ran at one
size of a dynamic symbol only (`one-size-code`), each pointing at the user's source.
"""
from __future__ import annotations

from rewrite import Diagnostic
from rewrite.diagnostics import Location, locate
from rewrite.syntax import reads_writes

from .pins import unexplained_dims
from .recording import ListLengthChanged, PythonValueOut

__all__ = ["python_value_out", "list_length_changed", "length_check_failed", "unreached_code", "one_size_code"]


def python_value_out(program, exc: PythonValueOut) -> Diagnostic:
    """Point at the statement that computes the region output that came out a Python value."""
    region = next(r for r in program.regions if r.name == exc.region)
    output = region.outputs[exc.index] if exc.index < len(region.outputs) else None
    writes = [s for s in region.stmts if output in reads_writes(s.node)[1]]
    origin = (writes[-1] if writes else region.stmts[-1]).origin
    return Diagnostic("python-value", Location(origin.file, origin.first, origin.col),
                      "tensor code that computes a Python value, not a tensor",
                      f"region {region.name} would return it, and a compiled graph can only compute tensors "
                      "(`torch.equal`, `torch.allclose` and `.tolist()` give Python values)",
                      "compute a tensor instead (`(a == b).all()`, `torch.isclose(a, b).all()`); "
                      "a test on it is then decided at run time")


def list_length_changed(program, exc: ListLengthChanged) -> Diagnostic:
    """Point at the list whose length changed, as the user wrote it (`idx.tolist()` rather than the name
    the host binds it to), in the first statement of the region that reads it."""
    region = next(r for r in program.regions if r.name == exc.region)
    name = region.inputs[exc.index]
    reads = [s for s in region.stmts if name in reads_writes(s.node)[0]]
    origin = (reads[0] if reads else region.stmts[0]).origin
    written = program.written.get(name, name)
    return Diagnostic("varying-list", locate(origin.file, origin.first, origin.last, origin.col, written),
                      f"tensor code that reads `{written}`, a list whose length changes between runs",
                      f"region {region.name} takes the list item by item, one graph input per item, and a compiled "
                      f"graph has a fixed number of inputs; `{written}` had {exc.lengths[0]} items on one run and "
                      f"{exc.lengths[1]} on another (`.tolist()` of a tensor whose size varies gives such a list, and so do "
                      "appends under a run-time `if`)",
                      "keep the values in a tensor for tensor code (`x[idx]` rather than `x[idx.tolist()]`, a mask "
                      "rather than appended positions), or use the list only in Python (`for`, `len`, `sum`)")


def length_check_failed(program, exc: BaseException) -> Diagnostic | None:
    """The diagnostic of the host length check whose ValueError a run raised (rewrite/zips.py): by
    itself, or as what the rewritten program raised where the model did not (a resized input)."""
    while exc is not None:
        if isinstance(exc, ValueError) and exc.args and exc.args[0] in program.length_checks:
            return program.length_checks[exc.args[0]]
        exc = exc.__context__
    return None


def unreached_code(regions) -> list[Diagnostic]:
    """One diagnostic per source place of regions no run reached: without example inputs they cannot be exported."""
    places = {(r.origin.file, r.origin.first, r.origin.col): r for r in regions}
    return [Diagnostic("unreached-code", Location(*place), "no input reached this code, even with every decision forced",
                       f"its region ({r.name}) is exported at the shapes seen when the model runs, and no sample input "
                       "took the path to it; forcing each `.item()`/tensor decision both ways did not reach it either, "
                       "nor did forcing the shape tests no run passed (decisions on Python values cannot be forced)",
                       "add sample_inputs() that take this path, or remove the code if it can never run")
            for place, r in places.items()]


def one_size_code(regions, exploration, pins: dict, follows_shapes=lambda region, record: False) -> list[Diagnostic]:
    """One diagnostic per source place of regions that ran at one size of a dynamic symbol only, where
    the program ran at several (`explore` has replayed their paths at the other sizes).

    A region behind a test that pins the dims it fixes (`if x.shape[2] == 4:`) is not one: see
    `pins`. Under a pinning test, a dim left unexplained is named. `follows_shapes(region, record)`:
    the region's output shapes follow from its input shapes (for inputs made on a pinned arm)."""
    records = exploration.records
    by_name = {r.name: r for r in regions}
    sizes: dict[str, set] = {}
    for record in records.values():
        for _, symbols in record.observations:
            for symbol, size in symbols:
                sizes.setdefault(symbol, set()).add(size)

    def fixed_sizes(record) -> dict[str, int]:
        return {s: n for s, n in record.one_size().items() if len(sizes[s]) > 1}

    def unexplained(r, fixed) -> list[str]:
        return unexplained_dims(r, records[r.name], pins[r.name], exploration.seen_at, fixed, made_at_one_size)

    made: dict[str, bool] = {}

    def made_at_one_size(name: str) -> bool:
        """The region's outputs have one shape on every run that calls it: its input dims are all static
        and explained, and its output shapes follow from them."""
        if name not in made:
            made[name] = False  # while deciding: a cycle explains nothing
            region, record = by_name.get(name), records.get(name)
            made[name] = region is not None and bool(record.examples) \
                and all(None not in dims for dims in record.dims()) \
                and (not fixed_sizes(record) or (name in pins and not unexplained(region, fixed_sizes(record)))) \
                and follows_shapes(region, record)
        return made[name]

    found = {}
    for r in regions:
        record = records[r.name]
        fixed = fixed_sizes(record)
        if not fixed or not any(len(shape) for shape, _ in next(iter(record.examples))):
            continue
        why = ""
        if r.name in pins:
            missing = unexplained(r, fixed)
            if not missing:
                continue
            pinned = _listed([f"`{p.name}` dim {p.axis} = {p.size}" for p in pins[r.name].pins])
            why = f"; the shape test on the way to it fixes {pinned}, but not {_listed(missing)}"
        found.setdefault((r.origin.file, r.origin.first, r.origin.col), (r, fixed, why))
    return [Diagnostic("one-size-code", Location(*place),
                       f"this code ran at one size of {', '.join(f'`{s}`' for s in fixed)} only",
                       f"its region ({r.name}) was reached only with {', '.join(f'{s} = {n}' for s, n in fixed.items())}"
                       ", and taking the same decisions at the other sizes exploration tried failed, so which of its "
                       "input dims follow that size cannot be told (a dim fixed at one size would refuse the others)"
                       + why,
                       "add sample_inputs() at other sizes that take this path, or make the code run at every size")
            for place, (r, fixed, why) in found.items()]


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
