"""Where `dycl zoo` converts its models: worker processes on this machine, or tasks on a Ray cluster.

An executor's `run(opts, jobs, started)` converts each `(name, model file, package folder)` job and yields
`(name, row, sources)` as each finishes, with the package written into its folder; `started(name)` hears
when a model's conversion begins. Closing the generator stops what is still running and removes what it
left half-written. Both give the same rows and the same packages.
"""
from __future__ import annotations

__all__ = ["EXECUTORS", "ExecutorError", "get_executor"]

EXECUTORS = ("local", "ray")


class ExecutorError(RuntimeError):
    """The executor cannot run the zoo as asked (say, no node has the CPUs a model's task needs)."""


def get_executor(name: str):
    """The module that runs a zoo with executor `name`."""
    if name == "local":
        from . import local

        return local
    if name == "ray":
        from . import ray

        return ray
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
