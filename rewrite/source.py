"""Find and parse the source of functions, with real file positions."""
from __future__ import annotations

import functools
import inspect
import tokenize

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

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


class _Shifted:
    """A snippet's node positions, read as positions in its file (the snippet starts `lines` lines later)."""

    __slots__ = ("positions", "lines")

    def __init__(self, positions, lines: int):
        self.positions, self.lines = positions, lines

    def __contains__(self, node) -> bool:
        return node in self.positions

    def get(self, node, default=None):
        pos = self.positions.get(node)
        if pos is None:
            return default
        return CodeRange(CodePosition(pos.start.line + self.lines, pos.start.column),
                         CodePosition(pos.end.line + self.lines, pos.end.column))

    def __getitem__(self, node):
        pos = self.get(node)
        if pos is None:
            raise KeyError(node)
        return pos


def _parse_function(file: str, first_line: int):
    """The function (or decorated function) starting at `first_line` of `file`, parsed alone with its
    positions in the file; None if there is none. Parsing only the function, not its whole module, keeps
    library code cheap (transformers' modeling files run to thousands of lines). Read fresh each time and
    cached by content, so a file rewritten within one mtime tick (a fuzzer, an editor's save) is never served
    from an older parse."""
    with open(file, encoding="utf-8") as fh:
        lines = fh.read().splitlines(True)
    if not 0 < first_line <= len(lines):
        return None
    try:
        block = inspect.getblock(lines[first_line - 1:])
    except (IndentationError, SyntaxError, tokenize.TokenError):
        return None
    return _parse_block("".join(block), first_line)


@functools.lru_cache(maxsize=512)
def _parse_block(text: str, first_line: int):
    indented = text[:1] in (" ", "\t")
    source = "if 1:\n" + text if indented else text  # an indented method parses inside a block, columns kept
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # parsed here: no one else holds it
    positions = wrapper.resolve(PositionProvider)
    node = module.body[0].body.body[0] if indented else module.body[0]
    if not isinstance(node, cst.FunctionDef):
        return None
    return node, _Shifted(positions, first_line - 1 - indented)


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
    parsed = _parse_function(file, code.co_firstlineno)
    if parsed is None:
        return None
    node, positions = parsed
    return FunctionSource(func, node, file, positions)
