"""Unsupported constructs, reported together (used by the diagnostics tests)."""
import torch
from torch import nn

STEPS = 0


class Bad(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        global STEPS
        with open("log.txt") as fh:
            x = self.fc(x)
        for row, col in zip(x, x.t()):
            x = x + row * col
        try:
            x = self.fc(x)
        except RuntimeError:
            pass
        return x


def get_model():
    return Bad().eval()


def get_inputs():
    return (torch.randn(1, 4),)
