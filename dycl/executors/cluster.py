"""Connecting to a Ray cluster, and the small actors dycl keeps on the driver's node.

Without an address, dycl starts a Ray instance on this machine (its CPUs) and stops it afterwards; with
`--address` (or `$RAY_ADDRESS`) it joins a cluster started by `ray start`. A process that is already
connected (a test's `ray.init`, or a Ray task converting a zoo model) keeps its connection.
"""
from __future__ import annotations

import contextlib
import os

__all__ = ["connect", "on_this_node", "largest_node_cpus", "RayMissing"]


class RayMissing(RuntimeError):
    """`--executor ray` without Ray installed."""


def _ray():
    try:
        import ray
    except ImportError:
        raise RayMissing("--executor ray needs Ray: pip install 'dycl[ray]'") from None
    return ray


@contextlib.contextmanager
def connect(address: str | None = None):
    """Connected to the cluster at `address` (default: $RAY_ADDRESS, else a new Ray instance on this machine)."""
    ray = _ray()
    if ray.is_initialized():
        yield ray
        return
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=False)
    else:  # never an instance someone else started on this machine: `address="local"` starts a new one
        ray.init(address="local", include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def on_this_node(ray, cls, **options):
    """`cls` as a Ray actor placed on the driver's node, holding no CPU: it lives as long as the driver."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    node = ray.get_runtime_context().get_node_id()
    return ray.remote(cls).options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
                                   **options)


def largest_node_cpus(ray) -> float:
    """The CPUs of the largest live node: a task that asks for more could never start."""
    return max((n["Resources"].get("CPU", 0) for n in ray.nodes() if n["Alive"]), default=0)
