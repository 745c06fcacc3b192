"""The host-tree node that speculates: run one path as one graph, keep its answer where its decisions agree."""
from __future__ import annotations

from rewrite.cfg import If

__all__ = ["Guard", "Speculation"]


class Guard:
    """One decision of the speculated path: its `If`, the arm the path takes (`taken`), and the names its
    test reads renamed to the speculative region's outputs holding their values at the decision."""

    __slots__ = ("decision", "taken", "renames")

    def __init__(self, decision: If, taken: bool, renames: dict[str, str]):
        self.decision, self.taken, self.renames = decision, taken, renames

    def __repr__(self) -> str:
        return f"Guard({self.decision.decision} {'then' if self.taken else 'else'}, {self.renames})"


class Speculation:
    """The first node of a speculating host: `region` runs one path of the program (`args` -> `outputs`);
    where every guard's test, on those outputs, takes the path's arm, the host returns `result`; else, or
    where the call fails (off the path, the path's code may meet values it never sees on it), the rest of
    the program runs from the start, as if the call had not been made (`outputs` are fresh names).

    `hits` of `samples` natural inputs took the path when it was chosen.
    """

    __slots__ = ("region", "args", "outputs", "result", "guards", "hits", "samples")

    def __init__(self, region: str, args: list[str], outputs: list[str], result: str, guards: list[Guard],
                 hits: int, samples: int):
        self.region, self.args, self.outputs, self.result = region, args, outputs, result
        self.guards, self.hits, self.samples = guards, hits, samples

    def path(self) -> str:
        """The path as decisions and arms: `L34 then, L36 else`."""
        return ", ".join(f"{g.decision.decision} {'then' if g.taken else 'else'}" for g in self.guards)

    def __repr__(self) -> str:
        return f"Speculation({self.region}: {self.path()}, {self.hits}/{self.samples})"
