"""Origin comments: `# forward L42-44: h = self.embed(x)`."""
from __future__ import annotations

import libcst as cst

from rewrite.cfg import Origin, code

__all__ = ["origin_comment", "comment_lines"]

_WIDTH = 72


def origin_comment(origin: Origin, first_code: str = "") -> str:
    text = f"# {origin.func} {origin.lines}"
    if first_code:
        first_code = first_code.splitlines()[0]
        room = _WIDTH - len(text) - 2
        if len(first_code) > room:
            first_code = first_code[: max(room - 3, 8)] + "..."
        text += f": {first_code}"
    return text


def comment_lines(*texts: str) -> list[cst.EmptyLine]:
    return [cst.EmptyLine(comment=cst.Comment(t)) for t in texts]


def first_statement(stmts) -> str:
    return code(stmts[0].node) if stmts else ""
