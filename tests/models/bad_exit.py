"""A forward that calls sys.exit() on an arm no sample takes: forced exploration runs it."""
import sys

import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)

    def forward(self, x):
        if x.sum() > 100:
            sys.exit(3)
        return self.a(x)


def get_model():
    torch.manual_seed(0)
    return M().eval()


def get_inputs():
    return (torch.ones(1, 2),)
