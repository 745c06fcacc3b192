"""Compiler-style diagnostics: a stable kind, a location, the source line, a hint."""
from __future__ import annotations

import linecache
import os
import re

__all__ = ["Diagnostic", "ConversionError", "Location", "Abandoned", "locate"]


class Abandoned(BaseException):
    """A tentative lowering (a host loop that unrolls instead if its body is not the same every
    iteration) met its first diagnostic: the rest of it need not be lowered. A BaseException, so that
    no `except Exception` on the way swallows it."""


class Location:
    __slots__ = ("file", "line", "col")

    def __init__(self, file: str, line: int, col: int = 0):
        self.file, self.line, self.col = file, line, col

    def __repr__(self) -> str:
        return f"{_display_path(self.file)}:{self.line}:{self.col + 1}"


def locate(file: str, first: int, last: int, col: int, text: str) -> Location:
    """Where `text` is first written in lines `first`..`last` of `file` (from column `col` on the first),
    as a whole word; where it is not found (renamed, spelled otherwise), the start of the statement."""
    word_end = r"(?!\w)" if re.match(r"\w", text[-1:]) else ""
    pattern = re.compile(r"(?<![\w.])" + re.escape(text) + word_end)
    for line in range(first, last + 1):
        found = pattern.search(linecache.getline(file, line), col if line == first else 0)
        if found:
            return Location(file, line, found.start())
    return Location(file, first, col)


def _display_path(path: str) -> str:
    """The path relative to the working directory when it lies below it, as compilers print it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


class Diagnostic:
    """One unsupported construct, printed like a compiler error."""

    __slots__ = ("kind", "loc", "message", "explanation", "hint")

    def __init__(self, kind: str, loc: Location, message: str, explanation: str, hint: str):
        self.kind, self.loc, self.message = kind, loc, message
        self.explanation, self.hint = explanation, hint

    def format(self) -> str:
        source = linecache.getline(self.loc.file, self.loc.line).rstrip("\n")
        lines = [f"{self.loc}: error: {self.message} [{self.kind}]"]
        if source:
            lines.append(f"    {source}")
            lines.append("    " + " " * self.loc.col + "^")
        lines.append(f"  Explanation: {self.explanation}")
        lines.append(f"  Hint: {self.hint}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Diagnostic({self.kind!r} at {self.loc})"


class ConversionError(Exception):
    """Raised with every diagnostic collected by a pass."""

    def __init__(self, diagnostics: list[Diagnostic]):
        if not diagnostics:
            raise ValueError("ConversionError needs at least one diagnostic")
        self.diagnostics = list(diagnostics)
        super().__init__(self.format())

    def format(self) -> str:
        n = len(self.diagnostics)
        body = "\n\n".join(d.format() for d in self.diagnostics)
        return f"{body}\n\n{n} error{'s' if n != 1 else ''}: the model cannot be converted as written."
