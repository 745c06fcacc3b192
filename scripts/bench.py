#!/usr/bin/env python
"""Benchmark converted zoo models against eager PyTorch and its peers: single thread, medians, one run.

    python scripts/bench.py                          # every zoo model, every column
    python scripts/bench.py --models skipnet moe --no-compile --out build/bench

Per zoo model, on the same sample inputs (several paths), interleaved so every
side sees the same machine load: eager PyTorch; torch.compile (inductor);
TorchScript → ONNX → onnxruntime where it exports; dycl with onnxruntime (as
converted: decisions and loops inside graphs where possible), and again with
every decision in the host (--fuse none); dycl with TVM, untuned, and tuned with
MetaSchedule for --tune-models; and the oracle (the exact path of each input as
one onnxruntime graph that also computes the values its decisions read; and, for
reference, that graph without them, as a plain trace gives it). Reports latency ratios, backend calls per inference,
host overhead (dycl ÷ oracle − 1), conversion time and peak memory of a
production process against an eager one. With declared dynamic dims, a second table
compares the dynamic package with packages converted for one size each.
Writes Markdown, JSON and a bar chart (PNG) to --out.
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
sys.path[:0] = [ROOT, os.path.join(ROOT, "scripts")]

import torch  # noqa: E402

import dycl  # noqa: E402
import peers  # noqa: E402
from dycl.convert import ConvertOptions, convert  # noqa: E402
from dycl.compare import to_numpy  # noqa: E402
from dycl.modelfile import resized_inputs  # noqa: E402


def _median_time(fn, args, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _count_calls(net) -> list[int]:
    counter = [0]
    for region in vars(net.regions).values():
        if region.fn is None:
            continue

        def counted(arrays, fn=region.fn):
            counter[0] += 1
            return fn(arrays)

        region.fn = counted
    return counter


def _convert(path: str, out: str, n_inputs: int, backend: str = "onnxruntime", fuse: str = "measured", tune=None):
    start = time.perf_counter()
    opts = ConvertOptions(path, out, backend=backend, check=n_inputs)
    opts.fuse, opts.tune = fuse, tune
    result = convert(opts)
    return result, time.perf_counter() - start


def _calls(net, np_inputs) -> list[int]:
    counter = _count_calls(net)
    calls = []
    for a in np_inputs:
        counter[0] = 0
        net(*a)
        calls.append(counter[0])
    return calls


def bench_model(path: str, workdir: str, args) -> dict:
    name = os.path.splitext(os.path.basename(path))[0]
    print(f"  {name}: converting", file=sys.stderr)
    result, convert_s = _convert(path, os.path.join(workdir, name), args.inputs)
    host_result, _ = _convert(path, os.path.join(workdir, f"{name}-host"), args.inputs, fuse="none")
    model, spec = result.spec.model, result.spec
    net = dycl.load(result.out, threads=1)
    host_net = dycl.load(host_result.out, threads=1)
    inputs = spec.sample_inputs(args.inputs)
    np_inputs = [tuple(to_numpy(v) for v in inp) for inp in inputs]
    row = {"model": name, "regions": len(result.program.regions), "paths": result.check.paths,
           "convert_s": convert_s}

    # Who runs what: each side is a zero-argument callable per input.
    sides = {"eager": [lambda inp=inp: model(*inp) for inp in inputs],
             "dycl_ort": [lambda a=a: net(*a) for a in np_inputs],
             "dycl_ort_host": [lambda a=a: host_net(*a) for a in np_inputs]}
    oracle = peers.Oracle(model)
    paths = [peers.path_of(host_net, a) for a in np_inputs]  # decisions in the host show each input's path
    for side, graphs in (("oracle", oracle), ("oracle_dead", peers.Oracle(model, decisions=False)),
                         ("oracle_nan", peers.Oracle(model, nan_exact=True))):
        runs = [graphs.runner(p, inp) for p, inp in zip(paths, inputs)]
        if all(runs):
            sides[side] = runs
    row["oracle_graphs"] = len(oracle.sessions)
    from dycl.runtime.verify import artifact_paths

    onnx_files = sorted({p for p in artifact_paths(result.out, net.manifest).values() if p.endswith(".onnx")})
    row["graph_counts"] = peers.optimised_counts(onnx_files)
    oracle_counts = [peers.optimised_counts([g]) for g in oracle.graphs.values()]
    if oracle_counts:
        row["oracle_reorders_max"] = max(c["reorders"] for c in oracle_counts)
    if not args.no_tvm:
        tvm_result, row["tvm_convert_s"] = _convert(path, os.path.join(workdir, f"{name}-tvm"), args.inputs, "tvm")
        compile_s = [s for a, s in tvm_result.compile_seconds.items() if a.endswith(".so")]
        if compile_s:
            row["tvm_compile_s_median"], row["tvm_compile_s_max"] = statistics.median(compile_s), max(compile_s)
        tvm_net = dycl.load(tvm_result.out, threads=1)
        sides["dycl_tvm"] = [lambda a=a: tvm_net(*a) for a in np_inputs]
        if name in (args.tune_models or []):
            from dycl.backends.tvm_tune import TuneSettings

            settings = TuneSettings(args.tune, args.tune_budget, cache=args.tune_cache or os.path.join(workdir, "tuning"))
            tuned, row["tvm_tune_s"] = _convert(path, os.path.join(workdir, f"{name}-tvm-tuned"), args.inputs,
                                                "tvm", tune=settings)
            row["tune_trials"] = sum(t["trials"] for t in tuned.tuning)
            tuned_net = dycl.load(tuned.out, threads=1)
            sides["dycl_tvm_tuned"] = [lambda a=a: tuned_net(*a) for a in np_inputs]
    ts_sess, row["torchscript_error"] = peers.torchscript_session(model, inputs[0])
    if ts_sess is not None:
        feeds = [{i.name: v.numpy() for i, v in zip(ts_sess.get_inputs(), inp)} for inp in inputs]
        sides["torchscript_ort"] = [lambda f=f: ts_sess.run(None, f) for f in feeds]
    if not args.no_compile:
        compiled = peers.compiled_model(model)
        with torch.no_grad():
            row["compile_first_s"] = peers.first_call_seconds(compiled, inputs[0])
            for inp in inputs[1:]:  # recompiles for new paths happen here, not in the timing
                compiled(*inp)
        sides["torch_compile"] = [lambda inp=inp: compiled(*inp) for inp in inputs]

    calls, host_calls = _calls(net, np_inputs), _calls(host_net, np_inputs)
    row["calls_median"], row["calls_max"] = statistics.median(calls), max(calls)
    row["host_calls_median"], row["host_calls_max"] = statistics.median(host_calls), max(host_calls)

    times = {side: [] for side in sides}
    with torch.no_grad():
        for k in range(len(inputs)):
            for side, fns in sides.items():
                for _ in range(3):
                    fns[k]()
            for side, fns in sides.items():
                times[side].append(_median_time(fns[k], (), args.repeat))
    for side, ts in times.items():
        row[f"{side}_ms"] = statistics.median(ts) * 1e3
    if "oracle_ms" in row:
        row["host_overhead"] = row["dycl_ort_ms"] / row["oracle_ms"] - 1
        row["oracle_gap_us"] = (row["dycl_ort_ms"] - row["oracle_ms"]) * 1e3
    if "oracle_nan_ms" in row:
        row["nan_overhead"] = row["dycl_ort_ms"] / row["oracle_nan_ms"] - 1
        row["nan_gap_us"] = (row["dycl_ort_ms"] - row["oracle_nan_ms"]) * 1e3
    if not args.no_memory:
        row["prod_mb"], row["eager_mb"] = peers.peak_memory_mb(path, result.out, np_inputs[:5])
    return row


def _sizes(base: int) -> list[int]:
    return sorted({max(1, round(base * f)) for f in (0.5, 0.75, 1.0, 1.5, 2.0)})


def bench_dynamic(path: str, workdir: str, n_inputs: int, repeat: int) -> list[dict]:
    """Per size of each declared symbol: the dynamic package vs one converted for that size only."""
    from dycl.sizes import symbol_sizes

    name = os.path.splitext(os.path.basename(path))[0]
    dyn, _ = _convert(path, os.path.join(workdir, f"{name}-dynamic"), n_inputs)
    if not dyn.spec.dynamic:
        return []
    net = dycl.load(dyn.out, threads=1)
    params = dyn.spec.params
    rows = []
    for symbol, base in sorted(symbol_sizes(dyn.spec, dyn.spec.inputs).items()):
        for size in _sizes(base):
            opts = ConvertOptions(path, os.path.join(workdir, f"{name}-{symbol}{size}"), check=n_inputs)
            opts.fixed_sizes = {symbol: size}
            static = dycl.load(convert(opts).out, threads=1)
            inputs = [tuple(to_numpy(v) for v in resized_inputs(s, params, dyn.spec.dynamic, symbol, size))
                      for s in dyn.spec.sample_inputs(n_inputs)]
            d_times, s_times = [], []
            for a in inputs:
                for _ in range(3):
                    net(*a)
                    static(*a)
                d_times.append(_median_time(net, a, repeat))
                s_times.append(_median_time(static, a, repeat))
            d, st = statistics.median(d_times), statistics.median(s_times)
            rows.append({"model": name, "symbol": symbol, "size": size, "dynamic_ms": d * 1e3,
                         "static_ms": st * 1e3, "ratio": d / st})
    return rows


def _ratio(row, side):
    ms = row.get(f"{side}_ms")
    return f"{row['eager_ms'] / ms:.2f}x" if ms else "–"


def markdown(rows: list[dict], dynamic_rows: list[dict], args) -> str:
    lines = ["| model | eager (ms) | dycl ort (ms) | vs eager | oracle | host overhead | oracle, NaN as torch | "
             "overhead vs it | oracle w/o decision work | "
             "decisions in host | torch.compile | TorchScript→ORT | dycl TVM | backend calls (median, max) | in host | "
             "regions | convert ort / tvm (s) | peak MB prod / eager |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        overhead = f"{100 * r['host_overhead']:+.0f}% ({r['oracle_gap_us']:+.0f} µs)" if "host_overhead" in r else "–"
        nan = f"{100 * r['nan_overhead']:+.0f}% ({r['nan_gap_us']:+.0f} µs)" if "nan_overhead" in r else "–"
        ts = _ratio(r, "torchscript_ort") if r.get("torchscript_ort_ms") else "fails"
        mem = f"{r['prod_mb']:.0f} / {r['eager_mb']:.0f}" if "prod_mb" in r else "–"
        tvm_s = f"{r['tvm_convert_s']:.1f}" if "tvm_convert_s" in r else "–"
        lines.append(f"| {r['model']} | {r['eager_ms']:.3f} | {r['dycl_ort_ms']:.3f} | {_ratio(r, 'dycl_ort')} | "
                     f"{_ratio(r, 'oracle')} | {overhead} | {_ratio(r, 'oracle_nan')} | {nan} | "
                     f"{_ratio(r, 'oracle_dead')} | {_ratio(r, 'dycl_ort_host')} | "
                     f"{_ratio(r, 'torch_compile')} | {ts} | "
                     f"{_ratio(r, 'dycl_tvm')} | {r['calls_median']:g}, {r['calls_max']} | "
                     f"{r['host_calls_median']:g}, {r['host_calls_max']} | {r['regions']} | "
                     f"{r['convert_s']:.1f} / {tvm_s} | {mem} |")
    geo = statistics.geometric_mean([r["eager_ms"] / r["dycl_ort_ms"] for r in rows])
    lines += ["", f"Ratios are speed-ups over eager (higher is faster). Geomean dycl (onnxruntime) over eager: "
                  f"{geo:.2f}x. Single thread, medians over {args.inputs} inputs x {args.repeat} runs, one run.",
              "The oracle runs each input's path as one graph that also computes what its decisions read; "
              "the column without decision work is a plain trace, where onnxruntime drops that work "
              "(no approach that takes the decisions can)."]
    lines.append("Both the oracle and dycl call onnxruntime through the same raw binding (fixed feed and output "
                 "names); host overhead is dycl ÷ oracle − 1, with the gap in µs per inference.")
    lines.append("The oracle with NaN as torch has the repairs dycl makes where onnxruntime's NaN handling differs "
                 "from torch's (argmax, max pools and reductions), which any package exact on NaN must pay.")
    for what, ratio, gap in (("the oracle", "host_overhead", "oracle_gap_us"),
                             ("the oracle with NaN as torch", "nan_overhead", "nan_gap_us")):
        within = [r["model"] for r in rows if r.get(ratio, 1) <= 0.10 or r.get(gap, 99) <= 10]
        lines.append(f"Within 10% or 10 µs of {what}: {len(within)} of {len(rows)} ({', '.join(within) or 'none'}).")
    lines += ["", "onnxruntime's level-ALL optimised graphs, subgraphs included (the package's regions summed; "
                  "the oracle's most per path):", "",
              "| model | Ifs | reorders | Identities | oracle reorders |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['model']} | {r['graph_counts']['ifs']} | {r['graph_counts']['reorders']} | "
              f"{r['graph_counts']['identities']} | {r.get('oracle_reorders_max', '–')} |" for r in rows]
    compiled = [r for r in rows if "tvm_compile_s_max" in r]
    if compiled:
        slowest = max(compiled, key=lambda r: r["tvm_compile_s_max"])
        lines.append(f"Untuned TVM compile per region (from_onnx to shared library): median of the models' medians "
                     f"{statistics.median(r['tvm_compile_s_median'] for r in compiled):.2f} s, slowest region "
                     f"{slowest['tvm_compile_s_max']:.2f} s ({slowest['model']}).")
    tuned = [r for r in rows if r.get("dycl_tvm_tuned_ms")]
    if tuned:
        lines += ["", "| model | TVM untuned (ms) | TVM tuned (ms) | onnxruntime, same regions (ms) | tuned ÷ onnxruntime | "
                      "trials | tuning + conversion (s) |", "|---|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['model']} | {r['dycl_tvm_ms']:.3f} | {r['dycl_tvm_tuned_ms']:.3f} | "
                  f"{r['dycl_ort_host_ms']:.3f} | {r['dycl_tvm_tuned_ms'] / r['dycl_ort_host_ms']:.2f} | "
                  f"{r['tune_trials']} | {r['tvm_tune_s']:.0f} |" for r in tuned]
        lines.append(f"Tuned with {args.tune} trials per kernel on average"
                     + (f", reusing the records in {args.tune_cache}: trials and seconds count only what this run "
                        "tuned itself." if args.tune_cache else ", from no records: the seconds are the whole tuning."))
    failures = [f"- {r['model']}: TorchScript→ONNX {r['torchscript_error']}" for r in rows if r.get("torchscript_error")]
    if failures:
        lines += ["", *failures]
    if dynamic_rows:
        lines += ["", "| model | dim | size | dynamic package (ms) | converted for this size only (ms) | ratio |",
                  "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {r['model']} | {r['symbol']} | {r['size']} | {r['dynamic_ms']:.3f} | {r['static_ms']:.3f} | "
                  f"{r['ratio']:.2f} |" for r in dynamic_rows]
        ratios = [r["ratio"] for r in dynamic_rows]
        lines += ["", f"Dynamic package vs one-size packages: median {statistics.median(ratios):.2f}, "
                      f"worst {max(ratios):.2f}."]
    return "\n".join(lines) + "\n"


def chart(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sides = [("dycl_ort", "dycl (onnxruntime)"), ("dycl_ort_host", "dycl, decisions in host"),
             ("oracle", "oracle (path as one graph)"),
             ("torch_compile", "torch.compile"), ("torchscript_ort", "TorchScript→ORT"), ("dycl_tvm", "dycl (TVM)")]
    sides = [(s, label) for s, label in sides if any(r.get(f"{s}_ms") for r in rows)]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows)), 4))
    width = 0.8 / len(sides)
    for k, (side, label) in enumerate(sides):
        values = [r["eager_ms"] / r[f"{side}_ms"] if r.get(f"{side}_ms") else 0 for r in rows]
        ax.bar([i + k * width for i in range(len(rows))], values, width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([i + width * (len(sides) - 1) / 2 for i in range(len(rows))])
    ax.set_xticklabels([r["model"] for r in rows], rotation=30, ha="right")
    ax.set_ylabel("speed-up over eager PyTorch")
    ax.set_title("Single-thread latency, medians")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zoo", default=os.path.join(ROOT, "models_zoo"))
    parser.add_argument("--models", nargs="*", help="zoo model names (default: all)")
    parser.add_argument("--inputs", type=int, default=20, help="sample inputs per model")
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per input")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "bench"), help="where bench.md/.json/.png go")
    parser.add_argument("--no-tvm", action="store_true", help="skip dycl with TVM")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow first compiles)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory processes")
    parser.add_argument("--no-dynamic", action="store_true", help="skip the per-size dynamic-shape table")
    parser.add_argument("--tune", type=int, default=32, help="MetaSchedule trials per kernel for --tune-models")
    parser.add_argument("--tune-budget", type=float, default=1800, help="seconds of tuning per model")
    parser.add_argument("--tune-models", nargs="*", default=["branchynet"],
                        help="models also converted with tuned TVM (none: --tune-models with no names)")
    parser.add_argument("--tune-cache", metavar="DIR",
                        help="tuning records to reuse and add to, e.g. from a longer `dycl convert --tune` "
                             "(default: an empty folder, so that the table shows the whole tuning time)")
    args = parser.parse_args()

    torch.set_num_threads(1)
    names = args.models or sorted(f[:-3] for f in os.listdir(args.zoo) if f.endswith(".py") and not f.startswith("_"))
    rows, dynamic_rows = [], []
    with tempfile.TemporaryDirectory(prefix="dycl-bench-") as workdir:
        for name in names:
            path = os.path.join(args.zoo, f"{name}.py")
            rows.append(bench_model(path, workdir, args))
            if not args.no_dynamic:
                dynamic_rows.extend(bench_dynamic(path, workdir, min(args.inputs, 10), args.repeat))
    text = markdown(rows, dynamic_rows, args)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench.md"), "w", encoding="utf-8") as fh:
        fh.write(text)
    with open(os.path.join(args.out, "bench.json"), "w", encoding="utf-8") as fh:
        json.dump({"rows": rows, "dynamic": dynamic_rows, "inputs": args.inputs, "repeat": args.repeat}, fh, indent=1)
    try:
        chart(rows, os.path.join(args.out, "speedup.png"))
    except ImportError:
        print("matplotlib is not installed: no chart (pip install 'dycl[bench]')", file=sys.stderr)


if __name__ == "__main__":
    main()
