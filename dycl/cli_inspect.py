"""The commands that look without converting: `dycl inspect` shows how a model file splits into
host decisions and regions; `dycl run` and `dycl verify` run and check a converted package (no torch).
"""
from __future__ import annotations

import sys
import time

import click
from rich.console import Console

from .cli_render import refuse

__all__ = ["inspect", "run", "verify"]


@click.command()
@click.argument("model_file", type=click.Path(dir_okay=False))
@click.option("--dot", "dot_path", type=click.Path(dir_okay=False), help="Where to write the DOT graph "
              "(default: MODEL.dot beside the current directory's files).")
@click.option("--model", "model_ref", metavar="MODULE:CALLABLE", help="Factory for files without get_model().")
@click.option("--input", "inputs", multiple=True, metavar="NAME=DTYPE[DIMS]", help="Example input.")
def inspect(model_file, dot_path, model_ref, inputs) -> None:
    """Show how MODEL_FILE splits into host decisions and regions, before compiling anything."""
    import os
    import shutil
    import subprocess

    from rewrite import ConversionError, rewrite_model

    from .modelfile import ModelFileError, load_model_file
    from .picture import program_dot, program_tree

    try:
        spec = load_model_file(model_file, model_ref, list(inputs) or None)
        program = rewrite_model(spec.model, spec.inputs)
    except (ModelFileError, ConversionError) as exc:
        refuse(exc)
    console = Console()
    console.print(program_tree(program, model_file))
    classes = {}
    for d in program.decisions:
        classes[d.dclass] = classes.get(d.dclass, 0) + 1
    console.print(f"{len(program.regions)} regions, {len(program.loops)} host loops, decisions: "
                  + ", ".join(f"{n} {c}" for c, n in sorted(classes.items()))
                  + f", {program.static_decisions} static (folded)")
    dot_path = dot_path or f"{os.path.splitext(os.path.basename(model_file))[0]}.dot"
    with open(dot_path, "w", encoding="utf-8") as fh:
        fh.write(program_dot(program))
    console.print(f"control-flow graph: {dot_path}")
    if shutil.which("dot"):
        svg = os.path.splitext(dot_path)[0] + ".svg"
        subprocess.run(["dot", "-Tsvg", dot_path, "-o", svg], check=True)
        console.print(f"rendered: {svg}")


@click.command()
@click.argument("package", type=click.Path(exists=True, file_okay=False))
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run this many random inputs.")
def run(package, seed, repeat) -> None:
    """Run PACKAGE on random inputs matching its signature (no torch needed)."""
    import numpy as np

    from .runtime import PackageError, load

    try:
        net = load(package)
    except PackageError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    rng = np.random.default_rng(seed)
    for _ in range(repeat):
        args = []
        for param in net.signature:
            if not param.is_array:
                raise click.UsageError(f"input {param.name} is not an array; call the package from Python")
            shape = [d if isinstance(d, int) else 1 for d in param.shape]
            args.append(rng.standard_normal(shape).astype(param.dtype))
        start = time.perf_counter()
        out = net(*args)
        ms = (time.perf_counter() - start) * 1e3
        click.echo(f"{_brief(out)}  ({ms:.2f} ms)")


@click.command()
@click.argument("package", type=click.Path(exists=True, file_okay=False))
@click.option("--digest", metavar="SHA256", help="The digest the package must have (as `dycl convert` printed it).")
def verify(package, digest) -> None:
    """Check PACKAGE: its manifest, that every path stays inside it, every file's hash, and its digest.

    Runs nothing from the package and needs no backend.
    """
    from .runtime.verify import PackageError, verify_package

    try:
        _, actual, _ = verify_package(package, digest)
    except PackageError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(f"{package}: ok, digest {actual}")


def _brief(value) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        flat = value.reshape(-1)
        head = ", ".join(f"{v:.4g}" if value.dtype.kind == "f" else str(v) for v in flat[:4])
        return f"{value.dtype}{list(value.shape)}[{head}{', ...' if flat.size > 4 else ''}]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_brief(v) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_brief(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_brief(v)}" for k, v in value.items()) + "}"
    return repr(value)
