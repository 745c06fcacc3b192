"""Origin comments: `# forward L42-44: h = self.embed(x)`."""
from __future__ import annotations

import libcst as cst

from rewrite.cfg import Origin, code

__all__ = ["origin_comment", "region_comment", "comment_lines"]

_WIDTH = 72


def origin_comment(origin: Origin, first_code: str = "") -> str:
    return _with_code(f"# {origin.func} {origin.lines}", first_code)


def _with_code(text: str, first_code: str) -> str:
    if first_code:
        first_code = first_code.splitlines()[0]
        room = _WIDTH - len(text) - 2
        if len(first_code) > room:
            first_code = first_code[: max(room - 3, 8)] + "..."
        text += f": {first_code}"
    return text


def region_comment(stmts) -> list[str]:
    """Every source line a region's statements came from, per function in the order they run, then its first
    statement: `# forward L124, L127-128; Block.forward L14-17: x = ...`. Long lists go on to more lines."""
    lines: dict[str, list[tuple[int, int]]] = {}
    for s in stmts:
        lines.setdefault(s.origin.func, []).append((s.origin.first, s.origin.last))
    parts = [f"{func} {_ranges(spans)}" for func, spans in lines.items()]
    out, current = [], "#"
    for k, part in enumerate(parts):
        text = f"{current} {part}" + (";" if k < len(parts) - 1 else "")
        if current != "#" and len(text) > _WIDTH + 16:
            out.append(current)
            current = f"#   {part}" + (";" if k < len(parts) - 1 else "")
        else:
            current = text
    out.append(_with_code(current, code(stmts[0].node) if stmts else "") if not out else current)
    return out


def _ranges(spans: list[tuple[int, int]]) -> str:
    merged: list[list[int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return ", ".join(f"L{a}" if a == b else f"L{a}-{b}" for a, b in merged)


def comment_lines(*texts: str) -> list[cst.EmptyLine]:
    return [cst.EmptyLine(comment=cst.Comment(t)) for t in texts]
