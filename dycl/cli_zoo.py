"""`dycl zoo`: convert every model file in a folder, in worker processes or on a Ray cluster, with a
report.
"""
from __future__ import annotations

import sys
import time

import click
from rich.console import Console

from .backends import BACKENDS, takes_option
from .cli_render import print_zoo_summary, refuse
from .cli_tvm import explicit_target, tune_settings

__all__ = ["zoo"]


@click.command()
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Folder for the packages.")
@click.option("--backend", type=click.Choice(list(BACKENDS)), default="onnxruntime",
              show_default=True)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Models converted at once.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              help="Seconds before a model's worker is stopped.")
@click.option("--check", "check_n", type=click.IntRange(min=0), default=20, show_default=True,
              help="Sample inputs each package is checked on.")
@click.option("--force", is_flag=True, help="Convert every model, even unchanged ones.")
@click.option("--fuse", type=click.Choice(["measured", "all", "none"]), default="measured", show_default=True,
              help="As dycl convert's --fuse (all and none give the same packages every time).")
@click.option("--target", metavar="JSON", help="TVM target (default: this machine's CPU; required with ray).")
@click.option("--tune", "tune_trials", type=click.IntRange(min=0), default=0, metavar="TRIALS",
              help="TVM: MetaSchedule trials per kernel (records shared by every model).")
@click.option("--tune-budget", type=click.FloatRange(min=1), default=None, metavar="SECONDS",
              help="Stop tuning a model after this long.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Convert in worker processes here (local) or as tasks on a Ray cluster (ray).")
@click.option("--address", metavar="ADDR", help="Ray cluster to join (default: $RAY_ADDRESS, else start Ray here).")
@click.option("--cpus-per-model", type=click.FloatRange(min=0, min_open=True), default=1, show_default=True,
              help="ray: CPUs each model's task holds.")
@click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True,
              help="ray: times a model's task runs again after its worker or node died.")
def zoo(folder, out, backend, jobs, timeout, check_n, force, fuse, target, tune_trials, tune_budget, executor,
        address, cpus_per_model, retries) -> None:
    """Convert every model file in FOLDER into OUT/<model>, with a report."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .executors import ExecutorError
    from .executors.cluster import RayMissing
    from .outdir import OutputError, check_zoo_output
    from .zoo import ZooOptions, model_files, run_zoo, write_report

    if tune_trials and not takes_option(backend, "tune"):
        raise click.UsageError("--tune tunes TVM kernels: use it with --backend tvm")
    explicit_target(executor, backend, target)
    if tune_trials:
        tune_settings(tune_trials, 1, None)  # the 'tune' extra is installed
    opts = ZooOptions(folder, out, backend, jobs, timeout, force, check_n)
    opts.fuse, opts.target, opts.tune, opts.tune_budget = fuse, target, tune_trials, tune_budget
    opts.executor, opts.address, opts.cpus_per_model, opts.retries = executor, address, cpus_per_model, retries
    try:
        check_zoo_output(out)
    except OutputError as exc:
        refuse(exc)
    files = model_files(folder)
    if not files:
        raise click.UsageError(f"no model files (defining get_model) in {folder}")
    console = Console(stderr=True)
    start = time.perf_counter()
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        task = progress.add_task("converting", total=len(files))

        def on_event(kind: str, name: str, row) -> None:
            if kind == "start":
                progress.update(task, description=f"converting {name}")
                return
            style = "green" if row["status"] == "ok" else "red"
            detail = row.get("error", "") if row["status"] != "ok" else \
                f"{row['regions']} regions, δ = {row['delta']:.2g}, η = {row['eta']}, {row['seconds']:.1f} s"
            status = f"{row['status']} (cached)" if row.get("cached") else row["status"]
            progress.console.print(f"  [{style}]{status:>20}[/] {name}: {detail}")
            progress.advance(task)

        try:
            rows = run_zoo(opts, on_event)
        except (OutputError, ExecutorError, RayMissing) as exc:
            refuse(exc)
    write_report(out, rows)
    print_zoo_summary(console, rows, out, time.perf_counter() - start)
    if any(r["status"] != "ok" for r in rows):
        sys.exit(1)
