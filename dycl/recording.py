"""Runs of the rewritten program in torch, recorded region by region.

`Exploration.run` runs the instrumented host once, with `_ExploringRegions` as its `regions`:
each region call runs the torch region function and records its structure, example inputs and
shapes in the region's `RegionRecord`; each decision may be forced (`Exactly` for a loop's trip
count) or follow a replayed path, and loops stop at `MAX_ITERATIONS` or `MAX_SECONDS`
(`EndlessLoop`). A region returning a Python value, or taking host lists of another length on
another call, raises the `RewriteMismatch` that says so.
"""
from __future__ import annotations

import json
import time

import numpy as np
import torch

from rewrite.kinds import DecisionClass, LoopKind

from ._torch_regions import flatten_torch
from .compare import RewriteMismatch, to_numpy
from .region_record import RegionRecord
from .runtime.spec import describe, flatten, unflatten

__all__ = ["Exploration", "PythonValueOut", "ListLengthChanged", "EndlessLoop", "Exactly", "MAX_ITERATIONS",
           "MAX_SECONDS"]


class PythonValueOut(RewriteMismatch):
    """A region's output `index` is a Python value (`torch.equal(a, b)` gives a bool), not a tensor."""

    def __init__(self, region: str, index: int, value):
        super().__init__(f"region {region} returns a Python {type(value).__name__}; "
                         "a compiled region can only return tensors")
        self.region, self.index, self.value = region, index, value


class ListLengthChanged(RewriteMismatch):
    """A region's input `index` is a host list that had `lengths[0]` items on one call and `lengths[1]` on
    another (`sizes = counts.tolist()` of a tensor with a dynamic dim): a graph takes one input per item."""

    def __init__(self, region: str, index: int, lengths: tuple[int, int]):
        super().__init__(f"region {region}: its input {index} is a list of {lengths[0]} items on one call "
                         f"and {lengths[1]} on another")
        self.region, self.index, self.lengths = region, index, lengths


def _length_changed(name: str, before: list, now: list) -> None:
    """Raise ListLengthChanged where the first input whose structure changed is a list of another length."""
    index, old, new = next((k, a, b) for k, (a, b) in enumerate(zip(before, now)) if a != b)
    if old.get("t") == new.get("t") == "list" and len(old["items"]) != len(new["items"]):
        raise ListLengthChanged(name, index, (len(old["items"]), len(new["items"])))


# One run of the rewritten program: at most this many iterations of one loop, and this long.
MAX_ITERATIONS = 100_000
MAX_SECONDS = 300.0


class _ReplayEnd(Exception):
    """A replayed path ended, or the run left it: the run stops there."""


class Exactly(int):
    """A loop forced to run exactly this many iterations (a plain int only caps it): code after a loop,
    and state the loop grows (`acc = torch.cat([acc, t], 1)`), see trip counts no sample ran."""

    def __repr__(self) -> str:
        return f"Exactly({int(self)})"


class EndlessLoop(Exception):
    """A loop of the rewritten program ran past the caps."""

    def __init__(self, decision: str, why: str):
        super().__init__(f"loop {decision} {why}")
        self.decision, self.why = decision, why


_REACHING_PATHS = 3  # paths kept per region, to replay at other sizes


def _freeze(seen: dict) -> tuple:
    """A hashable form of {name: (spec, shapes)} (specs are dicts of lists)."""
    return tuple((name, json.dumps(spec, sort_keys=True), shapes) for name, (spec, shapes) in sorted(seen.items()))


def _signature(leaves) -> tuple:
    return tuple((tuple(t.shape), str(t.dtype)) for t in leaves)


class _ExploringRegions:
    """The `regions` object the instrumented host calls during exploration."""

    def __init__(self, explorer: "Exploration", force: dict, symbols: tuple = (), replay: tuple | None = None):
        self._explorer = explorer
        self._force = force
        self._replay, self._replayed = replay, 0  # a path to follow decision by decision, and how far it got
        self._natural = not force and replay is None  # counts loop iterations and calls as the model runs them
        self._symbols = symbols
        self._evaluations: dict[str, int] = {}
        self._iterations: dict[str, int] = {}
        self._deadline = time.monotonic() + MAX_SECONDS
        self.path: list[tuple[str, bool]] = []

    def _count(self, decision: str) -> None:
        """One more iteration of a loop: stop a run that loops for ever."""
        count = self._iterations[decision] = self._iterations.get(decision, 0) + 1
        if count > MAX_ITERATIONS:
            raise EndlessLoop(decision, f"did not end after {MAX_ITERATIONS} iterations")
        if time.monotonic() > self._deadline:
            raise EndlessLoop(decision, f"was still running after {MAX_SECONDS:g} s")

    def decide(self, decision: str, dclass: str, value, observe=None) -> bool:
        """An `if` or `while` test. Forcing: True/False for a value-determined `if`;
        an int n for a loop: at most n iterations. `observe()` gives values seen at the test
        (`Exploration.at_decisions`)."""
        if observe is not None and self._explorer.recording is None:
            self._observe(decision, observe)
        taken = bool(value)
        forced = self._force.get(decision)
        if self._replay is not None:
            taken = self._next(decision)
        elif dclass in (DecisionClass.VALUE, DecisionClass.SHAPE) and isinstance(forced, bool):
            taken = forced  # a shape test only as a last resort: see `_force_shapes`
        elif dclass == DecisionClass.EXECUTION and isinstance(forced, int) and not isinstance(forced, bool):
            count = self._evaluations.get(decision, 0)
            self._evaluations[decision] = count + 1
            taken = count < forced if isinstance(forced, Exactly) else taken and count < forced
        self._explorer.classes[decision] = dclass
        if dclass == DecisionClass.EXECUTION and taken:
            self._count(decision)
        self.path.append((decision, taken))
        if dclass == DecisionClass.EXECUTION and taken and self._natural:
            self._explorer.loop_iterations[decision] = self._explorer.loop_iterations.get(decision, 0) + 1
        return taken

    def _observe(self, decision: str, observe) -> None:
        """Record the structure and leaf shapes of the values `observe()` gives, with this run's sizes."""
        names = self._explorer.observed.get(decision, ())
        try:
            values = observe()
        except NameError:  # not bound on this path yet: nothing to see
            return
        seen = {}
        for name, value in zip(names, values):
            try:
                spec = describe(value, lambda v: isinstance(v, np.ndarray))
            except TypeError:
                continue
            flat: list = []
            flatten(value, spec, flat)
            seen[name] = (spec, tuple(tuple(np.shape(leaf)) for leaf in flat))
        self._explorer.at_decisions.setdefault(decision, set()).add((self._symbols, _freeze(seen)))

    def iterate(self, decision: str, iterable):
        """A host `for` loop; forcing an int n stops it after n iterations."""
        forced = self._force.get(decision)
        self._explorer.classes[decision] = LoopKind.FOR
        for k, item in enumerate(iterable):
            if isinstance(forced, int) and not isinstance(forced, bool) and k >= forced:
                break
            if self._replay is not None and not self._next(decision):
                break
            self._count(decision)
            self.path.append((decision, True))
            if self._natural:
                self._explorer.loop_iterations[decision] = self._explorer.loop_iterations.get(decision, 0) + 1
            yield item
        else:
            if self._replay is not None and self._next(decision):
                raise _ReplayEnd(f"loop {decision} ran out of items")
        self.path.append((decision, False))

    def _next(self, decision: str) -> bool:
        """The replayed path's next decision, which must be `decision`."""
        if self._replayed >= len(self._replay) or self._replay[self._replayed][0] != decision:
            raise _ReplayEnd(f"the path ends or leaves the replayed one at {decision}")
        self._replayed += 1
        return self._replay[self._replayed - 1][1]

    def __getattr__(self, name: str):
        fn = getattr(self._explorer.module, name)
        record = self._explorer.records[name]
        model = self._explorer.model

        def call(*args):
            in_specs = [describe(a, lambda v: isinstance(v, np.ndarray)) for a in args]
            flat: list = []
            for a, s in zip(args, in_specs):
                flatten(a, s, flat)
            tensors = [torch.from_numpy(np.array(a)) for a in flat]
            if record.in_specs is None:
                record.in_specs = in_specs
            elif record.in_specs != in_specs:
                _length_changed(name, record.in_specs, in_specs)
                raise RewriteMismatch(f"region {name}: its inputs changed structure between calls "
                                      f"({record.in_specs} vs {in_specs})")
            versions = [t._version for t in tensors]
            leaves = iter(tensors)
            nested = [unflatten(s, leaves, scalars_as_arrays=True) for s in in_specs]
            with torch.no_grad():
                outs = fn(model, *nested)
            if self._explorer.recording is not None and name not in self._explorer.recording:
                return _unrecorded(outs)
            out_specs, out_leaves = [], []
            for index, value in enumerate(outs):
                spec, leaves_ = flatten_torch(value)
                out_specs.append(spec)
                out_leaves.extend(leaves_)
                python = next((leaf for leaf in leaves_ if not isinstance(leaf, torch.Tensor)), None)
                if python is not None:
                    raise PythonValueOut(name, index, python)
            # An input returned unchanged; one an in-place op wrote (`acc.index_add_(...)`) is a result.
            passthrough = {i: next((j for j, t in enumerate(tensors) if t is leaf and t._version == versions[j]), -1)
                           for i, leaf in enumerate(out_leaves)}
            passthrough = {i: j for i, j in passthrough.items() if j >= 0}
            if record.out_specs is None:
                record.out_specs, record.passthrough = out_specs, passthrough
            elif record.out_specs != out_specs:
                raise RewriteMismatch(f"region {name}: its outputs changed structure between calls")
            else:
                record.passthrough = {i: j for i, j in record.passthrough.items() if passthrough.get(i) == j}
            record.calls += 1
            loop = self._explorer.region_loops.get(name)
            if loop is not None and self._natural:
                self._explorer.loop_calls[loop] = self._explorer.loop_calls.get(loop, 0) + 1
            signature = _signature(tensors)
            first = record.examples.setdefault(signature, [t.clone() for t in tensors])
            if signature not in record.variants and not all(torch.equal(a, b) for a, b in zip(first, tensors)):
                record.variants[signature] = [t.clone() for t in tensors]
            record.observations.add((signature, self._symbols))
            record.out_shapes.add(tuple(tuple(t.shape) if isinstance(t, torch.Tensor) else () for t in out_leaves))
            path = tuple(self.path)
            if len(record.reached_by) < _REACHING_PATHS and path not in record.reached_by:
                record.reached_by.append(path)
            leaves_np = iter([t.detach().numpy() for t in out_leaves])
            results = [unflatten(s, leaves_np) for s in out_specs]
            return results[0] if len(results) == 1 else tuple(results)

        return call


def _unrecorded(outs):
    """A region's torch results as the host takes them (numpy leaves), without recording the call."""
    results = []
    for value in outs:
        spec, leaves = flatten_torch(value)
        results.append(unflatten(spec, iter([t.detach().numpy() if isinstance(t, torch.Tensor) else t
                                             for t in leaves])))
    return results[0] if len(results) == 1 else tuple(results)


class Exploration:
    """Runs the instrumented host with torch regions; collects records and paths."""

    def __init__(self, model, host, module, region_names: list[str]):
        self.model, self.host, self.module = model, host, module
        self.records = {n: RegionRecord(n) for n in region_names}
        self.paths: list[tuple] = []
        self.arms: set[tuple[str, bool]] = set()
        self.natural_arms: set[tuple[str, bool]] = set()
        self.expected: list = []  # the original model's outputs on the natural inputs, in order
        self.classes: dict[str, str] = {}
        self.region_loops: dict[str, str] = {}  # region -> innermost host loop
        self.symbols_of = lambda inputs: {}  # declared dynamic symbols' sizes in a run
        self.loop_iterations: dict[str, int] = {}  # natural runs only
        self.loop_calls: dict[str, int] = {}
        self.observed: dict[str, list[str]] = {}  # decision -> names the instrumented host passes at its test
        # decision -> {(declared symbols' sizes, ((name, (spec, leaf shapes)), ...))}: what each run saw there
        self.at_decisions: dict[str, set[tuple]] = {}
        self.recording: set[str] | None = None  # the only regions whose calls are recorded (`_force_shapes`)

    def seen_at(self, decision: str) -> list[tuple[dict, dict]]:
        """Each distinct observation at a decision's test: (symbol sizes, {name: (spec, leaf shapes)})."""
        return [(dict(sizes), {name: (json.loads(spec), shapes) for name, spec, shapes in seen})
                for sizes, seen in sorted(self.at_decisions.get(decision, ()), key=repr)]

    def run(self, inputs: tuple, force: dict[str, bool] | None = None, replay: tuple | None = None,
            record_arms: bool = True):
        """One run of the host; `force` sets decisions, `replay` follows a path of decisions taken
        (and stops the run where it ends)."""
        regions = _ExploringRegions(self, force or {}, tuple(sorted(self.symbols_of(inputs).items())), replay)
        args = [to_numpy(v) for v in inputs]
        out = self.host.forward(regions, *args)
        if record_arms:
            self.arms.update(regions.path)
        return out, tuple(regions.path)
