"""What the CLI shows when a command ends: the summary tables of `dycl convert` and `dycl zoo`,
drawn with rich, or the error that refused the input (`refuse`).
"""
from __future__ import annotations

import os
import sys
from typing import NoReturn

import click
from rich.console import Console
from rich.table import Table

__all__ = ["print_convert_summary", "print_zoo_summary", "refuse"]


def print_convert_summary(console: Console, info: dict, out: str, seconds: float) -> None:
    """The converted package's summary table on `console`, then its digest on stdout."""
    check = info["check"]
    table = Table(title=f"dycl convert: {info['model']}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    d = info["decisions"]
    table.add_row("regions", f"{info['regions']} ({info['artifacts']} compiled artifacts)")
    table.add_row("decisions", f"{d.get('value', 0)} value-, {d.get('shape', 0)} shape-, "
                               f"{d.get('execution', 0)} execution-determined; {d.get('static', 0)} static (folded)")
    for d in info.get("observed_dynamic", []):
        table.add_row("[yellow]dynamic dim[/]", f"{d['input']}:{d['axis']} = {d['symbol']}: the samples vary it "
                                                f"({', '.join(map(str, d['sizes']))}) and DYNAMIC does not declare it")
    if info.get("defaults"):
        table.add_row("fixed inputs", ", ".join(f"{k}={v}" for k, v in info["defaults"].items())
                      + " (left out of get_inputs(): folded at their defaults)")
    table.add_row("paths covered", f"{check['paths']} over {check['samples']} samples"
                                   f" (+{info['forced_runs']} forced runs)")
    for lp in info.get("loops", []):
        if lp.get("fused"):
            table.add_row(f"loop {lp['id']}", f"{lp['kind']} at {lp['origin']}: runs inside region {lp['fused']} "
                                              "(an ONNX Loop)")
            continue
        per = "never ran" if lp["calls_per_iteration"] is None else f"{lp['calls_per_iteration']:.2f} backend calls"
        table.add_row(f"loop {lp['id']}", f"{lp['kind']} at {lp['origin']}: {per} per iteration, "
                                          f"{lp['body_regions']} body regions compiled once")
    if info.get("tuning"):
        tuning = info["tuning"]
        table.add_row("tuning", f"{sum(t['tuned'] for t in tuning)} kernels tuned ({sum(t['trials'] for t in tuning)} "
                                f"trials), {sum(t['cached'] for t in tuning)} from cached records, "
                                f"{sum(t['dynamic'] for t in tuning)} dynamic left untuned")
    if info.get("fallbacks"):
        table.add_row("[yellow]fallback[/]", f"{len(info['fallbacks'])} region(s) TVM could not compile run on "
                                             "onnxruntime (see report.md)")
    if info.get("speculation"):
        table.add_row("speculation", info["speculation"])
    table.add_row("check", f"[green]pass[/]: δ = {check['delta']:.2g}, η = {check['eta']}" if check["passed"]
                  else f"[red]FAIL[/]: {check['failure']}")
    table.add_row("time", f"{seconds:.1f} s")
    table.add_row("package", out)
    console.print(table)
    click.echo(f"digest: {info['digest']}  (check it with: dycl verify PACKAGE --digest DIGEST)")


def print_zoo_summary(console: Console, rows: list[dict], out: str, seconds: float) -> None:
    """The zoo's table on stdout; on `console` the failures, the tuning totals and where the report is."""
    from .zoo import tuning_totals

    table = Table(title=f"dycl zoo: {len(rows)} models in {seconds:.1f} s", title_justify="left")
    for col in ("model", "status", "regions", "paths", "δ", "η", "convert s", "speed-up"):
        table.add_column(col)
    for r in rows:
        good = r["status"] == "ok"
        status = r["status"] + (" (cached)" if r.get("cached") else "")
        table.add_row(r["model"], status if good else f"[red]{status}[/]",
                      str(r.get("regions", "")), str(r.get("paths", "")),
                      f"{r['delta']:.2g}" if good else "", str(r.get("eta", "")), f"{r.get('seconds', 0):.1f}",
                      f"{r['eager_ms'] / r['dycl_ms']:.2f}x" if good and r.get("dycl_ms") else "")
    Console().print(table)
    for r in rows:
        if r["status"] != "ok":
            console.print(f"[red]{r['model']}[/]: {r.get('error', '')}")
    tuning = tuning_totals(rows)
    if tuning:
        console.print(f"tuning: {tuning['kernels_tuned']} kernels tuned for {tuning['kernel_uses']} kernel uses "
                      f"({tuning['from_records']} found records)")
    console.print(f"report: {os.path.join(out, 'report.md')}")


def refuse(error: Exception) -> NoReturn:
    """Exit with status 2 on an input dycl refuses: a ConversionError as its diagnostics, any other
    error as `error: ...`, on stderr."""
    from rewrite.diagnostics import ConversionError

    click.echo(error.format() if isinstance(error, ConversionError) else f"error: {error}", err=True)
    sys.exit(2)
