#!/usr/bin/env python
"""Conversion time per model and backend, as `dycl convert` spends it: one fresh process per conversion.

    python scripts/convert_times.py                              # the zoo, tests/subjects/, tests/corpus/: ORT, TVM
    python scripts/convert_times.py --backends onnxruntime --out build/convert_times.md models_zoo/moe.py

Each conversion runs in its own interpreter (imports, torch's start-up and
the compile workers included) with the CLI's defaults (`--check 50`,
`--fuse measured`); the table gives its wall time, the CPU time of the
process and its compile workers (what a busy machine does not inflate), the
seconds of each step, whether it stayed within --limit (30 s), and the
machine's 1-minute load average when the conversion started and ended (on a
shared machine, wall time grows with it; CPU time much less). Writes
Markdown with --out.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = ("rewrite", "explore", "fold_shapes", "export", "fuse", "check")


def _model_files(paths: list[str]) -> list[str]:
    if not paths:
        paths = [os.path.join(ROOT, "models_zoo"), os.path.join(ROOT, "tests", "subjects"),
                 os.path.join(ROOT, "tests", "corpus")]
    files = []
    for path in paths:
        if os.path.isdir(path):
            files.extend(f for f in sorted(glob.glob(os.path.join(path, "*.py")))
                         if not os.path.basename(f).startswith("_") and "def get_model" in open(f).read())
        elif os.path.exists(path):
            files.append(path)
    return files


def _label(path: str) -> str:
    """The model's name in the table: its file's, after its folder's unless it is in the zoo."""
    name = os.path.splitext(os.path.basename(path))[0]
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return name if folder == "models_zoo" else f"{folder}/{name}"


def _one(path: str, backend: str, check: int, out: str) -> None:
    """In the child: convert and print the timings as JSON."""
    sys.path.insert(0, ROOT)
    from dycl.convert import ConvertOptions, convert

    start = time.perf_counter()
    row = {"model": _label(path), "backend": backend}
    try:
        result = convert(ConvertOptions(path, out, backend, check))
        row.update(status="ok", steps=result.timings, regions=len(result.program.regions))
    except Exception as exc:  # the table reports failures; it does not stop at them
        row.update(status="failed", error=(str(exc).strip().splitlines() or [type(exc).__name__])[0][:120])
    row["convert_s"] = time.perf_counter() - start
    print(json.dumps(row))


def _measure(path: str, backend: str, check: int, timeout: float) -> dict:
    load = os.getloadavg()[0]
    row = _convert_once(path, backend, check, timeout)
    row["load"] = (load, os.getloadavg()[0])
    return row


def _convert_once(path: str, backend: str, check: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, __file__, "--one", path, backend, str(check),
                                   os.path.join(tmp, "package")], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"model": _label(path), "backend": backend, "status": "timeout",
                    "process_s": timeout, "convert_s": timeout}
        wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        error = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"model": _label(path), "backend": backend, "status": "crashed",
                "error": error, "process_s": wall, "convert_s": wall, "cpu_s": cpu}
    row = json.loads(lines[-1])
    row["process_s"], row["cpu_s"] = wall, cpu
    return row


def _table(rows: list[dict], limit: float) -> str:
    head = ["model", "backend", "status", "regions", "process s", "CPU s", "convert s"] + [f"{s} s" for s in STEPS] + \
        ["load", "≤ limit"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        steps = r.get("steps", {})
        cells = [r["model"], r["backend"], r["status"] + (f": {r['error']}" if r.get("error") else ""),
                 str(r.get("regions", "")), f"{r['process_s']:.1f}", f"{r.get('cpu_s', 0):.1f}",
                 f"{r['convert_s']:.1f}"]
        cells += [f"{steps[s]:.1f}" if s in steps else "" for s in STEPS]
        cells.append("{:.1f}-{:.1f}".format(*r["load"]))
        cells.append("yes" if r["status"] == "ok" and r["process_s"] <= limit else "**no**")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*",
                        help="model files or folders (default: models_zoo/, tests/subjects/, tests/corpus/)")
    parser.add_argument("--backends", default="onnxruntime,tvm", help="comma-separated")
    parser.add_argument("--check", type=int, default=50, help="sample inputs checked (the CLI's default)")
    parser.add_argument("--limit", type=float, default=30.0, help="seconds a conversion may take")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a conversion is stopped")
    parser.add_argument("--out", help="also write the table as Markdown here")
    parser.add_argument("--one", nargs=4, metavar=("PATH", "BACKEND", "CHECK", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        path, backend, check, out = args.one
        _one(path, backend, int(check), out)
        return
    rows = []
    for path in _model_files(args.paths):
        for backend in args.backends.split(","):
            row = _measure(path, backend, args.check, args.timeout)
            rows.append(row)
            print(f"{row['model']:>20} {backend:<12} {row['status']:<8} {row['process_s']:6.1f} s "
                  f"({row.get('cpu_s', 0):.1f} s CPU, load {row['load'][0]:.1f}-{row['load'][1]:.1f})",
                  file=sys.stderr, flush=True)
    table = _table(rows, args.limit)
    print(table)
    slow = [f"{r['model']} ({r['backend']})" for r in rows if r["status"] != "ok" or r["process_s"] > args.limit]
    print(f"\n{len(rows) - len(slow)} of {len(rows)} conversions within {args.limit:g} s"
          + (f"; not: {', '.join(slow)}" if slow else ""))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(f"# Conversion time per model (limit {args.limit:g} s)\n\n{table}\n")
        with open(os.path.splitext(args.out)[0] + ".json", "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    if slow:
        sys.exit(1)


if __name__ == "__main__":
    main()
