"""An object created in forward that the package cannot follow: its configuration set in one arm of
a run-time decision (`log.mode = "high"`), its tensor attribute first set in one arm only
(`log.peak = x`), and the object itself returned. Each is reported as [object-state]."""
import torch
from torch import nn


class Log:
    def __init__(self):
        self.mode = "low"
        self.peak = None


class ObjectState(nn.Module):
    def forward(self, x):
        log = Log()
        if x.sum() > 0:
            log.mode = "high"
        if x.mean() > 1:
            log.peak = x.max()
        return x * 2, log


def get_model():
    return ObjectState().eval()


def get_inputs():
    return (torch.randn(2, 3),)
