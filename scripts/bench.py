#!/usr/bin/env python
"""Benchmark converted zoo models against eager PyTorch, single-threaded, medians.

    python scripts/bench.py                      # every zoo model
    python scripts/bench.py --models skipnet moe --repeat 20 --json out.json

For each model: converts it (onnxruntime), then times eager and the converted
package on the same sample inputs (several paths), interleaved so both see
the same machine load. Reports median latency, the speed-up ratio, and the
backend calls one inference costs (median and max over the inputs).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

import dycl  # noqa: E402
from dycl.convert import ConvertOptions, convert  # noqa: E402
from dycl.explore import to_numpy  # noqa: E402
from dycl.modelfile import resized_inputs  # noqa: E402


def _count_calls(net) -> list[int]:
    counter = [0]
    for region in vars(net.regions).values():
        if region.fn is None:
            continue
        fn = region.fn

        def counted(arrays, fn=fn):
            counter[0] += 1
            return fn(arrays)

        region.fn = counted
    return counter


def _median_time(fn, args, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_model(path: str, workdir: str, n_inputs: int, repeat: int, tvm: bool) -> dict:
    name = os.path.splitext(os.path.basename(path))[0]
    start = time.perf_counter()
    result = convert(ConvertOptions(path, os.path.join(workdir, name), check=n_inputs))
    convert_s = time.perf_counter() - start
    model = result.spec.model
    net = dycl.load(result.out, threads=1)
    tvm_net = tvm_convert_s = None
    if tvm:
        start = time.perf_counter()
        tvm_result = convert(ConvertOptions(path, os.path.join(workdir, f"{name}-tvm"), backend="tvm", check=n_inputs))
        tvm_convert_s = time.perf_counter() - start
        tvm_net = dycl.load(tvm_result.out, threads=1)
    counter = _count_calls(net)
    inputs = result.spec.sample_inputs(n_inputs)
    np_inputs = [tuple(to_numpy(v) for v in inp) for inp in inputs]
    calls = []
    for args in np_inputs:
        counter[0] = 0
        net(*args)
        calls.append(counter[0])
    eager, converted, tvm_times = [], [], []
    with torch.no_grad():
        for inp, args in zip(inputs, np_inputs):
            for _ in range(3):  # warm-up, every side
                model(*inp)
                net(*args)
                if tvm_net is not None:
                    tvm_net(*args)
            eager.append(_median_time(model, inp, repeat))
            converted.append(_median_time(net, args, repeat))
            if tvm_net is not None:
                tvm_times.append(_median_time(tvm_net, args, repeat))
    e, c = statistics.median(eager), statistics.median(converted)
    t = statistics.median(tvm_times) if tvm_times else None
    return {
        "tvm_ms": t * 1e3 if t else None,
        "tvm_speedup": e / t if t else None,
        "tvm_convert_s": tvm_convert_s,
        "model": name,
        "eager_ms": e * 1e3,
        "dycl_ms": c * 1e3,
        "speedup": e / c,
        "calls_median": statistics.median(calls),
        "calls_max": max(calls),
        "regions": len(result.program.regions),
        "paths": result.check.paths,
        "convert_s": convert_s,
    }


def _sizes(base: int) -> list[int]:
    return sorted({max(1, round(base * f)) for f in (0.5, 0.75, 1.0, 1.5, 2.0)})


def bench_dynamic(path: str, workdir: str, n_inputs: int, repeat: int) -> list[dict]:
    """Per size of each declared symbol: the dynamic package vs one converted for that size only."""
    from dycl.convert import _fix_sizes, _forward_params, symbol_sizes

    name = os.path.splitext(os.path.basename(path))[0]
    dyn = convert(ConvertOptions(path, os.path.join(workdir, f"{name}-dynamic"), check=n_inputs))
    if not dyn.spec.dynamic:
        return []
    net = dycl.load(dyn.out, threads=1)
    params = _forward_params(dyn.spec.model)
    rows = []
    for symbol, base in sorted(symbol_sizes(dyn.spec, dyn.spec.inputs).items()):
        for size in _sizes(base):
            opts = ConvertOptions(path, os.path.join(workdir, f"{name}-{symbol}{size}"), check=n_inputs)
            opts.fixed_sizes = {symbol: size}
            static = dycl.load(convert(opts).out, threads=1)
            spec = dyn.spec
            inputs = [tuple(to_numpy(v) for v in resized)
                      for resized in (resized_inputs(s, params, spec.dynamic, symbol, size)
                                      for s in spec.sample_inputs(n_inputs))]
            d_times, s_times = [], []
            for args in inputs:
                for _ in range(3):
                    net(*args)
                    static(*args)
                d_times.append(_median_time(net, args, repeat))
                s_times.append(_median_time(static, args, repeat))
            d, st = statistics.median(d_times), statistics.median(s_times)
            rows.append({"model": name, "symbol": symbol, "size": size, "dynamic_ms": d * 1e3,
                         "static_ms": st * 1e3, "ratio": d / st})
            print(f"  {name} {symbol}={size}: dynamic {d * 1e3:.3f} ms, one-size {st * 1e3:.3f} ms", file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zoo", default=os.path.join(ROOT, "models_zoo"))
    parser.add_argument("--models", nargs="*", help="zoo model names (default: all)")
    parser.add_argument("--inputs", type=int, default=20, help="sample inputs per model")
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per input")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--no-dynamic", action="store_true", help="skip the per-size dynamic-shape table")
    parser.add_argument("--no-tvm", action="store_true", help="skip the TVM backend column")
    args = parser.parse_args()

    torch.set_num_threads(1)
    names = args.models or sorted(f[:-3] for f in os.listdir(args.zoo) if f.endswith(".py") and not f.startswith("_"))
    rows, dynamic_rows = [], []
    with tempfile.TemporaryDirectory(prefix="dycl-bench-") as workdir:
        for name in names:
            path = os.path.join(args.zoo, f"{name}.py")
            rows.append(bench_model(path, workdir, args.inputs, args.repeat, not args.no_tvm))
            r = rows[-1]
            print(f"  {r['model']}: eager {r['eager_ms']:.3f} ms, dycl {r['dycl_ms']:.3f} ms", file=sys.stderr)
            if not args.no_dynamic:
                dynamic_rows.extend(bench_dynamic(path, workdir, min(args.inputs, 10), args.repeat))
    print("| model | eager (ms) | dycl onnxruntime (ms) | speed-up | dycl TVM untuned (ms) | speed-up | "
          "backend calls / inference (median, max) | regions | paths | convert ort / tvm (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        tvm_ms = f"{r['tvm_ms']:.3f} | {r['tvm_speedup']:.2f}x" if r["tvm_ms"] else "– | –"
        tvm_s = f"{r['tvm_convert_s']:.1f}" if r["tvm_convert_s"] else "–"
        print(f"| {r['model']} | {r['eager_ms']:.3f} | {r['dycl_ms']:.3f} | {r['speedup']:.2f}x | {tvm_ms} | "
              f"{r['calls_median']:g}, {r['calls_max']} | {r['regions']} | {r['paths']} | "
              f"{r['convert_s']:.1f} / {tvm_s} |")
    geo = statistics.geometric_mean([r["speedup"] for r in rows])
    print(f"\nGeomean speed-up over eager: {geo:.2f}x (single thread, medians over {args.inputs} inputs "
          f"x {args.repeat} runs)")
    if dynamic_rows:
        print("\n| model | dim | size | dynamic package (ms) | converted for this size only (ms) | ratio |")
        print("|---|---|---:|---:|---:|---:|")
        for r in dynamic_rows:
            print(f"| {r['model']} | {r['symbol']} | {r['size']} | {r['dynamic_ms']:.3f} | {r['static_ms']:.3f} | "
                  f"{r['ratio']:.2f} |")
        worst = max(r["ratio"] for r in dynamic_rows)
        print(f"\nDynamic package vs one-size packages: worst ratio {worst:.2f} "
              f"(median {statistics.median(r['ratio'] for r in dynamic_rows):.2f})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"rows": rows, "geomean_speedup": geo, "dynamic": dynamic_rows}, fh, indent=1)


if __name__ == "__main__":
    main()
