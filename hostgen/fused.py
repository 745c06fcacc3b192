"""The host-tree node fusion puts in place of the host code it runs as one graph."""
from __future__ import annotations

from rewrite.cfg import Origin

__all__ = ["FusedBlock"]


class FusedBlock:
    """A run of host nodes a backend runs as one region: decisions and loops inside its graph.

    The host calls `region` with `args` (names), assigns `outputs`, runs `hoisted`
    statements (empty lists) before the call and extends each list in `extends`
    with the stacked values its loops appended. `nodes` are the host nodes it replaces.
    """

    __slots__ = ("region", "args", "outputs", "extends", "hoisted", "nodes", "origin", "returns")

    def __init__(self, region: str, args: list[str], outputs: list[str], extends: list[tuple[str, str]],
                 hoisted: list, nodes: list, origin: Origin):
        self.region, self.args, self.outputs, self.extends = region, args, outputs, extends
        self.hoisted, self.nodes, self.origin = hoisted, nodes, origin
        self.returns: bool | None = None  # the block ends the function: returns its outputs (as a tuple if True)

    def __repr__(self) -> str:
        return f"FusedBlock({self.region}: {self.args} -> {self.outputs}, {self.nodes!r})"
