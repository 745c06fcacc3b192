"""Estimate the wall time of `dycl zoo` for N models over M nodes, from costs measured here.

Inputs:
- one or more zoo reports (`OUT/report.json` of `dycl zoo`): per model the seconds of each conversion
  step, of each region's compile and of each region's tuning (with the trials it measured), and the
  zoo's tuned kernels against kernel uses;
- Ray's per-task costs, measured on a local Ray instance (`--measure-ray`, or read back from `--ray`):
  a round trip of an empty task on a warm worker, a task that starts a fresh worker (as each model's
  task does, `max_calls=1`), and 1 MB of result bytes brought back to the driver.

Model: each model is one task (its serial steps: load ... check, less the compiles) and each region one
more (its compile, and its tuning at `--trials` per kernel, scaled from the trials measured, for the
share of kernels no other model tuned first). The cluster's cores share that work; the wall time is the
larger of total work over all cores and the longest single model, plus what the driver does per model
(submitting, receiving a package) and Ray's start. `local` is one machine without Ray's costs (today's
worker processes); tuning there is serialised by the records lock.

    python scripts/plan_zoo.py --report build/zoo/report.json --measure-ray --models 1000 --nodes 1 8 64
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

STEPS = ("load", "rewrite", "generate", "explore", "fold_shapes", "export", "fuse", "package", "check")


def model_costs(reports: list[str]) -> list[dict]:
    """Per converted model: serial seconds (its steps less its compiles), compile and tuning seconds per
    region, and tuning seconds per trial."""
    models = []
    for path in reports:
        with open(path, encoding="utf-8") as fh:
            report = json.load(fh)
        for row in report["models"]:
            costs = row.get("costs")
            if row["status"] != "ok" or not costs or row.get("cached"):
                continue
            steps = sum(costs["steps"].get(s, 0) for s in STEPS)
            compile_s = sum(costs["compile_s"])
            tuning = row.get("tuning") or {}
            tune_s = sum(costs.get("tune_s", []))
            models.append({"model": row["model"], "regions": row["regions"], "serial_s": max(0.0, steps - compile_s - tune_s),
                           "compile_s": costs["compile_s"], "tune_s": tune_s, "trials": tuning.get("trials", 0),
                           "tuned": tuning.get("tuned", 0), "uses": tuning.get("kernels", 0) - tuning.get("dynamic", 0),
                           "package_mb": costs.get("package_mb", 1.0)})
    if not models:
        raise SystemExit("no converted model with costs in the reports (reconvert with this dycl, --force)")
    return models


def measure_ray(repeat: int = 200) -> dict:
    """Ray's costs on a local instance of this machine's cores: seconds per task in three shapes."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    start = time.perf_counter()
    ray.init(address="local", include_dashboard=False, log_to_driver=False)
    started = time.perf_counter() - start
    try:
        @ray.remote(num_cpus=1)
        def empty():
            return None

        @ray.remote(num_cpus=1, max_calls=1)
        def fresh():
            return None

        @ray.remote(num_cpus=1)
        def megabyte():
            return b"x" * (1 << 20)

        ray.get([empty.remote() for _ in range(20)])  # workers up
        warm = []
        for _ in range(repeat):
            t = time.perf_counter()
            ray.get(empty.remote())
            warm.append(time.perf_counter() - t)
        t = time.perf_counter()
        ray.get([empty.remote() for _ in range(repeat)])
        submit = (time.perf_counter() - t) / repeat
        cold = []
        for _ in range(5):
            t = time.perf_counter()
            ray.get(fresh.remote())
            cold.append(time.perf_counter() - t)
        transfer = []
        for _ in range(20):
            t = time.perf_counter()
            ray.get(megabyte.remote())
            transfer.append(time.perf_counter() - t)
        return {"start_s": round(started, 2), "task_s": statistics.median(warm), "driver_per_task_s": submit,
                "fresh_worker_s": statistics.median(cold),
                "mb_s": max(0.0, statistics.median(transfer) - statistics.median(warm)),
                "cores": int(ray.cluster_resources().get("CPU", 1))}
    finally:
        ray.shutdown()


def measure_imports(repeat: int = 3) -> float:
    """Seconds a fresh worker spends importing torch and dycl's converter (each model's worker pays it, local
    or on Ray, before its conversion's own clock starts)."""
    import subprocess

    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch, dycl.zoo, dycl.convert"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def plan(models: list[dict], ray_costs: dict | None, n_models: int, nodes: int, cores: int, trials: int,
         shared: float, imports: float) -> float:
    """Estimated wall seconds for `n_models` models like `models` on `nodes` nodes of `cores` cores."""
    per_task = ray_costs["task_s"] if ray_costs else 0.0
    fresh = ray_costs["fresh_worker_s"] if ray_costs else 0.0
    work, longest = 0.0, 0.0
    tune_total = 0.0
    for m in models:
        per_trial = m["tune_s"] / m["trials"] if m["trials"] else 0.0
        tune = per_trial * trials * m["uses"] * shared  # kernels this model tunes itself
        regions = sum(m["compile_s"]) + len(m["compile_s"]) * per_task
        work += m["serial_s"] + imports + fresh + regions + tune
        tune_total += tune
        longest = max(longest, m["serial_s"] + imports + fresh + max(m["compile_s"], default=0.0)
                      + (tune / max(1, len(m["compile_s"])) if ray_costs else tune))
    scale = n_models / len(models)
    work, tune_total = work * scale, tune_total * scale
    capacity = nodes * cores
    if ray_costs is None:  # local: one machine, where one region tunes at a time (the records lock)
        return max((work - tune_total) / capacity, longest) + tune_total
    driver = n_models * (ray_costs["driver_per_task_s"] + ray_costs["mb_s"] * statistics.mean(
        m["package_mb"] for m in models))
    return max(work / capacity, longest) + driver + ray_costs["start_s"]


def _seconds_per_trial(reports: list[str]) -> float | None:
    seconds = trials = 0.0
    for path in reports:
        with open(path, encoding="utf-8") as fh:
            for t in json.load(fh).get("tuning", []):
                seconds, trials = seconds + t["seconds"], trials + t["trials"]
    return seconds / trials if trials else None


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", action="append", required=True, help="a dycl zoo report.json (repeat)")
    ap.add_argument("--ray", help="Ray costs measured before (JSON from --save)")
    ap.add_argument("--measure-ray", action="store_true", help="measure Ray's per-task costs on this machine")
    ap.add_argument("--models", type=int, default=1000)
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--cores", type=int, default=16, help="cores per node")
    ap.add_argument("--trials", type=int, default=32, help="MetaSchedule trials per kernel")
    ap.add_argument("--tuning-report", action="append", default=[],
                    help="a tuned package's report.json (dycl convert --tune): its seconds per trial, where the zoo "
                         "reports tuned none")
    ap.add_argument("--save", help="write the inputs and the table as JSON here")
    args = ap.parse_args(argv)

    models = model_costs(args.report)
    if args.measure_ray:
        ray_costs = measure_ray()
    elif args.ray:
        with open(args.ray, encoding="utf-8") as fh:
            ray_costs = json.load(fh)["ray"]
    else:
        raise SystemExit("give --measure-ray or --ray FILE")
    imports = measure_imports()
    uses = sum(m["uses"] for m in models)
    tuned = sum(m["tuned"] for m in models)
    shared = tuned / uses if tuned else 1.0  # kernels tuned per kernel use, measured (none measured: no sharing)
    per_trial = _seconds_per_trial(args.tuning_report)
    for m in models:
        if per_trial is not None and not m["trials"]:
            m["tune_s"], m["trials"] = per_trial, 1
    print(f"measured: {len(models)} models, {sum(len(m['compile_s']) for m in models)} compiled regions; "
          f"serial {statistics.mean(m['serial_s'] for m in models):.1f} s/model, compile "
          f"{statistics.mean(s for m in models for s in m['compile_s'] or [0]):.2f} s/region, "
          f"tuning {sum(m['tune_s'] for m in models) / max(1, sum(m['trials'] for m in models)):.2f} s/trial, "
          f"{shared:.2f} kernels tuned per kernel use; a worker imports torch and dycl in {imports:.1f} s")
    print(f"Ray: start {ray_costs['start_s']:.1f} s, task round trip {ray_costs['task_s'] * 1e3:.2f} ms, "
          f"driver {ray_costs['driver_per_task_s'] * 1e3:.2f} ms/task, fresh worker {ray_costs['fresh_worker_s']:.2f} s, "
          f"1 MB back {ray_costs['mb_s'] * 1e3:.1f} ms")
    rows = []
    print(f"\n| {args.models} models | untuned | tuned, {args.trials} trials/kernel |\n|---|---:|---:|")
    for label, nodes, costs in [("local (1 machine)", 1, None)] + [(f"ray, {n} node{'s' * (n > 1)}", n, ray_costs)
                                                                   for n in args.nodes]:
        untuned = plan(models, costs, args.models, nodes, args.cores, 0, shared, imports)
        tuned = plan(models, costs, args.models, nodes, args.cores, args.trials, shared, imports)
        rows.append({"executor": label, "nodes": nodes, "untuned_s": untuned, "tuned_s": tuned})
        print(f"| {label} × {args.cores} cores | {_hours(untuned)} | {_hours(tuned)} |")
    if args.save:
        with open(args.save, "w", encoding="utf-8") as fh:
            json.dump({"models": models, "ray": ray_costs, "imports_s": imports, "shared": shared, "table": rows}, fh,
                      indent=1)


if __name__ == "__main__":
    sys.exit(main())
