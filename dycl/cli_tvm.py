"""The TVM options `dycl convert` and `dycl zoo` share, checked before anything runs: compiling on a
Ray cluster needs an explicit target, and tuning needs the 'tune' extra.
"""
from __future__ import annotations

import importlib.util

import click

from .backends import takes_option

__all__ = ["explicit_target", "tune_settings"]


def explicit_target(executor: str, backend: str, target: str | None) -> None:
    """Refuse TVM on a Ray cluster without --target: the package would depend on the node that compiled it."""
    if executor == "ray" and takes_option(backend, "target") and not target:
        raise click.UsageError("--executor ray compiles TVM code on other nodes: give --target (e.g. "
                               '\'{"kind": "llvm", "mcpu": "skylake"}\'), so that the package does not depend on '
                               "which node compiled it")


def tune_settings(trials: int, budget: float, progress):
    """The tuning settings for --tune, refused where the 'tune' extra is not installed."""
    from .backends.tvm_tune import TuneSettings

    missing = [m for m in ("xgboost", "psutil") if importlib.util.find_spec(m) is None]  # MetaSchedule needs both
    if missing:
        raise click.UsageError(f"--tune needs the 'tune' extra (pip install 'dycl[tune]'); missing: {', '.join(missing)}")
    return TuneSettings(trials, budget, progress=progress)
