"""The front end's intermediate programs as Python-like source text (`dycl convert --dump-after`).

Not code to run: a lowered tree prints as the branch-free statements and the ifs and loops that survived
folding; a host tree prints as `forward` calling regions, followed by one function per region.
"""
from __future__ import annotations

from .cfg import HostStmt, If, IfNode, Jump, Loop, LoopNode, Program, RegionCall, Stmt, code
from .kinds import LoopKind, StmtKind, TestKind

__all__ = ["lowered_text", "program_text"]

_INDENT = "    "


def lowered_text(lowered: list, params: list[str]) -> str:
    lines = [f"def forward({', '.join(params)}):"]
    _lowered(lowered, 1, lines)
    return "\n".join(lines) + "\n"


def _lowered(nodes: list, depth: int, lines: list[str]) -> None:
    pad = _INDENT * depth
    if not nodes:
        lines.append(pad + "pass")
    for node in nodes:
        if isinstance(node, Stmt):
            lines.append(pad + code(node.node) + _note(node.kind))
        elif isinstance(node, IfNode):
            lines.append(f"{pad}if {code(node.test)}:{'  # guard' if node.kind == TestKind.GUARD else ''}")
            _lowered(node.body, depth + 1, lines)
            if node.orelse:
                lines.append(pad + "else:")
                _lowered(node.orelse, depth + 1, lines)
        elif isinstance(node, LoopNode):
            lines.append(pad + _loop_head(node) + ":")
            _lowered(node.body, depth + 1, lines)
        elif isinstance(node, Jump):
            lines.append(f"{pad}{node.kind}  # jump")
        else:
            lines.append(f"{pad}# {node!r}")


def program_text(program: Program) -> str:
    lines = [f"def forward({', '.join(program.params)}):"]
    _host(program.body, 1, lines)
    for region in program.regions:
        lines += ["", "", f"def {region.name}({', '.join(region.inputs)}):  # {region.origin!r}"]
        lines += [_INDENT + code(s.node) + _note(s.kind) for s in region.stmts]
        if region.outputs:
            lines.append(f"{_INDENT}return {', '.join(region.outputs)}")
    return "\n".join(lines) + "\n"


def _host(nodes: list, depth: int, lines: list[str]) -> None:
    pad = _INDENT * depth
    if not nodes:
        lines.append(pad + "pass")
    for node in nodes:
        if isinstance(node, RegionCall):
            region = node.region
            call = f"regions.{region.name}({', '.join(region.inputs)})"
            lines.append(pad + (f"{', '.join(region.outputs)} = {call}" if region.outputs else call))
        elif isinstance(node, HostStmt):
            lines.append(pad + code(node.node))
        elif isinstance(node, If):
            lines.append(f"{pad}if {code(node.test)}:  # decision {node.decision}: {node.dclass}")
            _host(node.body, depth + 1, lines)
            if node.orelse:
                lines.append(pad + "else:")
                _host(node.orelse, depth + 1, lines)
        elif isinstance(node, Loop):
            lines.append(f"{pad}{_loop_head(node)}:  # loop {node.decision}")
            _host(node.body, depth + 1, lines)
        else:
            lines.append(f"{pad}# {node!r}")


def _loop_head(node) -> str:
    if node.kind == LoopKind.WHILE:
        return f"while {code(node.test)}"
    return f"for {code(node.target)} in {code(node.iter)}"


def _note(kind: StmtKind) -> str:
    return f"  # {kind}" if kind != StmtKind.PLAIN else ""
