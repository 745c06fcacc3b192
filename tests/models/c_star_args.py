"""*args, **kwargs (typed with Unpack) and a functools.wraps decorator that dispatches on a config
attribute, as transformers 5.x writes forward: the actual arguments are bound at conversion time
and the call is inlined through the wrapper into the implementation the config picks."""
from functools import wraps
from typing import TypedDict, Unpack

import torch
from torch import nn

D = 8


class Options(TypedDict, total=False):
    scale: float
    mask: torch.Tensor


def plain_impl(self, x, *rest, **kwargs):
    return self.proj(x) * kwargs.get("scale", 1.0)


def gated_impl(self, x, *rest, **kwargs):
    h = self.proj(x)
    if h.sum() > 0:
        h = torch.relu(h) + rest[0]
    else:
        h = -h
    if "mask" in kwargs:
        h = h * kwargs["mask"]
    return h * kwargs.get("scale", 1.0)


IMPLEMENTATIONS = {"plain": plain_impl, "gated": gated_impl}
OPTIONS = {"scale": 0.5}


def dispatch_on_config(forward):
    @wraps(forward)
    def wrapper(self, *args, **kwargs):
        impl = IMPLEMENTATIONS.get(self.config["impl"], forward)
        return impl(self, *args, **kwargs)

    return wrapper


class Layer(nn.Module):
    def __init__(self, impl):
        super().__init__()
        self.config = {"impl": impl}
        self.proj = nn.Linear(D, D)

    @dispatch_on_config
    def forward(self, x, *rest, **kwargs: Unpack[Options]):
        raise NotImplementedError  # every config names an implementation


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Layer("gated")
        self.second = Layer("plain")

    def forward(self, x, bias):
        h = self.first(x, bias, mask=torch.sigmoid(x), **OPTIONS)
        return self.run(self.second, h, scale=2.0)

    def run(self, layer, *args, **kwargs: Unpack[Options]):
        return layer(*args, **kwargs) + args[0]


def get_model():
    torch.manual_seed(0)
    return Net().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, D, generator=gen) * 2, torch.randn(2, D, generator=gen)) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
