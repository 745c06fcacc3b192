"""A function picked by a run-time decision and called after the paths meet (transformers' mask
function without an attention mask): reported as [static-merge]; and a `try` whose body is
run-time code, still reported as [try-block]."""
import torch
from torch import nn


def double(x):
    return x * 2


def halve(x):
    return x / 2


def apply(fn, x):
    return fn(x)


class StaticMerge(nn.Module):
    def forward(self, x):
        fn = double
        if x.sum() > 0:
            fn = halve
        y = apply(fn, x)
        try:
            y = y + 1
        except RuntimeError:
            pass
        return y


def get_model():
    return StaticMerge().eval()


def get_inputs():
    return (torch.randn(2, 3),)
