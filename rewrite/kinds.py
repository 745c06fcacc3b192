"""The discriminants of the front end's data: which class a decision is, what a value holds, which kind a
loop, statement, test or jump is.

Each is a str-valued Enum: a member compares equal to, prints as and serialises (JSON, report, generated
host code) as its value, so `manifest.json` and `host.py` read as they did when these were strings.
"""
from __future__ import annotations

import enum

__all__ = ["DecisionClass", "ValueKind", "LoopKind", "LoopMode", "StmtKind", "TestKind", "JumpKind"]


class _Named(str, enum.Enum):
    __str__ = str.__str__
    __format__ = str.__format__

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class DecisionClass(_Named):
    """Where a decision is taken (SoD2's classes; the README's table)."""
    STATIC = "static"  # folded away at conversion
    SHAPE = "shape"  # in the host, from array shapes
    VALUE = "value"  # in the host, on a bool a region computed
    EXECUTION = "execution"  # a host loop's test, or a data-dependent `break` guard


class ValueKind(_Named):
    """What a variable holds at run time."""
    TENSOR = "tensor"
    SCALAR = "scalar"
    CONTAINER = "container"


class LoopKind(_Named):
    """A host loop: `for` over a range the host computes, or `while` on a test."""
    FOR = "for"
    WHILE = "while"


class LoopMode(_Named):
    """How the partial evaluator lowers a loop it is inside (`Frame.loops`)."""
    HOST = "host"  # kept as a host loop
    UNROLLED = "unrolled"  # unrolled at conversion time


class StmtKind(_Named):
    """A lowered statement: from the source, or a shape read recomputed at a region's start."""
    PLAIN = ""
    REMAT = "remat"


class TestKind(_Named):
    """A lowered `if`: from the source, or the guard that skips an unrolled loop's iterations after a
    data-dependent `break`."""
    PLAIN = ""
    GUARD = "guard"


class JumpKind(_Named):
    """Where a lowered jump goes; FALL_THROUGH is the end of a loop body (the `""` key of `splice`)."""
    BREAK = "break"
    CONTINUE = "continue"
    RETURN = "return"
    FALL_THROUGH = ""
