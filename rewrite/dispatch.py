"""A module chosen at run time: `self.experts[k](x)`, `self[f"expert_{i}"](x)`, `self.flows[ii][i](x)`.

The partial evaluator turns the statement into a host dispatch over the
container, one arm (and so one region) per choice:

    choice = int(k)
    if choice == 0: y = self.experts[0](x)
    elif choice == 1: y = self.experts[1](x)
    else: y = self.experts[2](x)

A ModuleList or Sequential is indexed by an int; a ModuleDict by a string
spelt `f"prefix{k}suffix"` or `str(k)` (the host compares the int inside it
with the keys that have that form) or by a host string. The last choice is the
`else` arm: like the original, which would raise on a key it does not hold,
the dispatch never runs code for a missing key.
"""
from __future__ import annotations

import re

import libcst as cst
from torch import nn

from .jumps import Frame
from .staticeval import value_of
from .values import ModRef, Unknown, to_node
from .walk import find

__all__ = ["ModuleDispatch"]

_SCOPES = (cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp)


def _containers(node) -> bool:
    return isinstance(node, (nn.ModuleList, nn.ModuleDict, nn.Sequential))


class ModuleDispatch:
    """Mixin of PartialEvaluator: statements that index a module container with a run-time key."""

    def _dynamic_module_index(self, node, frame: Frame):
        """The first `container[key]` in `node` whose container is fixed and whose key is not."""
        for sub in find(node, cst.Subscript, stop=_SCOPES):
            if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
                continue
            try:
                base = value_of(sub.value, frame.scope)
            except Exception:
                continue
            if not isinstance(base, ModRef) or not _containers(base.obj):
                continue
            try:
                value_of(sub, frame.scope)
            except Unknown:
                return sub, base
            except Exception:
                continue
        return None

    def _choices(self, key: cst.BaseExpression, container, frame: Frame, node):
        """(selector expression, [(test literal, key)]) or None when the key has no host form."""
        if not isinstance(container, nn.ModuleDict):
            return cst.Call(cst.Name("int"), [cst.Arg(key)]), [(i, i) for i in range(len(container))]
        inner, prefix, suffix = None, "", ""
        if isinstance(key, cst.FormattedString):
            exprs = [p for p in key.parts if isinstance(p, cst.FormattedStringExpression)]
            if len(exprs) == 1 and not exprs[0].format_spec and not exprs[0].conversion:
                at = key.parts.index(exprs[0])
                text = [getattr(p, "value", "") for p in key.parts]
                prefix, suffix = "".join(text[:at]), "".join(text[at + 1:])
                inner = exprs[0].expression
        elif isinstance(key, cst.Call) and isinstance(key.func, cst.Name) and key.func.value == "str" \
                and len(key.args) == 1 and "str" not in frame.scope.rename:
            inner = key.args[0].value
        if inner is None:  # a host string
            return key, [(k, k) for k in container.keys()]
        pattern = re.compile(re.escape(prefix) + r"(-?\d+)" + re.escape(suffix) + r"\Z")
        matches = [(int(m.group(1)), k) for k in container.keys() if (m := pattern.match(k))]
        return cst.Call(cst.Name("int"), [cst.Arg(inner)]), matches

    def _dispatch_module(self, small, frame: Frame, out: list, line) -> bool | None:
        """Lower `small` as a dispatch over the module its run-time index picks; None when it has none."""
        found = self._dynamic_module_index(small, frame)
        if found is None:
            return None
        sub, base = found
        key = sub.slice[0].slice.value
        selector, choices = self._choices(key, base.obj, frame, sub)
        if not choices:
            self._error("dynamic-module", frame.src, sub, "module chosen by a run-time key that matches none of "
                        "the container's keys",
                        "the host dispatches over the keys the container holds",
                        "index with an int (`self.experts[k]`) or a key spelt `f\"name_{k}\"`")
            return False
        choice = self.names.fresh("choice")
        frame.scope.rename[choice] = choice
        head = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(choice))], selector)])
        arms = []
        for literal, k in choices:
            class _Pick(cst.CSTTransformer):
                def on_leave(self, original, updated):
                    if original is sub:
                        return updated.with_changes(slice=[cst.SubscriptElement(cst.Index(to_node(k)))])
                    return updated

            arm = cst.SimpleStatementLine([small.visit(_Pick())])
            test = cst.Comparison(cst.Name(choice), [cst.ComparisonTarget(cst.Equal(), to_node(literal))])
            arms.append((test, arm))
        orelse = cst.Else(cst.IndentedBlock([arms[-1][1]]))
        for test, arm in reversed(arms[:-1]):
            orelse = cst.If(test, cst.IndentedBlock([arm]), orelse)
        dispatch = orelse if isinstance(orelse, cst.If) else None
        for synthesized in find(cst.IndentedBlock([head] + ([dispatch] if dispatch else [])), cst.CSTNode):
            frame.src.alias(synthesized, sub if isinstance(synthesized, cst.BaseExpression) else line)
        if self.statement(head, frame, out):
            return True
        if dispatch is None:  # a container of one
            return self.statement(arms[0][1], frame, out)
        return self.statement(dispatch, frame, out)
