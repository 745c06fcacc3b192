"""Functions defined inside inlined code, called later: closures known at conversion time.

transformers builds its attention masks from nested functions: `and_masks(*fns)` returns
`def and_mask(b, h, q, kv): ...` looping over `fns`; `padding_mask_function(mask)` returns
`def inner_mask(...)` reading `mask`. A `def` without decorators binds its name to a Closure: the
function's source, and the scope it was defined in. Where a Closure is called, its body is inlined
like any function; the names it does not bind itself read the defining scope as it is then (Python's
late binding): conversion-time values fold, run-time ones are the defining function's host names.
"""
from __future__ import annotations

import inspect

import libcst as cst

from .jumps import Frame, assigned_names
from .source import FunctionSource
from .staticeval import Scope, _plain, value_of
from .values import Static, Unknown

__all__ = ["Closure", "NestedFunctions"]


class Closure:
    """A nested `def` reached while converting: its node and source, and the Scope it closes over."""

    def __init__(self, node: cst.FunctionDef, src: FunctionSource, scope: Scope, parameters: list, qualname: str):
        self.node, self.src, self.scope, self.parameters = node, src, scope, parameters
        self.__name__ = node.name.value
        self.__qualname__ = qualname
        self.__globals__ = scope.globals

    def __call__(self, *args, **kwargs):
        raise Unknown("a closure runs only where it is inlined")

    def __repr__(self) -> str:
        return f"Closure({self.__qualname__})"

    def source(self) -> FunctionSource:
        return FunctionSource(self, self.node, self.src.file, self.src.positions)

    def callee_scope(self, rename: dict, state: dict) -> Scope:
        """The scope the body runs in: its own locals (`rename`) over the defining scope's names."""
        own = set(rename) | {p.name for p in self.parameters}
        outer = self.scope
        env = {k: v for k, v in outer.env.items() if k not in own}
        names = {k: v for k, v in outer.rename.items() if k not in own}
        names.update(rename)
        scope = Scope(env, outer.globals, names, outer.self_ref, outer.cls, state)
        scope.poisoned = set(outer.poisoned) - own
        scope.conflicts = set(outer.conflicts) - own
        return scope


_KINDS = {"params": inspect.Parameter.POSITIONAL_OR_KEYWORD, "posonly_params": inspect.Parameter.POSITIONAL_ONLY,
          "kwonly_params": inspect.Parameter.KEYWORD_ONLY}


class NestedFunctions:
    """Mixin of PartialEvaluator: `def` inside inlined code."""

    def visit_FunctionDef(self, node: cst.FunctionDef, frame: Frame, out: list) -> bool:
        if node.decorators or node.asynchronous is not None:
            return self._nested_def(node, frame, out)
        try:
            parameters = self._closure_parameters(node, frame)
        except Unknown:
            self._error("nested-def", frame.src, node, "nested function whose defaults are only known at run time",
                        "a function defined inside converted code is inlined where it is called, with its "
                        "defaults fixed when it is defined", "pass the value as an argument instead")
            return False
        name = node.name.value
        qualname = f"{frame.label}.<locals>.{name}"
        frame.scope.env[name] = Static(Closure(node, frame.src, frame.scope, parameters, qualname))
        frame.scope.poisoned.discard(name)
        return False

    def _closure_parameters(self, node: cst.FunctionDef, frame: Frame) -> list:
        params = []
        for attr, kind in _KINDS.items():
            for p in getattr(node.params, attr):
                default = inspect.Parameter.empty if p.default is None else _plain(value_of(p.default, frame.scope))
                params.append(inspect.Parameter(p.name.value, kind, default=default))
        for star, kind in ((node.params.star_arg, inspect.Parameter.VAR_POSITIONAL),
                           (node.params.star_kwarg, inspect.Parameter.VAR_KEYWORD)):
            if isinstance(star, cst.Param):
                params.append(inspect.Parameter(star.name.value, kind))
        order = {inspect.Parameter.POSITIONAL_ONLY: 0, inspect.Parameter.POSITIONAL_OR_KEYWORD: 1,
                 inspect.Parameter.VAR_POSITIONAL: 2, inspect.Parameter.KEYWORD_ONLY: 3,
                 inspect.Parameter.VAR_KEYWORD: 4}
        return sorted(params, key=lambda p: order[p.kind])

    @staticmethod
    def _closure_locals(closure: Closure) -> list[str]:
        return [p.name for p in closure.parameters] + list(assigned_names(closure.node.body))
