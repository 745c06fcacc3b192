#!/usr/bin/env python
"""The DyCL paper's subjects, unmodified: dycl's speed-up over eager next to the original DyCL pipeline's.

    python scripts/bench_subjects.py                              # every adapter in tests/subjects
    python scripts/bench_subjects.py --subjects skipnet_rnn blockdrop --no-tvm

Each adapter in tests/subjects/ wraps a subject's own DyCL method
(`adaptive_forward_compile`, `early_exit_compile`) from ../shared/dycl-adnn. Per
subject, on the same sample inputs (several paths), interleaved so every side
sees the same machine load, single thread, medians: eager PyTorch running that
method, and the package dycl converts from it with onnxruntime (as `dycl
convert` makes it) and, unless --no-tvm, with untuned TVM. The original DyCL
pipeline (its rewritten program over onnxruntime) cannot run from this
repository; its speed-ups over eager, measured on this machine before this
work, are quoted beside.
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
SUBJECTS = os.path.join(ROOT, "tests", "subjects")
sys.path[:0] = [ROOT]

import torch  # noqa: E402

import dycl  # noqa: E402
from dycl.convert import ConvertOptions, convert  # noqa: E402
from dycl.compare import to_numpy  # noqa: E402

# Speed-up over eager of the original DyCL pipeline, measured on this machine before this work (issue 14).
ORIGINAL_DYCL = {"skipnet_rnn": 3.35, "skipnet_ff": 1.79, "blockdrop": 1.49, "sdn": 1.32}
LABELS = {"skipnet_rnn": "SkipNet-38, recurrent gate", "skipnet_ff": "SkipNet-38, feed-forward gates",
          "blockdrop": "BlockDrop-110", "sdn": "SDN", "ranet": "RANet", "caption": "caption decoder"}


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _convert(path: str, out: str, backend: str, n_inputs: int):
    start = time.perf_counter()
    result = convert(ConvertOptions(path, out, backend=backend, check=n_inputs))
    return result, time.perf_counter() - start


def bench_subject(name: str, workdir: str, args) -> dict:
    path = os.path.join(SUBJECTS, f"{name}.py")
    print(f"  {name}: converting", file=sys.stderr)
    result, convert_s = _convert(path, os.path.join(workdir, name), "onnxruntime", args.inputs)
    model, inputs = result.spec.model, result.spec.sample_inputs(args.inputs)
    np_inputs = [tuple(to_numpy(v) for v in inp) for inp in inputs]
    net = dycl.load(result.out, threads=1)
    row = {"subject": name, "regions": len(result.program.regions), "paths": result.check.paths,
           "delta": result.check.delta, "eta": result.check.eta, "convert_s": convert_s}
    sides = {"eager": [lambda inp=inp: model(*inp) for inp in inputs],
             "dycl_ort": [lambda a=a: net(*a) for a in np_inputs]}
    if not args.no_tvm:
        tvm, row["tvm_convert_s"] = _convert(path, os.path.join(workdir, f"{name}-tvm"), "tvm", args.inputs)
        row["tvm_delta"], row["tvm_eta"] = tvm.check.delta, tvm.check.eta
        tvm_net = dycl.load(tvm.out, threads=1)
        sides["dycl_tvm"] = [lambda a=a: tvm_net(*a) for a in np_inputs]
    times: dict[str, list[float]] = {side: [] for side in sides}
    with torch.no_grad():
        for k in range(len(inputs)):
            for fns in sides.values():
                for _ in range(3):
                    fns[k]()
            for side, fns in sides.items():
                times[side].append(_median_time(fns[k], args.repeat))
    for side, ts in times.items():
        row[f"{side}_ms"] = statistics.median(ts) * 1e3
    return row


def markdown(rows: list[dict], args) -> str:
    lines = ["| subject | eager (ms) | dycl ort (ms) | dycl ort vs eager | original DyCL vs eager | dycl TVM vs eager "
             "| paths | δ ort / tvm | η ort / tvm | regions | convert ort / tvm (s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        original = f"{ORIGINAL_DYCL[r['subject']]:.2f}x" if r["subject"] in ORIGINAL_DYCL else "–"
        tvm = f"{r['eager_ms'] / r['dycl_tvm_ms']:.2f}x" if "dycl_tvm_ms" in r else "–"
        delta = f"{r['delta']:.1e} / " + (f"{r['tvm_delta']:.1e}" if "tvm_delta" in r else "–")
        eta = f"{r['eta']} / {r.get('tvm_eta', '–')}"
        tvm_s = f"{r['tvm_convert_s']:.0f}" if "tvm_convert_s" in r else "–"
        lines.append(f"| {LABELS.get(r['subject'], r['subject'])} | {r['eager_ms']:.3f} | {r['dycl_ort_ms']:.3f} | "
                     f"{r['eager_ms'] / r['dycl_ort_ms']:.2f}x | {original} | {tvm} | {r['paths']} | {delta} | {eta} "
                     f"| {r['regions']} | {r['convert_s']:.0f} / {tvm_s} |")
    lines += ["", f"Speed-ups over eager PyTorch running the subject's own DyCL method (higher is faster). Single "
                  f"thread, medians over {args.inputs} sample inputs x {args.repeat} runs, one run. The original "
                  "DyCL pipeline's speed-ups were measured on this machine before this work (issue 14); TVM is "
                  "untuned."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subjects", nargs="*", help="adapter names in tests/subjects (default: all)")
    parser.add_argument("--inputs", type=int, default=20, help="sample inputs per subject")
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per input")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "bench"), help="where subjects.md/.json go")
    parser.add_argument("--no-tvm", action="store_true", help="skip dycl with TVM")
    args = parser.parse_args()

    torch.set_num_threads(1)
    names = args.subjects or sorted(f[:-3] for f in os.listdir(SUBJECTS) if f.endswith(".py") and not f.startswith("_"))
    with tempfile.TemporaryDirectory(prefix="dycl-bench-subjects-") as workdir:
        rows = [bench_subject(name, workdir, args) for name in names]
    text = markdown(rows, args)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "subjects.md"), "w", encoding="utf-8") as fh:
        fh.write(text)
    with open(os.path.join(args.out, "subjects.json"), "w", encoding="utf-8") as fh:
        json.dump({"rows": rows, "inputs": args.inputs, "repeat": args.repeat}, fh, indent=1)


if __name__ == "__main__":
    main()
