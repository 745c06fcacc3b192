"""A dict built from the configuration and changed in one arm of a run-time decision: it can no
longer be a conversion-time value, and the package has no form for it: [static-container]."""
import torch
from torch import nn

FLAGS = {"a": True, "b": False}


class StaticContainer(nn.Module):
    def forward(self, x):
        scales = {k: 1.0 for k, v in FLAGS.items() if v}
        if x.sum() > 0:
            scales["a"] = 2.0
        return x * scales["a"]


def get_model():
    return StaticContainer().eval()


def get_inputs():
    return (torch.randn(3),)
