#!/usr/bin/env python
"""What one call of a loaded package spends in Python: 1 thread, interleaved rounds, medians (µs per inference).

    python scripts/call_overhead.py build/zoo/moe models_zoo/moe.py [-n 8]

On the model file's sample inputs, four ways, alternating round by round:
the package called as users call it; its host function called directly (no
input check); and both again with each region's backend call replaced by a
replay of the results it gave. The replayed call, less the replay's own cost
(printed too), is dycl's Python layers: input check, host code, region
wrappers. The backend's binding (feed dict, onnxruntime's Python binding)
counts with the graphs. In a real call the layers cost more than replayed
(the graphs evict their caches): compare "call" with "host function".
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT]

import dycl  # noqa: E402
from dycl.compare import to_numpy  # noqa: E402
from dycl.modelfile import load_model_file  # noqa: E402


def _per_inference(calls: list, repeat: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(repeat):
        for call in calls:
            call()
    return (time.perf_counter_ns() - start) / (repeat * len(calls)) / 1e3


def _replaying(net, inputs: list[tuple]) -> tuple[list, list]:
    """`net` with each region's backend call replaced by a replay of its results, one list per input; and the
    replay's own calls, made alone, to subtract."""
    regions = [r for r in vars(net.regions).values() if r.fn is not None]
    recorded: list[list] = []  # per input: (region, results) in call order

    def recording(fn):
        def call(arrays):
            results = fn(arrays)
            recorded[-1].append(list(results))
            return results
        return call

    for region in regions:
        region.fn = recording(region.fn)
    for args in inputs:
        recorded.append([])
        net(*args)
    script = iter(())

    def replay(arrays):
        return list(next(script))

    for region in regions:
        region.fn = replay

    def run(call, results):
        def again():
            nonlocal script
            script = iter(results)
            call()
        return again

    model = [run(lambda a=a: net(*a), r) for a, r in zip(inputs, recorded)]
    forward = [run(lambda a=a: net._forward(net.regions, *a), r) for a, r in zip(inputs, recorded)]
    alone = [run(lambda n=len(r): [replay(None) for _ in range(n)], r) for r in recorded]
    return model + forward, alone


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package")
    ap.add_argument("model_file")
    ap.add_argument("-n", "--inputs", type=int, default=8, help="sample inputs (several paths)")
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args(argv)
    inputs = [tuple(to_numpy(v) for v in s) for s in load_model_file(args.model_file).sample_inputs(args.inputs)]
    real = dycl.load(args.package, threads=1)
    replayed = dycl.load(args.package, threads=1)
    replays, alone = _replaying(replayed, inputs)
    k = len(inputs)
    sides = {"call": [lambda a=a: real(*a) for a in inputs],
             "host function": [lambda a=a: real._forward(real.regions, *a) for a in inputs],
             "call, graphs replayed": replays[:k], "host function, graphs replayed": replays[k:],
             "the replay alone": alone}
    times: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(args.rounds):
        for side, calls in sides.items():
            times[side].append(_per_inference(calls, 20))
    med = {side: statistics.median(t) for side, t in times.items()}
    for side, t in med.items():
        print(f"{side:32s} {t:8.2f} µs")
    python = med["call, graphs replayed"] - med["the replay alone"]
    check = med["call, graphs replayed"] - med["host function, graphs replayed"]
    print(f"Python layers {python:.2f} µs per inference (input check {check:.2f}); "
          f"graphs and their binding {med['call'] - python:.2f} µs")


if __name__ == "__main__":
    main()
