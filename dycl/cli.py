"""The `dycl` command line: the click group and `dycl convert`.

The other commands live beside this file and are added to the group here: cli_zoo.py (`zoo`) and
cli_inspect.py (`inspect`, `run`, `verify`); cli_render.py draws the summaries and refused inputs,
cli_tvm.py checks the TVM options convert and zoo share.
"""
from __future__ import annotations

import contextlib
import sys
import time

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .backends import CHOICES, takes_option
from .cli_inspect import inspect, run, verify
from .cli_render import print_convert_summary, refuse
from .cli_tvm import explicit_target, tune_settings
from .cli_zoo import zoo

__all__ = ["main"]

_STEP_TEXT = {
    "load": "Loading the model file",
    "rewrite": "Rewriting forward (libcst)",
    "generate": "Generating host.py and regions",
    "explore": "Exploring shapes and paths",
    "fold_shapes": "Folding shape decisions that never varied",
    "export": "Exporting and compiling regions",
    "fuse": "Moving decisions and loops into graphs (onnxruntime)",
    "speculate": "Building the dominant path as one graph (--speculate)",
    "package": "Writing the package",
    "check": "Checking against the original model",
}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dycl")
def main() -> None:
    """Compile dynamic PyTorch networks with static deep-learning compilers."""


@main.command()
@click.argument("model_file", type=click.Path(dir_okay=False))
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Output package directory.")
@click.option("--backend", type=click.Choice(CHOICES), default="onnxruntime",
              show_default=True, help="Compiler for the regions: auto measures onnxruntime and TVM per region "
                                      "and keeps the faster; "
                                      "torch runs them eagerly, for debugging.")
@click.option("--target", metavar="JSON", help='TVM target, e.g. \'{"kind": "llvm", "mcpu": "skylake"}\' '
                                               "(default: this machine's CPU).")
@click.option("--check", "check_n", type=click.IntRange(min=0), default=50, show_default=True,
              help="Sample inputs to compare against the original model.")
@click.option("--model", "model_ref", metavar="MODULE:CALLABLE", help="Factory for files without get_model().")
@click.option("--input", "inputs", multiple=True, metavar="NAME=DTYPE[DIMS]",
              help="Example input, e.g. x=float32[1,3,32,32] (repeat per input).")
@click.option("--dynamic", "dynamic", multiple=True, metavar="NAME:DIM=SYMBOL,...",
              help="Dims that vary at run time, e.g. x:0=batch,2=h (adds to the file's DYNAMIC).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for sample_inputs().")
@click.option("--fuse", type=click.Choice(["measured", "all", "none"]), default="measured", show_default=True,
              help="onnxruntime runs the decisions and loops it can express inside one graph: where that was faster "
                   "on the sample inputs (measured), wherever it is correct (all: the same package every time), "
                   "or nowhere (none: every decision in host.py).")
@click.option("--speculate", is_flag=True, default=False,
              help="onnxruntime: where one path covers at least 95% of the sample inputs, host.py first runs that "
                   "path as one graph and keeps its answer only where every decision takes the same arm (else the "
                   "general program runs: a miss costs the speculative graph).")
@click.option("--tune", "tune_trials", type=click.IntRange(min=0), default=0, metavar="TRIALS",
              help="TVM: tune each region's static-shape kernels with MetaSchedule, measuring TRIALS "
                   "candidates per kernel on average (the kernels that gain most get up to 4x TRIALS; records are "
                   "cached and reused). Needs the 'tune' extra.")
@click.option("--tune-budget", type=click.FloatRange(min=1), default=1800, show_default=True, metavar="SECONDS",
              help="Stop tuning after this long (the regions left get the default schedules).")
@click.option("--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="TVM: regions compiled at once, each in its own process  [default: one per core]")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Stop the whole conversion after this long, leaving no output  [default: no limit]")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="TVM: compile and tune regions here (local) or as tasks on a Ray cluster (needs --target).")
@click.option("--address", metavar="ADDR", help="Ray cluster to join (default: $RAY_ADDRESS, else start Ray here).")
@click.option("--dump-after", metavar="STEP",
              help="Stop after STEP (a conversion step, e.g. rewrite or explore, or a pass of the rewrite, e.g. "
                   "partial_eval or liveness; a wrong name lists them all) and write the program as it stands "
                   "then, as source text, to stdout or --dump-to. No package is written.")
@click.option("--dump-to", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
              help="With --dump-after: write the dump to FILE instead of stdout.")
def convert(model_file, out, backend, target, check_n, model_ref, inputs, dynamic, seed, fuse, speculate, tune_trials,
            tune_budget, jobs, timeout, executor, address, dump_after, dump_to) -> None:
    """Convert MODEL_FILE into a compiled package at OUT."""
    from rewrite import ConversionError

    from .convert import STEPS, ConvertOptions, StepFailed, TimedOut, convert as run_convert
    from rewrite import PASS_NAMES
    from .executors.cluster import RayMissing
    from .modelfile import ModelFileError
    from .outdir import OutputError
    from .package import summary

    if tune_trials and not takes_option(backend, "tune"):
        raise click.UsageError("--tune tunes TVM kernels: use it with --backend tvm or --backend auto")
    if executor == "ray" and not takes_option(backend, "target"):
        raise click.UsageError("--executor ray compiles TVM regions on a cluster: use it with --backend tvm or auto "
                               "(onnxruntime compiles a region in milliseconds, here)")
    explicit_target(executor, backend, target)
    stops = [name for name, _ in STEPS] + PASS_NAMES
    if dump_after is not None and dump_after not in stops:
        raise click.BadParameter(f"{dump_after!r} is no step; the steps, in order: {', '.join(stops[:2])} "
                                 f"(its passes: {', '.join(PASS_NAMES)}), {', '.join(stops[2:len(STEPS)])}",
                                 param_hint="--dump-after")
    if dump_to is not None and dump_after is None:
        raise click.UsageError("--dump-to says where --dump-after writes: give --dump-after STEP too")
    console = Console(stderr=True)
    opts = ConvertOptions(model_file, out, backend, check_n, model_ref, list(inputs) or None, seed,
                          list(dynamic) or None)
    opts.target = target
    opts.fuse = fuse
    opts.speculate = speculate
    opts.jobs = jobs or opts.jobs
    opts.timeout = timeout
    opts.dump_after = dump_after
    start = time.perf_counter()
    try:
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                      TextColumn("{task.fields[count]}"), TimeElapsedColumn(), console=console,
                      transient=True) as progress:
            step_task = progress.add_task("", total=None, count="")
            detail_task = progress.add_task("", total=None, count="", visible=False)
            tune_task = None

            def on_step(step: str, phase: str) -> None:
                progress.update(detail_task, visible=False)
                if phase == "start":
                    progress.update(step_task, description=f"[bold]{_STEP_TEXT[step]}[/] …")
                else:
                    progress.console.print(f"  [green]✓[/] {_STEP_TEXT[step]}")

            def on_progress(step: str, detail: str, done: int, total: int) -> None:
                progress.update(detail_task, description=f"  {detail}", completed=done, total=total or None,
                                count=f"{done}/{total}" if total else "", visible=True)

            def on_tune(region: str, done: int, total: int) -> None:
                nonlocal tune_task
                if tune_task is None:
                    tune_task = progress.add_task("", total=total, count="")
                progress.update(tune_task, description=f"  tuning {region}", completed=done, total=total,
                                count=f"{done}/{total} trials")

            if tune_trials:
                opts.tune = tune_settings(tune_trials, tune_budget, on_tune)
            with _compiler(executor, address) as compile_all:  # None: the local compile pool
                if compile_all is not None:
                    opts.compile_all = compile_all
                result = run_convert(opts, on_step, on_progress)
    except (RayMissing, OutputError, ConversionError) as exc:
        refuse(exc)
    except StepFailed as exc:
        if isinstance(exc.error, (ModelFileError, ConversionError)):
            refuse(exc.error)
        click.echo(f"error: conversion failed in step '{exc.step}': {exc.error}", err=True)
        click.echo("No output was written.", err=True)
        sys.exit(1)
    except TimedOut as exc:  # between steps
        click.echo(f"error: conversion {exc}", err=True)
        click.echo("No output was written.", err=True)
        sys.exit(1)
    if dump_after is not None:
        _write_dump(result.dump, dump_to)
        return
    info = summary(result)
    print_convert_summary(Console(), info, result.out, time.perf_counter() - start)


def _write_dump(text: str, path: str | None) -> None:
    if path is None:
        click.echo(text, nl=False)
        return
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    click.echo(f"wrote {path}", err=True)


def _compiler(executor: str, address: str | None):
    if executor == "local":
        return contextlib.nullcontext()
    from .executors.ray_compile import on_cluster

    return on_cluster(address)


main.add_command(zoo)
main.add_command(inspect)
main.add_command(run)
main.add_command(verify)

if __name__ == "__main__":
    main()
