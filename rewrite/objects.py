"""Library objects that forward creates and whose methods grow run-time tensors they hold.

transformers' generation loop writes `cache = DynamicCache(config=self.config)` and passes it to the
model, whose attention layers call `cache.update(key_states, value_states, layer_idx)`; the layer object
keeps `self.keys = torch.cat([self.keys, key_states], dim=-2)`. Such an object is built when
converting, from arguments fixed then, and each of its attributes is one of two things:

- configuration (`self.layers`, `self.is_initialized`): a Python value on the object itself, which
  the evaluator changes as forward would (`self.is_initialized = True`), so tests on it fold;
- run-time state (`self.keys`): a variable of its own, named for the object and the attribute
  (`cache_layers_0_keys`), assigned where forward assigns the attribute and read where it reads it.
  Inside a host loop it is loop-carried state like any local.

The object's methods are inlined with `self` bound to it (rewrite/inline.py), never run when
converting. A change of configuration, or an attribute that becomes run-time state, must happen
where the object was created (not in one arm of a run-time `if`, nor in a host loop around the
creation, nor after a data-dependent `break` of an unrolled loop): otherwise the object would differ
between the paths, and the change is reported as `[object-state]`.

Run-time code cannot hold the object. Where it is a keyword argument of a dataclass that collects
results (`BaseModelOutputWithPast(..., cache=cache)`), the package passes None, and the result's
attribute (`outputs.cache`) reads the object when converting (values.Holds); any other run-time use
is reported.
"""
from __future__ import annotations

import dataclasses
import sys

import libcst as cst
import torch
from torch import nn

from .cfg import Stmt
from .jumps import Frame
from .nonnull import is_tensor, never_none
from .state import attribute_owner
from .staticeval import OBJECTS, _plain, value_of
from .walk import find, replaced
from .values import Alias, Holds, Instance, ModRef, Static, TensorConst

__all__ = ["ForwardObjects"]

_SIGNATURE_ATTRS = ("dtype", "device")
_PATHS = ("the object is built when converting and its configuration must be the same on every path the package "
          "can take; only tensors it holds can differ, as variables of their own")


def _library_class(cls) -> bool:
    """A class of model or library code whose instances forward may build when converting."""
    if not isinstance(cls, type) or issubclass(cls, (nn.Module, torch.Tensor, BaseException)):
        return False
    top = (getattr(cls, "__module__", "") or "").split(".")[0]
    return top not in ("torch", "numpy", "builtins") and top not in sys.stdlib_module_names


def _object_graph(obj, path: str, found: dict) -> bool:
    """Record `obj` and the library objects its attributes hold (lists, tuples and dicts of them too)
    by their path (`cache_layers_0`); False when one holds a tensor or a module, which the conversion
    cannot keep as configuration."""
    if id(obj) in found:
        return True
    found[id(obj)] = (obj, path)
    for name, value in vars(obj).items():
        if not _holds_configuration(value, f"{path}_{name.strip('_')}", found):
            return False
    return True


def _holds_configuration(value, path: str, found: dict) -> bool:
    if isinstance(value, (torch.Tensor, nn.Module)):
        return False
    if isinstance(value, (list, tuple)):
        return all(_holds_configuration(v, f"{path}_{k}", found) for k, v in enumerate(value))
    if isinstance(value, dict):
        return all(_holds_configuration(v, f"{path}_{k}", found) for k, v in value.items())
    if _library_class(type(value)) and hasattr(value, "__dict__") and not hasattr(value, "to_dict"):
        return _object_graph(value, path, found)  # a configuration object (`to_dict`) is not forward's
    return True


class ForwardObjects:
    """Mixin of PartialEvaluator: objects built in forward, their attribute writes and the variables
    that hold their run-time state."""

    def _objects(self, frame: Frame) -> dict:
        return frame.scope.state.setdefault(OBJECTS, {})

    def _object_depth(self) -> tuple:
        return self.arms + self.guarded, self.host_depth

    def _bind_object(self, node: cst.Assign, frame: Frame) -> bool:
        """`cache = DynamicCache(config=self.config)`: a library class called with arguments fixed at
        conversion time is instantiated now; the name holds the object. True when bound."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name) \
                or not isinstance(node.value, cst.Call) or any(a.star for a in node.value.args):
            return False
        name = node.targets[0].target.value
        try:
            cls = value_of(node.value.func, frame.scope)
        except Exception:
            return False
        if not isinstance(cls, Static) or not _library_class(cls.value) or frame.variant(name):
            return False
        args, kwargs = [], {}
        for arg in node.value.args:
            value = self._static(arg.value, frame)
            if value is None or isinstance(value, TensorConst):
                return False
            plain = _plain(value)
            if arg.keyword is None:
                args.append(plain)
            else:
                kwargs[arg.keyword.value] = plain
        try:
            obj = cls.value(*args, **kwargs)
        except Exception:
            return False
        found: dict = {}
        if not hasattr(obj, "__dict__") or not _object_graph(obj, name, found):
            return False
        objects = self._objects(frame)
        depth = self._object_depth()
        for key, (part, path) in found.items():
            objects[key] = (depth, path)
            self._owned_keep.append(part)  # ids stay unique while the evaluator runs
        frame.scope.env[name] = Instance(obj)
        frame.scope.poisoned.discard(name)
        frame.scope.conflicts.discard(name)
        return True

    def _object_write(self, node: cst.Assign, frame: Frame, out: list, line) -> bool:
        """`self.keys = torch.cat([self.keys, k], dim=-2)` on an object forward created; False when no
        target is an attribute of one."""
        owners = [self._instance_of(t.target, frame) for t in node.targets]
        if not any(owners):
            return False
        if len(owners) != 1:
            self._object_error(node.targets[0].target, frame, "an attribute of an object forward created is set "
                               "in a chained assignment", "assign each attribute on its own")
            return True
        target, obj = node.targets[0].target, owners[0]
        key = (id(obj), target.attr.value)
        state = frame.scope.state
        created, path = self._objects(frame)[id(obj)]
        here = self._object_depth() == created
        current = state.get(key)
        static = self._static(node.value, frame)
        if isinstance(static, Static) and not isinstance(static, TensorConst) or isinstance(static, ModRef):
            if here:
                state.pop(key, None)
                setattr(obj, target.attr.value, _plain(static))
                return True
            if current is None and hasattr(obj, target.attr.value) \
                    and getattr(obj, target.attr.value) is _plain(static):
                return True  # sets what it holds already
            self._object_error(target, frame, "an object forward created changes its configuration on one path "
                               "of a run-time decision", "compute the value in forward and pass it to the object "
                               "where it is created")
            return True
        hoisted: list = []
        value = self.expression(node.value, frame, hoisted, line)
        out.extend(hoisted)
        signature = isinstance(value, cst.Attribute) and value.attr.value in _SIGNATURE_ATTRS \
            and not is_tensor(node.value, frame.scope)
        if signature and (here or isinstance(current, Alias) and current.attr is not None):
            state[key] = self._probe(value, f"{path}_{target.attr.value.strip('_')}", frame, out, line)
            return True
        variable = self._object_variables.get(key)
        if variable is None:
            variable = self.names.fresh(f"{path}_{target.attr.value.strip('_')}")
            self._object_variables[key] = variable
        if not here and not (isinstance(current, Alias) and current.name == variable):
            self._object_error(target, frame, "an attribute of an object forward created starts to hold a run-time "
                               "value on one path of a run-time decision", "give the attribute a value where the "
                               "object is created, or update it on every path")
            return True
        out.append(Stmt(cst.Assign([cst.AssignTarget(cst.Name(variable))], value), self.origin(frame, line)))
        state[key] = Alias(variable, not_none=never_none(node.value, frame.scope),
                           tensor=is_tensor(node.value, frame.scope))
        return True

    def _instance_of(self, target, frame: Frame):
        """The object forward created that `target` (`self.keys`) sets an attribute of, or None."""
        owner = attribute_owner(target, frame)
        return owner.value if isinstance(owner, Instance) else None

    def _object_error(self, target, frame: Frame, message: str, hint: str, explanation: str = _PATHS) -> None:
        self._error("object-state", frame.src, target, message, explanation, hint)

    # -- the object in run-time code -----------------------------------------------
    def _object_arguments(self, expr, frame: Frame):
        """`Cls(..., cache=cache)` of a dataclass (a record of results, as transformers' ModelOutput), in
        run-time code: None is passed for each object forward created, and (expr, {keyword: Instance}) is
        returned so that the assigned name can read it."""
        fields: dict = {}
        replace: dict = {}
        for call in find(expr, cst.Call):
            try:
                cls = value_of(call.func, frame.scope)
            except Exception:
                continue
            if not isinstance(cls, Static) or not isinstance(cls.value, type) \
                    or not dataclasses.is_dataclass(cls.value):
                continue  # only a record of results: a class with behaviour might use the object
            for arg in call.args:
                if arg.keyword is None or arg.star:
                    continue
                try:
                    value = value_of(arg.value, frame.scope)
                except Exception:
                    continue
                if isinstance(value, Instance):
                    replace[arg.value] = cst.Name("None")
                    if call is expr:
                        fields[arg.keyword.value] = value
        if replace:
            expr = replaced(expr, replace)
        return expr, fields

    def _check_object_uses(self, folded, written, frame: Frame, line) -> None:
        """An object forward created that run-time code would still read (returned, passed to a function
        that is not inlined): reported, at the name as `written`."""
        held = {frame.scope.local(n): n for n, v in frame.scope.env.items() if isinstance(v, Instance)}
        if not held:
            return
        for name in _value_names(folded):
            if name.value in held:
                place = next((n for n in _value_names(written) if n.value == held[name.value]
                              and (n in frame.src.positions or n in frame.src.aliases)), line)
                self._object_error(place, frame, f"`{held[name.value]}`, an object forward created, is used as a "
                                   "run-time value", "use the tensors it holds, or what its methods return, "
                                   "instead", explanation="the object exists only when converting: the package "
                                   "holds the tensors it keeps, as variables, never the object itself")
                return


def _value_names(expr) -> list:
    """The names `expr` reads as values (not attribute names, not keywords)."""
    skip = {id(a.attr) for a in find(expr, cst.Attribute)} | {id(a.keyword) for a in find(expr, cst.Arg)}
    return [n for n in find(expr, cst.Name) if id(n) not in skip]


