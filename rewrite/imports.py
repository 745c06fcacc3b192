"""Imports inside forward (or inlined library code), run at conversion time.

transformers imports lazily inside functions (`import torch`, `from torch._higher_order_ops... import
associative_scan`); importing is done once, when converting, and the names it binds are constants of
the function. An import that fails is reported, as it would fail when the model runs.
"""
from __future__ import annotations

import importlib

import libcst as cst

__all__ = ["imported_names"]


def _dotted(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    raise ImportError(f"cannot read the module name {type(node).__name__}")


def imported_names(node: cst.Import | cst.ImportFrom, module_globals: dict) -> dict:
    """{name: value} that `node` binds, importing now; raises ImportError."""
    bound: dict = {}
    if isinstance(node, cst.Import):
        for alias in node.names:
            dotted = _dotted(alias.name)
            module = importlib.import_module(dotted)
            if alias.asname is not None:
                bound[alias.asname.name.value] = module
            else:
                top = dotted.split(".")[0]
                bound[top] = importlib.import_module(top)
        return bound
    if isinstance(node.names, cst.ImportStar):
        raise ImportError("`from ... import *` binds names that cannot be known")
    level = len(node.relative)
    name = "." * level + _dotted(node.module)
    package = module_globals.get("__package__") or (module_globals.get("__name__", "").rpartition(".")[0])
    module = importlib.import_module(name, package=package if level else None)
    for alias in node.names:
        attr = alias.name.value if isinstance(alias.name, cst.Name) else _dotted(alias.name)
        try:
            value = getattr(module, attr)
        except AttributeError:
            try:
                value = importlib.import_module(f"{module.__name__}.{attr}")
            except ImportError:
                raise ImportError(f"cannot import name {attr!r} from {module.__name__!r}") from None
        bound[alias.asname.name.value if alias.asname is not None else attr] = value
    return bound
