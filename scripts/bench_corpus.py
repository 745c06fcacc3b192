#!/usr/bin/env python
"""The library corpus (tests/corpus: transformers and timm modules, unmodified) against eager PyTorch.

    python scripts/bench_corpus.py                     # every corpus model
    python scripts/bench_corpus.py --models moe_mixtral --repeat 20 --out build/corpus

Per model: conversion seconds (wall, and CPU time of this process: the machine's load does not
inflate it), paths covered, max error δ and decision inconsistency η on the
check inputs, and the median latency of the converted package (onnxruntime) and of eager PyTorch on
the same sample inputs, single-threaded and interleaved so both see the same machine load.
Writes a Markdown table (and JSON) to --out.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT]
CORPUS = os.path.join(ROOT, "tests", "corpus")

import torch  # noqa: E402

import dycl  # noqa: E402
from dycl.convert import ConvertOptions, convert  # noqa: E402
from dycl.compare import to_numpy  # noqa: E402


def bench(path: str, workdir: str, n_inputs: int, repeat: int, check: int) -> dict:
    name = os.path.splitext(os.path.basename(path))[0]
    opts = ConvertOptions(path, os.path.join(workdir, name), "onnxruntime", check)
    start, cpu = time.perf_counter(), time.process_time()
    result = convert(opts)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    model = result.spec.model
    inputs = result.spec.sample_inputs(n_inputs, seed=1)
    np_inputs = [tuple(to_numpy(v) for v in inp) for inp in inputs]
    net = dycl.load(result.out)
    eager, compiled = [], []
    with torch.no_grad():
        for _ in range(repeat):
            for inp, np_inp in zip(inputs, np_inputs):
                t0 = time.perf_counter()
                model(*inp)
                t1 = time.perf_counter()
                net(*np_inp)
                t2 = time.perf_counter()
                eager.append(t1 - t0)
                compiled.append(t2 - t1)
    e, c = statistics.median(eager), statistics.median(compiled)
    return {"model": name, "convert_s": seconds, "convert_cpu_s": cpu, "paths": result.check.paths, "delta": result.check.delta,
            "eta": result.check.eta, "eager_ms": e * 1e3, "dycl_ms": c * 1e3, "speedup": e / c}


def markdown(rows: list[dict]) -> str:
    lines = ["| model | convert (s) | convert CPU (s) | paths | δ | η | eager (ms) | dycl ort (ms) | speed-up |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['convert_s']:.1f} | {r['convert_cpu_s']:.1f} | {r['paths']} | {r['delta']:.1e} | {r['eta']} | "
                     f"{r['eager_ms']:.3f} | {r['dycl_ms']:.3f} | {r['speedup']:.2f}× |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", help="corpus file names without .py (default: all)")
    parser.add_argument("--inputs", type=int, default=8, help="sample inputs timed per model")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--check", type=int, default=20, help="check inputs per conversion")
    parser.add_argument("--out", default=None, help="folder for corpus.md and corpus.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    paths = sorted(glob.glob(os.path.join(CORPUS, "[!_]*.py")))
    if args.models:
        paths = [p for p in paths if os.path.splitext(os.path.basename(p))[0] in args.models]
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for path in paths:
            try:
                rows.append(bench(path, workdir, args.inputs, args.repeat, args.check))
            except Exception as exc:  # a model that does not convert is reported, not skipped silently
                print(f"{os.path.basename(path)}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
                      file=sys.stderr)
    table = markdown(rows)
    print(table)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "corpus.md"), "w", encoding="utf-8") as fh:
            fh.write(table + "\n")
        with open(os.path.join(args.out, "corpus.json"), "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
