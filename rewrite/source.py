"""Find and parse the source of functions, with real file positions."""
from __future__ import annotations

import functools

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

__all__ = ["FunctionSource", "function_source", "unwrap_transparent"]


class FunctionSource:
    """A parsed function: its libcst node, its file, and node positions."""

    __slots__ = ("func", "node", "file", "positions", "aliases")

    def __init__(self, func, node: cst.FunctionDef, file: str, positions):
        self.func, self.node, self.file, self.positions = func, node, file, positions
        self.aliases: dict[cst.CSTNode, cst.CSTNode] = {}

    def alias(self, new: cst.CSTNode, old: cst.CSTNode) -> None:
        """Locate a node the front end synthesised at the source node it stands for."""
        if new not in self.positions:
            self.aliases[new] = old

    def loc(self, node: cst.CSTNode) -> tuple[int, int, int]:
        """(first line, last line, column) of `node` in its file."""
        pos = self.positions.get(self.aliases.get(node, node))
        if pos is None:
            pos = self.positions[self.node]
        return pos.start.line, pos.end.line, pos.start.column

    def __repr__(self) -> str:
        return f"FunctionSource({self.func.__qualname__} in {self.file})"


class _FunctionIndex(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self):
        self.by_line: dict[int, cst.FunctionDef] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        pos = self.get_metadata(PositionProvider, node)
        self.by_line[pos.start.line] = node
        for deco in node.decorators:
            self.by_line[self.get_metadata(PositionProvider, deco).start.line] = node


def _parse_file(file: str):
    """The file's functions by line, and node positions; cached by content, so a file rewritten within
    one mtime tick (a fuzzer, an editor's save) is never served from an older parse."""
    with open(file, encoding="utf-8") as fh:
        return _parse_text(fh.read())


@functools.lru_cache(maxsize=64)
def _parse_text(text: str):
    wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)  # parsed here: no one else holds it
    index = _FunctionIndex()
    wrapper.visit(index)
    return index.by_line, wrapper.resolve(PositionProvider)


def _transparent(func) -> bool:
    """A wrapper that only sets up a context (torch.no_grad(), functools.lru_cache): read what it wraps."""
    module = getattr(func, "__module__", "") or ""
    return module.split(".")[0] in ("torch", "functools", "contextlib", "typing")


def unwrap_transparent(func):
    """`func` without the torch and standard-library wrappers around it; a library's own wrappers (which
    may dispatch on configuration) are kept, to be inlined like any function."""
    while hasattr(func, "__wrapped__") and _transparent(func):
        func = func.__wrapped__
    return func


def function_source(func) -> FunctionSource | None:
    """Parse the source of a Python function; None when it has none (C code)."""
    import os

    func = unwrap_transparent(func)
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    file = code.co_filename
    if not file or not os.path.exists(file):
        return None
    by_line, positions = _parse_file(file)
    node = by_line.get(code.co_firstlineno)
    if node is None:
        return None
    return FunctionSource(func, node, file, positions)
