"""Collect the nodes of some kinds in a libcst tree, optionally not looking inside others; replace nodes."""
from __future__ import annotations

import libcst as cst

__all__ = ["find", "replaced"]


class _Collector(cst.CSTVisitor):
    def __init__(self, kinds: tuple, stop: tuple):
        super().__init__()
        self.kinds, self.stop = kinds, stop
        self.found: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.kinds):
            self.found.append(node)
        return not isinstance(node, self.stop)


def find(tree: cst.CSTNode, kinds, stop=()) -> list[cst.CSTNode]:
    """Nodes of `kinds` in `tree` (pre-order), not descending into nodes of `stop`."""
    collector = _Collector(tuple(kinds) if isinstance(kinds, (list, tuple)) else (kinds,), tuple(stop))
    tree.visit(collector)
    return collector.found


class _Replace(cst.CSTTransformer):
    def __init__(self, table: dict):
        super().__init__()
        self.table = table

    def on_leave(self, original, updated):
        return self.table.get(original, updated)


def replaced(tree: cst.CSTNode, table: dict) -> cst.CSTNode:
    """`tree` with each node that is a key of `table` (by identity of the original) replaced by its value."""
    return tree.visit(_Replace(table))
