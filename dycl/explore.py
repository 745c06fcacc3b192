"""Shape exploration: run the rewritten program in torch, force every decision both ways.

Every region gets example inputs (even regions no sample reaches), every
region input dim seen to vary becomes symbolic, and the natural runs check
the rewrite against the original model before anything is exported.
"""
from __future__ import annotations

import json
import time

import numpy as np
import torch

from rewrite.diagnostics import ConversionError, Diagnostic, Location
from rewrite.kinds import DecisionClass, LoopKind

from ._torch_regions import flatten_torch
from .runtime.spec import describe, flatten, unflatten

__all__ = ["RegionRecord", "Exploration", "explore", "to_numpy", "RewriteMismatch", "PythonValueOut",
           "ListLengthChanged", "EndlessLoop",
           "Exactly", "MAX_ITERATIONS", "MAX_SECONDS", "path_forcing"]


class RewriteMismatch(Exception):
    """The rewritten program disagrees with the original model."""


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


def to_numpy(value):
    """Torch values as the host sees them: arrays, scalars, containers."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, tuple):
        return tuple(to_numpy(v) for v in value)
    if isinstance(value, list):
        return [to_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    return value


class RegionRecord:
    """What exploration saw of one region."""

    __slots__ = ("name", "in_specs", "out_specs", "examples", "variants", "calls", "passthrough", "sources",
                 "observations", "reached_by", "out_shapes")

    def __init__(self, name: str):
        self.name = name
        self.in_specs: list | None = None
        self.out_specs: list | None = None
        self.examples: dict[tuple, list[torch.Tensor]] = {}  # signature -> flat inputs
        # signature -> other flat inputs of that signature, with other values: a compiled region that
        # froze a run-time value into its graph is right on one of the two at most
        self.variants: dict[tuple, list[torch.Tensor]] = {}
        self.calls = 0
        self.passthrough: dict[int, int] = {}  # output leaf -> input leaf
        self.sources: list | None = None
        self.observations: set[tuple] = set()  # (signature, declared symbols' sizes in that run)
        self.reached_by: list[tuple] = []  # the first few distinct paths (decisions taken) that led to a call
        self.out_shapes: set[tuple] = set()  # the shapes of the output leaves, per call

    def trace_example(self) -> list:
        """The example to export at: the first without a zero-size dim where there is one (a trace at
        0 rows folds shapes: the exporter gives `h.sum()` of a [0, 4] input the shape [1, 1])."""
        examples = list(self.examples.values())
        return next((e for e in examples if all(t.numel() or t.dim() == 0 for t in e)), examples[0])

    def one_size(self) -> dict[str, int]:
        """The declared symbols every call of this region saw at the same size, with that size."""
        sizes: dict[str, set] = {}
        for _, symbols in self.observations:
            for symbol, size in symbols:
                sizes.setdefault(symbol, set()).add(size)
        return {s: next(iter(v)) for s, v in sorted(sizes.items()) if len(v) == 1}

    def dims(self) -> list[list]:
        """Per input leaf, each dim's size, or None where it varied."""
        return _dims([[shape for shape, _ in sig] for sig in self.examples])

    def out_dims(self) -> list[list]:
        """Per output leaf, each dim's size, or None where it varied."""
        return _dims(list(self.out_shapes))

    def __repr__(self) -> str:
        return f"RegionRecord({self.name}, {self.calls} calls, {len(self.examples)} signatures)"


def _dims(calls: list) -> list[list]:
    """Per leaf of `calls` (each a list of leaf shapes), each dim's size, or None where it varied."""
    dims = []
    for leaf in range(len(calls[0]) if calls else 0):
        shapes = [c[leaf] for c in calls]
        dims.append([shapes[0][a] if all(len(sh) == len(shapes[0]) and sh[a] == shapes[0][a] for sh in shapes)
                     else None for a in range(len(shapes[0]))])
    return dims


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
        self.reached: dict[str, str] = {}
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


def compare(expected, actual, where: str) -> float:
    """Max error between two host-shaped values, absolute where |expected| <= 1 and relative to it above
    (float32 keeps 7 digits: 1e8 computed two ways differs by units); raises RewriteMismatch on structural
    differences."""
    if isinstance(expected, np.ndarray) or isinstance(actual, np.ndarray):
        e, a = np.asarray(expected), np.asarray(actual)
        if e.shape != a.shape or e.dtype != a.dtype:
            raise RewriteMismatch(f"{where}: expected {e.dtype}{list(e.shape)}, got {a.dtype}{list(a.shape)}")
        if e.size == 0:
            return 0.0
        if e.dtype.kind in "fc":
            wide = np.complex128 if e.dtype.kind == "c" else np.float64
            e, a = e.astype(wide), a.astype(wide)
            if not np.array_equal(np.isnan(e), np.isnan(a)):  # NaN - x is NaN, which no tolerance test catches
                raise RewriteMismatch(f"{where}: NaN at different positions")
            same = (e == a) | np.isnan(e)  # equal infinities too: inf - inf is NaN
            e, a = np.where(same, 0, e), np.where(same, 0, a)
            scale = np.abs(e)
            scale = np.where(np.isfinite(scale) & (scale > 1), scale, 1)  # an infinity expected: absolute (inf)
            return float(np.max(np.abs(e - a) / scale))
        if not np.array_equal(e, a):
            raise RewriteMismatch(f"{where}: integer/bool values differ")
        return 0.0
    if isinstance(expected, (tuple, list)):
        if type(expected) is not type(actual) or len(expected) != len(actual):
            raise RewriteMismatch(f"{where}: expected a {type(expected).__name__} of {len(expected)}, got {_describe(actual)}")
        return max([compare(e, a, f"{where}[{i}]") for i, (e, a) in enumerate(zip(expected, actual))], default=0.0)
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or list(expected) != list(actual):
            raise RewriteMismatch(f"{where}: expected dict keys {list(expected)}, got {_describe(actual)}")
        return max([compare(expected[k], actual[k], f"{where}[{k!r}]") for k in expected], default=0.0)
    if isinstance(expected, float) and isinstance(actual, (float, int)):
        return compare(np.array(expected, np.float64), np.array(actual, np.float64), where)
    if type(expected) is not type(actual) or expected != actual:
        raise RewriteMismatch(f"{where}: expected {expected!r}, got {actual!r}")
    return 0.0


def _describe(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__


def _checked_run(exp: Exploration, model, inputs: tuple, label: str, tol: float, may_refuse: bool = False):
    """A natural run of the rewritten program, compared with the original model; its path.

    The rewritten program runs first, with its loops capped, so that a loop that never ends is
    reported instead of run for ever in the model. With `may_refuse` (an input at another size,
    which the model may refuse: `assert x.shape[0] <= 64`, an argmax over 0 rows), both may raise
    (then the path is None), but not only one of them.
    """
    try:
        got, path = exp.run(inputs)
    except (EndlessLoop, RewriteMismatch):
        raise
    except Exception as raised:
        if not may_refuse:
            raise
        try:
            with torch.no_grad():
                model(*inputs)
        except Exception:
            return None
        raise RewriteMismatch(f"{label}: the rewritten program raises {raised!r}, the model does not") from None
    try:
        with torch.no_grad():
            expected = to_numpy(model(*inputs))
    except Exception as refused:
        if not may_refuse:
            raise
        raise RewriteMismatch(f"{label}: the model raises {refused!r}, the rewritten program does not") from None
    err = compare(expected, got, f"{label}: output")
    if err > tol:
        raise RewriteMismatch(f"{label}: the rewritten program differs from the model by {err:.3g}")
    exp.expected.append(expected)
    return path


def _endless(exc: "EndlessLoop", origins: dict, label: str) -> Exception:
    origin = origins.get(exc.decision)
    if origin is None:
        return RewriteMismatch(f"{label}: loop {exc.decision} {exc.why}")
    return ConversionError([Diagnostic(
        "endless-loop", Location(origin.file, origin.first, origin.col), "loop that does not end",
        f"exploration ran this loop on {label} and it {exc.why}; a package would hang the same way",
        "make sure the loop's condition changes, or bound it (`for _ in range(max_steps):` with a `break`)")])


def path_forcing(path: tuple, classes: dict[str, str]) -> tuple:
    """The value-determined decisions of a path that went one way only, as a forcing (hashable: sorted pairs)."""
    arms: dict[str, set] = {}
    for decision, taken in path:
        if classes.get(decision) == DecisionClass.VALUE:
            arms.setdefault(decision, set()).add(taken)
    return tuple(sorted((d, next(iter(a))) for d, a in arms.items() if len(a) == 1))


def explore(model, host, module, region_names, inputs: list[tuple], tol: float = 1e-4, max_forced: int = 4,
            region_loops: dict[str, str] | None = None, resized: list[tuple] | None = None, symbols_of=None,
            on_run=None, loop_origins: dict | None = None, observed: dict[str, list[str]] | None = None):
    """Natural runs (checked against `model`), then forced runs until every arm is covered.

    A loop that runs more than MAX_ITERATIONS times, or a run longer than MAX_SECONDS, stops
    exploration: a diagnostic at the loop's origin (`loop_origins`: decision -> Origin).

    `resized` are inputs at other sizes of the declared dynamic dims: each is
    run naturally (and checked) and under every forcing used, so every region
    sees every size and its varying dims become symbolic. `on_run(detail,
    done, total)` hears of each natural run. `observed`: per decision, the names the
    instrumented host passes at its test (`Exploration.at_decisions`).
    """
    exp = Exploration(model, host, module, region_names)
    exp.region_loops = region_loops or {}
    exp.observed = observed or {}
    if symbols_of is not None:
        exp.symbols_of = symbols_of
    natural_paths = []
    seen_paths: list = []  # the paths of the resized inputs and of forced runs
    reached_under: dict[str, tuple[int, dict]] = {}  # decision -> (input, forcing) that first reached it
    natural = len(inputs) + len(resized or [])
    label = ""
    try:
        for k, inp in enumerate(inputs):
            if on_run:
                on_run(f"running sample {k + 1} of {len(inputs)}", k, natural)
            label = "the example" if k == 0 else f"sample {k}"
            path = _checked_run(exp, model, inp, label, tol)
            natural_paths.append(path)
            for d, _ in path:
                reached_under.setdefault(d, (k, {}))
        exp.paths = natural_paths
        for k, inp in enumerate(resized or []):
            if on_run:
                on_run(f"running resized input {k + 1} of {len(resized)}", len(inputs) + k, natural)
            label = f"the example at another size ({k})"
            seen_paths.append(_checked_run(exp, model, inp, label, tol, may_refuse=True))
    except EndlessLoop as exc:
        raise _endless(exc, loop_origins or {}, label) from None
    if on_run:
        on_run("forcing the decisions no sample took", natural, natural)
    exp.natural_arms = set(exp.arms)
    forcings: list[dict] = []
    # Force the arms no sample took. A decision first reached under some forcing
    # is forced on top of it, so arms nested under forced arms get covered too.
    forced_runs = 0
    for _ in range(max_forced):
        missing = sorted((d, v) for d in reached_under for v in (True, False)
                         if (d, v) not in exp.arms and exp.classes.get(d) == DecisionClass.VALUE)
        progress = False
        for decision, value in missing:
            if (decision, value) in exp.arms:
                continue
            first, under = reached_under[decision]
            force = {**under, decision: value}
            for k in [first] + [i for i in range(min(3, len(inputs))) if i != first]:
                try:
                    _, path = exp.run(inputs[k], force)
                except Exception:
                    continue  # a forced arm may be impossible for this input
                forced_runs += 1
                progress = True
                forcings.append(force)
                seen_paths.append(path)
                for d, _ in path:
                    reached_under.setdefault(d, (k, force))
                break
        if not progress:
            break
    # Loops: run each at most 0, 1 and 2 times, and a `while` exactly 1 and 2 times (more than any sample
    # may have run it), so code after a loop, and state it grows, see several trip counts.
    for decision, dclass in sorted(exp.classes.items()):
        if dclass not in (DecisionClass.EXECUTION, LoopKind.FOR) or decision not in reached_under:
            continue
        first, under = reached_under[decision]
        for n in (0, 1, 2) + ((Exactly(1), Exactly(2)) if dclass == DecisionClass.EXECUTION else ()):
            try:
                exp.run(inputs[first], {**under, decision: n})
                forced_runs += 1
                forcings.append({**under, decision: n})
            except Exception:
                continue
    forced_runs += _force_shapes(exp, inputs, reached_under)
    if resized:  # every arm at every declared size, not only the arms samples missed
        for decision, (first, under) in sorted(reached_under.items()):
            if exp.classes.get(decision) == DecisionClass.VALUE:
                forcings.extend({**under, decision: v} for v in (True, False))
        # and every path seen: a region behind two decisions (`else:` of an `elif`) needs both forced
        # at once, or the other sizes may never reach it and its dims stay those of one size
        paths = natural_paths + [p for p in seen_paths if p is not None]  # None: an input the model refused
        forcings.extend(dict(f) for f in dict.fromkeys(path_forcing(p, exp.classes) for p in paths) if f)
    for force in forcings:
        for inp in resized or []:
            try:
                exp.run(inp, force)
                forced_runs += 1
            except Exception:
                continue
    forced_runs += _replay_at_other_sizes(exp, resized or [])
    return exp, forced_runs


def _force_shapes(exp: Exploration, inputs: list[tuple], reached_under: dict) -> int:
    """Last resort, for code behind a shape test no input passes (transformers pads the attention mask
    when the cache and the mask differ in length, which they never do in a generation loop): force
    the shape tests no run took, so that the regions no run reached get example shapes. Such a run
    may be impossible (it raises and is skipped), is never compared with the model, and records
    nothing but the examples of those regions."""
    runs = 0
    missing = sorted((d, v) for d in reached_under for v in (True, False)
                     if (d, v) not in exp.arms and exp.classes.get(d) == "shape")
    for decision, value in missing:
        unreached = {name for name, record in exp.records.items() if not record.examples}
        if not unreached:
            break
        first, under = reached_under[decision]
        exp.recording = unreached
        try:
            reached = False
            for k in [first] + [i for i in range(min(3, len(inputs))) if i != first]:
                try:
                    exp.run(inputs[k], {**under, decision: value}, record_arms=False)
                    runs += 1
                except Exception:
                    continue
                # once it reaches such a region, at the other inputs' sizes too; else the next arm
                reached = reached or any(exp.records[name].examples for name in unreached)
                if not reached:
                    break
        finally:
            exp.recording = None
    return runs


def _replay_at_other_sizes(exp: Exploration, resized: list[tuple]) -> int:
    """Replay the paths that reached a region seen at one size of a dynamic symbol at every other size.

    A region behind `if h.shape[0] > 3:` may be reached at one batch size only. Which of its
    input dims follow the batch cannot be told from one size (a dim of 5 at batch 5 may be
    either); taking the same decisions at the other sizes runs the same code on inputs of those
    sizes, so the dims that follow a symbol vary and become symbolic, and the compiled region is
    verified at those sizes too. Regions still at one size afterwards are `RegionRecord.one_size`.
    """
    runs, replayed = 0, set()
    for record in exp.records.values():
        if not record.examples or not record.one_size() or not _has_dims(record):
            continue
        for path in record.reached_by:
            if not record.one_size():
                break
            if path in replayed:
                continue
            replayed.add(path)
            for inp in resized:
                try:
                    exp.run(inp, replay=path)
                except Exception:  # _ReplayEnd: the path ended (the region was reached) or left it
                    pass
                runs += 1
    return runs


def _has_dims(record: RegionRecord) -> bool:
    return any(len(shape) for shape, _ in next(iter(record.examples)))
