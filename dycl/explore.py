"""Shape exploration: run the rewritten program in torch, force every decision both ways.

Every region gets example inputs (even regions no sample reaches), every
region input dim seen to vary becomes symbolic, and the natural runs check
the rewrite against the original model before anything is exported.

One run of the rewritten program, and what it records, is recording.py (region_record.py: what it
saw of one region); comparing results with the model's is compare.py.
"""
from __future__ import annotations

import torch

from rewrite.diagnostics import ConversionError, Diagnostic, Location
from rewrite.kinds import DecisionClass, LoopKind

from .compare import RewriteMismatch, compare, to_numpy
from .recording import EndlessLoop, Exactly, Exploration
from .region_record import RegionRecord

__all__ = ["explore", "path_forcing"]


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
