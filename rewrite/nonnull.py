"""Which assigned values can never be None, so that `if name is not None:` on them folds.

Library code passes optional tensors on and tests them again (`delta_bias=self.dt_proj.bias.float()
if ... else None`, then `if delta_bias is not None:`); exploration cannot force a test on None-ness,
so an arm the configuration rules out would be code no input reaches. A slice, arithmetic, a call
of a torch function or of a tensor method (`.float()`, `.chunk(2)`) never yields None.
"""
from __future__ import annotations

import libcst as cst
import torch

from .staticeval import Scope, value_of
from .values import IsTensor, ModRef, Static

__all__ = ["never_none", "never_none_items", "is_tensor"]

# Tensor methods no list, dict, str, tuple or set has: a run-time receiver that has one is a tensor.
_PLAIN_METHODS = set(dir(list)) | set(dir(dict)) | set(dir(str)) | set(dir(tuple)) | set(dir(set))
_TENSOR_METHODS = {m for m in dir(torch.Tensor) if not m.startswith("_")} - _PLAIN_METHODS
# ... and the ones that return a tuple of tensors.
_TUPLE_METHODS = {"chunk", "split", "tensor_split", "unbind", "sort", "topk", "kthvalue", "median", "mode",
                  "max", "min", "aminmax", "split_with_sizes"}


def _torch_function(func: cst.BaseExpression, scope: Scope) -> bool:
    try:
        value = value_of(func, scope)
    except Exception:
        return False
    fn = value.value if isinstance(value, Static) else None
    return callable(fn) and (getattr(fn, "__module__", None) or "").split(".")[0] == "torch" \
        and not isinstance(fn, type)


def _tensor_method(func: cst.BaseExpression, scope: Scope) -> str | None:
    if not isinstance(func, cst.Attribute) or func.attr.value not in _TENSOR_METHODS:
        return None
    try:
        receiver = value_of(func.value, scope)
    except Exception:
        return func.attr.value  # a run-time value with a tensor's method
    if isinstance(receiver, ModRef) and isinstance(receiver.obj, torch.Tensor):
        return func.attr.value
    return None


def never_none(value: cst.BaseExpression, scope: Scope) -> bool:
    """Whether `value` (as written in a region) is never None."""
    if isinstance(value, (cst.Subscript, cst.BinaryOperation)):
        return True
    if isinstance(value, cst.Call):
        return _torch_function(value.func, scope) or _tensor_method(value.func, scope) is not None
    return False


def never_none_items(value: cst.BaseExpression, scope: Scope) -> bool:
    """Whether every item of the tuple `value` returns is never None (`a, b = x.chunk(2, dim=1)`)."""
    if not isinstance(value, cst.Call):
        return False
    method = _tensor_method(value.func, scope)
    if method is not None:
        return method in _TUPLE_METHODS
    return _torch_function(value.func, scope) and isinstance(value.func, cst.Attribute) \
        and value.func.attr.value in _TUPLE_METHODS


# torch functions and tensor methods that return one plain tensor whatever their arguments
_TENSOR_FUNCTIONS = {"ones_like", "zeros_like", "full_like", "empty_like", "rand_like", "randn_like", "ones", "zeros",
                     "full", "empty", "arange", "cat", "concat", "stack", "where", "matmul", "bmm", "tril", "triu",
                     "diff", "cumsum", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "abs", "clamp"}
_TENSOR_RESULT_METHODS = {"to", "float", "double", "half", "bfloat16", "long", "int", "bool", "contiguous", "view",
                          "reshape", "expand", "expand_as", "unsqueeze", "squeeze", "transpose", "permute", "clone",
                          "detach", "masked_fill", "type_as", "view_as", "reshape_as", "flatten", "cumsum", "softmax",
                          "cos", "sin", "exp", "sum", "mean", "all", "any", "argmax", "matmul"}


def is_tensor(value: cst.BaseExpression, scope: Scope) -> bool:
    """Whether `value` (as written in a region) is a plain torch.Tensor: a torch factory or elementwise
    function, a tensor method of a value known to be a tensor, an index of or arithmetic on one."""
    if isinstance(value, cst.Name):
        return isinstance(scope.env.get(value.value), IsTensor)
    if isinstance(value, cst.Subscript):
        return is_tensor(value.value, scope)
    if isinstance(value, cst.BinaryOperation):
        return is_tensor(value.left, scope) or is_tensor(value.right, scope)
    if isinstance(value, cst.Comparison) and len(value.comparisons) == 1 \
            and not isinstance(value.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
        return is_tensor(value.left, scope) or is_tensor(value.comparisons[0].comparator, scope)
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value in _TENSOR_RESULT_METHODS and is_tensor(func.value, scope):
        return True
    return isinstance(func, cst.Attribute) and func.attr.value in _TENSOR_FUNCTIONS and _torch_function(func, scope)
