"""What a region is called: the submodule it runs, else the value it computes, and its first source line.

`blocks_52_L128` for a region that runs `self.blocks[52]`,
`x_L131` for one that only computes `x = shortcut`. The name comes from the
submodule that every call on `self` in the region is under (a block whose
convolutions and norms it runs; after inlining, `self` paths are spelled from
the root: `self.groups[1][0].conv1`), with literal indices kept (`[52]` →
`52`, `['group2_ds0']` → `group2_ds0`) and at most the last few parts of a
long path. A region that calls no submodule, or several unrelated ones, is
named for the first name it assigns. Namespace makes each name unique (`_1`, `_2`, ...).
"""
from __future__ import annotations

import re

import libcst as cst

from .cfg import Stmt
from .syntax import target_names

__all__ = ["region_hint"]

_MAX_PATH = 28


def region_hint(stmts: list[Stmt]) -> str:
    paths = [path for s in stmts for path in _module_paths(s.node)]
    common = []
    for parts in zip(*paths):  # the submodule every call is under (a block's convolutions: the block)
        if len(set(parts)) > 1:
            break
        common.append(parts[0])
    if common:
        return _shortened(common)
    for s in stmts:
        node = s.node
        targets = []
        if isinstance(node, cst.Assign):
            targets = [n for t in node.targets for n in target_names(t.target)]
        elif isinstance(node, cst.AugAssign):
            targets = list(target_names(node.target))
        if targets:
            return re.sub(r"_\d+$|_L\d+(_\d+)?$", "", targets[0]) or "region"
    return "region"


def _module_paths(node: cst.CSTNode) -> list[list[str]]:
    """The paths of the calls on `self` in `node`, outermost first (`self.bn1(self.conv1(x))`: bn1, conv1)."""
    found: list[list[str]] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            parts = _self_path(call.func)
            if parts:
                found.append(parts)

    node.visit(_Calls())
    return found


def _self_path(expr: cst.BaseExpression) -> list[str] | None:
    parts: list[str] = []
    while True:
        if isinstance(expr, cst.Attribute):
            parts.append(expr.attr.value)
            expr = expr.value
        elif isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            index = expr.slice[0].slice.value
            if isinstance(index, cst.Integer):
                parts.append(index.value)
            elif isinstance(index, cst.SimpleString):
                parts.append(re.sub(r"\W+", "_", index.evaluated_value).strip("_"))
            expr = expr.value
        else:
            break
    if isinstance(expr, cst.Name) and expr.value == "self" and parts:
        return [p for p in reversed(parts) if p]
    return None


def _shortened(parts: list[str]) -> str:
    kept: list[str] = []
    for part in reversed(parts):
        if kept and len("_".join([part, *kept])) > _MAX_PATH:
            break
        kept.insert(0, part)
    return "_".join(kept)
